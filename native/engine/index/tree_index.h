// TreeIndex: the TREE index kind, a B+tree (btree.h) of {tuple pointer, 64-bit hint} entries,
// and its cursor.
//
// Order: cmp_def(). For a non-unique index cmp_def() appends the primary key's parts, so equal
// keys are ordered by primary key and every entry is unique; such an index also gets the
// composite two-part hint (key_def.h), because a TTL index ties constantly. The hint of an
// entry is compared before any tuple byte, so a search reads tuple bytes only on a tie.
// prepare(t) is t's hint.
//
// Costs: find, get, replace O(log n) (see btree.h); build O(n log n) for the sort, then O(n).
//
// TreeCursor. Like memtx iterators, it remembers the last tuple it returned and the tree's
// version. When the version is unchanged it steps through the linked leaves in O(1); when the
// only change since was the erase of that very tuple (the daemon deleting what it just read) it
// continues from the tree's erase_successor(), also O(1); after any other change it re-seeks
// strictly past the last tuple in O(log n). A bounded ALL walk copies the last entry when it
// begins and stops after it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cursor.h"
#include "index.h"
#include "index/btree.h"

namespace ce {

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

class TreeIndex final : public Index {
 public:
  explicit TreeIndex(IndexSpec spec);
  using Index::find_dup;
  using Index::replace;

  const char* kind() const override { return "TREE"; }
  size_t size() const override { return tree_.size(); }
  size_t memory() const override { return tree_.reserved(); }
  uint64_t prepare(const uint8_t* data) const override { return cmp_def().hint(data); }
  void prefetch(const uint8_t*) const override {}
  Tuple* find_dup(const Tuple* t, uint64_t prepared) const override;
  Tuple* get(const uint8_t* key) const override;
  void replace(Tuple* old, Tuple* nw, uint64_t prepared) override;
  void reserve_undo(size_t k, bool inserting) override { tree_.reserve_undo(k, inserting); }
  void restore(Tuple* cur, Tuple* old) noexcept override;
  void hold_for_undo(bool hold) override {
    if (hold) tree_.hold();
    else tree_.release_hold();
  }
  void clear() override;
  void rolled_back() override {}  // every change already bumped the tree's version
  void build(const std::vector<Tuple*>& tuples, const std::string& space_name) override;
  void for_each(void (*fn)(Tuple*, void*), void* ctx) const override;
  void check_iterator(IterType, uint32_t) const override {}
  std::unique_ptr<Cursor> make_cursor(IterType type, std::string key, uint32_t parts, bool bounded) override;
  bool ordered() const override { return true; }
  std::string check(const Index& primary) const override;

  const Tree& tree() const { return tree_; }
  TreeElem elem(Tuple* t) const { return TreeElem{t, cmp_def().hint(t->data())}; }
  // The tree's last erase, for cursors that stood on the erased tuple.
  const Tuple* last_erased() const { return last_erased_; }
  uint64_t last_erase_version() const { return last_erase_version_; }

 private:
  Tree tree_;
  const Tuple* last_erased_ = nullptr;
  uint64_t last_erase_version_ = 0;
};

struct TreeWalkState : WalkState {
  Tree::Iterator pos{};
  uint64_t version = 0;
  std::vector<uint64_t> bound;  // a Tuple: the last entry when a bounded walk began
  uint64_t bound_hint = 0;
};

class TreeCursor final : public CursorImpl<TreeCursor, TreeWalkState> {
 public:
  TreeCursor(TreeIndex* index, IterType type, std::string key, uint32_t key_parts, bool bounded);

  uint32_t next_batch(Tuple** out, uint32_t n) override;
  Tuple* step();

 private:
  bool reverse() const { return type_ == IterType::kLe || type_ == IterType::kLt || type_ == IterType::kReq; }
  bool in_range(const Tuple* t) const;
  TreeElem last_elem() const;
  bool past_bound(const TreeElem& e) const;

  TreeIndex* tree_index_;
  bool bounded_;
  uint64_t key_hint_lo_ = 0;  // every entry matching the key has a hint in [lo, hi]
  uint64_t key_hint_hi_ = 0;
};

std::unique_ptr<Index> make_tree_index(IndexSpec spec);

}  // namespace ce
