// HashTable: the unique HASH index, an open-addressing table of tagged tuple pointers.
//
// Layout: one array of 8-byte slots. A slot is 0 (empty), 1 (a tombstone), or a tuple pointer
// in its low 48 bits with 16 bits of the key's hash above it. A probe therefore reads one cache
// line for both the tag and the pointer, and reads a tuple only when 16 hash bits match (1 in
// 65,536 false hits). User-space pointers fit in 48 bits on x86-64 and arm64 Linux; insert()
// checks, and refuses a pointer that does not. The home slot is the hash's high bits scaled to
// the capacity (Lemire's multiply-shift), so the capacity need not be a power of two and grows
// by 1.5x, not 2x. Tables of 2 MiB and more ask the kernel for transparent huge pages, because a
// random probe over a large table otherwise pays a TLB miss on top of the cache miss.
//
// Invariants: every stored tuple sits at or after its home slot (cyclically) with no empty
// slot in between (linear probing); live + tombstones <= 80% of capacity, so a probe always
// ends; no two stored tuples have equal keys (the space checks before inserting).
//
// Elements never move except on rehash: erase leaves a tombstone (or an empty slot when the
// next slot is empty, as no probe passes through it). A cursor can therefore walk slots by
// position across inserts and erases; a rehash (or invalidate_positions(), after a rollback put
// erased tuples back) bumps generation(), which tells cursors that positions changed. Rehash allocates the new array before touching the old one, so a failed
// allocation changes nothing.
//
// Costs: find, insert and erase are O(1) expected, one cache miss for the slot and one for the
// tuple; rehash is O(n) and amortised. Memory is 8 bytes a slot at a load between 53% and 80%,
// plus the rounding of a large table up to whole 2 MiB pages.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "alloc/big_alloc.h"
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
  size_t memory() const { return big_size(cap_ * sizeof(uint64_t)); }
  uint64_t generation() const { return generation_; }

  // The hash of tuple t's key, for the *_hashed calls (which save computing it twice).
  uint64_t hash_of(const uint8_t* tuple) const { return def_->hash(tuple); }
  // Brings the slot where a key with hash h lives into cache ahead of a lookup or insert.
  void prefetch_hash(uint64_t h) const {
    if (cap_ != 0) __builtin_prefetch(&slots_[home(h)]);
  }

  // The stored tuple whose key equals the key of tuple `t`.
  Tuple* find_tuple(const Tuple* t) const { return find_hashed(t->data(), hash_of(t->data())); }
  // The same for a tuple's bytes whose key hashes to h.
  Tuple* find_hashed(const uint8_t* tuple, uint64_t h) const {
    if (size_ == 0) return nullptr;
    return probe(h, [&](const Tuple* s) { return def_->compare(s->data(), tuple) == 0; });
  }

  // REQUIRES: `key` is the first part of a checked full key.
  Tuple* find_key(const uint8_t* key) const {
    if (size_ == 0) return nullptr;
    const uint64_t h = def_->hash_key(key);
    return probe(h, [&](const Tuple* s) { return def_->compare_with_key(s->data(), key, def_->part_count()) == 0; });
  }

  // REQUIRES: no stored tuple has t's key. Throws std::bad_alloc with nothing changed.
  void insert(Tuple* t) { insert_hashed(t, hash_of(t->data())); }
  // The same, with h == hash_of(t->data()).
  void insert_hashed(Tuple* t, uint64_t h) {
    const uint64_t p = reinterpret_cast<uintptr_t>(t);
    if (p >> kTagShift) throw std::bad_alloc();  // a pointer beyond 48 bits cannot be tagged
    if ((size_ + tombstones_ + undo_room_ + 1) * 5 > cap_ * 4) rehash((size_ + undo_room_ + 1) * 15 / 8 + 16);
    place(t, h);
  }

  // Rollback never allocates (space.h). The undo of k erases re-inserts k tuples through
  // insert_no_grow(); each takes at most one empty slot or tombstone. reserve_undo(k) grows the
  // table now, if need be, so that size + tombstones + k (+ 1 for a coming insert) stays within
  // the 80% load, and insert_hashed() keeps that room for as long as it is set, so a probe always
  // meets an empty slot. The room is k slots (8 bytes each) while a transaction is open.
  // Throws std::bad_alloc with nothing changed.
  void reserve_undo(size_t k, bool inserting) {
    const size_t extra = inserting ? 1 : 0;
    if ((size_ + tombstones_ + k + extra) * 5 > cap_ * 4) rehash((size_ + k + extra) * 15 / 8 + 16);
    undo_room_ = k;
  }
  void end_undo() { undo_room_ = 0; }
  // An insert that never grows the table. REQUIRES: reserve_undo() covered it; t's pointer was
  // stored before (it fits the tag).
  void insert_no_grow(Tuple* t) { place(t, hash_of(t->data())); }

 private:
  void place(Tuple* t, uint64_t h) {
    const uint64_t p = reinterpret_cast<uintptr_t>(t);
    size_t i = home(h);
    while (slots_[i] > kDeleted) i = next(i);
    if (slots_[i] == kDeleted) tombstones_--;
    slots_[i] = tag(h) | p;
    size_++;
  }

 public:

  // Swaps a stored tuple for another with the same key, in place. REQUIRES: old is stored.
  void replace_same(const Tuple* old, Tuple* nw) {
    if (reinterpret_cast<uintptr_t>(nw) >> kTagShift) throw std::bad_alloc();  // as in insert_hashed
    const size_t i = locate(old);
    slots_[i] = (slots_[i] & ~kPtrMask) | reinterpret_cast<uintptr_t>(nw);
  }

  // Erases exactly this tuple (found by pointer). Returns false when it is not stored.
  bool erase(const Tuple* t) { return erase_hashed(t, hash_of(t->data())); }
  // The same, with h == hash_of(t->data()).
  bool erase_hashed(const Tuple* t, uint64_t h) {
    if (size_ == 0) return false;
    const size_t i = locate(t, h);
    if (i == cap_) return false;
    if (slots_[next(i)] == kEmpty) {
      slots_[i] = kEmpty;
    } else {
      slots_[i] = kDeleted;
      tombstones_++;
    }
    size_--;
    return true;
  }

  void clear() {
    release();
    generation_++;
  }

  // Tells cursors that positions changed although no rehash happened: an undone erase puts a
  // tuple back in the first free slot of its probe chain, which may lie before the slot it left.
  void invalidate_positions() { generation_++; }

  // Whether slot i is empty (not a tombstone): no probe chain runs through it, so every tuple
  // stored after it has its home after it too.
  bool is_empty(size_t i) const { return slots_[i] == kEmpty; }
  // The first empty slot: the slots before it may hold tuples that wrapped around from the end.
  size_t first_empty() const {
    size_t i = 0;
    while (i < cap_ && slots_[i] != kEmpty) i++;
    return i;
  }

  // Slot-order walk: slot(i) is the tuple in slot i, or nullptr.
  size_t slot_count() const { return cap_; }
  // REQUIRES: i < slot_count() (also for is_empty).
  Tuple* slot(size_t i) const { return pointer(slots_[i]); }

 private:
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kDeleted = 1;
  static constexpr unsigned kTagShift = 48;
  static constexpr uint64_t kPtrMask = (uint64_t(1) << kTagShift) - 1;

  // The tag is the hash's low 16 bits (home() uses the high ones), and never 0, so a full slot
  // is never mistaken for kEmpty or kDeleted whatever its pointer.
  static uint64_t tag(uint64_t h) { return (uint64_t((h & 0xffff) | 1)) << kTagShift; }
  static Tuple* pointer(uint64_t slot) { return slot > kDeleted ? reinterpret_cast<Tuple*>(slot & kPtrMask) : nullptr; }
  size_t home(uint64_t h) const { return size_t((static_cast<unsigned __int128>(h) * cap_) >> 64); }
  size_t next(size_t i) const { return i + 1 == cap_ ? 0 : i + 1; }

  template <class Eq>
  Tuple* probe(uint64_t h, Eq eq) const {
    const uint64_t want = tag(h);
    for (size_t i = home(h);; i = next(i)) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return nullptr;
      if ((s & ~kPtrMask) == want) {
        Tuple* t = reinterpret_cast<Tuple*>(s & kPtrMask);
        if (eq(t)) return t;
      }
    }
  }

  size_t locate(const Tuple* t) const { return locate(t, hash_of(t->data())); }
  size_t locate(const Tuple* t, uint64_t h) const {
    const uint64_t want = tag(h) | reinterpret_cast<uintptr_t>(t);
    for (size_t i = home(h);; i = next(i)) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return cap_;
      if (s == want) return i;
    }
  }

  void rehash(size_t new_cap) {
    uint64_t* slots = static_cast<uint64_t*>(big_calloc(new_cap * sizeof(uint64_t)));
    uint64_t* old_slots = slots_;
    const size_t old_cap = cap_;
    slots_ = slots;
    cap_ = new_cap;
    tombstones_ = 0;
    for (size_t j = 0; j < old_cap; j++) {
      if (j + 8 < old_cap && old_slots[j + 8] > kDeleted) __builtin_prefetch(pointer(old_slots[j + 8]));
      const uint64_t s = old_slots[j];
      if (s <= kDeleted) continue;
      Tuple* t = pointer(s);
      size_t i = home(def_->hash(t->data()));
      while (slots_[i] != kEmpty) i = next(i);
      slots_[i] = s;  // same key, same hash, same tag
    }
    big_free(old_slots, old_cap * sizeof(uint64_t));
    generation_++;
  }

  void release() {
    big_free(slots_, cap_ * sizeof(uint64_t));
    slots_ = nullptr;
    cap_ = size_ = tombstones_ = 0;
  }

  const KeyDef* def_;
  uint64_t* slots_ = nullptr;
  size_t cap_ = 0;
  size_t size_ = 0;
  size_t tombstones_ = 0;
  size_t undo_room_ = 0;  // slots kept free for a rollback's re-inserts (reserve_undo)
  uint64_t generation_ = 0;
};

}  // namespace ce
