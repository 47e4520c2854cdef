// key_def.h: type checks of tuples and keys (codes), comparison order across encodings, and the
// hint rules the B+tree relies on: a < b implies hint(a) <= hint(b), equal keys have equal
// hints, on equal hints comparing from tie_start() gives the full comparison, and every tuple
// that matches a key has its hint inside hint_range(key). Checked over random numbers (every
// encoding, -0, 2^53 boundaries, float64-encoded integers, huge and negative values), strings
// (shared 8-byte prefixes) and booleans, for single-part, two-part and composite-hint key defs.
#include "key_def.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "msgpack.h"
#include "test_util.h"

using ce::FieldType;
using ce::KeyDef;
using ce::KeyPart;
using test::expect;
using test::expect_error;
using test::Mp;
using test::Rng;

namespace {

// A random numeric value written in a random encoding that holds it exactly.
void random_number(Rng& r, Mp& m, FieldType type) {
  static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 9007199254740991.0, 9007199254740992.0,
                                    9007199254740994.0, -9007199254740992.0, 2199023255551.0, 2199023255552.0,
                                    1.8e9, 1.8e12, 4294967296.0, 1e300, -1e300, 18446744073709549568.0};
  const bool integral_only = type != FieldType::kNumber;
  const bool unsigned_only = type == FieldType::kUnsigned;
  for (;;) {
    switch (r.below(7)) {
      case 0: m.uint(r.below(300)); return;
      case 1: m.uint(uint64_t(r.next()) << 32 | r.next()); return;
      case 2: {  // near 2^53, as an integer
        const uint64_t v = (uint64_t(1) << 53) - 4 + r.below(9);
        m.uint(v);
        return;
      }
      case 3:
        if (unsigned_only) continue;
        m.integer(-int64_t(r.below(1u << 31)) * (1 + r.below(3)));
        return;
      case 4: {  // an integer written as float64 (msgpackr's way above 2^32)
        double d = std::floor(r.unit() * 4e15);
        if (!unsigned_only && r.below(2)) d = -d;
        m.f64(d);
        return;
      }
      case 5: {
        const double d = specials[r.below(sizeof specials / sizeof specials[0])];
        if (integral_only && (std::trunc(d) != d || d >= 18446744073709551616.0 || d < -9223372036854775808.0)) continue;
        if (unsigned_only && std::signbit(d) && d != 0) continue;
        if (unsigned_only && std::signbit(d)) { m.f64(0.0); return; }
        m.f64(d);
        return;
      }
      default:
        if (integral_only) continue;
        m.f64((r.unit() - 0.5) * std::pow(10.0, double(r.below(20))));
        return;
    }
  }
}

// A composite hint's second part across the tiers of its low bits (key_def.cc, composite_low):
// [0, 2^20) exact, [2^20, 2^32) in 15 significant bits, everything else by hint_value's form;
// with clusters of neighbours, so that equal and adjacent values meet inside one bucket.
void tier_number(Rng& r, Mp& m, FieldType type) {
  static const double edges[] = {0.0, -0.0, 1048575.0, 1048575.5, 1048576.0, 1048577.0, 4294967295.0,
                                 4294967295.5, 4294967296.0, 4294967297.0, -0.5, -1.0, -1048576.0, 1e300,
                                 -1e300, HUGE_VAL, -HUGE_VAL};
  const bool integral_only = type != FieldType::kNumber;
  const bool unsigned_only = type == FieldType::kUnsigned;
  for (;;) {
    switch (r.below(7)) {
      case 0: m.uint(r.below(1u << 20)); return;
      case 1: m.uint(1000 + r.below(40)); return;       // neighbours, exact tier
      case 2: m.uint(3000000 + r.below(200)); return;   // neighbours across buckets of 64 (2^21..2^22)
      case 3: m.uint((1u << 20) + r.below(0xffffffffu - (1u << 20))); return;
      case 4:
        if (integral_only) continue;
        m.f64(r.unit() * 1048576.0);  // non-integral, exact tier (the floor)
        return;
      case 5: {
        const double d = edges[r.below(sizeof edges / sizeof edges[0])];
        if (integral_only && (std::trunc(d) != d || d >= 18446744073709551616.0 || d < -9223372036854775808.0)) continue;
        if (unsigned_only && std::signbit(d) && d != 0) continue;
        if (unsigned_only && std::signbit(d)) { m.f64(0.0); return; }
        if (integral_only && d >= 0 && d < 18446744073709551616.0 && r.below(2)) m.uint(uint64_t(d));
        else m.f64(d);
        return;
      }
      default: m.uint(uint64_t(r.next()) << 32 | r.next()); return;
    }
  }
}

// The first part of a composite key from a few values, so that keys tie on it constantly (as a
// TTL index does) and the hints' low bits decide: integers of each region, and a non-integral one.
void few_firsts(Rng& r, Mp& m, FieldType type) {
  static const double firsts[] = {0.0, 7.0, 1.8e9, 2.5, -3.0, 2199023255552.0};
  for (;;) {
    const double d = firsts[r.below(sizeof firsts / sizeof firsts[0])];
    if (type != FieldType::kNumber && std::trunc(d) != d) continue;
    if (type == FieldType::kUnsigned && d < 0) continue;
    if (d >= 0 && r.below(2)) m.uint(uint64_t(d));
    else m.f64(d);
    return;
  }
}

void random_value(Rng& r, Mp& m, FieldType type) {
  switch (type) {
    case FieldType::kString: {
      static const char* prefixes[] = {"", "session:", "session:12", "abcdefgh", "zz"};
      std::string s = prefixes[r.below(5)];
      const uint32_t extra = r.below(6);
      for (uint32_t i = 0; i < extra; i++) s.push_back(char('a' + r.below(4)));
      m.str(s);
      return;
    }
    case FieldType::kBoolean: m.boolean(r.below(2)); return;
    default: random_number(r, m, type);
  }
}

struct Def {
  const char* what;
  std::vector<KeyPart> parts;
  bool composite;
  // The first part from few_firsts() and the second from tier_number() (composite ties).
  bool ties = false;
};

void check_hint_rules(const Def& d, uint32_t seed) {
  Rng r(seed);
  const KeyDef kd("idx", d.parts, d.composite);
  const uint32_t fields = 3;
  std::vector<std::string> tuples;
  for (int i = 0; i < 600; i++) {
    Mp m;
    m.array(fields);
    for (uint32_t f = 0; f < fields; f++) {
      FieldType type = FieldType::kNumber;
      int part = -1;
      for (size_t k = 0; k < d.parts.size(); k++)
        if (d.parts[k].fieldno == f) type = d.parts[k].type, part = int(k);
      if (d.ties && part == 0) few_firsts(r, m, type);
      else if (d.ties && part == 1) tier_number(r, m, type);
      else random_value(r, m, type);
    }
    kd.check_tuple(m.data());
    tuples.push_back(m.str());
  }
  auto data = [&](size_t i) { return reinterpret_cast<const uint8_t*>(tuples[i].data()); };
  for (size_t i = 0; i < tuples.size(); i++) {
    for (size_t j = 0; j < tuples.size(); j += 1 + r.below(3)) {
      const int c = kd.compare(data(i), data(j));
      const uint64_t hi = kd.hint(data(i)), hj = kd.hint(data(j));
      expect(c == -kd.compare(data(j), data(i)), d.what, ": compare is not antisymmetric at ", i, ",", j);
      if (c < 0) expect(hi <= hj, d.what, ": a < b but hint(a) > hint(b) at ", i, ",", j);
      if (c == 0) expect(hi == hj, d.what, ": equal keys with different hints at ", i, ",", j);
      if (hi == hj) {
        const int from = kd.compare_from(data(i), data(j), kd.tie_start(hi));
        expect((from < 0) == (c < 0) && (from == 0) == (c == 0), d.what, ": tie_start skips a differing part at ", i,
               ",", j);
      }
      if (c == 0 && d.parts.size() == 1) expect(kd.hash(data(i)) == kd.hash(data(j)), d.what, ": equal keys hash apart");
    }
  }
  // hint_range: a key made of the first n parts of tuple i covers every tuple that matches it.
  for (size_t i = 0; i < tuples.size(); i += 7) {
    for (uint32_t n = 1; n <= d.parts.size(); n++) {
      std::string key;
      for (uint32_t k = 0; k < n; k++) {
        const uint8_t* v = ce::mp::field(data(i), d.parts[k].fieldno);
        key.append(reinterpret_cast<const char*>(v), size_t(ce::mp::next(v) - v));
      }
      const uint8_t* first = reinterpret_cast<const uint8_t*>(key.data());
      uint64_t lo, hi;
      kd.hint_range(first, n, &lo, &hi);
      for (size_t j = 0; j < tuples.size(); j++) {
        if (kd.compare_with_key(data(j), first, n) != 0) continue;
        const uint64_t h = kd.hint(data(j));
        expect(lo <= h && h <= hi, d.what, ": tuple ", j, " matches key of ", n, " parts but its hint is outside the range");
      }
    }
  }
}

}  // namespace

int main() {
  // Type checks and their codes.
  const KeyDef kd("pk", {KeyPart{0, FieldType::kUnsigned}, KeyPart{2, FieldType::kString}});
  kd.check_tuple(Mp().array(3).uint(1).nil().str("a").data());
  kd.check_tuple(Mp().array(3).f64(9007199254740992.0).nil().str("a").data());  // float64-encoded unsigned
  expect_error(ce::err::kFieldMissing, [&] { kd.check_tuple(Mp().array(2).uint(1).str("a").data()); }, "short tuple");
  expect_error(ce::err::kFieldType, [&] { kd.check_tuple(Mp().array(3).integer(-1).nil().str("a").data()); },
               "negative unsigned");
  expect_error(ce::err::kFieldType, [&] { kd.check_tuple(Mp().array(3).f64(1.5).nil().str("a").data()); },
               "fractional unsigned");
  expect_error(ce::err::kFieldType, [&] { kd.check_tuple(Mp().array(3).uint(1).nil().uint(2).data()); },
               "number for string");
  expect_error(ce::err::kFieldType, [&] { kd.check_tuple(Mp().array(3).f64(18446744073709551616.0).nil().str("a").data()); },
               "2^64 as unsigned");
  const KeyDef num("n", {KeyPart{0, FieldType::kNumber}});
  expect_error(ce::err::kFieldType, [&] { num.check_tuple(Mp().array(1).f64(std::nan("")).data()); }, "NaN number");
  expect_error(ce::err::kKeyType, [&] { num.check_key(Mp().array(1).f64(std::nan("")).data()); }, "NaN key");
  expect_error(ce::err::kKeyPartCount, [&] { kd.check_key(Mp().array(3).uint(1).str("a").uint(2).data()); },
               "too many key parts");
  expect_error(ce::err::kKeyType, [&] { kd.check_key(Mp().array(2).uint(1).uint(2).data()); }, "key part type");
  expect(kd.check_key(Mp().array(1).uint(1).data()) == 1, "a 1-part key of a 2-part def");
  const KeyDef integer("i", {KeyPart{0, FieldType::kInteger}});
  expect_error(ce::err::kFieldType, [&] { integer.check_tuple(Mp().array(1).f64(18446744073709551616.0).data()); }, "2^64 as integer");
  integer.check_tuple(Mp().array(1).f64(-9223372036854775808.0).data());

  // Order across encodings.
  auto cmp = [&](const Mp& a, const Mp& b) { return num.compare(a.data(), b.data()); };
  expect(cmp(Mp().array(1).uint(5), Mp().array(1).f64(5.0)) == 0, "5 != 5.0");
  expect(cmp(Mp().array(1).f64(-0.0), Mp().array(1).uint(0)) == 0, "-0 != 0");
  expect(cmp(Mp().array(1).uint(9007199254740993ull), Mp().array(1).f64(9007199254740992.0)) > 0,
         "2^53+1 <= float64 2^53");
  expect(cmp(Mp().array(1).integer(-3), Mp().array(1).f64(-2.5)) < 0, "-3 >= -2.5");
  expect(cmp(Mp().array(1).uint(UINT64_MAX), Mp().array(1).f64(18446744073709551616.0)) < 0, "2^64-1 >= 2^64");
  const KeyDef str("s", {KeyPart{0, FieldType::kString}});
  expect(str.compare(Mp().array(1).str("abc").data(), Mp().array(1).str("abcd").data()) < 0, "prefix is not first");
  expect(str.compare(Mp().array(1).str(std::string(40, 'a')).data(), Mp().array(1).str("b").data()) < 0,
         "str8 vs fixstr order");
  const KeyDef boolean("b", {KeyPart{0, FieldType::kBoolean}});
  expect(boolean.compare(Mp().array(1).boolean(false).data(), Mp().array(1).boolean(true).data()) < 0, "false >= true");

  // Hint rules over random values.
  const Def defs[] = {
      {"number", {KeyPart{0, FieldType::kNumber}}, false},
      {"unsigned", {KeyPart{1, FieldType::kUnsigned}}, false},
      {"integer", {KeyPart{0, FieldType::kInteger}}, false},
      {"string", {KeyPart{2, FieldType::kString}}, false},
      {"boolean", {KeyPart{0, FieldType::kBoolean}}, false},
      {"string+number", {KeyPart{2, FieldType::kString}, KeyPart{0, FieldType::kNumber}}, false},
      {"composite number+unsigned", {KeyPart{0, FieldType::kNumber}, KeyPart{1, FieldType::kUnsigned}}, true},
      {"composite integer+number", {KeyPart{1, FieldType::kInteger}, KeyPart{0, FieldType::kNumber}}, true},
      {"composite asked of number+string", {KeyPart{0, FieldType::kNumber}, KeyPart{2, FieldType::kString}}, true},
      {"composite ties, number+unsigned", {KeyPart{0, FieldType::kNumber}, KeyPart{1, FieldType::kUnsigned}}, true, true},
      {"composite ties, unsigned+number", {KeyPart{2, FieldType::kUnsigned}, KeyPart{0, FieldType::kNumber}}, true, true},
      {"composite ties, integer+integer", {KeyPart{1, FieldType::kInteger}, KeyPart{2, FieldType::kInteger}}, true, true},
  };
  uint32_t seed = uint32_t(test::g_seed);
  for (const Def& d : defs) check_hint_rules(d, seed++);
  std::puts("key_def_test: ok");
  return 0;
}
