// Index: the interface every index kind implements; Space, Cursor and the expiry chunk see only
// this, never the concrete kind.
//
// An index never owns tuples; the space's arena does. key_def() holds the user's parts;
// cmp_def() is what the index orders or hashes by (an ordered non-unique index appends the
// primary key's parts, so every entry is unique under it).
//
// Kinds live in native/engine/index/, one file each (tree_index.cc: the B+tree; hash_index.cc:
// the open-addressing hash table), and are registered in index/registry.cc by name ("TREE",
// "HASH"). Adding a kind is one new file plus one line there.
//
// replace(old, nw) is the one mutation: insert (old == nullptr), delete (nw == nullptr), or
// swap. Its only failure, std::bad_alloc, happens before this index changes.
//
// prepare(data) computes, once, what this index derives from a tuple's key (a hash, a hint) and brings
// the memory a later lookup or replace will touch into cache; find_dup and replace take it back
// so a statement computes it once per index.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "key_def.h"
#include "tuple.h"

namespace ce {

enum class IterType : uint8_t { kEq, kReq, kAll, kGe, kGt, kLe, kLt };

const char* iter_type_name(IterType type);

class Cursor;

// What create_index hands to an index kind's factory.
struct IndexSpec {
  uint32_t id;
  std::string name;
  bool unique;
  std::vector<KeyPart> parts;      // the user's parts
  std::vector<KeyPart> pk_parts;   // the primary key's parts (empty when this is the primary)
};

class Index {
 public:
  Index(uint32_t id, std::string name, bool unique, KeyDef key_def, KeyDef cmp_def);
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;
  virtual ~Index() = default;

  uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }
  bool unique() const { return unique_; }
  const KeyDef& key_def() const { return key_def_; }
  const KeyDef& cmp_def() const { return cmp_def_; }

  // "TREE", "HASH": the name the kind was registered under.
  virtual const char* kind() const = 0;
  virtual size_t size() const = 0;
  // Every byte the index holds natively, used or not: a TREE's whole node pool (live nodes, freed
  // nodes awaiting reuse, the rest of the last chunk), a HASH's whole table (its capacity, in
  // whole 2 MiB blocks once it is a big mapping, 2 MiB or more).
  virtual size_t memory() const = 0;

  // See the header comment. REQUIRES: `data` is a tuple's MessagePack that passed
  // key_def().check_tuple().
  virtual uint64_t prepare(const uint8_t* data) const = 0;
  // Only brings into cache what removing that tuple will touch (nothing for some kinds).
  virtual void prefetch(const uint8_t* data) const = 0;

  // The stored tuple whose cmp_def() key equals t's. REQUIRES: prepared == prepare(t).
  virtual Tuple* find_dup(const Tuple* t, uint64_t prepared) const = 0;
  Tuple* find_dup(const Tuple* t) const { return find_dup(t, prepare(t->data())); }

  // The tuple with this full key. REQUIRES: unique(); `key` is the first part of a key that
  // passed check_key() with key_def().part_count() parts.
  virtual Tuple* get(const uint8_t* key) const = 0;

  // REQUIRES: old is stored here (or null); nw passed check_tuple and no stored tuple other
  // than old has its key (or null); prepared == prepare(nw ? nw : old).
  virtual void replace(Tuple* old, Tuple* nw, uint64_t prepared) = 0;
  void replace(Tuple* old, Tuple* nw) { replace(old, nw, prepare((nw != nullptr ? nw : old)->data())); }

  // Undo support: rollback never allocates (see space.h).
  // reserve_undo(k, inserting): runs before a change; afterwards k re-inserts by restore() (and
  // the change itself, an insert when `inserting`) cannot fail. Throws std::bad_alloc with the
  // index unchanged.
  virtual void reserve_undo(size_t k, bool inserting) = 0;
  // Puts `old` back where `cur` is (either may be null): the inverse of replace(old, cur).
  // REQUIRES: cur is stored here (or null); replace(old, cur) was the last change to this index
  // not yet undone; reserve_undo() covered it. Never allocates, never throws.
  virtual void restore(Tuple* cur, Tuple* old) noexcept = 0;
  // A transaction is open (hold) or ended (release): an index keeps what rollback may need.
  virtual void hold_for_undo(bool hold) = 0;

  virtual void clear() = 0;
  // Called after a rollback undid changes here (cursors may need to re-find their place).
  virtual void rolled_back() = 0;
  // Fills the index from tuples; throws ER_DUPLICATE_KEY (nothing kept) on equal keys.
  // REQUIRES: size() == 0; every tuple passed key_def().check_tuple().
  virtual void build(const std::vector<Tuple*>& tuples, const std::string& space_name) = 0;
  // Calls fn(t, ctx) for every stored tuple, in the index's walk order; allocates nothing.
  virtual void for_each(void (*fn)(Tuple*, void*), void* ctx) const = 0;
  template <class F>
  void each(F f) const {
    for_each([](Tuple* t, void* ctx) { (*static_cast<F*>(ctx))(t); }, &f);
  }

  // Throws ER_ITERATOR_TYPE or ER_KEY_PART_COUNT when this kind cannot walk `type` with a key of
  // `parts` parts (HASH: only ALL and EQ, EQ with a full key or none). TREE accepts all.
  virtual void check_iterator(IterType type, uint32_t parts) const = 0;
  // A cursor over this index. REQUIRES: `key` is a checked MessagePack array with `parts` parts,
  // and check_iterator(type, parts) passed. `bounded`: an ALL walk ends at the entry that was
  // last when it began (see cursor.h). The index must outlive the cursor.
  virtual std::unique_ptr<Cursor> make_cursor(IterType type, std::string key, uint32_t parts, bool bounded) = 0;
  // Whether min()/max() make sense (an ordered index).
  virtual bool ordered() const = 0;

  // "" when the structure is sound and every tuple is also in `primary`; else what is wrong.
  virtual std::string check(const Index& primary) const = 0;

 private:
  uint32_t id_;
  std::string name_;
  bool unique_;
  KeyDef key_def_;
  KeyDef cmp_def_;
};

}  // namespace ce
