// HashTable: the unique HASH index, an open-addressing table of tagged tuple pointers that grows
// in bounded steps.
//
// Layout: arrays of 8-byte slots. A slot is 0 (empty), 1 (a tombstone), or a tuple pointer in
// its low 48 bits with 16 bits of the key's hash above it. A probe therefore reads one cache
// line for both the tag and the pointer, and reads a tuple only when the 16-bit tag matches (15
// bits of hash, the lowest always set so that a full slot is never 0: 1 in 32,768 false hits).
// User-space pointers fit in 48 bits on x86-64 and arm64 Linux; insert()
// checks, and refuses a pointer that does not. The home slot is the hash's high bits scaled to
// the capacity (Lemire's multiply-shift), so the capacity need not be a power of two and grows
// by 1.5x, not 2x, and home slots grow with the hash in every table: a tuple's home fraction
// (home / capacity) is about the same in any table. Tables of 2 MiB and more are big_alloc.h
// mappings: 4 KiB pages by default, huge pages when the environment asks (a random probe over a
// large table then saves its TLB miss).
//
// Growth (Redis's dict, in slot order): when an insert would take the table past 80% load, a
// new table is allocated (the only allocation; if it fails, nothing has changed) and the old
// one becomes the migration source. From then on every insert goes to the new table, and first
// moves the next kMigrateStep slots of the old table, in slot order from 0, into the new one
// (so it reads at most kMigrateStep old slots and hashes at most kMigrateStep tuples). Lookups,
// erases and replace_same consult the new table, then the old. When the last old slot has been
// moved, the old array is freed; meanwhile its whole 2 MiB pages below migrated() are given back
// as the migration passes them (big_discard: they hold only empty slots, read as zeros). (A
// table of at most kRehashAtOnce slots is moved at once, within the insert that grows it.) The new table is sized so that the migration always ends
// before the new table reaches 80%: it holds at most the old live tuples plus one tuple per
// insert, and there are at most old_capacity / kMigrateStep inserts in a migration.
//
// The next table is allocated ahead, when an insert takes a table of more than kRehashAtOnce
// slots past 72% load (spare_), sized for the growth at 80%, as address space only (an
// untouched mapping holds no memory). From then on the background thread (alloc/background.h)
// faults its pages in, 2 MiB pages in proportion to the inserts towards 78% (the share of the
// spare that the load's progress from 72% to 78% calls for, rounded up to the next page), so
// that the whole spare is asked for well before the growth needs it at 80% (the thread runs at
// low priority and may lag; a 76-80% window measured 5-8 ms inserts that faulted pages the
// thread had not reached yet on these VMs): otherwise the
// first moves of a migration, scattered over an untouched array, each paid the kernel's zeroing
// of a 2 MiB huge page in the insert (measured: up to 4 such faults, 2.7 ms, in one insert at 2M
// tuples). grow() takes the spare when it is large enough (asking for any page not asked for
// yet). memory() counts the spare's pages asked for (a spare under 2 MiB, from calloc, whole).
//
// Invariants: in each table, every stored tuple sits at or after its home slot (cyclically) with
// no empty slot in between (linear probing); live + tombstones <= 80% of the new table; no two
// stored tuples have equal keys (the space checks before inserting). While migrating, the old
// table's slots below migrated() are empty, the rest are untouched except by erase and
// replace_same, nothing is inserted into it, and every tuple still in it sits at or after
// migrated(); one whose probe chain began below migrated() is found by probing from
// migrated(). Tuples that wrapped around the old table's end sit in [migrated(), wrap_end()),
// so an old probe that reaches the end continues at migrated() while migrated() < wrap_end().
// Every tuple still in the old table has its old home at or after migrated_cluster_start()
// (the slot after the last empty slot the migration passed) or lies in the wrapped part.
//
// Elements never move within a table: erase leaves a tombstone (or an empty slot when the next
// slot is empty, as no probe passes through it); the migration moves tuples only from the old
// table into the new one. epoch() counts the migrations begun; generation() changes when
// positions changed otherwise (clear(), or invalidate_positions() after a rollback put erased
// tuples back). A cursor (hash_index.h) uses both to keep its guarantees across growth.
//
// Costs: find, insert and erase are O(1) expected, one cache miss for the slot and one for the
// tuple, two probes for a miss while migrating; an insert's share of a growth is at most
// kMigrateStep old slots, with their tuples prefetched together. Memory is 8 bytes a slot at a
// load between 53% and 80%, plus, during a migration, the old array's part not yet moved (its
// moved pages are given back), plus the spare's pages asked for from 72% load, plus the rounding
// of a large table up to whole 2 MiB pages. memory() counts exactly these.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "alloc/big_alloc.h"
#include "key_def.h"
#include "tuple.h"

namespace ce {

// Test hook: when set, called with the byte count before a table array is allocated or a growth
// takes the one allocated ahead; it may throw std::bad_alloc to simulate a failed allocation.
inline void (*g_hash_alloc_hook)(size_t bytes) = nullptr;

class HashTable {
 public:
  // Old slots an insert moves while migrating. The new table has room for the old live tuples
  // plus old_capacity / kMigrateStep inserts (see grow()).
  static constexpr size_t kMigrateStep = 8;
  // A table of at most this many slots is rehashed within the insert that grows it (at most
  // 1,639 tuples hashed, well under a millisecond); larger ones migrate step by step.
  static constexpr size_t kRehashAtOnce = 2048;

  explicit HashTable(const KeyDef* def) : def_(def) {}
  HashTable(const HashTable&) = delete;
  HashTable& operator=(const HashTable&) = delete;
  ~HashTable() { release(); }

  size_t size() const { return cur_.live + old_.live; }
  size_t capacity() const { return cur_.cap; }
  // Whether the next insert begins a growth (and allocates).
  bool full() const { return (cur_.live + cur_.tombstones + undo_room_ + 1) * 5 > cur_.cap * 4; }
  size_t memory() const {
    return big_size(cur_.cap * sizeof(uint64_t)) + big_size(old_.cap * sizeof(uint64_t)) - old_discarded_ +
           spare_populated_;
  }
  uint64_t generation() const { return generation_; }
  uint64_t epoch() const { return epoch_; }
  bool migrating() const { return old_.slots != nullptr; }

  // The hash of tuple t's key, for the *_hashed calls (which save computing it twice).
  uint64_t hash_of(const uint8_t* tuple) const { return def_->hash(tuple); }
  // Brings the slot where a key with hash h lives into cache ahead of a lookup, insert or erase.
  // A plain load, not __builtin_prefetch: on these VMs (AMD EPYC) the expiry chunk's erases
  // still stalled on slots prefetched a batch earlier, and with loads (which the batch's other
  // work overlaps out of order) an indexed pass deleting 100k tuples over a 1M HASH pk took
  // 14.4-15.3 ms instead of 15.5-19.1 (interleaved, three rounds). Both slots read are inside
  // their tables (old_start() is below old_.cap while migrating).
  void prefetch_hash(uint64_t h) const {
    if (cur_.cap != 0) touch(&cur_.slots[home(cur_, h)]);
    if (old_.slots != nullptr) touch(&old_.slots[old_start(h)]);
  }

  // The stored tuple whose key equals the key of tuple `t`.
  Tuple* find_tuple(const Tuple* t) const { return find_hashed(t->data(), hash_of(t->data())); }
  // The same for a tuple's bytes whose key hashes to h.
  Tuple* find_hashed(const uint8_t* tuple, uint64_t h) const {
    return find(h, [&](const Tuple* s) { return def_->compare(s->data(), tuple) == 0; });
  }

  // REQUIRES: `key` is the first part of a checked full key.
  Tuple* find_key(const uint8_t* key) const {
    if (size() == 0) return nullptr;
    const uint64_t h = def_->hash_key(key);
    return find(h, [&](const Tuple* s) { return def_->compare_with_key(s->data(), key, def_->part_count()) == 0; });
  }

  // REQUIRES: no stored tuple has t's key. Throws std::bad_alloc with nothing changed.
  void insert(Tuple* t) { insert_hashed(t, hash_of(t->data())); }
  // The same, with h == hash_of(t->data()).
  void insert_hashed(Tuple* t, uint64_t h) {
    const uint64_t p = reinterpret_cast<uintptr_t>(t);
    if (p >> kTagShift) throw std::bad_alloc();  // a pointer beyond 48 bits cannot be tagged
    if (spare_ == nullptr && !migrating() && cur_.cap > kRehashAtOnce &&
        (cur_.live + cur_.tombstones + undo_room_ + 1) * 25 > cur_.cap * 18)
      allocate_spare();  // may throw: nothing has changed yet
    if (spare_populated_ != spare_bytes_ && !migrating()) populate_spare(cur_.live + cur_.tombstones + undo_room_ + 1);
    if (full()) {
      // Unreachable while migrating unless a rollback's room is reserved (the new table has room
      // for the whole migration); kept so that the load bound holds whatever happens.
      while (migrating()) migrate_step();
      grow(undo_room_);  // may throw: nothing has changed yet
    }
    if (migrating()) migrate_step();
    put(cur_, tag(h) | p, h);
  }

  // Rollback never allocates (space.h). The undo of k erases re-inserts k tuples through
  // insert_no_grow(), into the current table, each taking at most one empty slot or tombstone.
  // reserve_undo(k) grows the table now, if need be, so that the current table's live tuples,
  // tombstones, the old table's tuples still to migrate, and k (+ 1 for a coming insert) stay
  // within the 80% load, and insert_hashed() keeps that room for as long as it is set, so a probe
  // always meets an empty slot. The room is k slots (8 bytes each) while a transaction is open.
  // Growing here first finishes a running migration (not bounded, but only when a transaction
  // removed about a third of the table). Throws std::bad_alloc with no tuple added or removed.
  void reserve_undo(size_t k, bool inserting) {
    const size_t extra = inserting ? 1 : 0;
    if ((cur_.live + cur_.tombstones + old_.live + k + extra) * 5 > cur_.cap * 4) {
      while (migrating()) migrate_step();
      grow(k + extra);
    }
    undo_room_ = k;
  }
  void end_undo() { undo_room_ = 0; }
  // An insert that never grows the table and moves nothing. REQUIRES: reserve_undo() covered
  // it; t's pointer was stored before (it fits the tag).
  void insert_no_grow(Tuple* t) {
    const uint64_t h = hash_of(t->data());
    put(cur_, tag(h) | reinterpret_cast<uintptr_t>(t), h);
  }

 public:

  // Swaps a stored tuple for another with the same key, in place. REQUIRES: old is stored.
  void replace_same(const Tuple* old, Tuple* nw) { replace_same_hashed(old, nw, hash_of(old->data())); }
  // The same, with h == hash_of(old->data()).
  void replace_same_hashed(const Tuple* old, Tuple* nw, uint64_t h) {
    if (reinterpret_cast<uintptr_t>(nw) >> kTagShift) throw std::bad_alloc();  // as in insert_hashed
    size_t i = locate(cur_, old, h);
    uint64_t* slots = cur_.slots;
    if (i == kNone) {
      i = locate_old(old, h);
      slots = old_.slots;
    }
    slots[i] = (slots[i] & ~kPtrMask) | reinterpret_cast<uintptr_t>(nw);
  }

  // Erases exactly this tuple (found by pointer). Returns false when it is not stored.
  bool erase(const Tuple* t) { return erase_hashed(t, hash_of(t->data())); }
  // The same, with h == hash_of(t->data()).
  bool erase_hashed(const Tuple* t, uint64_t h) {
    if (size() == 0) return false;
    size_t i = locate(cur_, t, h);
    if (i != kNone) {
      remove(cur_, i, cur_.slots[next(cur_, i)] == kEmpty);
      return true;
    }
    i = locate_old(t, h);
    if (i == kNone) return false;
    const size_t n = old_next(i);
    remove(old_, i, n == kNone || old_.slots[n] == kEmpty);
    return true;
  }

  void clear() {
    release();
    generation_++;
  }

  // Tells cursors that positions changed although no tuple was moved by growth: an undone
  // erase puts a tuple back in the first free slot of its probe chain, which may lie before the
  // slot it left.
  void invalidate_positions() { generation_++; }

  // The current (new, while migrating) table, for a slot-order walk.
  size_t slot_count() const { return cur_.cap; }
  // REQUIRES: i < slot_count() (also for is_empty).
  Tuple* slot(size_t i) const { return pointer(cur_.slots[i]); }
  // Whether slot i is empty (not a tombstone): no probe chain runs through it, so every tuple
  // stored after it has its home after it too.
  bool is_empty(size_t i) const { return cur_.slots[i] == kEmpty; }
  // The first empty slot: the slots before it may hold tuples that wrapped around from the end.
  size_t first_empty() const {
    size_t i = 0;
    while (i < cur_.cap && cur_.slots[i] != kEmpty) i++;
    return i;
  }

  // The home slot of a stored tuple in the current table, and in the old one while migrating.
  size_t home_of(const Tuple* t) const { return home(cur_, hash_of(t->data())); }
  size_t old_home_of(const Tuple* t) const { return home(old_, hash_of(t->data())); }

  // The old table while migrating (0 slots otherwise).
  size_t old_slot_count() const { return old_.cap; }
  // REQUIRES: i < old_slot_count().
  Tuple* old_slot(size_t i) const { return pointer(old_.slots[i]); }
  bool old_is_empty(size_t i) const { return old_.slots[i] == kEmpty; }
  // Old slots below this one have been moved (and are empty).
  size_t migrated() const { return migrated_; }
  // Every tuple still in the old table has its old home at or after this slot, or lies in
  // [migrated(), wrap_end()) having wrapped around the old table's end.
  size_t migrated_cluster_start() const { return migrated_cluster_start_; }
  size_t wrap_end() const { return wrap_end_; }

 private:
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kDeleted = 1;
  static constexpr unsigned kTagShift = 48;
  static constexpr uint64_t kPtrMask = (uint64_t(1) << kTagShift) - 1;
  static constexpr size_t kNone = SIZE_MAX;

  struct Slots {
    uint64_t* slots = nullptr;
    size_t cap = 0;
    size_t live = 0;
    size_t tombstones = 0;
  };

  // The tag is the hash's low 16 bits (home() uses the high ones), and never 0, so a full slot
  // is never mistaken for kEmpty or kDeleted whatever its pointer.
  static uint64_t tag(uint64_t h) { return (uint64_t((h & 0xffff) | 1)) << kTagShift; }
  static Tuple* pointer(uint64_t slot) { return slot > kDeleted ? reinterpret_cast<Tuple*>(slot & kPtrMask) : nullptr; }
  static size_t home(const Slots& s, uint64_t h) { return size_t((static_cast<unsigned __int128>(h) * s.cap) >> 64); }
  static size_t next(const Slots& s, size_t i) { return i + 1 == s.cap ? 0 : i + 1; }
  // Reads a slot only to bring its line into cache (the compiler may not drop the load).
  static void touch(const uint64_t* slot) { static_cast<void>(*static_cast<const volatile uint64_t*>(slot)); }

  // Where a probe of the old table starts: a chain that began below migrated() goes on above it.
  size_t old_start(uint64_t h) const {
    const size_t i = home(old_, h);
    return i < migrated_ ? migrated_ : i;
  }
  // The next slot of an old probe: past the end, the wrapped part if any is left, else none.
  size_t old_next(size_t i) const {
    if (i + 1 < old_.cap) return i + 1;
    return migrated_ < wrap_end_ ? migrated_ : kNone;
  }

  template <class Eq>
  Tuple* find(uint64_t h, Eq eq) const {
    const uint64_t want = tag(h);
    if (cur_.live != 0) {
      for (size_t i = home(cur_, h);; i = next(cur_, i)) {
        const uint64_t s = cur_.slots[i];
        if (s == kEmpty) break;
        if ((s & ~kPtrMask) == want) {
          Tuple* t = reinterpret_cast<Tuple*>(s & kPtrMask);
          if (eq(t)) return t;
        }
      }
    }
    if (old_.live == 0) return nullptr;
    for (size_t i = old_start(h); i != kNone; i = old_next(i)) {
      const uint64_t s = old_.slots[i];
      if (s == kEmpty) return nullptr;
      if ((s & ~kPtrMask) == want) {
        Tuple* t = reinterpret_cast<Tuple*>(s & kPtrMask);
        if (eq(t)) return t;
      }
    }
    return nullptr;
  }

  static size_t locate(const Slots& s, const Tuple* t, uint64_t h) {
    if (s.live == 0) return kNone;
    const uint64_t want = tag(h) | reinterpret_cast<uintptr_t>(t);
    for (size_t i = home(s, h);; i = next(s, i)) {
      const uint64_t v = s.slots[i];
      if (v == kEmpty) return kNone;
      if (v == want) return i;
    }
  }
  size_t locate_old(const Tuple* t, uint64_t h) const {
    if (old_.live == 0) return kNone;
    const uint64_t want = tag(h) | reinterpret_cast<uintptr_t>(t);
    for (size_t i = old_start(h); i != kNone; i = old_next(i)) {
      const uint64_t v = old_.slots[i];
      if (v == kEmpty) return kNone;
      if (v == want) return i;
    }
    return kNone;
  }

  // Stores tagged slot value v (hash h) in the first free slot of its chain.
  static void put(Slots& s, uint64_t v, uint64_t h) {
    size_t i = home(s, h);
    while (s.slots[i] > kDeleted) i = next(s, i);
    if (s.slots[i] == kDeleted) s.tombstones--;
    s.slots[i] = v;
    s.live++;
  }
  static void remove(Slots& s, size_t i, bool next_empty) {
    if (next_empty) {
      s.slots[i] = kEmpty;
    } else {
      s.slots[i] = kDeleted;
      s.tombstones++;
    }
    s.live--;
  }

  // Starts a migration into a new table (or, from empty, just allocates one). REQUIRES: not
  // migrating. The new capacity leaves room for every live tuple (plus `room` slots kept for a
  // rollback) plus one insert per kMigrateStep old slots below 80% load, and is at least 1.875x
  // the live count (53% load). Throws std::bad_alloc with nothing changed.
  void grow(size_t room = 0) {
    const size_t live = cur_.live + room;
    const bool at_once = cur_.cap <= kRehashAtOnce;
    size_t new_cap = (live + 1) * 15 / 8 + 16;
    const size_t need = (live + cur_.cap / kMigrateStep + 2) * 5 / 4 + 16;
    if (!at_once && new_cap < need) new_cap = need;
    uint64_t* slots;
    if (spare_ != nullptr && spare_cap_ >= new_cap) {
      if (g_hash_alloc_hook) g_hash_alloc_hook(spare_cap_ * sizeof(uint64_t));
      slots = spare_;
      new_cap = spare_cap_;
      if (spare_populated_ < spare_bytes_)  // grown early (reserve_undo): the rest in the background
        background::populate(reinterpret_cast<uint8_t*>(spare_) + spare_populated_, spare_bytes_ - spare_populated_);
      spare_ = nullptr;
      spare_cap_ = 0;
      spare_bytes_ = spare_populated_ = 0;
    } else {
      const size_t bytes = new_cap * sizeof(uint64_t);
      if (g_hash_alloc_hook) g_hash_alloc_hook(bytes);
      slots = static_cast<uint64_t*>(big_calloc(bytes));
      // A spare too small for this growth (a rollback's room grew since) would only wait for a
      // later one: the next is allocated ahead again, at 72% of the new table.
      if (spare_ != nullptr) {
        big_free(spare_, spare_cap_ * sizeof(uint64_t));
        spare_ = nullptr;
        spare_cap_ = 0;
        spare_bytes_ = spare_populated_ = 0;
      }
    }
    old_ = cur_;
    old_discarded_ = 0;
    cur_ = Slots{slots, new_cap, 0, 0};
    migrated_ = migrated_cluster_start_ = 0;
    wrap_end_ = 0;
    epoch_++;
    if (old_.live == 0) {
      finish_migration();
      return;
    }
    while (wrap_end_ < old_.cap && old_.slots[wrap_end_] != kEmpty) wrap_end_++;
    if (at_once) while (migrating()) migrate_step();  // a small table: one bounded rehash
  }

  // The table grow() will want at 80% load, allocated now: sized for the live tuples there would
  // be if every slot still free below 80% went to an insert. (Sized for a full 80% of live tuples,
  // a table whose load is mostly tombstones, a sliding window of keys at a constant count, grew
  // by 1.5x at every growth, without bound.) Throws std::bad_alloc with nothing changed.
  void allocate_spare() {
    const size_t used = cur_.live + cur_.tombstones + undo_room_;
    const size_t live = cur_.live + undo_room_ + (cur_.cap * 4 / 5 > used ? cur_.cap * 4 / 5 - used : 0) + 1;
    const size_t cap = std::max((live + 1) * 15 / 8 + 16, (live + cur_.cap / kMigrateStep + 2) * 5 / 4 + 16);
    const size_t bytes = cap * sizeof(uint64_t);
    if (g_hash_alloc_hook) g_hash_alloc_hook(bytes);
    spare_ = static_cast<uint64_t*>(big_calloc(bytes));
    spare_cap_ = cap;
    spare_bytes_ = big_size(bytes);
    // A calloc'd spare (under 2 MiB) is not a big mapping: counted whole, nothing to populate.
    spare_populated_ = spare_bytes_ < kHugePage ? spare_bytes_ : 0;
  }

  // Asks the background thread for the spare's pages that the load calls for: none below 72%,
  // then, with p the progress of `used` (slots used after this insert) from 72% to 78% of the
  // capacity, the first p of the spare rounded up to the next whole 2 MiB page (the pages are all
  // needed at 80%, when the growth starts: a page is asked for as soon as its share of the window
  // begins, so the thread always has the rest of the window).
  void populate_spare(size_t used) {
    const size_t from = cur_.cap * 18 / 25, to = cur_.cap * 39 / 50;
    if (used <= from) return;
    size_t want = used >= to ? spare_bytes_
                             : static_cast<size_t>(static_cast<unsigned __int128>(spare_bytes_) * (used - from) / (to - from));
    want = std::min(spare_bytes_, (want / kHugePage + 1) * kHugePage);
    if (want <= spare_populated_) return;
    background::populate(reinterpret_cast<uint8_t*>(spare_) + spare_populated_, want - spare_populated_);
    spare_populated_ = want;
  }

  // Moves old slots [migrated_, migrated_ + kMigrateStep) into the new table.
  void migrate_step() {
    const size_t end = migrated_ + kMigrateStep < old_.cap ? migrated_ + kMigrateStep : old_.cap;
    for (size_t j = migrated_; j < end; j++)
      if (old_.slots[j] > kDeleted) __builtin_prefetch(pointer(old_.slots[j]));
    for (size_t j = migrated_; j < end; j++) {
      const uint64_t s = old_.slots[j];
      if (s == kEmpty) {
        migrated_cluster_start_ = j + 1;
        continue;
      }
      old_.slots[j] = kEmpty;
      if (s == kDeleted) continue;
      put(cur_, s, def_->hash(pointer(s)->data()));  // same key, same hash, same tag
      old_.live--;
    }
    migrated_ = end;
    if (migrated_ == old_.cap || old_.live == 0) {
      finish_migration();
      return;
    }
    // The old table's whole 2 MiB pages below migrated_ hold only empty slots, which nothing
    // writes again: give them back (a reader there sees zeros, which is kEmpty).
    if (big_mapped(old_.cap * sizeof(uint64_t))) {
      const size_t done = migrated_ * sizeof(uint64_t) / kHugePage * kHugePage;
      if (done > old_discarded_) {
        big_discard(reinterpret_cast<uint8_t*>(old_.slots) + old_discarded_, done - old_discarded_);
        old_discarded_ = done;
      }
    }
  }

  void finish_migration() {
    big_free(old_.slots, old_.cap * sizeof(uint64_t));
    old_ = Slots{};
    old_discarded_ = 0;
    migrated_ = migrated_cluster_start_ = wrap_end_ = 0;
  }

  void release() {
    big_free(cur_.slots, cur_.cap * sizeof(uint64_t));
    big_free(old_.slots, old_.cap * sizeof(uint64_t));
    big_free(spare_, spare_cap_ * sizeof(uint64_t));
    spare_ = nullptr;
    spare_cap_ = 0;
    spare_bytes_ = spare_populated_ = 0;
    cur_ = Slots{};
    old_ = Slots{};
    old_discarded_ = 0;
    migrated_ = migrated_cluster_start_ = wrap_end_ = 0;
  }

  const KeyDef* def_;
  Slots cur_;
  Slots old_;
  size_t migrated_ = 0;
  size_t migrated_cluster_start_ = 0;
  size_t wrap_end_ = 0;
  uint64_t* spare_ = nullptr;  // the next table, allocated ahead (zeroed), or null
  size_t spare_cap_ = 0;
  size_t old_discarded_ = 0;    // the old table's first bytes given back (big_discard) while migrating
  size_t spare_bytes_ = 0;      // big_size() of the spare
  size_t spare_populated_ = 0;  // its first bytes whose pages were asked for (memory() counts them)
  size_t undo_room_ = 0;  // slots kept free in the current table for a rollback's re-inserts
  uint64_t generation_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace ce
