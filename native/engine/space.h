// Space: the tuples of one space and all of its indexes, with statements and transactions.
//
// Ownership: a Space owns its TupleArena (every tuple), its indexes and its undo log. Nothing
// else frees a tuple.
//
// Indexes are reached only through the Index interface (index.h); the space never asks which
// kind it holds. Bytes from the caller are copied before they are validated (a Buffer over a
// SharedArrayBuffer may change under us), so no unvalidated tuple is ever stored.
//
// Statements are atomic across indexes. insert/replace first validate the tuple against every
// index and look for duplicates in every unique index, then apply the change index by index;
// an index fails only on allocation, before it changes, and the indexes already changed are
// put back. So a failed statement changes nothing.
//
// Transactions: begin() returns a savepoint (the undo log's length) and nests. Inside a
// transaction each statement appends {old, new} to the undo log, and the old tuple stays
// allocated; commit() of the outermost transaction frees the old tuples, rollback(sp) undoes the
// entries after sp in reverse order and frees the new tuples. Outside a transaction a statement
// commits at once. A tuple removed inside a transaction therefore stays readable (by pointer)
// until the transaction ends, which is what lets the expiration chunk delete while it walks.
//
// TTL-aware reads (issue 15): a space may declare a TTL field at creation. Each read (get,
// select, count, min_max and a cursor's steps through next_visible) takes `now`; when the space
// has a TTL field and now is not NaN, a tuple whose TTL is <= now (ttl.h) is skipped as if
// absent, so select's limit/offset count visible tuples only. count() then walks (O(matching
// tuples), even for ALL); len() and memory still count what is stored. Writes see stored
// tuples, with one exception: insert() given `now` treats a primary-key duplicate that has
// expired as absent and replaces it, in the one statement. With kNoTtlCheck every read is the
// plain one.
//
// Rollback never allocates (Tarantool's rule): rollback(), and the catch in apply() that puts
// back the indexes a failed statement already changed, must not fail, or the undo log would be
// left half-applied. So every allocation an undo step could make is made before the change it
// undoes, where a failure still changes nothing:
//   - the undo log's capacity is reserved before the change is applied;
//   - each index's reserve_undo(k) runs before the change, k being the re-inserts a rollback of
//     everything open could make (the open entries that removed a tuple, plus this one): a B+tree
//     keeps that many inserts' worth of free nodes in its pool and does not release the pool while
//     a transaction is open (bound and memory cost: btree.h); a hash table keeps k slots of room
//     under its load limit so its re-inserts never grow it (hash_table.h);
//   - undo goes through Index::restore(), which erases before it re-inserts, swaps equal keys in
//     place, and takes only what was reserved;
//   - freeing (tuples, nodes) never allocates, and the undo log shrinks by swapping in an empty
//     vector, not by shrink_to_fit().
// A statement outside a transaction that only deletes reserves nothing: its erases cannot fail.
// Memory: while a transaction is open, per tuple it removed, each TREE index holds up to
// (height + 4) free 512-byte nodes and each HASH index one slot of room (8 bytes). Allocation
// failures are injected by alloc/fault.h for the tests.
//
// Capped spaces (issue 11): a space may be created with caps on its tuple count (max_tuples) and
// on bsize(), the sum of its stored tuples' MessagePack sizes (max_bytes), as Tarantool's
// space:bsize() counts them: the figure maxTupleSize measures, without the 4-byte tuple header,
// the arena's free space or the indexes. Every statement that stores a tuple (insert, replace,
// insert_many, update, upsert) leaves the space within its caps, in one of two ways:
//   - refuse (the default): a statement that would go over throws ER_SPACE_FULL before it
//     changes anything (insert_many: the whole batch is undone);
//   - evict: before storing it, the statement removes the stored tuples with the smallest TTL
//     until the new one fits, walking the evict index (the first TREE index whose first part is
//     the space's TTL field, with a numeric type; without one every such statement throws
//     ER_ILLEGAL_PARAMS). It never removes the tuple the statement replaces. The evictions and
//     the store are one statement: a savepoint covers them, a failure rolls them all back, and
//     inside a transaction they are undone with it. The evicted tuples' bytes are appended to
//     evicted() for the caller to report. Cost: O(log n) per evicted tuple, plus one look at the
//     caps (two comparisons) per statement on a capped space; nothing on an uncapped one.
// Expired tuples are evicted first since they have the smallest TTLs; with `refuse` they count
// until they are deleted.
//
// Not thread-safe: one JavaScript thread uses a space.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cursor.h"
#include "errors.h"
#include "index.h"
#include "index_build.h"
#include "key_def.h"
#include "ttl.h"
#include "tuple.h"
#include "update.h"
#include "alloc/tuple_arena.h"

namespace ce {

// A capped space's limits (see the header comment). The defaults cap nothing.
struct SpaceCaps {
  static constexpr uint64_t kNone = UINT64_MAX;
  uint64_t max_tuples = kNone;
  uint64_t max_bytes = kNone;
  bool evict = false;  // onFull 'evictExpiring'; else 'refuse'

  bool capped() const { return max_tuples != kNone || max_bytes != kNone; }
};

class Space {
 public:
  // ttl_fieldno: the 0-based TTL field, or kNoTtlField. Throws ER_ILLEGAL_PARAMS when a cap is
  // 0, or when caps.evict is set without caps or without a TTL field.
  Space(std::string name, uint32_t max_tuple_size, uint32_t ttl_fieldno = kNoTtlField, SpaceCaps caps = {});
  Space(const Space&) = delete;
  Space& operator=(const Space&) = delete;
  ~Space();

  const std::string& name() const { return name_; }
  uint32_t max_tuple_size() const { return max_tuple_size_; }
  uint32_t ttl_fieldno() const { return ttl_fieldno_; }
  const SpaceCaps& caps() const { return caps_; }
  // The sum of the stored tuples' sizes (MessagePack bytes), what max_bytes caps.
  uint64_t bsize() const { return bytes_; }
  // The bytes of the tuples evicted by the statements since clear_evicted(), one after another.
  // Each statement that can store a tuple clears it first; a failed statement leaves it empty.
  const std::string& evicted() const { return evicted_; }
  void clear_evicted() noexcept;

  // Whether a read at `now` treats t as absent (see the header comment). REQUIRES: t is stored.
  bool hides(const Tuple* t, const Now& now) const {
    return ttl_fieldno_ != kNoTtlField && now.checks() && now.expired(t->data(), ttl_fieldno_);
  }
  // The cursor's next tuple that a read at `now` sees, or nullptr at the end.
  Tuple* next_visible(Cursor& cursor, const Now& now) const {
    Tuple* t;
    while ((t = cursor.next()) != nullptr && hides(t, now)) {
    }
    return t;
  }

  // Adds an index of the kind registered under `kind` ("TREE", "HASH"; see index/registry.cc)
  // and fills it from the tuples already stored. Returns its id.
  // REQUIRES: not in a transaction (ER_TRANSACTION); the first index is unique.
  // `in_frame`: the caller's atomic() frame is open around a space older than it (the binding
  // says so): refused as inside a transaction, after the definition's own errors.
  uint32_t create_index(const std::string& name, const std::string& kind, bool unique, std::vector<KeyPart> parts,
                        bool in_frame = false);
  // createIndexAsync (index_build.h): begins building an index over the stored tuples in steps;
  // it stays invisible (no id, not in index_count()) until a step finishes it. Checks as
  // create_index. Throws ER_UNSUPPORTED while another build runs (create_index too).
  // REQUIRES: a primary index (ER_NO_PRIMARY_INDEX); not in a transaction (ER_TRANSACTION).
  void begin_index_build(const std::string& name, const std::string& kind, bool unique, std::vector<KeyPart> parts);
  // One step of the build (IndexBuild::step). Returns the new index's id once it is complete and
  // added, or -1 while the build goes on (also when a transaction is open: the step waits). On
  // any error the build is discarded, nothing else changed, and the error is thrown.
  // REQUIRES: index_building().
  int64_t index_build_step(size_t max_tuples, uint64_t budget_ns);
  bool index_building() const { return build_ != nullptr; }
  size_t index_count() const { return indexes_.size(); }
  // Throws ER_NO_SUCH_INDEX.
  Index& index(uint32_t id);
  // Throws ER_NO_PRIMARY_INDEX.
  Index& primary();

  // Statements. Every `key` argument is MessagePack from the caller, not yet validated: these
  // check it (see check_key) and the rules of the index they use.

  // `data` is one MessagePack tuple, not yet validated: it is copied into the arena first and
  // validated there, so bytes that change under the caller's feet are never stored unchecked.
  // REQUIRES: a primary index.
  // now: see the header comment (an expired primary-key duplicate does not block an insert).
  void insert(const uint8_t* data, size_t size, bool replace, const Now& now = Now());
  // `data` is a MessagePack array of tuples; all or nothing. Returns the count. Copies the batch
  // before validating it, as insert() does.
  size_t insert_many(const uint8_t* data, size_t size, const Now& now = Now());
  // get(): the tuple with this full key of a unique index, or nullptr. Throws ER_UNSUPPORTED on
  // a non-unique index, ER_KEY_PART_COUNT on a partial key.
  Tuple* get(uint32_t index_id, const uint8_t* key, size_t size, const Now& now = Now());
  // delete(): removes the tuple with this full primary key and appends its bytes to *out.
  // Returns false when absent. Throws ER_KEY_PART_COUNT on a partial key.
  bool remove(const uint8_t* key, size_t size, std::string* out);
  // min()/max() of an ordered index over the tuples matching a (partial) key, or nullptr.
  // Throws ER_UNSUPPORTED on an unordered index.
  Tuple* min_max(uint32_t index_id, const uint8_t* key, size_t size, bool max, const Now& now = Now());
  // A cursor after the index's iterator rules (Index::check_iterator). The space must outlive it.
  std::unique_ptr<Cursor> make_cursor(uint32_t index_id, const uint8_t* key, size_t size, IterType type,
                                      bool bounded = false);
  // select(): appends the bytes of up to `limit` matching tuples after skipping `offset`.
  void select(uint32_t index_id, const uint8_t* key, size_t size, IterType type, uint64_t limit, uint64_t offset,
              std::string* out, const Now& now = Now());
  // count(): the number of matching tuples (O(1) for ALL without a TTL check).
  size_t count(uint32_t index_id, const uint8_t* key, size_t size, IterType type, const Now& now = Now());

  // Removing a stored tuple, for walks that hold tuple pointers (the expiry chunk).
  // prepare_remove(t) prefetches what remove_tuple(t) will touch in every index and returns
  // what the primary derives from t (Index::prepare); t should already be in cache.
  uint64_t prepare_remove(const Tuple* t) const {
    for (size_t i = 1; i < indexes_.size(); i++) indexes_[i]->prefetch(t->data());
    return indexes_[0]->prepare(t->data());
  }
  // Removes exactly this stored tuple from every index. REQUIRES: t is stored;
  // pk_prepared == prepare_remove(t) (or primary().prepare(t->data())).
  void remove_tuple(Tuple* t, uint64_t pk_prepared) { apply(t, nullptr, &pk_prepared, 1); }

  // update(): applies Tarantool update operations (update.h; `ops` is the caller's MessagePack,
  // not yet validated) to the tuple with this full key of a unique index, as one statement.
  // Returns the new tuple, or nullptr when the key is absent. Throws ER_UPDATE_OP,
  // ER_UPDATE_FIELD, ER_UPDATE_INTEGER_OVERFLOW, ER_CANT_UPDATE_PRIMARY_KEY, or what the new
  // tuple breaks (ER_FIELD_TYPE, ER_FIELD_MISSING, ER_DUPLICATE_KEY, ER_TUPLE_TOO_LARGE);
  // a failed update changes nothing.
  Tuple* update(uint32_t index_id, const uint8_t* key, size_t key_size, const uint8_t* ops, size_t ops_size);
  // upsert(): inserts the tuple when its primary key is absent; otherwise applies `ops` to the
  // stored tuple as Tarantool does (an op that fails on it is skipped, a result that changes the
  // primary key is dropped). Returns the stored tuple, or nullptr when the update was dropped.
  Tuple* upsert(const uint8_t* data, size_t size, const uint8_t* ops, size_t ops_size);

  size_t len() const;
  // Removes every tuple (inside a transaction, tuple by tuple, so it can be rolled back; all or
  // nothing). Fails a running index build, once the tuples are gone.
  void truncate();
  // What the space holds natively (memory() in JavaScript). tuple_memory(): the arena's whole
  // slabs and 2 MiB chunks, free space in them included, plus tuples too large for a slab.
  // index_memory(): every index's memory() (Index::memory) plus the undo log's capacity. Not
  // counted: allocator overhead outside these blocks (malloc headers, memory glibc keeps after a
  // free), a scratch word per index, update()'s scratch (the size of the last tuple it built,
  // at most kKeptScratch kept between calls), and insertMany()'s copy of its batch and its list
  // of tuple spans, which live only during the call.
  size_t tuple_memory() const { return arena_.memory(); }
  size_t index_memory() const;

  // Transactions (see above). begin() returns a savepoint; commit/rollback take the one their
  // begin() returned, innermost first (ER_TRANSACTION otherwise).
  size_t begin();
  // REQUIRES: savepoint is the innermost open transaction's (ER_TRANSACTION otherwise).
  void commit(size_t savepoint);
  // REQUIRES: as commit(). Undoes its statements in reverse order.
  void rollback(size_t savepoint);
  bool in_transaction() const { return depth_ > 0; }

  // Validates a key from the caller against an index: size, MessagePack, array, part count and
  // types. Returns the part count and sets *first to the first part.
  uint32_t check_key(const Index& index, const uint8_t* key, size_t size, const uint8_t** first) const;

  // Walks every index and compares it with the primary, and bsize() with the tuples; for tests.
  // Returns "" when sound.
  std::string check_integrity() const;

 private:
  struct UndoEntry {
    Tuple* old;
    Tuple* nw;
  };

  // Validates one tuple for this space (size, MessagePack, array, indexed fields); `checked`:
  // the caller already ran mp::check over exactly these bytes.
  void check_tuple(const uint8_t* data, size_t size, bool checked) const;
  void check_size(size_t size) const;
  // Copies checked bytes into a tuple and inserts it; `pk_prepared` is primary().prepare(data).
  void insert_copy(const uint8_t* data, size_t size, bool replace, uint64_t pk_prepared, const Now& now = Now());
  std::vector<Tuple*> all_tuples() const;
  void free_large_tuples();
  // The outermost transaction ended: clears the undo log and lets the indexes release their
  // undo reserves.
  void end_transaction() noexcept;
  void check_savepoint(size_t savepoint, const char* what) const;
  void insert_tuple(Tuple* t, bool replace, uint64_t pk_prepared, const Now& now = Now());
  // Replaces old by nw in every index (either may be null). prepared[i], for i < n, is
  // Index::prepare() of indexes_[i] for the tuple this leaves in it: nw when given, else old.
  void apply(Tuple* old, Tuple* nw, const uint64_t* prepared = nullptr, size_t n = 0);
  // apply() for a statement that stores nw (not null) in place of old: on a capped space it
  // first refuses (ER_SPACE_FULL) or evicts, in one savepoint with the change (see the header
  // comment). REQUIRES: the statement's duplicate checks passed.
  void store(Tuple* old, Tuple* nw, const uint64_t* prepared, size_t n);
  // Whether the space is within its caps once nw replaces old.
  bool fits(const Tuple* old, const Tuple* nw) const {
    const uint64_t count = len() + (old == nullptr ? 1 : 0);
    const uint64_t bytes = bytes_ + nw->size - (old == nullptr ? 0 : old->size);
    return count <= caps_.max_tuples && bytes <= caps_.max_bytes;
  }
  // Removes the tuples with the smallest TTL, never old, until fits(old, nw). REQUIRES: in a
  // transaction. Throws ER_SPACE_FULL when nothing more can be evicted.
  void evict_for(const Tuple* old, const Tuple* nw);
  DbError full(const Tuple* old, const Tuple* nw) const;
  void require_primary() const;
  // create_index and begin_index_build: checks the definition and makes the empty index.
  std::unique_ptr<Index> new_index(const std::string& name, const std::string& kind, bool unique,
                                   std::vector<KeyPart> parts);
  // update()/upsert(): replaces stored `old` by a tuple of these bytes through the statement path
  // (validated as a tuple of the space). skip_pk_change: return nullptr instead of throwing
  // when the primary key would change.
  Tuple* replace_updated(Tuple* old, const std::string& bytes, bool skip_pk_change);
  void free_tuple(Tuple* t) { arena_.free(t); }

  std::string name_;
  uint32_t max_tuple_size_;
  uint32_t ttl_fieldno_ = kNoTtlField;
  SpaceCaps caps_;
  uint64_t bytes_ = 0;                       // bsize()
  uint32_t evict_index_ = UINT32_MAX;        // the index evict_for() walks, or none
  std::string evicted_;                      // evicted()
  TupleArena arena_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::vector<UndoEntry> undo_;
  std::vector<uint64_t> prepared_;  // insert_tuple's per-index prepare() values
  uint32_t depth_ = 0;
  std::vector<size_t> open_;  // the savepoints begin() returned, one per open transaction
  size_t reinserts_ = 0;  // open undo entries with an old tuple: re-inserts a rollback makes
  std::unique_ptr<IndexBuild> build_;  // an index being built (createIndexAsync), or null
  // update()/upsert()'s parsed operations and the updated tuple's bytes before they are stored,
  // reused from call to call; scratch over kKeptScratch bytes is given back after the call.
  static constexpr size_t kKeptScratch = 64 * 1024;
  UpdateOps update_ops_;
  std::string update_new_;
  void trim_update_scratch() noexcept;
  // Trims the scratch when update()/upsert() leaves, however it leaves (a refused update may
  // have built a large tuple, and an absent key large parsed operations).
  struct ScratchTrim {
    Space* space;
    explicit ScratchTrim(Space* s) : space(s) {}
    ~ScratchTrim() { space->trim_update_scratch(); }
  };
};

}  // namespace ce
