// Cursors (index/tree_index.h, index/hash_index.h) over a real Space: a walk that runs while
// tuples are inserted and erased between its steps (enough inserts to rehash a HASH table and
// split B+tree leaves) returns every tuple that lived through the whole walk at least once,
// never returns an erased one after its erase, and ends; a TREE walk returns tuples in order and
// never twice; a bounded walk ends even when every step appends a larger key; next_batch()
// agrees with next(); save()/restore() and at_end() keep the position. Also the HASH iterator
// rules and the engine's get/min/max rules, which the binding only forwards.
#include <algorithm>
#include <map>

#include "index/hash_index.h"
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

// HASH walks across many incremental growths: cursors opened at different sizes, each stepped
// while the space grows from 100 to about 60,000 tuples (a dozen migrations, each spread over
// thousands of inserts), with erases, transactions rolled back or committed in the middle of a
// migration, and an allocation failure where a growth begins. Every tuple that lives through a
// walk (never erased during it) is returned, no erased tuple is returned, and every walk ends.
void growth_walks(uint32_t seed) {
  test::Rng r(seed);
  auto s = test::make_space("HASH", true);
  const auto& table = static_cast<const ce::HashIndex&>(s->index(0)).table();
  std::set<uint64_t> present;
  uint64_t counter = 0;
  auto fresh_id = [&] { return (counter++ * 40503 + seed) % 1000003; };
  for (int i = 0; i < 100; i++) {
    const uint64_t id = fresh_id();
    test::insert(*s, id, r.below(1000));
    present.insert(id);
  }
  struct Walk {
    std::unique_ptr<ce::Cursor> c;
    std::set<uint64_t> at_start, removed, seen;
    size_t steps = 0;
  };
  std::vector<Walk> walks;
  size_t finished = 0, migrating_steps = 0, failures = 0, undisturbed = 0;
  uint64_t epochs_seen = table.epoch();
  // An open transaction: the set before it, the ids removed inside it.
  bool in_txn = false;
  size_t savepoint = 0;
  std::set<uint64_t> txn_before;
  uint32_t txn_left = 0;
  for (int iter = 0; iter < 15000; iter++) {
    if (iter % 1500 == 0 && walks.size() < 8) {
      Walk w;
      w.c = test::cursor(*s, 0, IterType::kAll);
      w.at_start = present;
      walks.push_back(std::move(w));
    }
    for (auto it = walks.begin(); it != walks.end();) {
      Tuple* batch[8];
      const uint32_t want = 1 + r.below(8);
      const uint32_t n = it->c->next_batch(batch, want);
      for (uint32_t i = 0; i < n; i++) {
        const uint64_t id = test::id_of(batch[i]);
        expect(present.count(id) == 1, "HASH growth: the walk returned erased tuple ", id, " (seed ", seed, ")");
        it->seen.insert(id);
      }
      expect(++it->steps < 200000, "HASH growth: a walk does not end");
      it->c->detach();
      if (n < want) {
        for (uint64_t id : it->at_start)
          if (it->removed.count(id) == 0)
            expect(it->seen.count(id) == 1, "HASH growth: skipped tuple ", id, " (seed ", seed, ", iteration ", iter, ")");
        finished++;
        it = walks.erase(it);
      } else {
        ++it;
      }
    }
    if (table.migrating()) migrating_steps++;
    if (!in_txn && r.below(40) == 0) {
      in_txn = true;
      savepoint = s->begin();
      txn_before = present;
      txn_left = 1 + r.below(30);
    }
    const uint32_t inserts = 3 + r.below(4), erases = r.below(3);
    for (uint32_t k = 0; k < inserts; k++) {
      const uint64_t id = fresh_id();
      // An allocation failure: when the insert begins a growth, it fails and nothing changes.
      if (!table.migrating() && table.full() && r.below(2) == 0) {
        const size_t len = s->len(), cap = table.capacity();
        const uint64_t epoch = table.epoch();
        ce::g_hash_alloc_hook = [](size_t) { throw std::bad_alloc(); };
        bool threw = false;
        try {
          test::insert(*s, id, r.below(1000));
        } catch (const std::bad_alloc&) {
          threw = true;
        }
        ce::g_hash_alloc_hook = nullptr;
        expect(threw, "HASH growth: full() but no growth began");
        expect(s->len() == len && table.capacity() == cap && table.epoch() == epoch && !table.migrating(),
               "HASH growth: a failed growth changed the space");
        failures++;
      }
      test::insert(*s, id, r.below(1000));
      present.insert(id);
    }
    for (uint32_t k = 0; k < erases && !present.empty(); k++) {
      auto it = present.lower_bound(r.below(1000003));
      if (it == present.end()) it = present.begin();
      expect(test::remove(*s, *it), "remove failed");
      for (auto& w : walks) w.removed.insert(*it);
      present.erase(it);
    }
    if (in_txn && --txn_left == 0) {
      in_txn = false;
      if (r.below(2) == 0) {
        // Undone: inserted tuples go, erased ones come back (the walks may skip those, which
        // count as removed during them).
        for (uint64_t id : present)
          if (txn_before.count(id) == 0) for (auto& w : walks) w.removed.insert(id);
        for (uint64_t id : txn_before)
          if (present.count(id) == 0) for (auto& w : walks) w.removed.insert(id);
        s->rollback(savepoint);
        present = txn_before;
      } else {
        s->commit(savepoint);
      }
    }
    epochs_seen = std::max(epochs_seen, table.epoch());
    if (table.migrating() && r.below(50) == 0) {  // an undisturbed walk returns each tuple once
      auto c = test::cursor(*s, 0, IterType::kAll);
      size_t count = 0;
      std::set<uint64_t> once;
      while (Tuple* t = c->next()) {
        once.insert(test::id_of(t));
        count++;
      }
      expect(count == present.size() && once == present, "HASH growth: a walk during a migration returned ", count,
             " tuples for ", present.size());
      undisturbed++;
    }
    if (iter % 3000 == 2999) {
      test::expect_sound(*s, "HASH growth");
      expect(test::ids(*s) == present, "HASH growth: contents differ from the model");
    }
  }
  if (in_txn) s->commit(savepoint);
  while (!walks.empty()) {  // the rest run to their end with the table still
    Walk& w = walks.back();
    while (Tuple* t = w.c->next()) w.seen.insert(test::id_of(t));
    for (uint64_t id : w.at_start)
      if (w.removed.count(id) == 0) expect(w.seen.count(id) == 1, "HASH growth: skipped tuple ", id, " at the end");
    finished++;
    walks.pop_back();
  }
  test::expect_sound(*s, "HASH growth");
  expect(test::ids(*s) == present, "HASH growth: final contents differ from the model");
  expect(epochs_seen >= 10 && migrating_steps > 1000 && failures > 0 && finished >= 8 && undisturbed > 0,
         "HASH growth: too little growth exercised (epochs ", epochs_seen, ", migrating steps ", migrating_steps,
         ", failures ", failures, ", walks ", finished, ")");
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
  for (int round = 0; round < 3; round++) growth_walks(seed++);
  bounded_walk_ends();
  save_restore_at_end("TREE");
  save_restore_at_end("HASH");
  rules();
  std::puts("cursor_test: ok");
  return 0;
}
