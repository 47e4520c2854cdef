// Cursors (index/tree_index.h, index/hash_index.h) over a real Space: a walk that runs while
// tuples are inserted and erased between its steps (enough inserts to rehash a HASH table and
// split B+tree leaves) returns every tuple that lived through the whole walk at least once,
// never returns an erased one after its erase, and ends; a TREE walk returns tuples in order and
// never twice; a bounded walk ends even when every step appends a larger key; next_batch()
// agrees with next(); save()/restore() and at_end() keep the position. Also the HASH iterator
// rules and the engine's get/min/max rules, which the binding only forwards.
#include <algorithm>
#include <map>

#include "space_util.h"

using ce::IterType;
using ce::Tuple;
using test::expect;
using test::Mp;

namespace {

void churn_walk(const char* kind, IterType type, uint32_t seed, bool batches) {
  test::Rng r(seed);
  auto s = test::make_space(kind, true);
  uint64_t next_id = 0;
  std::set<uint64_t> present;
  for (int i = 0; i < 3000; i++) {
    const uint64_t id = next_id++ * 7 % 100003;
    test::insert(*s, id, r.below(1000));
    present.insert(id);
  }
  const std::set<uint64_t> at_start = present;
  std::set<uint64_t> removed_during, seen;
  std::vector<uint64_t> order;
  auto c = test::cursor(*s, 0, type);
  const bool reverse = type == IterType::kLe;
  size_t steps = 0;
  for (;;) {
    Tuple* batch[16];
    const uint32_t want = batches ? 1 + r.below(16) : 1;
    const uint32_t n = c->next_batch(batch, want);
    for (uint32_t i = 0; i < n; i++) {
      const uint64_t id = test::id_of(batch[i]);
      expect(present.count(id) == 1, kind, ": the walk returned erased tuple ", id);
      if (std::string(kind) == "TREE") {
        expect(seen.count(id) == 0, kind, ": tuple ", id, " returned twice");
        if (!order.empty()) expect(reverse ? id < order.back() : id > order.back(), kind, ": out of order");
      }
      seen.insert(id);
      order.push_back(id);
    }
    if (n < want) break;
    expect(++steps < 20000, kind, ": the walk does not end");
    c->detach();  // control returns to JavaScript between steps
    // Between steps: inserts (often enough to rehash or split) and erases of random tuples,
    // including the one just returned.
    const uint32_t ops = r.below(4);
    for (uint32_t k = 0; k < ops; k++) {
      if (r.below(2) > 0) {
        const uint64_t id = r.below(200000);
        if (present.count(id)) continue;
        test::insert(*s, id, r.below(1000));
        present.insert(id);
      } else if (!present.empty()) {
        auto it = present.lower_bound(r.below(200000));
        if (it == present.end()) it = present.begin();
        if (r.below(4) == 0 && !order.empty() && present.count(order.back())) it = present.find(order.back());
        expect(test::remove(*s, *it), "remove failed");
        removed_during.insert(*it);
        present.erase(it);
      }
    }
  }
  for (uint64_t id : at_start)
    if (removed_during.count(id) == 0) expect(seen.count(id) == 1, kind, ": skipped tuple ", id, " (seed ", seed, ")");
  test::expect_sound(*s, kind);
}

void bounded_walk_ends() {
  auto s = test::make_space("TREE", false);
  for (uint64_t id = 0; id < 500; id++) test::insert(*s, id, 1);
  auto c = test::cursor(*s, 0, IterType::kAll, Mp().array(0), /*bounded=*/true);
  uint64_t next = 500, count = 0;
  while (Tuple* t = c->next()) {
    expect(test::id_of(t) < 500, "the bounded walk went past its bound");
    count++;
    c->detach();
    test::insert(*s, next++, 1);  // always beyond the bound
    test::insert(*s, next++, 1);
  }
  expect(count == 500, "the bounded walk returned ", count, " of 500");
  // Unbounded, the same walk would keep finding the appended keys.
  auto u = test::cursor(*s, 0, IterType::kAll);
  uint64_t unbounded = 0;
  while (u->next() != nullptr && unbounded < 5000) {
    unbounded++;
    u->detach();
    test::insert(*s, next++, 1);
  }
  expect(unbounded == 5000, "an unbounded walk stopped at its starting end");
}

void save_restore_at_end(const char* kind) {
  auto s = test::make_space(kind, false);
  for (uint64_t id = 0; id < 100; id++) test::insert(*s, id, 1);
  auto c = test::cursor(*s, 0, IterType::kAll);
  for (int i = 0; i < 40; i++) c->next();
  c->save();
  std::vector<uint64_t> first;
  for (int i = 0; i < 10; i++) first.push_back(test::id_of(c->next()));
  expect(!c->at_end(), kind, ": at_end() mid-walk");
  c->restore();
  for (int i = 0; i < 10; i++) expect(test::id_of(c->next()) == first[i], kind, ": restore() lost the position");
  while (c->next() != nullptr) {
  }
  expect(c->at_end() && c->exhausted(), kind, ": at_end() after the walk");
  c->reset();
  expect(!c->at_end() && c->next() != nullptr, kind, ": reset() does not start over");
}

void rules() {
  auto s = test::make_space("HASH", true);
  for (uint64_t id = 0; id < 10; id++) test::insert(*s, id, 100 - id);
  const Mp none = Mp().array(0), one = Mp().array(1).uint(3);
  test::expect_error(ce::err::kIteratorType, [&] { test::cursor(*s, 0, IterType::kGe, one); }, "HASH GE");
  test::expect_error(ce::err::kIteratorType, [&] { test::cursor(*s, 0, IterType::kLt); }, "HASH LT");
  expect(test::cursor(*s, 0, IterType::kEq, one)->next() != nullptr, "HASH EQ with a full key");
  test::expect_error(ce::err::kUnsupported, [&] { s->min_max(0, none.data(), none.size(), true); }, "HASH max()");
  Tuple* mx = s->min_max(1, none.data(), none.size(), true);
  expect(mx != nullptr && test::id_of(mx) == 0, "max() of the ttl index");
  test::expect_error(ce::err::kUnsupported, [&] { s->get(1, one.data(), one.size()); }, "get() on a non-unique index");
  test::expect_error(ce::err::kKeyPartCount, [&] { std::string out; s->remove(none.data(), none.size(), &out); },
                     "delete() with a partial key");
  test::expect_error(ce::err::kNoSuchIndex, [&] { test::cursor(*s, 7, IterType::kAll); }, "no index 7");
  test::expect_error(ce::err::kIllegalParams, [&] { s->create_index("h2", "HASH", false, {ce::KeyPart{1, ce::FieldType::kNumber}}); },
                     "non-unique HASH");
  test::expect_error(ce::err::kIllegalParams, [&] { s->create_index("x", "RTREE", true, {ce::KeyPart{1, ce::FieldType::kNumber}}); },
                     "unknown kind");
  expect(s->count(1, Mp().array(1).uint(95).data(), Mp().array(1).uint(95).size(), IterType::kLe) == 5, "count LE 95");
}

}  // namespace

int main() {
  uint32_t seed = uint32_t(test::g_seed);
  for (int round = 0; round < 3; round++) {
    churn_walk("TREE", IterType::kAll, seed++, false);
    churn_walk("TREE", IterType::kAll, seed++, true);
    churn_walk("TREE", IterType::kLe, seed++, false);
    churn_walk("HASH", IterType::kAll, seed++, false);
    churn_walk("HASH", IterType::kAll, seed++, true);
  }
  bounded_walk_ends();
  save_restore_at_end("TREE");
  save_restore_at_end("HASH");
  rules();
  std::puts("cursor_test: ok");
  return 0;
}
