#include "index/hash_index.h"

#include <algorithm>

#include "errors.h"

namespace ce {

namespace {

// How far ahead of the walk a slot-order scan prefetches tuples: tuples sit in memory in
// insertion order, not slot order, so each one is a cache miss, and about 25 live tuples ahead
// (at the table's typical load) keep enough misses in flight to hide most of their latency.
constexpr size_t kHashAhead = 40;

}  // namespace

std::unique_ptr<Index> make_hash_index(IndexSpec spec) {
  if (!spec.unique) throw DbError(err::kIllegalParams, "HASH index '" + spec.name + "' must be unique");
  return std::make_unique<HashIndex>(std::move(spec));
}

HashIndex::HashIndex(IndexSpec spec)
    : Index(spec.id, spec.name, spec.unique, KeyDef(spec.name, spec.parts), KeyDef(spec.name, spec.parts)),
      table_(&key_def()) {}

void HashIndex::replace(Tuple* old, Tuple* nw, uint64_t prepared) {
  if (old && nw && key_def().compare(old->data(), nw->data()) == 0) {
    table_.replace_same(old, nw);
    return;
  }
  if (nw) table_.insert_hashed(nw, prepared);
  if (old) {
    if (nw) table_.erase(old);
    else table_.erase_hashed(old, prepared);
  }
}

void HashIndex::restore(Tuple* cur, Tuple* old) noexcept {
  // The inverse of replace(old, cur): erase first, then a re-insert that never grows the table.
  if (cur && old && key_def().compare(cur->data(), old->data()) == 0) {
    table_.replace_same(cur, old);  // old was stored before: its pointer fits the tag
    return;
  }
  if (cur) table_.erase(cur);
  if (old) table_.insert_no_grow(old);
}

void HashIndex::build(const std::vector<Tuple*>& tuples, const std::string& space_name) {
  try {
    for (Tuple* t : tuples) {
      if (table_.find_tuple(t))
        throw DbError(err::kDuplicateKey,
                      "Duplicate key exists in unique index '" + name() + "' in space '" + space_name + "'");
      table_.insert(t);
    }
  } catch (...) {
    table_.clear();
    throw;
  }
}

void HashIndex::for_each(void (*fn)(Tuple*, void*), void* ctx) const {
  for (size_t i = 0; i < table_.slot_count(); i++)
    if (Tuple* t = table_.slot(i)) fn(t, ctx);
}

void HashIndex::check_iterator(IterType type, uint32_t parts) const {
  if (type != IterType::kAll && type != IterType::kEq)
    throw DbError(err::kIteratorType, "HASH index '" + name() + "' does not support iterator '" +
                                          iter_type_name(type) + "' (only 'ALL' and 'EQ')");
  if (type == IterType::kEq && parts != 0 && parts != key_def().part_count())
    throw DbError(err::kKeyPartCount, "HASH index '" + name() + "' needs a full key (" +
                                          std::to_string(key_def().part_count()) + " parts), got " +
                                          std::to_string(parts));
}

std::unique_ptr<Cursor> HashIndex::make_cursor(IterType type, std::string key, uint32_t parts, bool) {
  return std::make_unique<HashCursor>(this, type, std::move(key), parts);
}

std::string HashIndex::check(const Index& primary) const {
  size_t seen = 0;
  for (size_t i = 0; i < table_.slot_count(); i++) {
    Tuple* t = table_.slot(i);
    if (t == nullptr) continue;
    seen++;
    if (find_dup(t) != t) return "index '" + name() + "': a tuple is not found by its own key";
    if (primary.find_dup(t) != t) return "index '" + name() + "' holds a tuple the primary does not";
  }
  if (seen != size()) return "index '" + name() + "': slot walk found " + std::to_string(seen);
  return "";
}

HashCursor::HashCursor(HashIndex* index, IterType type, std::string key, uint32_t key_parts)
    : CursorImpl(index, type, std::move(key), key_parts), table_(index->table()) {}

uint32_t HashCursor::next_batch(Tuple** out, uint32_t n) {
  uint32_t k = 0;
  Tuple* t = n > 0 ? next() : nullptr;
  if (t == nullptr) return 0;
  out[k++] = t;
  if (type_ == IterType::kAll) {
    const size_t limit = std::min(table_.slot_count(), s_.slot_limit);
    while (k < n) {
      Tuple* s = slot_step(limit);
      if (s == nullptr) break;
      out[k++] = s;
    }
    s_.last = out[k - 1];
  }
  while (k < n && (t = next()) != nullptr) out[k++] = t;  // the rest, and every other walk
  s_.last = out[k - 1];
  return k;
}

Tuple* HashCursor::step() {
  if (type_ == IterType::kEq) {
    if (s_.started) return nullptr;
    s_.started = true;
    return table_.find_key(key_first_);
  }
  if (!s_.started) {
    s_.started = true;
    s_.generation = table_.generation();
    s_.slot = s_.cluster_start = 0;
    s_.walk_capacity = table_.slot_count();
  } else if (table_.generation() != s_.generation) {
    s_.generation = table_.generation();
    const size_t cap = table_.slot_count();
    s_.slot = s_.walk_capacity == 0
                  ? 0
                  : size_t((static_cast<unsigned __int128>(s_.cluster_start) * cap) / s_.walk_capacity);
    s_.cluster_start = s_.slot;
    s_.walk_capacity = cap;
    s_.slot_limit = SIZE_MAX;
    s_.wrap_pending = s_.slot > 0;
  }
  for (;;) {
    if (Tuple* t = slot_step(std::min(table_.slot_count(), s_.slot_limit))) return t;
    if (!s_.wrap_pending) return nullptr;
    s_.wrap_pending = false;
    s_.slot_limit = table_.first_empty();
    s_.slot = 0;
  }
}

// The next tuple in slots [slot, limit), or nullptr; tracks cluster_start on the way.
Tuple* HashCursor::slot_step(size_t limit) {
  while (s_.slot < limit) {
    if (s_.slot + kHashAhead < limit) cursor_detail::prefetch_tuple(table_.slot(s_.slot + kHashAhead));
    const size_t i = s_.slot++;
    if (Tuple* t = table_.slot(i)) return t;
    if (table_.is_empty(i) && s_.slot_limit == SIZE_MAX) s_.cluster_start = i + 1;
  }
  return nullptr;
}

}  // namespace ce
