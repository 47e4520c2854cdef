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

// Every slot position of every stored tuple.
std::map<const Tuple*, size_t> positions(const HashTable& h) {
  std::map<const Tuple*, size_t> at;
  for (size_t i = 0; i < h.slot_count(); i++)
    if (Tuple* t = h.slot(i)) at[t] = i;
  return at;
}

}  // namespace

int main() {
  const KeyDef kd("pk", {KeyPart{0, FieldType::kUnsigned}});
  HashTable h(&kd);
  Store store;
  std::map<uint64_t, Tuple*> model;
  test::Rng r(uint32_t(test::g_seed));

  expect(find_key(h, 1) == nullptr && h.size() == 0 && h.slot_count() == 0, "empty table");
  uint64_t generation = h.generation();
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
    // Positions: unchanged unless the table was rehashed, and the generation says which.
    const bool rehashed = h.generation() != generation;
    if (h.slot_count() != capacity) expect(rehashed, "the capacity changed without a new generation");
    if (track && !rehashed) {
      const auto after = positions(h);
      for (const auto& [t, pos] : after) {
        auto b = before.find(t);
        if (b != before.end()) expect(b->second == pos, "a tuple moved without a rehash at step ", step);
      }
    }
    generation = h.generation();
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
