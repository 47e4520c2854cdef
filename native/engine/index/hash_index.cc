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
    table_.replace_same_hashed(old, nw, prepared);  // equal keys: prepared is old's hash too
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
  for (size_t i = 0; i < table_.old_slot_count(); i++)
    if (Tuple* t = table_.old_slot(i)) fn(t, ctx);
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
  for (int which = 0; which < 2; which++) {
    const size_t n = which == 0 ? table_.slot_count() : table_.old_slot_count();
    for (size_t i = 0; i < n; i++) {
      Tuple* t = which == 0 ? table_.slot(i) : table_.old_slot(i);
      if (t == nullptr) continue;
      seen++;
      if (find_dup(t) != t) return "index '" + name() + "': a tuple is not found by its own key";
      if (primary.find_dup(t) != t) return "index '" + name() + "' holds a tuple the primary does not";
    }
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
  if (type_ == IterType::kAll && !s_.lockstep) {
    const size_t limit = std::min(table_.slot_count(), s_.cur.limit);
    while (k < n) {
      Tuple* s = walk(s_.cur, false, limit);
      if (s == nullptr) break;
      out[k++] = s;
    }
    s_.last = out[k - 1];
  }
  while (k < n && (t = next()) != nullptr) out[k++] = t;  // the rest, and every other walk
  s_.last = out[k - 1];
  return k;
}

namespace {

// Slot `slot` of a table of capacity `from` scaled to one of capacity `to` (same fraction).
size_t scale(size_t slot, size_t from, size_t to) {
  return from == 0 ? 0 : size_t((static_cast<unsigned __int128>(slot) * to) / from);
}

}  // namespace

// Starts over at the fraction cur's cs stands for, in the table(s) there are now, sweeping the
// wrapped slots at the end. Every unvisited tuple's hash fraction is at least that one: cur
// never passes the old walker's bound while both run.
void HashCursor::resume() {
  const size_t cs = s_.cur.cs, cap = s_.cap;
  s_.generation = table_.generation();
  s_.epoch = table_.epoch();
  s_.cap = table_.slot_count();
  s_.cur = HashWalker{};
  s_.cur.slot = s_.cur.cs = scale(cs, cap, s_.cap);
  s_.cur.wrap_pending = s_.cur.slot > 0 || table_.migrating();
  s_.lockstep = table_.migrating();
  if (s_.lockstep) {
    s_.old_cap = table_.old_slot_count();
    s_.old = HashWalker{};
    s_.old.slot = s_.old.cs = scale(cs, cap, s_.old_cap);
    s_.old.wrap_pending = true;
  }
}

// Brings the walk state up to date with the table's growth.
void HashCursor::sync() {
  const bool same_positions = table_.generation() == s_.generation;
  if (same_positions && table_.epoch() == s_.epoch) {
    if (s_.lockstep && !table_.migrating()) s_.lockstep = false;  // the migration ended
    return;
  }
  if (same_positions && table_.epoch() == s_.epoch + 1 && table_.migrating()) {
    // A migration began (any earlier one has ended): the table cur walked is now the old one.
    s_.epoch++;
    s_.old = s_.cur;
    s_.old_cap = table_.old_slot_count();
    s_.cap = table_.slot_count();
    s_.cur = HashWalker{};
    s_.cur.slot = s_.cur.cs = scale(s_.old.cs, s_.old_cap, s_.cap);
    s_.cur.wrap_pending = true;
    s_.lockstep = true;
    return;
  }
  resume();
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
    s_.epoch = table_.epoch();
    s_.cap = table_.slot_count();
    s_.lockstep = table_.migrating();
    if (s_.lockstep) {
      s_.old_cap = table_.old_slot_count();
      s_.cur.wrap_pending = true;  // migrated tuples may wrap around the new table's end
    }
  } else {
    sync();
  }
  for (;;) {
    if (s_.lockstep && !s_.old.done) {
      HashWalker& o = s_.old;
      if (o.slot < table_.migrated()) {  // the migration overtook the old walker
        o.slot = table_.migrated();
        if (o.limit == SIZE_MAX) o.cs = std::max(o.cs, table_.migrated_cluster_start());
      }
      const size_t bound = std::min(scale(o.cs, s_.old_cap, s_.cap), s_.cap);
      if (s_.cur.slot < bound) {
        if (Tuple* t = walk(s_.cur, false, bound)) return t;
        continue;
      }
      if (Tuple* t = walk(o, true, std::min(s_.old_cap, o.limit))) return t;
      if (o.wrap_pending) {
        o.wrap_pending = false;
        o.limit = table_.wrap_end();
        o.slot = 0;
      } else {
        o.done = true;
      }
      continue;
    }
    if (Tuple* t = walk(s_.cur, false, std::min(table_.slot_count(), s_.cur.limit))) return t;
    if (!s_.cur.wrap_pending) return nullptr;
    s_.cur.wrap_pending = false;
    s_.cur.limit = table_.first_empty();
    s_.cur.slot = 0;
  }
}

// The next tuple in slots [w.slot, limit) of the current (or old) table, or nullptr; tracks
// w.cs on the way (in the main pass).
Tuple* HashCursor::walk(HashWalker& w, bool old, size_t limit) {
  while (w.slot < limit) {
    if (w.slot + kHashAhead < limit)
      cursor_detail::prefetch_tuple(old ? table_.old_slot(w.slot + kHashAhead) : table_.slot(w.slot + kHashAhead));
    const size_t i = w.slot++;
    if (Tuple* t = old ? table_.old_slot(i) : table_.slot(i)) {
      // Tuples that wrapped around the end (home after their slot) all lie before the first
      // empty slot. A walker that will sweep them at the end skips them before its first empty
      // slot, and the sweep returns only them: one whose home is at or before its slot there
      // was returned by the main pass or came after it. So an undisturbed walk returns each once.
      if (w.limit == SIZE_MAX) {
        if (w.cs == 0 && w.wrap_pending && (old ? table_.old_home_of(t) : table_.home_of(t)) > i) continue;
        return t;
      }
      if ((old ? table_.old_home_of(t) : table_.home_of(t)) > i) return t;
      continue;
    }
    if ((old ? table_.old_is_empty(i) : table_.is_empty(i)) && w.limit == SIZE_MAX) w.cs = i + 1;
  }
  return nullptr;
}

}  // namespace ce
