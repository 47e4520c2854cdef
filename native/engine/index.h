// Index: one TREE or HASH index of a space, over tuple pointers.
//
// An index never owns tuples; the space's arena does. key_def() holds the user's parts; for a
// non-unique TREE, cmp_def() appends the primary key's parts, so entries with equal keys are
// ordered by primary key and every entry is unique under cmp_def(). A TREE entry is the tuple
// pointer plus a 64-bit hint of its first part (see key_def.h), compared before any tuple byte.
//
// replace(old, nw) is the one mutation: insert (old == nullptr), delete (nw == nullptr), or
// swap. When old and nw compare equal it swaps in place; otherwise it inserts nw before erasing
// old. Either way the only failure, std::bad_alloc, happens before this index changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/hash_table.h"
#include "key_def.h"
#include "tuple.h"

namespace ce {

enum class IndexType : uint8_t { kTree, kHash };
enum class IterType : uint8_t { kEq, kReq, kAll, kGe, kGt, kLe, kLt };

struct TreeElem {
  Tuple* tuple;
  uint64_t hint;
};

struct TreeCmp {
  const KeyDef* def;
  int compare(const TreeElem& a, const TreeElem& b) const {
    if (a.hint != b.hint) return a.hint < b.hint ? -1 : 1;
    if (a.tuple == b.tuple) return 0;
    return def->compare_from(a.tuple->data(), b.tuple->data(), def->tie_start(a.hint));
  }
};

using Tree = BTree<TreeElem, TreeCmp>;

class Index {
 public:
  Index(uint32_t id, std::string name, IndexType type, bool unique, KeyDef key_def, KeyDef cmp_def);
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }
  IndexType type() const { return type_; }
  bool unique() const { return unique_; }
  const KeyDef& key_def() const { return key_def_; }
  const KeyDef& cmp_def() const { return cmp_def_; }

  size_t size() const;
  size_t memory() const;

  // Unique indexes: the stored tuple whose key equals t's key.
  Tuple* find_dup(const Tuple* t) const;
  // Unique indexes: the tuple with this full key (`key` is the first part of a checked key).
  Tuple* get(const uint8_t* key) const;

  void replace(Tuple* old, Tuple* nw);
  // The same on a HASH index, given the hash of the key this leaves in it: nw's when nw is
  // given, else old's (see HashTable::hash_of).
  void replace_hashed(Tuple* old, Tuple* nw, uint64_t hash);
  void clear();
  // Fills an empty index from tuples; throws ER_DUPLICATE_KEY (nothing kept) on equal keys.
  void build(const std::vector<Tuple*>& tuples, const std::string& space_name);

  Tree& tree() { return *tree_; }
  const Tree& tree() const { return *tree_; }
  HashTable& hash() { return *hash_; }
  const HashTable& hash() const { return *hash_; }

  TreeElem elem(Tuple* t) const { return TreeElem{t, cmp_def_.hint(t->data())}; }

  // The tree's last erase, for cursors that stood on the erased tuple (see Cursor).
  const Tuple* last_erased() const { return last_erased_; }
  uint64_t last_erase_version() const { return last_erase_version_; }

 private:
  uint32_t id_;
  std::string name_;
  IndexType type_;
  bool unique_;
  KeyDef key_def_;
  KeyDef cmp_def_;
  std::unique_ptr<Tree> tree_;
  std::unique_ptr<HashTable> hash_;
  const Tuple* last_erased_ = nullptr;
  uint64_t last_erase_version_ = 0;
};

}  // namespace ce
