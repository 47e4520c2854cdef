// HashTable: the unique HASH index, an open-addressing table of tuple pointers.
//
// Layout: two parallel arrays, ctrl_ (1 byte a slot) and slots_ (8 bytes a slot). A control byte
// is kEmpty, kDeleted (a tombstone) or 0x80 | 7 bits of the key's hash, so a probe compares
// control bytes, which are dense in cache, and reads a tuple only when 7 hash bits match (1 in
// 128 false hits). The home slot is the hash's high bits scaled to the capacity (Lemire's
// multiply-shift), so the capacity need not be a power of two and grows by 1.5x, not 2x.
//
// Invariants: every stored tuple sits at or after its home slot (cyclically) with no empty
// slot in between (linear probing); live + tombstones <= 80% of capacity, so a probe always
// ends; no two stored tuples have equal keys (the space checks before inserting).
//
// Elements never move except on rehash: erase leaves a tombstone (or an empty slot when the
// next slot is empty, as no probe passes through it). A cursor can therefore walk slots by
// position across inserts and erases; a rehash bumps generation(), which tells cursors that
// positions changed. Rehash allocates the new arrays before touching the old ones, so a failed
// allocation changes nothing.
//
// Costs: find, insert and erase are O(1) expected; rehash is O(n) and amortised. Memory is
// 9 bytes a slot at a load between 53% and 80%.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "key_def.h"
#include "tuple.h"

namespace ce {

class HashTable {
 public:
  explicit HashTable(const KeyDef* def) : def_(def) {}
  HashTable(const HashTable&) = delete;
  HashTable& operator=(const HashTable&) = delete;
  ~HashTable() { release(); }

  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  size_t memory() const { return cap_ * (sizeof(Tuple*) + 1); }
  uint64_t generation() const { return generation_; }

  // The stored tuple whose key equals the key of tuple `t`.
  Tuple* find_tuple(const Tuple* t) const {
    if (size_ == 0) return nullptr;
    const uint64_t h = def_->hash(t->data());
    return probe(h, [&](const Tuple* s) { return def_->compare(s->data(), t->data()) == 0; });
  }

  // `key` is the first part of a checked full key.
  Tuple* find_key(const uint8_t* key) const {
    if (size_ == 0) return nullptr;
    const uint64_t h = def_->hash_key(key);
    return probe(h, [&](const Tuple* s) { return def_->compare_with_key(s->data(), key, def_->part_count()) == 0; });
  }

  // Precondition: no stored tuple has t's key. Throws std::bad_alloc with nothing changed.
  void insert(Tuple* t) {
    if ((size_ + tombstones_ + 1) * 5 > cap_ * 4) rehash((size_ + 1) * 15 / 8 + 16);
    const uint64_t h = def_->hash(t->data());
    size_t i = home(h);
    while (ctrl_[i] & kFull) i = i + 1 == cap_ ? 0 : i + 1;
    if (ctrl_[i] == kDeleted) tombstones_--;
    ctrl_[i] = tag(h);
    slots_[i] = t;
    size_++;
  }

  // Prefetches the control byte and slot where tuple t's key lives (before erasing it).
  void prefetch(const Tuple* t) const {
    if (cap_ == 0) return;
    const size_t i = home(def_->hash(t->data()));
    __builtin_prefetch(&ctrl_[i]);
    __builtin_prefetch(&slots_[i]);
  }

  // Swaps a stored tuple for another with the same key, in place.
  void replace_same(const Tuple* old, Tuple* nw) { slots_[locate(old)] = nw; }

  // Erases exactly this tuple (found by pointer). Returns false when it is not stored.
  bool erase(const Tuple* t) {
    if (size_ == 0) return false;
    const size_t i = locate(t);
    if (i == cap_) return false;
    const size_t after = i + 1 == cap_ ? 0 : i + 1;
    if (ctrl_[after] == kEmpty) {
      ctrl_[i] = kEmpty;
    } else {
      ctrl_[i] = kDeleted;
      tombstones_++;
    }
    slots_[i] = nullptr;
    size_--;
    return true;
  }

  void clear() {
    release();
    generation_++;
  }

  // Whether slot i is empty (not a tombstone): no probe chain runs through it, so every tuple
  // stored after it has its home after it too.
  bool is_empty(size_t i) const { return ctrl_[i] == kEmpty; }
  // The first empty slot: the slots before it may hold tuples that wrapped around from the end.
  size_t first_empty() const {
    size_t i = 0;
    while (i < cap_ && ctrl_[i] != kEmpty) i++;
    return i;
  }

  // Slot-order walk: slot(i) is the tuple in slot i, or nullptr.
  size_t slot_count() const { return cap_; }
  Tuple* slot(size_t i) const { return slots_[i]; }

 private:
  static constexpr uint8_t kEmpty = 0;
  static constexpr uint8_t kDeleted = 1;
  static constexpr uint8_t kFull = 0x80;

  static uint8_t tag(uint64_t h) { return uint8_t(kFull | (h & 0x7f)); }
  size_t home(uint64_t h) const { return size_t((static_cast<unsigned __int128>(h) * cap_) >> 64); }

  template <class Eq>
  Tuple* probe(uint64_t h, Eq eq) const {
    const uint8_t want = tag(h);
    for (size_t i = home(h);; i = i + 1 == cap_ ? 0 : i + 1) {
      const uint8_t c = ctrl_[i];
      if (c == kEmpty) return nullptr;
      if (c == want && eq(slots_[i])) return slots_[i];
    }
  }

  size_t locate(const Tuple* t) const {
    const uint64_t h = def_->hash(t->data());
    const uint8_t want = tag(h);
    for (size_t i = home(h);; i = i + 1 == cap_ ? 0 : i + 1) {
      const uint8_t c = ctrl_[i];
      if (c == kEmpty) return cap_;
      if (c == want && slots_[i] == t) return i;
    }
  }

  void rehash(size_t new_cap) {
    uint8_t* ctrl = static_cast<uint8_t*>(std::calloc(new_cap, 1));
    Tuple** slots = static_cast<Tuple**>(std::calloc(new_cap, sizeof(Tuple*)));
    if (ctrl == nullptr || slots == nullptr) {
      std::free(ctrl);
      std::free(slots);
      throw std::bad_alloc();
    }
    uint8_t* old_ctrl = ctrl_;
    Tuple** old_slots = slots_;
    const size_t old_cap = cap_;
    ctrl_ = ctrl;
    slots_ = slots;
    cap_ = new_cap;
    tombstones_ = 0;
    for (size_t j = 0; j < old_cap; j++) {
      if (j + 8 < old_cap && (old_ctrl[j + 8] & kFull)) __builtin_prefetch(old_slots[j + 8]);
      if (!(old_ctrl[j] & kFull)) continue;
      const uint64_t h = def_->hash(old_slots[j]->data());
      size_t i = home(h);
      while (ctrl_[i] != kEmpty) i = i + 1 == cap_ ? 0 : i + 1;
      ctrl_[i] = tag(h);
      slots_[i] = old_slots[j];
    }
    std::free(old_ctrl);
    std::free(old_slots);
    generation_++;
  }

  void release() {
    std::free(ctrl_);
    std::free(slots_);
    ctrl_ = nullptr;
    slots_ = nullptr;
    cap_ = size_ = tombstones_ = 0;
  }

  const KeyDef* def_;
  uint8_t* ctrl_ = nullptr;
  Tuple** slots_ = nullptr;
  size_t cap_ = 0;
  size_t size_ = 0;
  size_t tombstones_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace ce
