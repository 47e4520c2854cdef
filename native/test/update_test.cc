// update.h and Space::update/upsert: operators over every numeric encoding, the exact integer
// overflow bounds, splice bounds, hostile operation bytes (random and truncated: an error, never
// a crash), and statements that fail leaving every index as it was, inside transactions too.
#include "update.h"

#include "msgpack.h"
#include "space.h"
#include "test_util.h"

using test::expect;
using test::expect_error;
using test::Mp;
using test::Rng;

namespace {

std::string run_ops(const std::string& tuple, const std::string& ops, bool skip = false) {
  ce::UpdateOps u;
  u.parse(reinterpret_cast<const uint8_t*>(ops.data()), ops.size());
  std::string out;
  u.apply(reinterpret_cast<const uint8_t*>(tuple.data()), &out, skip);
  return out;
}

std::string op3(char op, int64_t field, const std::string& arg) {
  Mp m;
  m.array(1).array(3).str(std::string(1, op)).integer(field).raw(arg);
  return m.str();
}

void arithmetic() {
  const std::string u64max = Mp().uint(UINT64_MAX).str();
  // 2^64 - 1 + 0 fits; + 1 overflows; - 1 is fine.
  const std::string t = Mp().array(2).uint(1).uint(UINT64_MAX).str();
  expect(run_ops(t, op3('+', 2, Mp().uint(0).str())) == t, "u64max + 0");
  expect_error("ER_UPDATE_INTEGER_OVERFLOW", [&] { run_ops(t, op3('+', 2, Mp().uint(1).str())); }, "u64max + 1");
  expect(run_ops(t, op3('-', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).uint(UINT64_MAX - 1).str(), "u64max - 1");
  const std::string n = Mp().array(2).uint(1).integer(INT64_MIN).str();
  expect_error("ER_UPDATE_INTEGER_OVERFLOW", [&] { run_ops(n, op3('-', 2, Mp().uint(1).str())); }, "int64min - 1");
  expect_error("ER_UPDATE_INTEGER_OVERFLOW", [&] { run_ops(n, op3('+', 2, Mp().integer(-1).str())); }, "int64min + -1");
  // uint - bigger uint goes negative as an integer.
  const std::string small = Mp().array(2).uint(1).uint(3).str();
  expect(run_ops(small, op3('-', 2, Mp().uint(10).str())) == Mp().array(2).uint(1).integer(-7).str(), "3 - 10");
  // A float32 field or argument gives a float64.
  const std::string f = Mp().array(2).uint(1).f32(1.5f).str();
  expect(run_ops(f, op3('+', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).f64(2.5).str(), "float32 + 1");
  expect(run_ops(small, op3('+', 2, Mp().f64(0.5).str())) == Mp().array(2).uint(1).f64(3.5).str(), "3 + 0.5");
  // Bitwise: a float64-encoded integer counts as unsigned; a negative or fractional one does not.
  const std::string big = Mp().array(2).uint(1).f64(4294967296.0 * 3).str();
  expect(run_ops(big, op3('&', 2, Mp().uint(UINT64_MAX).str())) == Mp().array(2).uint(1).f64(4294967296.0 * 3).str(),
         "float64 integer & mask");
  // An integer result is written as msgpackr writes that number: 32-bit encodings, then float64 up
  // to 2^53 (a number on read, not a BigInt), then 64-bit integers. An integral float64 up to 2^53
  // is an integer operand, so + stays exact past 2^53.
  const std::string u32max = Mp().array(2).uint(1).uint(UINT32_MAX).str();
  expect(run_ops(u32max, op3('+', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).f64(4294967296.0).str(), "2^32 - 1 + 1");
  const std::string i32min = Mp().array(2).uint(1).integer(INT32_MIN).str();
  expect(run_ops(i32min, op3('-', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).f64(-2147483649.0).str(), "int32 min - 1");
  expect(run_ops(i32min, op3('+', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).integer(INT32_MIN + 1).str(), "int32 min + 1");
  const std::string near = Mp().array(2).uint(1).f64(9007199254740991.0).str();
  expect(run_ops(near, op3('+', 2, Mp().uint(2).str())) == Mp().array(2).uint(1).uint((uint64_t(1) << 53) + 1).str(), "f64 2^53 - 1 + 2");
  expect(run_ops(near, op3('+', 2, Mp().uint(1).str())) == Mp().array(2).uint(1).f64(9007199254740992.0).str(), "f64 2^53 - 1 + 1");
  expect(run_ops(near, op3('-', 2, Mp().f64(9007199254740990.0).str())) == Mp().array(2).uint(1).uint(1).str(), "f64 - f64, integral");
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(f, op3('|', 2, Mp().uint(1).str())); }, "1.5 | 1");
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(n, op3('^', 2, Mp().uint(1).str())); }, "negative ^ 1");
  // Skipped in upsert mode: the tuple comes back unchanged.
  expect(run_ops(t, op3('+', 2, Mp().uint(1).str()), true) == t, "skip an overflow");
}

void splice_and_fields() {
  const std::string t = Mp().array(2).uint(1).str(std::string(40, 'a')).str();  // str8
  Mp ops;
  ops.array(1).array(5).str(":").integer(2).integer(-1).integer(0).str(std::string(300, 'b'));
  const std::string out = run_ops(t, ops.str());
  expect(out == Mp().array(2).uint(1).str(std::string(40, 'a') + std::string(300, 'b')).str(), "splice to str16");
  // Position and length at INT64_MIN (no negation: UBSan sees one): out of bound, and a length
  // that counts from the end past the start cuts nothing, as -2^40 does.
  const std::string hello = Mp().array(2).uint(1).str("hello").str();
  auto splice = [&](int64_t pos, int64_t len) {
    Mp m;
    m.array(1).array(5).str(":").integer(2).integer(pos).integer(len).str("x");
    return m.str();
  };
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(hello, splice(INT64_MIN, 1)); }, "splice at INT64_MIN");
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(hello, splice(-7, 1)); }, "splice at -(len + 2)");
  expect(run_ops(hello, splice(-6, 0)) == Mp().array(2).uint(1).str("xhello").str(), "splice at -(len + 1)");
  expect(run_ops(hello, splice(1, INT64_MIN)) == run_ops(hello, splice(1, -(int64_t(1) << 40))), "length INT64_MIN");
  expect(run_ops(hello, splice(1, INT64_MIN)) == Mp().array(2).uint(1).str("xhello").str(), "length INT64_MIN inserts");
  expect(run_ops(hello, splice(2, -2)) == Mp().array(2).uint(1).str("hxlo").str(), "length -2 from the end");
  // '#' of every field, then '=' appends at count + 1.
  const std::string one = Mp().array(3).uint(1).uint(2).uint(3).str();
  Mp del;
  del.array(2).array(3).str("#").integer(1).uint(100).array(3).str("=").integer(1).str("x");
  expect(run_ops(one, del.str()) == Mp().array(1).str("x").str(), "# all then = 1");
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(one, op3('=', 5, Mp().nil().str())); }, "= past count + 1");
  expect_error("ER_UPDATE_FIELD", [&] { run_ops(one, op3('#', -4, Mp().uint(1).str())); }, "# -4 of 3");
  expect(run_ops(one, op3('!', -4, Mp().nil().str())) == Mp().array(4).nil().uint(1).uint(2).uint(3).str(), "! -4 of 3");
}

void hostile_ops() {
  const std::string t = Mp().array(2).uint(1).uint(2).str();
  const std::string bad[] = {
      "", Mp().uint(1).str(), Mp().array(1).uint(1).str(), Mp().array(1).array(3).str("++").integer(2).uint(1).str(),
      Mp().array(1).array(3).str("+").integer(0).uint(1).str(), Mp().array(1).array(3).str("+").f64(1.5).uint(1).str(),
      Mp().array(1).array(3).str("+").uint(uint64_t(1) << 40).uint(1).str(),
      Mp().array(1).array(3).str("+").integer(2).f64(NAN).str(),
      Mp().array(1).array(3).str("#").integer(2).uint(0).str(),
      Mp().array(1).array(4).str(":").integer(2).uint(0).uint(0).str(),
      Mp().array(1).array(5).str(":").integer(2).uint(0).uint(0).bin("x").str(),
      Mp().array(1).array(3).bin("+").integer(2).uint(1).str(),
      // strchr finds the operator set's terminating NUL: "\0" must not pass as an operator.
      Mp().array(1).array(3).str(std::string(1, '\0')).integer(2).uint(1).str(),
  };
  for (const std::string& ops : bad) expect_error("ER_UPDATE_OP", [&] { run_ops(t, ops); }, "bad ops");
  // Random bytes and every truncation of good ops: an error or a result, never a crash.
  Rng r(test::g_seed);
  Mp good;
  good.array(3).array(3).str("+").integer(2).uint(1).array(5).str(":").integer(3).integer(1).integer(0).str("xy")
      .array(3).str("!").integer(-1).array(2).str("a").map(1).str("k").nil();
  for (size_t cut = 0; cut < good.size(); cut++) {
    expect_error("ER_UPDATE_OP", [&] { run_ops(t, good.str().substr(0, cut)); }, "truncated ops");
  }
  for (int i = 0; i < 20000; i++) {
    std::string ops = good.str();
    for (int k = 0; k < 3; k++) ops[r.below(uint32_t(ops.size()))] = char(r.next());
    try {
      const std::string out = run_ops(Mp().array(3).uint(1).uint(2).str("abc").str(), ops, r.below(2) == 0);
      expect(ce::mp::is_array(reinterpret_cast<const uint8_t*>(out.data())), "result is an array");
    } catch (const ce::DbError& e) {
      const std::string code = e.code();
      expect(code == "ER_UPDATE_OP" || code == "ER_UPDATE_FIELD" || code == "ER_UPDATE_INTEGER_OVERFLOW", code);
    }
  }
}

std::string key(uint64_t id) { return Mp().array(1).uint(id).str(); }

void statements() {
  ce::Space s("s", 1 << 20);
  s.create_index("pk", "HASH", true, {{0, ce::FieldType::kUnsigned}});
  s.create_index("name", "TREE", true, {{1, ce::FieldType::kString}});
  s.create_index("n", "TREE", false, {{2, ce::FieldType::kNumber}});
  for (uint64_t id = 1; id <= 20; id++) {
    const std::string t = Mp().array(3).uint(id).str("u" + std::to_string(id)).uint(id % 4).str();
    s.insert(reinterpret_cast<const uint8_t*>(t.data()), t.size(), false);
  }
  auto update = [&](uint64_t id, const std::string& ops) {
    const std::string k = key(id);
    return s.update(0, reinterpret_cast<const uint8_t*>(k.data()), k.size(), reinterpret_cast<const uint8_t*>(ops.data()),
                    ops.size());
  };
  expect_error("ER_DUPLICATE_KEY", [&] { update(3, op3('=', 2, Mp().str("u4").str())); }, "duplicate name");
  expect_error("ER_FIELD_TYPE", [&] { update(3, op3('=', 3, Mp().str("x").str())); }, "n not a number");
  expect_error("ER_CANT_UPDATE_PRIMARY_KEY", [&] { update(3, op3('+', 1, Mp().uint(100).str())); }, "pk change");
  expect(s.check_integrity().empty(), s.check_integrity());
  const size_t sp = s.begin();
  for (int i = 0; i < 50; i++) expect(update(1 + i % 20, op3('+', 3, Mp().f64(0.5).str())) != nullptr, "update");
  expect(update(99, op3('+', 3, Mp().uint(1).str())) == nullptr, "absent key");
  const std::string up = Mp().array(3).uint(5).str("zz").uint(0).str();
  const std::string ops = op3('=', 2, Mp().str("renamed").str());
  s.upsert(reinterpret_cast<const uint8_t*>(up.data()), up.size(), reinterpret_cast<const uint8_t*>(ops.data()), ops.size());
  expect(s.check_integrity().empty(), s.check_integrity());
  s.rollback(sp);
  expect(s.check_integrity().empty(), s.check_integrity());
  const std::string k = Mp().array(1).str("u5").str();
  expect(s.get(1, reinterpret_cast<const uint8_t*>(k.data()), k.size()) != nullptr, "rollback restored u5");
  expect(s.len() == 20, "len after rollback");
}

}  // namespace

int main() {
  arithmetic();
  splice_and_fields();
  hostile_ops();
  statements();
  std::puts("update_test: ok");
  return 0;
}
