#include "index/tree_index.h"

#include <algorithm>

#include "errors.h"

namespace ce {

namespace {

// How far ahead of a walk along B+tree leaves to prefetch, in entries (a look-ahead never
// leaves the leaf).
constexpr uint32_t kTreeAhead = 12;

KeyDef make_cmp_def(const IndexSpec& spec) {
  std::vector<KeyPart> cmp_parts = spec.parts;
  if (!spec.unique) {
    KeyDef probe(spec.name, spec.parts);
    for (const KeyPart& p : spec.pk_parts)
      if (!probe.has_field(p.fieldno)) cmp_parts.push_back(p);
  }
  return KeyDef(spec.name, cmp_parts, /*composite_hint=*/!spec.unique);
}

}  // namespace

std::unique_ptr<Index> make_tree_index(IndexSpec spec) { return std::make_unique<TreeIndex>(std::move(spec)); }

TreeIndex::TreeIndex(IndexSpec spec)
    : Index(spec.id, spec.name, spec.unique, KeyDef(spec.name, spec.parts), make_cmp_def(spec)),
      tree_(TreeCmp{&cmp_def()}) {}

Tuple* TreeIndex::find_dup(const Tuple* t, uint64_t prepared) const {
  const TreeElem* e = tree_.find(TreeElem{const_cast<Tuple*>(t), prepared});
  return e ? e->tuple : nullptr;
}

Tuple* TreeIndex::get(const uint8_t* key) const {
  const uint32_t n = key_def().part_count();
  uint64_t lo, hi;
  cmp_def().hint_range(key, n, &lo, &hi);
  auto it = tree_.lower_bound([&](const TreeElem& e) {
    if (e.hint < lo) return -1;
    if (e.hint > hi) return 1;
    return key_def().compare_with_key(e.tuple->data(), key, n);
  });
  if (!tree_.valid(it)) return nullptr;
  Tuple* t = tree_.get(it).tuple;
  return key_def().compare_with_key(t->data(), key, n) == 0 ? t : nullptr;
}

void TreeIndex::replace(Tuple* old, Tuple* nw, uint64_t prepared) {
  if (old && nw) {
    const TreeElem eo = elem(old), en{nw, prepared};
    if (eo.hint == en.hint && cmp_def().compare(old->data(), nw->data()) == 0) {
      // Same position in the order: swap the element in place (no allocation, no structure).
      tree_.replace_equal(eo, en);
      last_erased_ = nullptr;
      return;
    }
    tree_.insert(en);
    tree_.erase(eo);
  } else if (nw) {
    tree_.insert(TreeElem{nw, prepared});
    return;
  } else {
    tree_.erase(TreeElem{old, prepared});
  }
  last_erased_ = old;
  last_erase_version_ = tree_.version();
}

void TreeIndex::restore(Tuple* cur, Tuple* old) noexcept {
  // The inverse of replace(old, cur). The erase comes first (it frees, never allocates); the
  // insert takes its nodes from what reserve_undo() kept in the pool, so it cannot throw.
  if (cur && old) {
    const TreeElem ec = elem(cur), eo = elem(old);
    if (ec.hint == eo.hint && cmp_def().compare(cur->data(), old->data()) == 0) {
      tree_.replace_equal(ec, eo);
      last_erased_ = nullptr;
      return;
    }
  }
  if (cur) tree_.erase(elem(cur));
  if (old) tree_.insert(elem(old));
  last_erased_ = nullptr;
}

void TreeIndex::clear() {
  tree_.clear();
  last_erased_ = nullptr;
}

void TreeIndex::build(const std::vector<Tuple*>& tuples, const std::string& space_name) {
  std::vector<TreeElem> elems;
  fault::point();
  elems.reserve(tuples.size());
  for (Tuple* t : tuples) elems.push_back(elem(t));
  const TreeCmp cmp{&cmp_def()};
  std::sort(elems.begin(), elems.end(), [&](const TreeElem& a, const TreeElem& b) { return cmp.compare(a, b) < 0; });
  for (size_t i = 1; i < elems.size(); i++) {
    if (cmp.compare(elems[i - 1], elems[i]) == 0)
      throw DbError(err::kDuplicateKey,
                    "Duplicate key exists in unique index '" + name() + "' in space '" + space_name + "'");
  }
  tree_.build(elems.data(), elems.size());
}

void TreeIndex::for_each(void (*fn)(Tuple*, void*), void* ctx) const {
  for (auto it = tree_.begin(); tree_.valid(it); tree_.next(it)) fn(tree_.get(it).tuple, ctx);
}

std::unique_ptr<Cursor> TreeIndex::make_cursor(IterType type, std::string key, uint32_t parts, bool bounded) {
  return std::make_unique<TreeCursor>(this, type, std::move(key), parts, bounded);
}

std::string TreeIndex::check(const Index& primary) const {
  std::string why;
  if (!tree_.check(&why)) return "index '" + name() + "': " + why;
  for (auto it = tree_.begin(); tree_.valid(it); tree_.next(it)) {
    const TreeElem& e = tree_.get(it);
    if (e.hint != cmp_def().hint(e.tuple->data())) return "index '" + name() + "': stale hint";
    if (primary.find_dup(e.tuple) != e.tuple) return "index '" + name() + "' holds a tuple the primary does not";
  }
  return "";
}

TreeCursor::TreeCursor(TreeIndex* index, IterType type, std::string key, uint32_t key_parts, bool bounded)
    : CursorImpl(index, type, std::move(key), key_parts), tree_index_(index), bounded_(bounded) {
  if (key_parts_ > 0) index->cmp_def().hint_range(key_first_, key_parts_, &key_hint_lo_, &key_hint_hi_);
}

bool TreeCursor::past_bound(const TreeElem& e) const {
  if (s_.bound.empty()) return false;
  const TreeElem b{reinterpret_cast<Tuple*>(const_cast<uint64_t*>(s_.bound.data())), s_.bound_hint};
  return TreeCmp{&index_->cmp_def()}.compare(e, b) > 0;
}

TreeElem TreeCursor::last_elem() const {
  Tuple* t = s_.attached ? s_.last : reinterpret_cast<Tuple*>(const_cast<uint64_t*>(s_.last_copy.data()));
  return TreeElem{t, index_->cmp_def().hint(t->data())};
}

bool TreeCursor::in_range(const Tuple* t) const {
  if (type_ != IterType::kEq && type_ != IterType::kReq) return true;
  return index_->key_def().compare_with_key(t->data(), key_first_, key_parts_) == 0;
}

uint32_t TreeCursor::next_batch(Tuple** out, uint32_t n) {
  uint32_t k = 0;
  Tuple* t = n > 0 ? next() : nullptr;
  if (t == nullptr) return 0;
  out[k++] = t;
  if (type_ == IterType::kAll) {
    const Tree& tree = tree_index_->tree();
    while (k < n) {
      Tree::Iterator p = s_.pos;
      tree.next(p);
      if (!tree.valid(p) || past_bound(tree.get(p))) break;
      s_.pos = p;
      out[k] = tree.get(p).tuple;
      // Prefetch kTreeAhead entries on when they are in the same leaf, else this one (late).
      const TreeElem* ahead = tree.ahead(p, kTreeAhead);
      cursor_detail::prefetch_tuple(ahead != nullptr ? ahead->tuple : out[k]);
      k++;
    }
  }
  while (k < n && (t = next()) != nullptr) out[k++] = t;  // the rest, and every other walk
  s_.last = out[k - 1];
  return k;
}

Tuple* TreeCursor::step() {
  const Tree& tree = tree_index_->tree();
  const KeyDef& kd = index_->key_def();
  auto key_cmp = [&](const TreeElem& e) {
    if (e.hint < key_hint_lo_) return -1;
    if (e.hint > key_hint_hi_) return 1;
    return kd.compare_with_key(e.tuple->data(), key_first_, key_parts_);
  };
  if (!s_.started) {
    s_.started = true;
    switch (type_) {
      case IterType::kAll:
        s_.pos = tree.begin();
        if (bounded_ && tree.valid(tree.last())) {
          cursor_detail::copy_tuple(tree.get(tree.last()).tuple, &s_.bound);
          s_.bound_hint = tree.get(tree.last()).hint;
        }
        break;
      case IterType::kEq:
      case IterType::kGe: s_.pos = tree.lower_bound(key_cmp); break;
      case IterType::kGt: s_.pos = tree.upper_bound(key_cmp); break;
      case IterType::kLe:
      case IterType::kReq:
        s_.pos = key_parts_ == 0 ? tree.last() : tree.upper_bound(key_cmp);
        if (key_parts_ > 0) tree.prev(s_.pos);
        break;
      case IterType::kLt:
        s_.pos = tree.lower_bound(key_cmp);
        tree.prev(s_.pos);
        break;
    }
  } else if (s_.last == nullptr && s_.last_copy.empty()) {
    return nullptr;
  } else if (tree.version() == s_.version) {
    if (reverse()) tree.prev(s_.pos);
    else tree.next(s_.pos);
  } else if (tree.version() == s_.version + 1 && tree_index_->last_erased() == s_.last &&
             tree_index_->last_erase_version() == tree.version() && s_.attached) {
    s_.pos = tree.erase_successor();
    if (reverse()) tree.prev(s_.pos);
  } else if (Tree::Iterator near; !reverse() && s_.attached &&
             tree.valid(near = tree.near_successor([this](const TreeElem& e) { return e.tuple == s_.last; }))) {
    // The last change erased a tuple a few entries before ours (the daemon deleting what it
    // read earlier in the batch): our tuple is still stored, just after it.
    s_.pos = near;
    tree.next(s_.pos);
  } else {
    const TreeElem last = last_elem();
    if (reverse()) {
      s_.pos = tree.lower_bound_elem(last);
      tree.prev(s_.pos);
    } else {
      s_.pos = tree.upper_bound_elem(last);
    }
  }
  s_.version = tree.version();
  if (!tree.valid(s_.pos) || past_bound(tree.get(s_.pos))) return nullptr;
  Tuple* t = tree.get(s_.pos).tuple;
  return in_range(t) ? t : nullptr;
}

}  // namespace ce
