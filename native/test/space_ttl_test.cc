// TTL-aware reads (space.h, ttl.h): a space created with a TTL field hides, from get, select,
// count, min_max and next_visible, every tuple whose TTL is <= now; kNoTtlCheck reads everything;
// insert given now replaces an expired primary-key duplicate, atomically.
#include <cmath>
#include <cstdio>
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

}  // namespace

int main() {
  reads("TREE");
  reads("HASH");
  insert_over_expired("TREE");
  insert_over_expired("HASH");
  rule();
  std::puts("space_ttl_test: ok");
  return 0;
}
