// HashIndex: the HASH index kind, a unique index over an open-addressing table (hash_table.h),
// and its cursor.
//
// A HASH index is unique, finds only by a full key, and walks only ALL (slot order) and EQ.
// prepare(t) is the hash of t's key, and prefetches its home slot.
//
// Costs: find, get, replace O(1) expected; build O(n); see hash_table.h.
//
// HashCursor walks slots by position; tuples never move between rehashes. Every tuple the walk
// has not reached has its home slot at or after the slot that follows the last empty slot it
// passed (probe chains never cross an empty slot), and home slots grow with the hash (home =
// hash * capacity / 2^64). So after a rehash (generation() changed) it resumes at the same
// fraction of the new table, and at the end of the table it also sweeps the slots before the
// first empty one (tuples that wrapped around): a tuple that lives through a whole walk is
// returned at least once, possibly twice, never skipped, and the walk still ends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cursor.h"
#include "index.h"
#include "index/hash_table.h"

namespace ce {

class HashIndex final : public Index {
 public:
  // REQUIRES: spec.unique (make_hash_index refuses the rest).
  explicit HashIndex(IndexSpec spec);
  using Index::find_dup;
  using Index::replace;

  const char* kind() const override { return "HASH"; }
  size_t size() const override { return table_.size(); }
  size_t memory() const override { return table_.memory(); }
  uint64_t prepare(const uint8_t* data) const override {
    const uint64_t h = table_.hash_of(data);
    table_.prefetch_hash(h);
    return h;
  }
  void prefetch(const uint8_t* data) const override { table_.prefetch_hash(table_.hash_of(data)); }
  Tuple* find_dup(const Tuple* t, uint64_t prepared) const override { return table_.find_hashed(t->data(), prepared); }
  Tuple* get(const uint8_t* key) const override { return table_.find_key(key); }
  void replace(Tuple* old, Tuple* nw, uint64_t prepared) override;
  void reserve_undo(size_t k, bool inserting) override { table_.reserve_undo(k, inserting); }
  void restore(Tuple* cur, Tuple* old) noexcept override;
  void hold_for_undo(bool hold) override {
    if (!hold) table_.end_undo();
  }
  void clear() override { table_.clear(); }
  void rolled_back() override { table_.invalidate_positions(); }
  void build(const std::vector<Tuple*>& tuples, const std::string& space_name) override;
  void for_each(void (*fn)(Tuple*, void*), void* ctx) const override;
  void check_iterator(IterType type, uint32_t parts) const override;
  std::unique_ptr<Cursor> make_cursor(IterType type, std::string key, uint32_t parts, bool bounded) override;
  bool ordered() const override { return false; }
  std::string check(const Index& primary) const override;

  const HashTable& table() const { return table_; }

 private:
  HashTable table_;
};

struct HashWalkState : WalkState {
  size_t slot = 0;
  uint64_t generation = 0;
  size_t slot_limit = SIZE_MAX;  // where the walk stops (the wrapped sweep's end)
  bool wrap_pending = false;     // resumed after a rehash: sweep the wrapped slots at the end
  size_t cluster_start = 0;      // every unvisited tuple's home is at or after this slot
  size_t walk_capacity = 0;      // the capacity cluster_start refers to
};

class HashCursor final : public CursorImpl<HashCursor, HashWalkState> {
 public:
  HashCursor(HashIndex* index, IterType type, std::string key, uint32_t key_parts);

  uint32_t next_batch(Tuple** out, uint32_t n) override;
  Tuple* step();

 private:
  Tuple* slot_step(size_t limit);

  const HashTable& table_;
};

std::unique_ptr<Index> make_hash_index(IndexSpec spec);

}  // namespace ce
