// Space: the tuples of one space and all of its indexes, with statements and transactions.
//
// Ownership: a Space owns its TupleArena (every tuple), its indexes and its undo log. Nothing
// else frees a tuple.
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
// Not thread-safe: one JavaScript thread uses a space.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "index.h"
#include "key_def.h"
#include "tuple.h"
#include "alloc/tuple_arena.h"

namespace ce {

class Space {
 public:
  Space(std::string name, uint32_t max_tuple_size);
  Space(const Space&) = delete;
  Space& operator=(const Space&) = delete;
  ~Space();

  const std::string& name() const { return name_; }
  uint32_t max_tuple_size() const { return max_tuple_size_; }

  uint32_t create_index(const std::string& name, IndexType type, bool unique, std::vector<KeyPart> parts);
  size_t index_count() const { return indexes_.size(); }
  Index& index(uint32_t id);
  Index& primary();

  // `data` is one MessagePack tuple from JavaScript, not yet validated.
  void insert(const uint8_t* data, size_t size, bool replace);
  // `data` is a MessagePack array of tuples; all or nothing. Returns the count.
  size_t insert_many(const uint8_t* data, size_t size);
  // Removes the tuple with this primary key (a checked key's first part); appends its bytes to
  // `out`. Returns false when absent.
  bool remove(const uint8_t* key, std::string* out);
  // The primary key's hash of a tuple's bytes when the primary is HASH (0 otherwise), which
  // saves computing it again inside the calls that take one.
  uint64_t pk_hash(const uint8_t* data) const;
  // Removes exactly this stored tuple from every index; `hash` is pk_hash(t->data()).
  void remove_tuple(Tuple* t, uint64_t hash);
  // Prefetches the hash slots a later remove_tuple(t) will touch, and returns pk_hash(t->data())
  // for it; t should already be in cache.
  uint64_t prefetch_remove(const Tuple* t) const {
    uint64_t pk = 0;
    for (size_t i = 0; i < indexes_.size(); i++) {
      if (indexes_[i]->type() != IndexType::kHash) continue;
      const uint64_t h = indexes_[i]->hash().hash_of(t->data());
      indexes_[i]->hash().prefetch_hash(h);
      if (i == 0) pk = h;
    }
    return pk;
  }

  size_t len() const;
  void truncate();
  size_t tuple_memory() const { return arena_.memory(); }
  size_t index_memory() const;

  size_t begin();
  void commit(size_t savepoint);
  void rollback(size_t savepoint);
  bool in_transaction() const { return depth_ > 0; }

  // Validates a key from JavaScript against an index: MessagePack, array, size, parts, types.
  // Returns the part count and sets *first to the first part.
  uint32_t check_key(const Index& index, const uint8_t* key, size_t size, const uint8_t** first) const;

  // Walks every index and compares it with the primary; for tests. Returns "" when sound.
  std::string check_integrity() const;

 private:
  struct UndoEntry {
    Tuple* old;
    Tuple* nw;
  };

  // Validates one tuple for this space (size, MessagePack, array, indexed fields); `checked`:
  // the caller already ran mp::check over exactly these bytes.
  void check_tuple(const uint8_t* data, size_t size, bool checked) const;
  Tuple* copy_tuple(const uint8_t* data, size_t size);
  // Copies checked bytes into a tuple and inserts it; `hash` is pk_hash(data).
  void insert_copy(const uint8_t* data, size_t size, bool replace, uint64_t hash);
  std::vector<Tuple*> all_tuples() const;
  void free_large_tuples();
  template <class F>
  void for_each_tuple(F f) const {
    if (indexes_.empty()) return;
    const Index& pk = *indexes_[0];
    if (pk.type() == IndexType::kTree) {
      for (auto it = pk.tree().begin(); pk.tree().valid(it); pk.tree().next(it)) f(pk.tree().get(it).tuple);
    } else {
      for (size_t i = 0; i < pk.hash().slot_count(); i++)
        if (Tuple* t = pk.hash().slot(i)) f(t);
    }
  }
  void insert_tuple(Tuple* t, bool replace, uint64_t hash);
  // Replaces old by nw in every index (either may be null). pk_hash, when given, is pk_hash() of
  // the tuple this leaves in the primary: nw when given, else old.
  void apply(Tuple* old, Tuple* nw, const uint64_t* pk_hash = nullptr);
  void require_primary() const;
  void free_tuple(Tuple* t) { arena_.free(t); }

  std::string name_;
  uint32_t max_tuple_size_;
  TupleArena arena_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::vector<UndoEntry> undo_;
  uint32_t depth_ = 0;
};

}  // namespace ce
