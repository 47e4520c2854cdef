#include "index.h"

#include <algorithm>

#include "errors.h"

namespace ce {

Index::Index(uint32_t id, std::string name, IndexType type, bool unique, KeyDef key_def, KeyDef cmp_def)
    : id_(id), name_(std::move(name)), type_(type), unique_(unique), key_def_(std::move(key_def)),
      cmp_def_(std::move(cmp_def)) {
  if (type_ == IndexType::kTree) tree_ = std::make_unique<Tree>(TreeCmp{&cmp_def_});
  else hash_ = std::make_unique<HashTable>(&key_def_);
}

size_t Index::size() const { return tree_ ? tree_->size() : hash_->size(); }

size_t Index::memory() const { return tree_ ? tree_->memory() : hash_->memory(); }

Tuple* Index::find_dup(const Tuple* t) const {
  if (hash_) return hash_->find_tuple(t);
  const TreeElem* e = tree_->find(TreeElem{const_cast<Tuple*>(t), cmp_def_.hint(t->data())});
  return e ? e->tuple : nullptr;
}

Tuple* Index::get(const uint8_t* key) const {
  if (hash_) return hash_->find_key(key);
  const uint32_t n = key_def_.part_count();
  uint64_t lo, hi;
  cmp_def_.hint_range(key, n, &lo, &hi);
  auto it = tree_->lower_bound([&](const TreeElem& e) {
    if (e.hint < lo) return -1;
    if (e.hint > hi) return 1;
    return key_def_.compare_with_key(e.tuple->data(), key, n);
  });
  if (!tree_->valid(it)) return nullptr;
  Tuple* t = tree_->get(it).tuple;
  return key_def_.compare_with_key(t->data(), key, n) == 0 ? t : nullptr;
}

void Index::replace_hashed(Tuple* old, Tuple* nw, uint64_t hash) {
  if (old && nw && key_def_.compare(old->data(), nw->data()) == 0) {
    hash_->replace_same(old, nw);
    return;
  }
  if (nw) hash_->insert_hashed(nw, hash);
  if (old) {
    if (nw) hash_->erase(old);
    else hash_->erase_hashed(old, hash);
  }
}

void Index::replace(Tuple* old, Tuple* nw) {
  if (hash_) return replace_hashed(old, nw, hash_->hash_of((nw ? nw : old)->data()));
  if (old && nw) {
    const TreeElem eo = elem(old), en = elem(nw);
    if (eo.hint == en.hint && cmp_def_.compare(old->data(), nw->data()) == 0) {
      // Same position in the order: erase cannot fail and insert reuses the freed room, but
      // a rebalancing erase could still force a split, so insert first when that is possible.
      tree_->erase(eo);
      try {
        tree_->insert(en);
      } catch (...) {
        tree_->insert(eo);
        throw;
      }
      last_erased_ = nullptr;
      return;
    }
  }
  if (nw) tree_->insert(elem(nw));
  if (old) {
    tree_->erase(elem(old));
    last_erased_ = old;
    last_erase_version_ = tree_->version();
  }
}

void Index::clear() {
  if (tree_) tree_->clear();
  else hash_->clear();
  last_erased_ = nullptr;
}

void Index::build(const std::vector<Tuple*>& tuples, const std::string& space_name) {
  auto duplicate = [&]() {
    return DbError(err::kDuplicateKey,
                   "Duplicate key exists in unique index '" + name_ + "' in space '" + space_name + "'");
  };
  if (hash_) {
    try {
      for (Tuple* t : tuples) {
        if (hash_->find_tuple(t)) throw duplicate();
        hash_->insert(t);
      }
    } catch (...) {
      hash_->clear();
      throw;
    }
    return;
  }
  std::vector<TreeElem> elems;
  elems.reserve(tuples.size());
  for (Tuple* t : tuples) elems.push_back(elem(t));
  const TreeCmp cmp{&cmp_def_};
  std::sort(elems.begin(), elems.end(),
            [&](const TreeElem& a, const TreeElem& b) { return cmp.compare(a, b) < 0; });
  for (size_t i = 1; i < elems.size(); i++) {
    if (cmp.compare(elems[i - 1], elems[i]) == 0) throw duplicate();
  }
  tree_->build(elems.data(), elems.size());
}

}  // namespace ce
