#include "space.h"

#include <algorithm>

#include "alloc/fault.h"
#include "errors.h"
#include "index/registry.h"
#include "msgpack.h"

namespace ce {

Space::Space(std::string name, uint32_t max_tuple_size, uint32_t ttl_fieldno, SpaceCaps caps)
    : name_(std::move(name)), max_tuple_size_(max_tuple_size), ttl_fieldno_(ttl_fieldno), caps_(caps) {
  if (caps_.max_tuples == 0 || caps_.max_bytes == 0)
    throw DbError(err::kIllegalParams, "Space '" + name_ + "': maxTuples and maxBytes must be positive");
  if (caps_.evict && !caps_.capped())
    throw DbError(err::kIllegalParams, "Space '" + name_ + "': onFull 'evictExpiring' needs maxTuples or maxBytes");
  if (caps_.evict && ttl_fieldno_ == kNoTtlField)
    throw DbError(err::kIllegalParams, "Space '" + name_ + "': onFull 'evictExpiring' needs a TTL field (the ttl option)");
}

Space::~Space() {
  build_.reset();  // its cursor walks the primary
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

std::unique_ptr<Index> Space::new_index(const std::string& name, const std::string& kind, bool unique,
                                        std::vector<KeyPart> parts) {
  const IndexKind& index_kind = find_index_kind(kind);
  for (const auto& idx : indexes_)
    if (idx->name() == name)
      throw DbError(err::kIndexExists, "Index '" + name + "' already exists in space '" + name_ + "'");
  if (build_ && build_->index().name() == name)
    throw DbError(err::kIndexExists, "Index '" + name + "' is being built in space '" + name_ + "'");
  if (parts.empty()) throw DbError(err::kIllegalParams, "Index '" + name + "' needs at least one part");
  if (indexes_.empty() && !unique)
    throw DbError(err::kIllegalParams, "Primary index '" + name + "' must be unique");
  const uint32_t id = uint32_t(indexes_.size());
  std::vector<KeyPart> pk_parts;
  if (!indexes_.empty()) pk_parts = indexes_[0]->key_def().parts();
  fault::point();
  return index_kind.create(IndexSpec{id, name, unique, std::move(parts), std::move(pk_parts)});
}

uint32_t Space::create_index(const std::string& name, const std::string& kind, bool unique,
                             std::vector<KeyPart> parts, bool in_frame) {
  std::unique_ptr<Index> idx = new_index(name, kind, unique, std::move(parts));
  const uint32_t id = idx->id();
  if (depth_ > 0)
    throw DbError(err::kTransaction, "createIndex() cannot run inside a transaction");
  if (in_frame) {
    throw DbError(err::kTransaction, "createIndex() cannot run inside a transaction or atomic() on space '" + name_ +
                                         "', which existed before it (a rollback would not drop the index)");
  }
  if (build_)
    throw DbError(err::kUnsupported, "createIndex('" + name + "'): index '" + build_->index().name() +
                                         "' is being built in space '" + name_ + "'; await createIndexAsync() first");
  if (!indexes_.empty() && len() > 0) {
    const std::vector<Tuple*> tuples = all_tuples();
    for (Tuple* t : tuples) idx->key_def().check_tuple(t->data());
    idx->build(tuples, name_);
  }
  fault::point();
  indexes_.reserve(indexes_.size() + 1);
  indexes_.push_back(std::move(idx));
  const Index& added = *indexes_.back();
  const KeyPart lead = added.key_def().parts()[0];
  if (evict_index_ == UINT32_MAX && added.ordered() && lead.fieldno == ttl_fieldno_ &&
      (lead.type == FieldType::kUnsigned || lead.type == FieldType::kInteger || lead.type == FieldType::kNumber))
    evict_index_ = id;
  return id;
}

void Space::check_size(size_t size) const {
  if (size > max_tuple_size_)
    throw DbError(err::kTupleTooLarge, "Tuple of " + std::to_string(size) + " bytes exceeds maxTupleSize (" +
                                           std::to_string(max_tuple_size_) + " bytes) of space '" + name_ + "'");
}

void Space::check_tuple(const uint8_t* data, size_t size, bool checked) const {
  check_size(size);
  if (size == 0 || (!checked && mp::check(data, data + size) != data + size))
    throw DbError(err::kTupleFormat, "Tuple is not valid MessagePack (truncated, malformed, trailing bytes, a string that is "
                                     "not well-formed UTF-8 such as a lone surrogate, or nested deeper than " +
                                         std::to_string(mp::kMaxDepth) + ")");
  if (!mp::is_array(data)) throw DbError(err::kTupleFormat, "Tuple must be an array");
  for (const auto& idx : indexes_) idx->key_def().check_tuple(data);
}

void Space::insert(const uint8_t* data, size_t size, bool replace, const Now& now) {
  clear_evicted();
  require_primary();
  check_size(size);
  // Copy first, validate the copy: the caller's bytes may be shared with another thread.
  Tuple* t = arena_.alloc(uint32_t(size));
  if (size > 0) std::memcpy(t->data(), data, size);  // an empty Buffer may have no data pointer
  try {
    check_tuple(t->data(), size, false);
    insert_tuple(t, replace, indexes_[0]->prepare(t->data()), now);
  } catch (...) {
    free_tuple(t);
    throw;
  }
}

void Space::insert_copy(const uint8_t* data, size_t size, bool replace, uint64_t pk_prepared, const Now& now) {
  Tuple* t = arena_.alloc(uint32_t(size));
  std::memcpy(t->data(), data, size);
  try {
    insert_tuple(t, replace, pk_prepared, now);
  } catch (...) {
    free_tuple(t);
    throw;
  }
}

void Space::insert_tuple(Tuple* t, bool replace, uint64_t pk_prepared, const Now& now) {
  Index& pk = *indexes_[0];
  Tuple* old = pk.find_dup(t, pk_prepared);
  auto duplicate = [&](const Index& idx) {
    return DbError(err::kDuplicateKey,
                   "Duplicate key exists in unique index '" + idx.name() + "' in space '" + name_ + "'");
  };
  if (old != nullptr && !replace && !hides(old, now)) throw duplicate(pk);
  if (prepared_.size() < indexes_.size()) fault::point();
  prepared_.resize(indexes_.size());
  prepared_[0] = pk_prepared;
  for (size_t i = 1; i < indexes_.size(); i++) {
    const Index& idx = *indexes_[i];
    prepared_[i] = idx.prepare(t->data());
    if (!idx.unique()) continue;
    Tuple* dup = idx.find_dup(t, prepared_[i]);
    if (dup != nullptr && dup != old) throw duplicate(idx);
  }
  store(old, t, prepared_.data(), indexes_.size());
}

void Space::clear_evicted() noexcept {
  if (evicted_.capacity() > (size_t(1) << 20)) std::string().swap(evicted_);  // frees, never allocates
  else evicted_.clear();
}

void Space::store(Tuple* old, Tuple* nw, const uint64_t* prepared, size_t n) {
  if (!caps_.capped()) return apply(old, nw, prepared, n);
  if (caps_.evict && evict_index_ == UINT32_MAX)
    throw DbError(err::kIllegalParams, "Space '" + name_ + "' evicts the tuples with the smallest TTL when full "
                                       "(onFull 'evictExpiring'), which needs a TREE index whose first part is its "
                                       "TTL field (field " + std::to_string(ttl_fieldno_ + 1) +
                                       ", numeric): create one before storing tuples");
  if (fits(old, nw)) return apply(old, nw, prepared, n);
  if (!caps_.evict) throw full(old, nw);
  const size_t mark = evicted_.size();
  const size_t sp = begin();
  try {
    evict_for(old, nw);
    apply(old, nw, prepared, n);
  } catch (...) {
    rollback(sp);
    evicted_.resize(mark);
    throw;
  }
  commit(sp);
}

DbError Space::full(const Tuple* old, const Tuple* nw) const {
  std::string why;
  if (len() + (old == nullptr ? 1 : 0) > caps_.max_tuples)
    why = "it holds " + std::to_string(len()) + " tuples, maxTuples is " + std::to_string(caps_.max_tuples);
  else
    why = "its tuples take " + std::to_string(bytes_) + " bytes, the new one " + std::to_string(nw->size) +
          (old == nullptr ? "" : " in place of " + std::to_string(old->size)) + ", maxBytes is " +
          std::to_string(caps_.max_bytes);
  return DbError(err::kSpaceFull, "Space '" + name_ + "' is full: " + why);
}

void Space::evict_for(const Tuple* old, const Tuple* nw) {
  if (nw->size > caps_.max_bytes)
    throw DbError(err::kSpaceFull, "Space '" + name_ + "': a tuple of " + std::to_string(nw->size) +
                                       " bytes can never fit maxBytes (" + std::to_string(caps_.max_bytes) + ")");
  Index& by_ttl = *indexes_[evict_index_];
  fault::point();
  const std::unique_ptr<Cursor> c = by_ttl.make_cursor(IterType::kAll, std::string(1, char(0x90)), 0, false);
  while (!fits(old, nw)) {
    Tuple* t = c->next();
    if (t == nullptr) throw full(old, nw);
    if (t == old) continue;
    if (evicted_.capacity() - evicted_.size() < t->size) fault::point();
    evicted_.append(reinterpret_cast<const char*>(t->data()), t->size);
    remove_tuple(t, indexes_[0]->prepare(t->data()));
  }
}

void Space::apply(Tuple* old, Tuple* nw, const uint64_t* prepared, size_t n) {
  // Everything the change and its undo need is reserved first (see "Rollback never allocates").
  if (depth_ > 0 && undo_.size() == undo_.capacity()) {
    fault::point();
    undo_.reserve(std::max<size_t>(64, undo_.capacity() * 2));
  }
  // Re-inserts a rollback (or the catch below) may make: every open entry that removed a tuple,
  // plus this one. A delete outside a transaction cannot fail part-way: it only erases.
  const size_t reinserts = reinserts_ + (old != nullptr && (depth_ > 0 || nw != nullptr) ? 1 : 0);
  if (reinserts > 0)
    for (auto& idx : indexes_) idx->reserve_undo(reinserts, nw != nullptr);
  size_t done = 0;
  try {
    for (; done < indexes_.size(); done++) {
      Index& idx = *indexes_[done];
      if (done < n) idx.replace(old, nw, prepared[done]);
      else idx.replace(old, nw);
    }
  } catch (...) {
    while (done-- > 0) indexes_[done]->restore(nw, old);
    throw;
  }
  if (nw != nullptr) bytes_ += nw->size;
  if (old != nullptr) bytes_ -= old->size;
  if (build_) build_->on_replace(old, nw, reinserts, depth_ > 0 ? undo_.size() : IndexBuild::kNoUndo);
  if (depth_ > 0) {
    undo_.push_back(UndoEntry{old, nw});
    if (old != nullptr) reinserts_++;
  } else if (old != nullptr) {
    free_tuple(old);
  }
}

size_t Space::insert_many(const uint8_t* caller_data, size_t size, const Now& now) {
  clear_evicted();
  require_primary();
  // Validate and insert from a private copy: the caller's bytes may be shared with another thread.
  fault::point();
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(copy.get(), caller_data, size);
  const uint8_t* data = copy.get();
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
    uint64_t prepared;
  };
  std::vector<Span> spans;
  fault::point();
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
  // Pass 2 inserts. The primary prepares tuple i + kAhead (a HASH primary prefetches its slot)
  // while tuple i is inserted, so a cache miss overlaps other work instead of stalling each insert.
  constexpr size_t kAhead = 8;
  const size_t valid = spans.size();
  const Index& pk = *indexes_[0];
  const size_t sp = begin();
  try {
    for (size_t k = 0; k < kAhead && k < valid; k++) spans[k].prepared = pk.prepare(spans[k].data);
    for (i = 0; i < valid; i++) {
      if (i + kAhead < valid) spans[i + kAhead].prepared = pk.prepare(spans[i + kAhead].data);
      insert_copy(spans[i].data, spans[i].size, false, spans[i].prepared, now);
    }
    if (invalid) throw *invalid;
  } catch (const DbError& e) {
    rollback(sp);
    clear_evicted();
    throw fail(e);
  } catch (...) {
    rollback(sp);
    clear_evicted();
    throw;
  }
  commit(sp);
  return count;
}

bool Space::remove(const uint8_t* key, size_t size, std::string* out) {
  Index& pk = primary();
  const uint8_t* first;
  const uint32_t parts = check_key(pk, key, size, &first);
  if (parts != pk.key_def().part_count())
    throw DbError(err::kKeyPartCount, "delete() needs a full primary key (" +
                                          std::to_string(pk.key_def().part_count()) + " parts), got " +
                                          std::to_string(parts));
  Tuple* t = pk.get(first);
  if (t == nullptr) return false;
  fault::point();
  out->append(reinterpret_cast<const char*>(t->data()), t->size);
  apply(t, nullptr);
  return true;
}

Tuple* Space::get(uint32_t index_id, const uint8_t* key, size_t size, const Now& now) {
  Index& idx = index(index_id);
  const uint8_t* first;
  const uint32_t parts = check_key(idx, key, size, &first);
  if (!idx.unique())
    throw DbError(err::kUnsupported, "get() needs a unique index; '" + idx.name() + "' is not unique, use select()");
  if (parts != idx.key_def().part_count())
    throw DbError(err::kKeyPartCount, "get() on index '" + idx.name() + "' needs a full key (" +
                                          std::to_string(idx.key_def().part_count()) + " parts), got " +
                                          std::to_string(parts));
  Tuple* t = idx.get(first);
  return t != nullptr && hides(t, now) ? nullptr : t;
}

std::unique_ptr<Cursor> Space::make_cursor(uint32_t index_id, const uint8_t* key, size_t size, IterType type,
                                           bool bounded) {
  Index& idx = index(index_id);
  const uint8_t* first;
  const uint32_t parts = check_key(idx, key, size, &first);
  idx.check_iterator(type, parts);
  return idx.make_cursor(type, std::string(reinterpret_cast<const char*>(key), size), parts, bounded);
}

Tuple* Space::min_max(uint32_t index_id, const uint8_t* key, size_t size, bool max, const Now& now) {
  Index& idx = index(index_id);
  if (!idx.ordered())
    throw DbError(err::kUnsupported, std::string(idx.kind()) + " index '" + idx.name() + "' does not support " +
                                         (max ? "max()" : "min()"));
  const std::unique_ptr<Cursor> c = make_cursor(index_id, key, size, max ? IterType::kReq : IterType::kEq);
  return next_visible(*c, now);
}

void Space::select(uint32_t index_id, const uint8_t* key, size_t size, IterType type, uint64_t limit,
                   uint64_t offset, std::string* out, const Now& now) {
  std::unique_ptr<Cursor> c = make_cursor(index_id, key, size, type);
  while (limit > 0) {
    Tuple* t = next_visible(*c, now);
    if (t == nullptr) break;
    if (offset > 0) {
      offset--;
      continue;
    }
    out->append(reinterpret_cast<const char*>(t->data()), t->size);
    limit--;
  }
}

size_t Space::count(uint32_t index_id, const uint8_t* key, size_t size, IterType type, const Now& now) {
  std::unique_ptr<Cursor> c = make_cursor(index_id, key, size, type);
  const bool ttl = ttl_fieldno_ != kNoTtlField && now.checks();
  if (c->type() == IterType::kAll && !ttl) return c->index()->size();
  size_t n = 0;
  while (next_visible(*c, now) != nullptr) n++;
  return n;
}

std::vector<Tuple*> Space::all_tuples() const {
  std::vector<Tuple*> tuples;
  fault::point();
  tuples.reserve(len());
  if (!indexes_.empty()) indexes_[0]->each([&](Tuple* t) { tuples.push_back(t); });
  return tuples;
}

void Space::free_large_tuples() {
  if (!arena_.has_large() || indexes_.empty()) return;
  indexes_[0]->each([&](Tuple* t) {
    if (TupleArena::is_large(t)) free_tuple(t);
  });
}

size_t Space::len() const { return indexes_.empty() ? 0 : indexes_[0]->size(); }

size_t Space::index_memory() const {
  size_t total = 0;
  for (const auto& idx : indexes_) total += idx->memory();
  if (build_) total += build_->index().memory();
  return total + undo_.capacity() * sizeof(UndoEntry);
}

void Space::truncate() {
  if (depth_ > 0 && !indexes_.empty()) {
    // One deletion per tuple, so that the transaction can undo them; all or nothing, as every
    // statement is: a deletion that fails (no memory for its undo entry) undoes the ones before.
    const std::vector<Tuple*> tuples = all_tuples();
    const size_t sp = begin();
    try {
      for (Tuple* t : tuples) apply(t, nullptr);
    } catch (...) {
      rollback(sp);  // never allocates
      throw;
    }
    commit(sp);
  }
  if (build_) {
    build_->fail_with(err::kIndexBuildAborted, [&] {
      return "Building index '" + build_->index().name() + "' was aborted: space '" + name_ + "' was truncated";
    });
  }
  if (indexes_.empty() || depth_ > 0) return;
  free_large_tuples();
  for (auto& idx : indexes_) idx->clear();
  arena_.reset();
  bytes_ = 0;
}

size_t Space::begin() {
  if (open_.size() == open_.capacity()) fault::point();
  open_.push_back(undo_.size());  // may throw std::bad_alloc: nothing changed yet
  if (depth_++ == 0) {
    for (auto& idx : indexes_) idx->hold_for_undo(true);
    if (build_) build_->hold_for_undo(true);
  }
  return undo_.size();
}

void Space::end_transaction() noexcept {
  undo_.clear();
  reinserts_ = 0;
  if (undo_.capacity() > 4096) std::vector<UndoEntry>().swap(undo_);  // frees, never allocates
  for (auto& idx : indexes_) idx->hold_for_undo(false);
  if (build_) {
    build_->hold_for_undo(false);
    build_->transaction_ended();
  }
}

// A savepoint must be the innermost open transaction's: an older one would end the inner ones
// unseen, and a rollback to a savepoint inside the transaction would undo only part of it and
// then drop the rest of its undo log (the tuples it replaced or deleted never freed).
void Space::check_savepoint(size_t savepoint, const char* what) const {
  if (depth_ == 0) throw DbError(err::kTransaction, std::string(what) + " without a matching begin()");
  if (savepoint != open_.back())
    throw DbError(err::kTransaction, std::string(what) + ": savepoint " + std::to_string(savepoint) +
                                         " is not the innermost open transaction's (" + std::to_string(open_.back()) + ")");
}

void Space::commit(size_t savepoint) {
  check_savepoint(savepoint, "commit()");
  open_.pop_back();
  if (--depth_ > 0) return;
  constexpr size_t kBatch = 16;  // TupleArena::touch_slab
  for (size_t i = 0; i < undo_.size(); i += kBatch) {
    const size_t end = std::min(undo_.size(), i + kBatch);
    for (size_t j = i; j < end; j++)
      if (undo_[j].old != nullptr) TupleArena::touch_slab(undo_[j].old);
    for (size_t j = i; j < end; j++)
      if (undo_[j].old != nullptr) free_tuple(undo_[j].old);
  }
  end_transaction();
}

void Space::rollback(size_t savepoint) {
  check_savepoint(savepoint, "rollback()");
  const bool undone = undo_.size() > savepoint;
  // Never allocates: every index reserved what its restore() needs before each change.
  while (undo_.size() > savepoint) {
    const UndoEntry e = undo_.back();
    if (build_) build_->on_restore(e.nw, e.old, undo_.size() - 1);
    for (size_t i = indexes_.size(); i-- > 0;) indexes_[i]->restore(e.nw, e.old);
    if (e.old != nullptr) bytes_ += e.old->size;
    if (e.nw != nullptr) bytes_ -= e.nw->size;
    if (e.nw != nullptr) free_tuple(e.nw);
    if (e.old != nullptr) reinserts_--;
    undo_.pop_back();
  }
  if (undone) {
    for (auto& idx : indexes_) idx->rolled_back();
    if (build_) build_->rolled_back();
  }
  if (build_) build_->rolled_back_to(savepoint);
  open_.pop_back();
  if (--depth_ == 0) end_transaction();
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
  if (indexes_.empty()) return bytes_ == 0 ? "" : "bsize() is " + std::to_string(bytes_) + " without an index";
  uint64_t bytes = 0;
  indexes_[0]->each([&](Tuple* t) { bytes += t->size; });
  if (bytes != bytes_) return "bsize() is " + std::to_string(bytes_) + ", the tuples take " + std::to_string(bytes);
  const size_t n = indexes_[0]->size();
  for (const auto& idx : indexes_) {
    if (idx->size() != n) return "index '" + idx->name() + "' has " + std::to_string(idx->size()) + " entries, primary " + std::to_string(n);
    std::string why = idx->check(*indexes_[0]);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace ce
