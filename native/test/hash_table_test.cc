// index/hash_table.h against a model (std::map): insert, find by tuple and by key, erase,
// replace_same, rehash; tuples never move between rehashes (a cursor relies on it), a rehash
// and only a rehash bumps generation(), tombstones do not grow the table under churn at a
// steady size, and every probe still ends.
#include "index/hash_table.h"

#include <map>
#include <memory>

#include "test_util.h"

using ce::FieldType;
using ce::HashTable;
using ce::KeyDef;
using ce::KeyPart;
using ce::Tuple;
using test::expect;
using test::Mp;

namespace {

struct Store {
  std::vector<std::unique_ptr<uint64_t[]>> blocks;
  Tuple* make(uint64_t id, uint64_t payload) {
    const Mp m = Mp().array(2).uint(id).uint(payload);
    auto block = std::make_unique<uint64_t[]>((sizeof(Tuple) + m.size() + 7) / 8);
    Tuple* t = reinterpret_cast<Tuple*>(block.get());
    t->size = uint32_t(m.size());
    std::memcpy(t->data(), m.data(), m.size());
    blocks.push_back(std::move(block));
    return t;
  }
};

std::string key_of(uint64_t id) { return Mp().uint(id).str(); }

Tuple* find_key(const HashTable& h, uint64_t id) {
  const std::string k = key_of(id);
  return h.find_key(reinterpret_cast<const uint8_t*>(k.data()));
}

// Every slot position of every stored tuple (old-table slots are offset by 2^40).
std::map<const Tuple*, size_t> positions(const HashTable& h) {
  std::map<const Tuple*, size_t> at;
  for (size_t i = 0; i < h.slot_count(); i++)
    if (Tuple* t = h.slot(i)) at[t] = i;
  for (size_t i = 0; i < h.old_slot_count(); i++)
    if (Tuple* t = h.old_slot(i)) at[t] = (size_t(1) << 40) + i;
  return at;
}

size_t g_allocations = 0;

// Growth in bounded steps: 300,000 inserts with erases among them. No insert moves more than
// kMigrateStep old slots, no growth begins while one is under way (the new table always has room
// for the whole migration), no allocation happens but where a growth begins, the load stays at
// or under 80%, and a failed allocation where a growth begins changes nothing.
void growth_steps(uint32_t seed) {
  const KeyDef kd("pk", {KeyPart{0, FieldType::kUnsigned}});
  HashTable h(&kd);
  Store store;
  std::map<uint64_t, Tuple*> model;
  test::Rng r(seed);
  ce::g_hash_alloc_hook = [](size_t) { g_allocations++; };
  size_t growths = 0, failures = 0;
  for (uint64_t id = 0; id < 300000; id++) {
    const uint64_t key = id * 2654435761u % 1000000007u;
    Tuple* t = store.make(key, id);
    const bool was_migrating = h.migrating();
    const size_t migrated = h.migrated(), allocations = g_allocations;
    const uint64_t epoch = h.epoch();
    if (!was_migrating && h.full() && r.below(2) == 0) {
      const auto before = positions(h);
      const size_t cap = h.slot_count();
      ce::g_hash_alloc_hook = [](size_t) { throw std::bad_alloc(); };
      bool threw = false;
      try {
        h.insert(t);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      ce::g_hash_alloc_hook = [](size_t) { g_allocations++; };
      if (threw) {
        failures++;
        expect(h.epoch() == epoch && h.slot_count() == cap && !h.migrating() && h.size() == model.size() &&
                   positions(h) == before,
               "a failed growth changed the table");
      } else {
        expect(false, "full() but no growth began");
      }
    }
    h.insert(t);
    model[key] = t;
    if (was_migrating) {
      expect(h.epoch() == epoch, "a growth began during a migration at insert ", id);
      expect(g_allocations == allocations, "an allocation during a migration");
      if (h.migrating()) expect(h.migrated() - migrated <= HashTable::kMigrateStep, "a step moved too many slots");
    } else if (h.epoch() != epoch) {
      growths++;
      expect(g_allocations == allocations + 1, "a growth without exactly one allocation");
    }
    expect(h.size() * 5 <= h.slot_count() * 4, "load over 80%");
    if (r.below(4) == 0) {  // erase a random earlier one
      auto it = model.lower_bound(r.below(1000000007u));
      if (it == model.end()) it = model.begin();
      expect(h.erase(it->second), "erase failed during growth");
      model.erase(it);
    }
    if (id % 20011 == 0) {
      for (const auto& [k, v] : model) expect(find_key(h, k) == v, "find_key(", k, ") wrong during growth");
      expect(positions(h).size() == model.size(), "slot walk count during growth");
    }
  }
  ce::g_hash_alloc_hook = nullptr;
  for (const auto& [k, v] : model) expect(find_key(h, k) == v, "find_key(", k, ") wrong after growth");
  expect(growths >= 10 && failures > 0, "too little growth exercised: ", growths, " growths, ", failures, " failures");
}

}  // namespace

int main() {
  growth_steps(uint32_t(test::g_seed));
  const KeyDef kd("pk", {KeyPart{0, FieldType::kUnsigned}});
  HashTable h(&kd);
  Store store;
  std::map<uint64_t, Tuple*> model;
  test::Rng r(uint32_t(test::g_seed));

  expect(find_key(h, 1) == nullptr && h.size() == 0 && h.slot_count() == 0, "empty table");
  uint64_t generation = h.generation();
  uint64_t epoch = h.epoch();
  size_t max_capacity_at_steady = 0;
  for (int step = 0; step < 40000; step++) {
    const uint64_t id = r.below(step < 15000 ? 4000 : 1500);
    const uint32_t op = r.below(10);
    const bool track = step % 11 == 0;
    std::map<const Tuple*, size_t> before;
    if (track) before = positions(h);
    const size_t capacity = h.slot_count();
    auto it = model.find(id);
    if (op < 5 && it == model.end()) {
      Tuple* t = store.make(id, step);
      expect(h.find_tuple(t) == nullptr, "find_tuple of an absent key");
      if (r.below(2)) h.insert(t);
      else h.insert_hashed(t, h.hash_of(t->data()));
      model[id] = t;
    } else if (op < 8 && it != model.end()) {
      if (r.below(2)) expect(h.erase(it->second), "erase of a stored tuple failed");
      else expect(h.erase_hashed(it->second, h.hash_of(it->second->data())), "erase_hashed failed");
      expect(!h.erase(it->second), "a second erase succeeded");
      model.erase(it);
    } else if (it != model.end()) {
      Tuple* t = store.make(id, step);
      h.replace_same(it->second, t);
      it->second = t;
    } else {
      Tuple* other = store.make(id, 0);
      expect(!h.erase(other), "erase of an unstored tuple succeeded");
    }
    // Positions: unchanged unless a growth began (a new epoch) or the migration moved the
    // tuple from the old table into the new one.
    const bool rehashed = h.generation() != generation || h.epoch() != epoch;
    if (h.slot_count() != capacity) expect(rehashed, "the capacity changed without a new epoch");
    if (track && !rehashed) {
      const auto after = positions(h);
      for (const auto& [t, pos] : after) {
        auto b = before.find(t);
        if (b != before.end() && !(b->second >= (size_t(1) << 40) && pos < (size_t(1) << 40)))
          expect(b->second == pos, "a tuple moved without a rehash at step ", step);
      }
    }
    generation = h.generation();
    epoch = h.epoch();
    expect(h.size() == model.size(), "size ", h.size(), " != model ", model.size());
    if (step >= 25000) max_capacity_at_steady = std::max(max_capacity_at_steady, h.slot_count());
    if (step % 499 == 0) {
      for (const auto& [k, t] : model) {
        expect(find_key(h, k) == t, "find_key(", k, ") wrong at step ", step);
        expect(h.find_tuple(t) == t, "find_tuple wrong");
      }
      for (uint64_t k = 4000; k < 4020; k++) expect(find_key(h, k) == nullptr, "find_key of a never-stored key");
      expect(positions(h).size() == model.size(), "slot walk count");
      if (h.slot_count() > 0) expect(h.first_empty() < h.slot_count(), "a table without an empty slot");
    }
  }
  // Churn at a steady size (<= 1500 keys) keeps the table bounded: tombstones are reclaimed.
  expect(max_capacity_at_steady <= 1500 * 4, "capacity grew to ", max_capacity_at_steady, " under churn");

  // Equal keys in different encodings find the same tuple.
  const KeyDef num("n", {KeyPart{0, FieldType::kNumber}});
  HashTable hn(&num);
  const Mp five = Mp().array(1).uint(5);
  auto block = std::make_unique<uint64_t[]>(4);
  Tuple* t5 = reinterpret_cast<Tuple*>(block.get());
  t5->size = uint32_t(five.size());
  std::memcpy(t5->data(), five.data(), five.size());
  hn.insert(t5);
  const std::string k50 = Mp().f64(5.0).str();
  expect(hn.find_key(reinterpret_cast<const uint8_t*>(k50.data())) == t5, "5.0 does not find 5");

  // clear() empties and bumps the generation.
  const uint64_t g = h.generation();
  h.clear();
  expect(h.size() == 0 && h.generation() != g && find_key(h, 1) == nullptr, "clear");
  std::puts("hash_table_test: ok");
  return 0;
}
