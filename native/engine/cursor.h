// Cursor: a position in one index that stays valid while the space changes between steps.
//
// It serves both `index.pairs()` and the expiration daemon's scan. Like memtx iterators, a
// TREE cursor remembers the last tuple it returned and the tree's version. When the version is
// unchanged it steps through the linked leaves in O(1); when the only change since was the
// erase of that very tuple (the daemon deleting what it just read) it continues from the
// tree's erase_successor(), also O(1); after any other change it re-seeks strictly past the
// last tuple in O(log n). A HASH cursor walks slots by position; tuples never move between
// rehashes. Every tuple the walk has not reached has its home slot at or after the slot that
// follows the last empty slot it passed (probe chains never cross an empty slot), and home slots
// grow with the hash (home = hash * capacity / 2^64). So after a rehash (generation() changed) it
// resumes at the same fraction of the new table, and at the end of the table it also sweeps the
// slots before the first empty one (tuples that wrapped around): a tuple that lives through a
// whole walk is returned at least once, possibly twice, never skipped, and the walk still ends.
//
// A bounded cursor (the daemon's) ends a TREE walk at the entry that was last when the walk
// began: tuples appended behind it are new, not expired, and without the bound a pass over
// ever-growing keys (timestamps, counters) would never end.
//
// Lifetime: while a caller holds the cursor "attached" (inside one native call, or one
// transaction, during which the tuples it returned cannot be freed) it keeps a pointer to the
// last tuple. detach() copies that tuple's bytes, so the cursor may outlive the tuple; call it
// before control returns to JavaScript. The cursor refers to its Index by pointer: the space
// that owns both must outlive it (space_object.cc enforces this with a reference and checks
// for drop()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "index.h"

namespace ce {

class Cursor {
 public:
  // `key` is a checked MessagePack array with `key_parts` parts (0 for none).
  Cursor(Index* index, IterType type, std::string key, uint32_t key_parts, bool bounded = false);

  Index* index() const { return index_; }
  IterType type() const { return type_; }

  Tuple* next();
  bool exhausted() const { return done_; }
  // True when next() would return nothing; the cursor does not move.
  bool at_end();
  // Up to n tuples, as n calls of next() would return them, prefetching each; fewer only at the
  // end. The forward walks the daemon uses (ALL over a TREE or a HASH) step without re-checking
  // the index between tuples, which is most of a scan's cost per tuple.
  uint32_t next_batch(Tuple** out, uint32_t n);
  void reset();
  void detach();

  struct Saved {
    bool started, done, attached;
    Tree::Iterator pos;
    uint64_t version;
    std::vector<uint64_t> last_copy;
    Tuple* last;
    size_t slot;
    uint64_t generation;
    std::vector<uint64_t> bound;
    size_t slot_limit;
    bool wrap_pending;
    size_t cluster_start, walk_capacity;
  };
  Saved save() const;
  void restore(const Saved& s);

  // The copy of the visited tuples kept by the scan-for-predicate path (see expiry/chunk.h).
  std::string& visited() { return visited_; }
  std::vector<size_t>& visited_offsets() { return visited_offsets_; }

 private:
  bool reverse() const { return type_ == IterType::kLe || type_ == IterType::kLt || type_ == IterType::kReq; }
  bool in_range(const Tuple* t) const;
  Tuple* next_tree();
  Tuple* next_hash();
  TreeElem last_elem() const;
  bool past_bound(const TreeElem& e) const;
  Tuple* hash_step(const HashTable& hash, size_t limit);

  Index* index_;
  IterType type_;
  std::string key_;
  const uint8_t* key_first_ = nullptr;
  uint32_t key_parts_;
  uint64_t key_hint_lo_ = 0;  // every entry matching the key has a hint in [lo, hi]
  uint64_t key_hint_hi_ = 0;

  bool started_ = false;
  bool done_ = false;
  bool attached_ = false;
  Tree::Iterator pos_{};
  uint64_t version_ = 0;
  std::vector<uint64_t> last_copy_;  // a Tuple, 8-byte aligned
  Tuple* last_ = nullptr;            // meaningful while attached_
  size_t slot_ = 0;
  uint64_t generation_ = 0;
  bool bounded_;
  std::vector<uint64_t> bound_;  // a Tuple: the last entry when the walk began (bounded TREE)
  uint64_t bound_hint_ = 0;
  size_t slot_limit_ = SIZE_MAX;  // HASH: where the walk stops (the wrapped sweep's end)
  bool wrap_pending_ = false;     // HASH: resumed after a rehash, sweep the wrapped slots at the end
  size_t cluster_start_ = 0;      // HASH: every unvisited tuple's home is at or after this slot
  size_t walk_capacity_ = 0;      // HASH: the capacity cluster_start_ refers to

  std::string visited_;
  std::vector<size_t> visited_offsets_;
};

}  // namespace ce
