// IndexBuild: an index being built over a non-empty space in bounded steps, between which the
// caller (createIndexAsync) lets other work run, writes to the space included.
//
// Algorithm (Tarantool memtx's online build, adapted to a HASH primary whose walk order is not a
// key order): the new index is live for writes from the first step on, and a cursor walks the
// primary.
//   - Every statement the space applies (insert, replace, delete, update, upsert, a chunk's
//     deletes, a rollback's restores) is mirrored into the new index by on_replace() and
//     on_restore(), after the visible indexes changed. A tuple the walk has not reached yet is
//     not in the new index: a delete of it is a no-op there, a swap becomes an insert.
//   - step() takes the next tuples of the walk and inserts each one that is not already there
//     (a write put it in, or the walk returns it twice: a HASH walk may, across growth).
//   - The walk is bounded (cursor.h): tuples stored behind its end when it began were inserted
//     by writes, so when it ends the new index holds exactly the primary's tuples.
// So at every step boundary: every tuple in the new index is in the primary, and every tuple of
// the primary the walk has passed is in the new index.
//
// A write never fails because of a build. What the new index cannot take (a duplicate in a
// unique index, a tuple missing an indexed field or of the wrong type, an allocation failure in
// the new index) fails the build instead: the index stops following writes, and the next step
// throws that error and the space discards the build, leaving everything as it was before the
// build began (as Tarantool's memtx_build_on_replace does). truncate() fails it too.
//
// A failure that a write inside a transaction caused is undone with that write: when a
// rollback undoes the write (or the failure came from a restore of that rollback), the build
// starts over at its next step, from an empty index and a new walk, since the index stopped
// following writes at the failure. Once the transaction commits, the failure stands. So a
// rolled-back frame that wrote a duplicate fails no build, whether or not the walk had passed
// the key it duplicated. truncate()'s failure always stands.
//
// Invariant kept for rollback: the space reserves the new index's undo room before every
// change it mirrors (reserve_undo), so on_restore() never allocates. A restore that would put a
// duplicate into a unique new index fails the build instead.
//
// Costs: a step inserts up to its count of tuples (O(log n) each into a TREE, O(1) into a HASH)
// or stops when its time budget is spent, checking the clock every 64 tuples. A mirrored write
// costs one find and one replace in the new index.
//
// Ownership: the Space owns its IndexBuild (at most one at a time); the build owns the new index
// and the cursor over the primary, and is destroyed before the space's indexes.
// Not thread-safe, as Space.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "alloc/fault.h"
#include "cursor.h"
#include "errors.h"
#include "index.h"

namespace ce {

class IndexBuild {
 public:
  // REQUIRES: index is empty; walk is a bounded ALL cursor over the space's primary.
  IndexBuild(std::unique_ptr<Index> index, std::unique_ptr<Cursor> walk, std::string space_name);

  Index& index() { return *index_; }
  const Index& index() const { return *index_; }
  std::unique_ptr<Index> take_index() { return std::move(index_); }

  bool failed() const { return error_ != nullptr; }
  // REQUIRES: failed().
  const DbError& error() const { return *error_; }
  // Stops following writes; the next step throws this error. It stands whatever a rollback
  // does, and replaces a failure that a rollback could still undo.
  void fail(const char* code, const char* message) noexcept;
  // fail(code, message()), where building the message allocates: without memory for it, the
  // failure is ER_MEMORY_ISSUE (a noexcept path must not throw for want of a message).
  template <class Message>
  void fail_with(const char* code, Message message) noexcept {
    try {
      fault::point();
      const std::string text = message();
      fail(code, text.c_str());
    } catch (...) {
      fail(err::kMemory, kNoMemory);
    }
  }

  // The position of a change's undo entry in the space's undo log, or kNoUndo outside a
  // transaction.
  static constexpr size_t kNoUndo = SIZE_MAX;
  // Mirrors Space::apply(old, nw): runs after the visible indexes changed. reinserts: the undo
  // room the space reserved in every index for this change; undo_pos: where the change's undo
  // entry goes. Never throws.
  void on_replace(Tuple* old, Tuple* nw, size_t reinserts, size_t undo_pos) noexcept;
  // Mirrors a rollback's Index::restore(cur, old) of the undo entry at undo_pos. Never
  // allocates, never throws.
  void on_restore(Tuple* cur, Tuple* old, size_t undo_pos) noexcept;
  void hold_for_undo(bool hold) noexcept;
  void rolled_back() noexcept;
  // A rollback to `savepoint` ended: a failure caused at or after it is undone (restart_pending).
  void rolled_back_to(size_t savepoint) noexcept;
  // The outermost transaction ended: a failure it caused and did not undo stands.
  void transaction_ended() noexcept;
  bool restart_pending() const { return restart_; }
  // Starts over: an empty index, `walk` (a new bounded ALL cursor over the primary), no failure.
  // REQUIRES: restart_pending(); no transaction is open.
  void restart(std::unique_ptr<Cursor> walk);

  // Inserts up to max_tuples tuples of the walk, or fewer when budget_ns is spent. Returns true
  // when the walk has ended. Throws the build's error (failed()), or ER_DUPLICATE_KEY,
  // ER_FIELD_MISSING, ER_FIELD_TYPE or std::bad_alloc when a tuple of the walk cannot go in; the
  // caller then discards the build. REQUIRES: not failed(); no transaction is open.
  bool step(size_t max_tuples, uint64_t budget_ns);

  size_t walked() const { return walked_; }

 private:
  // Whether t passes the new index's key_def (only such a tuple may be looked up in it).
  bool fits(const Tuple* t) const noexcept;
  bool stored(Tuple* t) const { return t != nullptr && fits(t) && index_->find_dup(t) == t; }
  DbError duplicate() const;
  // A failure caused by the change whose undo entry is at undo_pos (kNoUndo: none, it stands).
  void fail_at(size_t undo_pos, const char* code, const char* message) noexcept;
  // fail_at() with a message built as in fail_with().
  template <class Message>
  void fail_at_with(size_t undo_pos, const char* code, Message message) noexcept {
    try {
      fault::point();
      const std::string text = message();
      fail_at(undo_pos, code, text.c_str());
    } catch (...) {
      fail_at(undo_pos, err::kMemory, kNoMemory);
    }
  }
  static constexpr const char* kNoMemory = "Out of memory while building an index";

  std::unique_ptr<Index> index_;
  std::unique_ptr<Cursor> walk_;
  std::string space_name_;
  std::unique_ptr<DbError> error_;
  bool undoable_ = false;  // error_ came from a change at fail_pos_ of an open transaction
  size_t fail_pos_ = 0;
  bool restart_ = false;   // a rollback undid that change: start over at the next step
  bool held_ = false;      // index_->hold_for_undo(true) is in force
  size_t walked_ = 0;
};

}  // namespace ce
