// TTL-aware reads (space.h, ttl.h): a space created with a TTL field hides, from get, select,
// count, min_max and next_visible, every tuple whose TTL is <= now; kNoTtlCheck reads everything;
// insert given now replaces an expired primary-key duplicate, atomically.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "space_util.h"

using ce::IterType;
using test::Mp;

namespace {

std::unique_ptr<ce::Space> ttl_space(const char* pk_kind) {
  auto s = std::make_unique<ce::Space>("ttl", 1 << 20, 1);
  s->create_index("pk", pk_kind, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
  return s;
}

std::string all(ce::Space& s, uint32_t index, double now, uint64_t limit = UINT64_MAX, uint64_t offset = 0) {
  const std::string k = Mp().array(0).str();
  std::string out;
  s.select(index, reinterpret_cast<const uint8_t*>(k.data()), k.size(), IterType::kAll, limit, offset, &out, now);
  return out;
}

std::vector<uint64_t> ids(const std::string& bytes) {
  std::vector<uint64_t> out;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto* end = p + bytes.size();
  while (p < end) {
    ce::mp::Num n;
    ce::mp::read_num(ce::mp::field(p, 0), &n);
    out.push_back(n.u);
    p = ce::mp::next(p);
  }
  return out;
}

size_t count(ce::Space& s, uint32_t index, double now) {
  const std::string k = Mp().array(0).str();
  return s.count(index, reinterpret_cast<const uint8_t*>(k.data()), k.size(), IterType::kAll, now);
}

ce::Tuple* get(ce::Space& s, uint64_t id, double now) {
  const std::string k = Mp().array(1).uint(id).str();
  return s.get(0, reinterpret_cast<const uint8_t*>(k.data()), k.size(), now);
}

void reads(const char* pk_kind) {
  auto s = ttl_space(pk_kind);
  for (uint64_t id = 1; id <= 10; id++) test::insert(*s, id, double(id * 10) + (id % 2 ? 0.5 : 0));
  const std::string ctx = std::string("reads over ") + pk_kind;
  test::expect(count(*s, 0, ce::kNoTtlCheck) == 10, ctx, ": count without a TTL check");
  test::expect(count(*s, 0, 50) == 6 && count(*s, 1, 50) == 6, ctx, ": count at 50");
  test::expect(get(*s, 5, 50.5) == nullptr && get(*s, 5, 50.4) != nullptr && get(*s, 4, 40) == nullptr, ctx, ": get at the boundary");
  test::expect(get(*s, 1, ce::kNoTtlCheck) != nullptr, ctx, ": get without a TTL check");
  test::expect(ids(all(*s, 1, 50)) == std::vector<uint64_t>{5, 6, 7, 8, 9, 10}, ctx, ": select by TTL at 50");
  test::expect(ids(all(*s, 1, 50, 2, 1)) == std::vector<uint64_t>{6, 7}, ctx, ": limit/offset count visible tuples");
  const std::string none = Mp().array(0).str();
  const ce::Tuple* lo = s->min_max(1, reinterpret_cast<const uint8_t*>(none.data()), none.size(), false, 50);
  test::expect(lo != nullptr && test::id_of(lo) == 5, ctx, ": min skips expired");
  test::expect(s->min_max(1, reinterpret_cast<const uint8_t*>(none.data()), none.size(), true, 1e9) == nullptr, ctx,
               ": max with everything expired");
  auto c = test::cursor(*s, 1, IterType::kAll);
  test::expect(test::id_of(s->next_visible(*c, 0)) == 1 && test::id_of(s->next_visible(*c, 35)) == 4, ctx, ": next_visible");
  test::expect(s->len() == 10, ctx, ": len counts what is stored");
  test::expect_sound(*s, ctx);
}

void insert_over_expired(const char* pk_kind) {
  auto s = ttl_space(pk_kind);
  const std::string ctx = std::string("insert over expired, ") + pk_kind;
  test::insert(*s, 1, 10);
  const std::string again = test::tuple_bytes(1, 100, 3);
  const auto* b = reinterpret_cast<const uint8_t*>(again.data());
  test::expect_error(ce::err::kDuplicateKey, [&] { s->insert(b, again.size(), false, 5); }, ctx + ": live duplicate");
  test::expect_error(ce::err::kDuplicateKey, [&] { s->insert(b, again.size(), false); }, ctx + ": no TTL check");
  const size_t sp = s->begin();
  s->insert(b, again.size(), false, 10);
  test::expect(s->len() == 1 && get(*s, 1, 50) != nullptr, ctx, ": replaced");
  s->rollback(sp);
  test::expect(s->len() == 1 && get(*s, 1, 5) != nullptr && get(*s, 1, 10) == nullptr, ctx, ": rolled back");
  s->insert(b, again.size(), false, 11);
  test::expect(get(*s, 1, 50) != nullptr, ctx, ": replaced outside a transaction");
  test::expect_sound(*s, ctx);
}

void rule() {
  // The daemon's rule: by value, whatever the encoding; NaN, missing and non-numeric never expire.
  const std::string nan = Mp().array(2).uint(1).f64(std::nan("")).str();
  const std::string str = Mp().array(2).uint(1).str("0").str();
  const std::string missing = Mp().array(1).uint(1).str();
  const std::string big = Mp().array(2).uint(1).uint(UINT64_MAX).str();
  auto p = [](const std::string& x) { return reinterpret_cast<const uint8_t*>(x.data()); };
  test::expect(!ce::ttl_expired(p(nan), 1, 1e300) && !ce::ttl_expired(p(str), 1, 1e300) &&
                   !ce::ttl_expired(p(missing), 1, 1e300),
               "rule: never expire");
  test::expect(!ce::ttl_expired(p(big), 1, 1.8e19) && ce::ttl_expired(p(big), 1, 1.9e19), "rule: uint64 by value");
}

// insert_many reads ahead: while it inserts tuple i it prepares tuple i + 8 of the batch. Every
// batch length from 0 to 40 (around the look-ahead) and a few longer ones, each batch the whole
// buffer (its last tuple ends exactly at the end), given a `now` that hides some tuples; then
// batches whose last tuple is a duplicate or malformed, which insert nothing. The last case
// declares millions of tuples over a buffer of millions of bytes, so the engine reserves a large,
// fresh (never written) span table past the valid tuples: a look-ahead one past the last valid
// span reads there, which fails even without a sanitizer.
void insert_many_lengths(const char* pk_kind) {
  const std::string ctx0 = std::string("insert_many lengths over ") + pk_kind;
  auto batch = [](uint64_t n, uint64_t first_id) {
    Mp m;
    m.array(uint32_t(n));
    for (uint64_t j = 0; j < n; j++) m.raw(test::tuple_bytes(first_id + j, double((first_id + j) * 10), uint32_t(j % 3)));
    return m;
  };
  // An exactly sized heap copy, so that ASan sees a read past its end.
  auto insert_many = [](ce::Space& s, const std::string& bytes, double now) {
    std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size()]);
    std::memcpy(exact.get(), bytes.data(), bytes.size());
    return s.insert_many(exact.get(), bytes.size(), now);
  };
  std::vector<uint64_t> lengths;
  for (uint64_t n = 0; n <= 40; n++) lengths.push_back(n);
  for (uint64_t n : {63, 64, 65, 255, 256, 1000}) lengths.push_back(n);
  for (uint64_t n : lengths) {
    const std::string ctx = ctx0 + ", " + std::to_string(n) + " tuples";
    auto s = ttl_space(pk_kind);
    test::insert(*s, 100000, 1e6);  // one tuple before the batch, live at now = 50
    test::expect(insert_many(*s, batch(n, 1).str(), 50) == n, ctx, ": the count returned");
    test::expect(count(*s, 0, ce::kNoTtlCheck) == n + 1, ctx, ": count without a TTL check");
    test::expect(count(*s, 0, 50) == (n > 5 ? n - 5 : 0) + 1 && count(*s, 1, 50) == count(*s, 0, 50), ctx, ": count at 50");
    std::vector<uint64_t> want;
    for (uint64_t id = 1; id <= n; id++) want.push_back(id);
    want.push_back(100000);
    std::vector<uint64_t> got = ids(all(*s, 0, ce::kNoTtlCheck));
    if (std::string(pk_kind) == "HASH") std::sort(got.begin(), got.end());
    test::expect(got == want, ctx, ": the tuples stored");
    for (uint64_t id = 1; id <= n; id++) test::expect((get(*s, id, 50) != nullptr) == (id > 5), ctx, ": get(", id, ") at 50");
    test::expect_sound(*s, ctx);
    if (n == 0) continue;
    // Another batch with its last tuple a duplicate of a live one, or malformed: nothing stays.
    Mp dup = batch(n, 200000);
    dup.raw(test::tuple_bytes(100000, 1e6));
    std::string dup_bytes = dup.str();
    const std::string header = Mp().array(uint32_t(n + 1)).str();
    dup_bytes.replace(0, Mp().array(uint32_t(n)).size(), header);
    test::expect_error(ce::err::kDuplicateKey, [&] { insert_many(*s, dup_bytes, 50); }, ctx + ": a duplicate last");
    std::string bad_bytes = batch(n, 200000).str() + "\xc1";
    bad_bytes.replace(0, Mp().array(uint32_t(n)).size(), header);
    test::expect_error(ce::err::kTupleFormat, [&] { insert_many(*s, bad_bytes, 50); }, ctx + ": a malformed last");
    test::expect(count(*s, 0, ce::kNoTtlCheck) == n + 1 && get(*s, 200000, ce::kNoTtlCheck) == nullptr, ctx,
                 ": a failed batch left tuples");
    test::expect_sound(*s, ctx);
  }
  // 4,000,000 declared tuples over a 4 MB buffer: n valid ones, then malformed bytes.
  for (uint64_t n : {8, 9, 10, 17}) {
    const std::string ctx = ctx0 + ", " + std::to_string(n) + " tuples then a malformed one in a 4 MB batch";
    auto s = ttl_space(pk_kind);
    std::string bytes = Mp().array(4000000).str() + batch(n, 1).str().substr(Mp().array(uint32_t(n)).size());
    bytes.append(4000000, '\xc1');
    test::expect_error(ce::err::kTupleFormat, [&] { insert_many(*s, bytes, 50); }, ctx);
    test::expect(count(*s, 0, ce::kNoTtlCheck) == 0, ctx, ": tuples left");
    test::expect_sound(*s, ctx);
  }
}

}  // namespace

int main() {
  reads("TREE");
  reads("HASH");
  insert_over_expired("TREE");
  insert_over_expired("HASH");
  rule();
  insert_many_lengths("TREE");
  insert_many_lengths("HASH");
  std::puts("space_ttl_test: ok");
  return 0;
}
