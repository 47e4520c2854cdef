// HashIndex: the HASH index kind, a unique index over an open-addressing table (hash_table.h),
// and its cursor.
//
// A HASH index is unique, finds only by a full key, and walks only ALL (slot order) and EQ.
// prepare(t) is the hash of t's key, and brings its home slot into cache (prefetch_hash).
//
// Costs: find, get, replace O(1) expected; build O(n); see hash_table.h.
//
// HashCursor walks slots by position; tuples never move within a table (hash_table.h). Home
// slots grow with the hash in every table (home = hash * capacity / 2^64), and probe chains
// never cross an empty slot, so every tuple a walker has not reached has its home at or after
// the slot that follows the last empty slot it passed (cs, "cluster start"), except tuples that
// wrapped around the table's end, which a walker that did not start at slot 0 sweeps at the end
// (the slots before the first empty one, returning only the tuples there whose home is after
// their slot, so that a walk undisturbed by writes returns each tuple once). While the table migrates, the cursor runs two
// walkers: one over the old table (skipping to migrated() when the migration overtakes it) and
// one over the new table, which never goes past the slot where the old walker's cs lands in the
// new table: a tuple the old walker has not returned lands in the new table at or after that
// slot, or wraps around to its start (swept at the end). So growth never makes the cursor skip a
// tuple. When the migration ends, the new-table walker goes on alone. After a clear() or a
// rollback (generation() changed), or when the cursor missed a whole migration, it resumes at
// the same fraction of the current table(s) and sweeps the wrapped slots at the end. A tuple
// that lives through a whole walk is returned at least once, possibly twice, never skipped, and
// the walk still ends: each walker only moves forward over a table whose size is fixed.
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

// A slot-order walk over one table.
struct HashWalker {
  size_t slot = 0;
  size_t limit = SIZE_MAX;    // where the walk stops (the wrapped sweep's end)
  size_t cs = 0;              // every unvisited tuple's home is at or after this slot
  bool wrap_pending = false;  // sweep the wrapped slots at the end
  bool done = false;
};

struct HashWalkState : WalkState {
  HashWalker cur;               // over the current (new, while migrating) table
  HashWalker old;               // over the old table while lockstep
  size_t cap = 0;               // the capacity cur refers to
  size_t old_cap = 0;           // the capacity old refers to
  bool lockstep = false;        // walking the migration of epoch
  uint64_t generation = 0;
  uint64_t epoch = 0;
};

class HashCursor final : public CursorImpl<HashCursor, HashWalkState> {
 public:
  HashCursor(HashIndex* index, IterType type, std::string key, uint32_t key_parts);

  uint32_t next_batch(Tuple** out, uint32_t n) override;
  Tuple* step();

 private:
  void sync();
  void resume();
  Tuple* walk(HashWalker& w, bool old, size_t limit);

  const HashTable& table_;
};

std::unique_ptr<Index> make_hash_index(IndexSpec spec);

}  // namespace ce
