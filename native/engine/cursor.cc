#include "cursor.h"

#include <algorithm>
#include <cstring>

#include "msgpack.h"

namespace ce {

namespace {

// How far ahead of the walk a slot-order scan prefetches tuples: tuples sit in memory in
// insertion order, not slot order, so each one is a cache miss, and about 25 live tuples ahead
// (at the table's typical load) keep enough misses in flight to hide most of their latency.
constexpr size_t kHashAhead = 40;
// The same for a walk along B+tree leaves, in entries (a look-ahead never leaves the leaf).
constexpr uint32_t kTreeAhead = 12;

// Prefetches a tuple's first bytes and, for a typical small tuple that straddles two cache
// lines, its last ones (where a TTL field at the end lives). A prefetch never faults.
inline void prefetch_tuple(const Tuple* t) {
  if (t == nullptr) return;
  __builtin_prefetch(t);
  __builtin_prefetch(reinterpret_cast<const uint8_t*>(t) + 48);
}

void copy_tuple(const Tuple* t, std::vector<uint64_t>* out) {
  const size_t bytes = sizeof(Tuple) + t->size;
  out->assign((bytes + 7) / 8, 0);
  std::memcpy(out->data(), t, bytes);
}

}  // namespace

Cursor::Cursor(Index* index, IterType type, std::string key, uint32_t key_parts, bool bounded)
    : index_(index), type_(type), key_(std::move(key)), key_parts_(key_parts), bounded_(bounded) {
  if (key_parts_ > 0) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(key_.data());
    mp::read_array(&p);
    key_first_ = p;
    index_->cmp_def().hint_range(key_first_, key_parts_, &key_hint_lo_, &key_hint_hi_);
  }
  if (key_parts_ == 0 && (type_ == IterType::kEq || type_ == IterType::kGe || type_ == IterType::kGt))
    type_ = IterType::kAll;
  if (key_parts_ == 0 && (type_ == IterType::kReq || type_ == IterType::kLt)) type_ = IterType::kLe;
}

void Cursor::reset() {
  started_ = done_ = attached_ = false;
  last_ = nullptr;
  last_copy_.clear();
  slot_ = 0;
  bound_.clear();
  slot_limit_ = SIZE_MAX;
  wrap_pending_ = false;
}

void Cursor::detach() {
  if (!attached_) return;
  attached_ = false;
  if (last_ == nullptr) return;
  copy_tuple(last_, &last_copy_);
}

Cursor::Saved Cursor::save() const {
  return Saved{started_, done_, attached_, pos_, version_, last_copy_, last_, slot_, generation_,
               bound_, slot_limit_, wrap_pending_, cluster_start_, walk_capacity_};
}

void Cursor::restore(const Saved& s) {
  started_ = s.started;
  done_ = s.done;
  attached_ = s.attached;
  pos_ = s.pos;
  version_ = s.version;
  last_copy_ = s.last_copy;
  last_ = s.last;
  slot_ = s.slot;
  generation_ = s.generation;
  bound_ = s.bound;
  slot_limit_ = s.slot_limit;
  wrap_pending_ = s.wrap_pending;
  cluster_start_ = s.cluster_start;
  walk_capacity_ = s.walk_capacity;
}

bool Cursor::past_bound(const TreeElem& e) const {
  if (bound_.empty()) return false;
  const TreeElem b{reinterpret_cast<Tuple*>(const_cast<uint64_t*>(bound_.data())), bound_hint_};
  return TreeCmp{&index_->cmp_def()}.compare(e, b) > 0;
}

TreeElem Cursor::last_elem() const {
  Tuple* t = attached_ ? last_ : reinterpret_cast<Tuple*>(const_cast<uint64_t*>(last_copy_.data()));
  return TreeElem{t, index_->cmp_def().hint(t->data())};
}

bool Cursor::in_range(const Tuple* t) const {
  if (type_ != IterType::kEq && type_ != IterType::kReq) return true;
  return index_->key_def().compare_with_key(t->data(), key_first_, key_parts_) == 0;
}

Tuple* Cursor::next() {
  if (done_) return nullptr;
  Tuple* t = index_->type() == IndexType::kTree ? next_tree() : next_hash();
  if (t == nullptr) {
    done_ = true;
    last_ = nullptr;
    return nullptr;
  }
  last_ = t;
  attached_ = true;
  return t;
}

uint32_t Cursor::next_batch(Tuple** out, uint32_t n) {
  uint32_t k = 0;
  Tuple* t = n > 0 ? next() : nullptr;
  if (t == nullptr) return 0;
  out[k++] = t;
  if (type_ == IterType::kAll && index_->type() == IndexType::kTree) {
    const Tree& tree = index_->tree();
    while (k < n) {
      Tree::Iterator p = pos_;
      tree.next(p);
      if (!tree.valid(p) || past_bound(tree.get(p))) break;
      pos_ = p;
      out[k] = tree.get(p).tuple;
      // Prefetch kTreeAhead entries on when they are in the same leaf, else this one (late).
      const TreeElem* ahead = tree.ahead(p, kTreeAhead);
      prefetch_tuple(ahead != nullptr ? ahead->tuple : out[k]);
      k++;
    }
  } else if (type_ == IterType::kAll) {
    const HashTable& hash = index_->hash();
    const size_t limit = std::min(hash.slot_count(), slot_limit_);
    while (k < n) {
      Tuple* s = hash_step(hash, limit);
      if (s == nullptr) break;
      out[k++] = s;
    }
    last_ = out[k - 1];
  }
  while (k < n && (t = next()) != nullptr) out[k++] = t;  // the rest, and every other walk
  last_ = out[k - 1];
  return k;
}

bool Cursor::at_end() {
  if (done_) return true;
  const Saved saved = save();
  const bool end = next() == nullptr;
  restore(saved);
  return end;
}

Tuple* Cursor::next_tree() {
  const Tree& tree = index_->tree();
  const KeyDef& kd = index_->key_def();
  auto key_cmp = [&](const TreeElem& e) {
    if (e.hint < key_hint_lo_) return -1;
    if (e.hint > key_hint_hi_) return 1;
    return kd.compare_with_key(e.tuple->data(), key_first_, key_parts_);
  };
  if (!started_) {
    started_ = true;
    switch (type_) {
      case IterType::kAll:
        pos_ = tree.begin();
        if (bounded_ && tree.valid(tree.last())) {
          copy_tuple(tree.get(tree.last()).tuple, &bound_);
          bound_hint_ = tree.get(tree.last()).hint;
        }
        break;
      case IterType::kEq:
      case IterType::kGe: pos_ = tree.lower_bound(key_cmp); break;
      case IterType::kGt: pos_ = tree.upper_bound(key_cmp); break;
      case IterType::kLe:
      case IterType::kReq:
        pos_ = key_parts_ == 0 ? tree.last() : tree.upper_bound(key_cmp);
        if (key_parts_ > 0) tree.prev(pos_);
        break;
      case IterType::kLt:
        pos_ = tree.lower_bound(key_cmp);
        tree.prev(pos_);
        break;
    }
  } else if (last_ == nullptr && last_copy_.empty()) {
    return nullptr;
  } else if (tree.version() == version_) {
    if (reverse()) tree.prev(pos_);
    else tree.next(pos_);
  } else if (tree.version() == version_ + 1 && index_->last_erased() == last_ &&
             index_->last_erase_version() == tree.version() && attached_) {
    pos_ = tree.erase_successor();
    if (reverse()) tree.prev(pos_);
  } else {
    const TreeElem last = last_elem();
    if (reverse()) {
      pos_ = tree.lower_bound_elem(last);
      tree.prev(pos_);
    } else {
      pos_ = tree.upper_bound_elem(last);
    }
  }
  version_ = tree.version();
  if (!tree.valid(pos_) || past_bound(tree.get(pos_))) return nullptr;
  Tuple* t = tree.get(pos_).tuple;
  return in_range(t) ? t : nullptr;
}

Tuple* Cursor::next_hash() {
  const HashTable& hash = index_->hash();
  if (type_ == IterType::kEq) {
    if (started_) return nullptr;
    started_ = true;
    return hash.find_key(key_first_);
  }
  if (!started_) {
    started_ = true;
    generation_ = hash.generation();
    slot_ = cluster_start_ = 0;
    walk_capacity_ = hash.slot_count();
  } else if (hash.generation() != generation_) {
    generation_ = hash.generation();
    const size_t cap = hash.slot_count();
    slot_ = walk_capacity_ == 0 ? 0
          : size_t((static_cast<unsigned __int128>(cluster_start_) * cap) / walk_capacity_);
    cluster_start_ = slot_;
    walk_capacity_ = cap;
    slot_limit_ = SIZE_MAX;
    wrap_pending_ = slot_ > 0;
  }
  for (;;) {
    if (Tuple* t = hash_step(hash, std::min(hash.slot_count(), slot_limit_))) return t;
    if (!wrap_pending_) return nullptr;
    wrap_pending_ = false;
    slot_limit_ = hash.first_empty();
    slot_ = 0;
  }
}

// The next tuple in slots [slot_, limit), or nullptr; tracks cluster_start_ on the way.
Tuple* Cursor::hash_step(const HashTable& hash, size_t limit) {
  while (slot_ < limit) {
    if (slot_ + kHashAhead < limit) prefetch_tuple(hash.slot(slot_ + kHashAhead));
    const size_t i = slot_++;
    if (Tuple* t = hash.slot(i)) return t;
    if (hash.is_empty(i) && slot_limit_ == SIZE_MAX) cluster_start_ = i + 1;
  }
  return nullptr;
}

}  // namespace ce
