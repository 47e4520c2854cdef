#include "space.h"

#include <algorithm>

#include "errors.h"
#include "msgpack.h"

namespace ce {

Space::Space(std::string name, uint32_t max_tuple_size)
    : name_(std::move(name)), max_tuple_size_(max_tuple_size) {}

Space::~Space() {
  // Live tuples are in the primary; tuples removed by an open transaction are in the undo log.
  // The arena frees the small ones wholesale.
  free_large_tuples();
  for (const UndoEntry& e : undo_)
    if (e.old != nullptr && TupleArena::is_large(e.old)) free_tuple(e.old);
  indexes_.clear();
}

Index& Space::index(uint32_t id) {
  if (id >= indexes_.size())
    throw DbError(err::kNoSuchIndex, "No index #" + std::to_string(id) + " in space '" + name_ + "'");
  return *indexes_[id];
}

void Space::require_primary() const {
  if (indexes_.empty())
    throw DbError(err::kNoPrimaryIndex, "Space '" + name_ + "' has no primary index yet: create one first");
}

Index& Space::primary() {
  require_primary();
  return *indexes_[0];
}

uint32_t Space::create_index(const std::string& name, IndexType type, bool unique, std::vector<KeyPart> parts) {
  for (const auto& idx : indexes_)
    if (idx->name() == name)
      throw DbError(err::kIndexExists, "Index '" + name + "' already exists in space '" + name_ + "'");
  if (parts.empty()) throw DbError(err::kIllegalParams, "Index '" + name + "' needs at least one part");
  if (indexes_.empty() && !unique)
    throw DbError(err::kIllegalParams, "Primary index '" + name + "' must be unique");
  if (type == IndexType::kHash && !unique)
    throw DbError(err::kIllegalParams, "HASH index '" + name + "' must be unique");
  if (depth_ > 0)
    throw DbError(err::kTransaction, "createIndex() cannot run inside a transaction");
  std::vector<KeyPart> cmp_parts = parts;
  if (!unique) {
    KeyDef probe(name, parts);
    for (const KeyPart& p : indexes_[0]->key_def().parts())
      if (!probe.has_field(p.fieldno)) cmp_parts.push_back(p);
  }
  const uint32_t id = uint32_t(indexes_.size());
  auto idx = std::make_unique<Index>(id, name, type, unique, KeyDef(name, parts),
                                     KeyDef(name, cmp_parts, /*composite_hint=*/!unique && type == IndexType::kTree));
  if (!indexes_.empty() && len() > 0) {
    const std::vector<Tuple*> tuples = all_tuples();
    for (Tuple* t : tuples) idx->key_def().check_tuple(t->data());
    idx->build(tuples, name_);
  }
  indexes_.reserve(indexes_.size() + 1);
  indexes_.push_back(std::move(idx));
  return id;
}

void Space::check_tuple(const uint8_t* data, size_t size, bool checked) const {
  if (size > max_tuple_size_)
    throw DbError(err::kTupleTooLarge, "Tuple of " + std::to_string(size) + " bytes exceeds maxTupleSize (" +
                                           std::to_string(max_tuple_size_) + " bytes) of space '" + name_ + "'");
  if (size == 0 || (!checked && mp::check(data, data + size) != data + size))
    throw DbError(err::kTupleFormat, "Tuple is not valid MessagePack (truncated, malformed, trailing bytes, a string that is "
                                     "not well-formed UTF-8 such as a lone surrogate, or nested deeper than " +
                                         std::to_string(mp::kMaxDepth) + ")");
  if (!mp::is_array(data)) throw DbError(err::kTupleFormat, "Tuple must be an array");
  for (const auto& idx : indexes_) idx->key_def().check_tuple(data);
}

Tuple* Space::copy_tuple(const uint8_t* data, size_t size) {
  Tuple* t = arena_.alloc(uint32_t(size));
  std::memcpy(t->data(), data, size);
  return t;
}

uint64_t Space::pk_hash(const uint8_t* data) const {
  const Index& pk = *indexes_[0];
  return pk.type() == IndexType::kHash ? pk.hash().hash_of(data) : 0;
}

void Space::insert(const uint8_t* data, size_t size, bool replace) {
  require_primary();
  check_tuple(data, size, false);
  insert_copy(data, size, replace, pk_hash(data));
}

void Space::insert_copy(const uint8_t* data, size_t size, bool replace, uint64_t hash) {
  Tuple* t = copy_tuple(data, size);
  try {
    insert_tuple(t, replace, hash);
  } catch (...) {
    free_tuple(t);
    throw;
  }
}

void Space::insert_tuple(Tuple* t, bool replace, uint64_t hash) {
  Index& pk = *indexes_[0];
  Tuple* old = pk.type() == IndexType::kHash ? pk.hash().find_hashed(t->data(), hash) : pk.find_dup(t);
  auto duplicate = [&](const Index& idx) {
    return DbError(err::kDuplicateKey,
                   "Duplicate key exists in unique index '" + idx.name() + "' in space '" + name_ + "'");
  };
  if (old != nullptr && !replace) throw duplicate(pk);
  for (size_t i = 1; i < indexes_.size(); i++) {
    const Index& idx = *indexes_[i];
    if (!idx.unique()) continue;
    Tuple* dup = idx.find_dup(t);
    if (dup != nullptr && dup != old) throw duplicate(idx);
  }
  apply(old, t, &hash);
}

void Space::apply(Tuple* old, Tuple* nw, const uint64_t* pk_hash) {
  if (depth_ > 0 && undo_.size() == undo_.capacity()) undo_.reserve(std::max<size_t>(64, undo_.capacity() * 2));
  size_t done = 0;
  try {
    for (; done < indexes_.size(); done++) {
      Index& idx = *indexes_[done];
      if (done == 0 && pk_hash != nullptr && idx.type() == IndexType::kHash) idx.replace_hashed(old, nw, *pk_hash);
      else idx.replace(old, nw);
    }
  } catch (...) {
    while (done-- > 0) indexes_[done]->replace(nw, old);
    throw;
  }
  if (depth_ > 0) undo_.push_back(UndoEntry{old, nw});
  else if (old != nullptr) free_tuple(old);
}

size_t Space::insert_many(const uint8_t* data, size_t size) {
  require_primary();
  const uint8_t* end = data + size;
  if (size == 0 || !mp::is_array(data) || size < (*data == 0xdc ? 3u : *data == 0xdd ? 5u : 1u))
    throw DbError(err::kTupleFormat, "insertMany() expects a MessagePack array of tuples");
  const uint8_t* p = data;
  const uint32_t count = mp::read_array(&p);
  // Pass 1 validates the tuples, so that pass 2 may read keys ahead of the one it inserts. The
  // first invalid tuple ends pass 1, and its error is thrown only after pass 2 has inserted the
  // tuples before it: a duplicate among those is reported first, as with one insert at a time.
  struct Span {
    const uint8_t* data;
    size_t size;
    uint64_t hash;
  };
  std::vector<Span> spans;
  spans.reserve(std::min<size_t>(count, size));
  std::unique_ptr<DbError> invalid;
  uint32_t i = 0;
  try {
    for (; i < count; i++) {
      const uint8_t* q = mp::check(p, end);
      if (q == nullptr) throw DbError(err::kTupleFormat, "Tuple is not valid MessagePack");
      check_tuple(p, size_t(q - p), /*checked=*/true);
      spans.push_back(Span{p, size_t(q - p), 0});
      p = q;
    }
    if (p != end) throw DbError(err::kTupleFormat, "insertMany(): trailing bytes after the tuples");
  } catch (const DbError& e) {
    invalid = std::make_unique<DbError>(e);
  }
  auto fail = [&](const DbError& e) {
    return DbError(e.code(), "insertMany(): tuple #" + std::to_string(i) + ": " + e.what() + "; nothing was inserted");
  };
  // Pass 2 inserts. A HASH primary's slot for tuple i + kAhead is prefetched while tuple i is
  // inserted, so the table's cache miss overlaps other work instead of stalling each insert.
  constexpr size_t kAhead = 8;
  const size_t valid = spans.size();
  const HashTable* table = indexes_[0]->type() == IndexType::kHash ? &indexes_[0]->hash() : nullptr;
  const size_t sp = begin();
  try {
    if (table) {
      for (size_t k = 0; k < kAhead && k < valid; k++) {
        spans[k].hash = table->hash_of(spans[k].data);
        table->prefetch_hash(spans[k].hash);
      }
    }
    for (i = 0; i < valid; i++) {
      if (table && i + kAhead < valid) {
        Span& ahead = spans[i + kAhead];
        ahead.hash = table->hash_of(ahead.data);
        table->prefetch_hash(ahead.hash);
      }
      insert_copy(spans[i].data, spans[i].size, false, spans[i].hash);
    }
    if (invalid) throw *invalid;
  } catch (const DbError& e) {
    rollback(sp);
    throw fail(e);
  } catch (...) {
    rollback(sp);
    throw;
  }
  commit(sp);
  return count;
}

bool Space::remove(const uint8_t* key, std::string* out) {
  Tuple* t = primary().get(key);
  if (t == nullptr) return false;
  out->append(reinterpret_cast<const char*>(t->data()), t->size);
  apply(t, nullptr);
  return true;
}

void Space::remove_tuple(Tuple* t, uint64_t hash) { apply(t, nullptr, &hash); }

std::vector<Tuple*> Space::all_tuples() const {
  std::vector<Tuple*> tuples;
  tuples.reserve(len());
  for_each_tuple([&](Tuple* t) { tuples.push_back(t); });
  return tuples;
}

void Space::free_large_tuples() {
  if (!arena_.has_large()) return;
  for_each_tuple([&](Tuple* t) {
    if (TupleArena::is_large(t)) free_tuple(t);
  });
}

size_t Space::len() const { return indexes_.empty() ? 0 : indexes_[0]->size(); }

size_t Space::index_memory() const {
  size_t total = 0;
  for (const auto& idx : indexes_) total += idx->memory();
  return total + undo_.capacity() * sizeof(UndoEntry);
}

void Space::truncate() {
  if (indexes_.empty()) return;
  if (depth_ > 0) {
    for (Tuple* t : all_tuples()) apply(t, nullptr);
    return;
  }
  free_large_tuples();
  for (auto& idx : indexes_) idx->clear();
  arena_.reset();
}

size_t Space::begin() {
  depth_++;
  return undo_.size();
}

void Space::commit(size_t savepoint) {
  if (depth_ == 0 || savepoint > undo_.size())
    throw DbError(err::kTransaction, "commit() without a matching begin()");
  if (--depth_ > 0) return;
  for (const UndoEntry& e : undo_)
    if (e.old != nullptr) free_tuple(e.old);
  undo_.clear();
  if (undo_.capacity() > 4096) undo_.shrink_to_fit();
}

void Space::rollback(size_t savepoint) {
  if (depth_ == 0 || savepoint > undo_.size())
    throw DbError(err::kTransaction, "rollback() without a matching begin()");
  while (undo_.size() > savepoint) {
    const UndoEntry e = undo_.back();
    for (size_t i = indexes_.size(); i-- > 0;) indexes_[i]->replace(e.nw, e.old);
    if (e.nw != nullptr) free_tuple(e.nw);
    undo_.pop_back();
  }
  if (--depth_ == 0) {
    undo_.clear();
    if (undo_.capacity() > 4096) undo_.shrink_to_fit();
  }
}

uint32_t Space::check_key(const Index& index, const uint8_t* key, size_t size, const uint8_t** first) const {
  if (size > max_tuple_size_)
    throw DbError(err::kKeyTooLarge, "Key of " + std::to_string(size) + " bytes exceeds maxTupleSize of space '" + name_ + "'");
  if (size == 0 || mp::check(key, key + size) != key + size || !mp::is_array(key))
    throw DbError(err::kKeyType, "Key must be a MessagePack array of parts (strings well-formed UTF-8)");
  const uint32_t n = index.key_def().check_key(key);
  const uint8_t* p = key;
  mp::read_array(&p);
  *first = p;
  return n;
}

std::string Space::check_integrity() const {
  if (indexes_.empty()) return "";
  const size_t n = indexes_[0]->size();
  for (const auto& idx : indexes_) {
    if (idx->size() != n) return "index '" + idx->name() + "' has " + std::to_string(idx->size()) + " entries, primary " + std::to_string(n);
    if (idx->type() == IndexType::kTree) {
      std::string why;
      if (!idx->tree().check(&why)) return "index '" + idx->name() + "': " + why;
      for (auto it = idx->tree().begin(); idx->tree().valid(it); idx->tree().next(it)) {
        const TreeElem& e = idx->tree().get(it);
        if (e.hint != idx->cmp_def().hint(e.tuple->data())) return "index '" + idx->name() + "': stale hint";
        if (indexes_[0]->find_dup(e.tuple) != e.tuple) return "index '" + idx->name() + "' holds a tuple the primary does not";
      }
    } else {
      size_t seen = 0;
      for (size_t i = 0; i < idx->hash().slot_count(); i++) {
        Tuple* t = idx->hash().slot(i);
        if (t == nullptr) continue;
        seen++;
        if (idx->find_dup(t) != t) return "index '" + idx->name() + "': a tuple is not found by its own key";
        if (indexes_[0]->find_dup(t) != t) return "index '" + idx->name() + "' holds a tuple the primary does not";
      }
      if (seen != n) return "index '" + idx->name() + "': slot walk found " + std::to_string(seen);
    }
  }
  return "";
}

}  // namespace ce
