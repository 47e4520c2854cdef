#include "index_build.h"

#include <chrono>
#include <new>

#include "alloc/fault.h"
#include "space.h"

namespace ce {

IndexBuild::IndexBuild(std::unique_ptr<Index> index, std::unique_ptr<Cursor> walk, std::string space_name)
    : index_(std::move(index)), walk_(std::move(walk)), space_name_(std::move(space_name)) {}

void IndexBuild::fail(const char* code, const char* message) noexcept {
  if (error_ && !undoable_) return;  // a failure that stands is never replaced
  undoable_ = false;
  restart_ = false;
  try {
    error_ = std::make_unique<DbError>(code, message);
  } catch (...) {
    // No memory for the message: a DbError with none still stops the build.
    static const DbError kNoMemoryError(err::kMemory, kNoMemory);
    error_.reset(new (std::nothrow) DbError(kNoMemoryError));
  }
}

bool IndexBuild::fits(const Tuple* t) const noexcept {
  try {
    index_->key_def().check_tuple(t->data());
    return true;
  } catch (...) {
    return false;
  }
}

void IndexBuild::fail_at(size_t undo_pos, const char* code, const char* message) noexcept {
  if (error_) return;  // the first reason stands (a later one came while not following writes)
  fail(code, message);
  undoable_ = undo_pos != kNoUndo;
  fail_pos_ = undo_pos;
}

void IndexBuild::rolled_back_to(size_t savepoint) noexcept {
  if (error_ && undoable_ && fail_pos_ >= savepoint) restart_ = true;
}

void IndexBuild::transaction_ended() noexcept {
  if (!restart_) undoable_ = false;
}

void IndexBuild::restart(std::unique_ptr<Cursor> walk) {
  if (held_) {
    index_->hold_for_undo(false);
    held_ = false;
  }
  index_->clear();
  walk_ = std::move(walk);
  walked_ = 0;
  error_.reset();
  undoable_ = false;
  restart_ = false;
}

DbError IndexBuild::duplicate() const {
  return DbError(err::kDuplicateKey,
                 "Duplicate key exists in unique index '" + index_->name() + "' in space '" + space_name_ + "'");
}

void IndexBuild::on_replace(Tuple* old, Tuple* nw, size_t reinserts, size_t undo_pos) noexcept {
  if (failed()) return;
  try {
    if (reinserts > 0) index_->reserve_undo(reinserts, nw != nullptr);
    Tuple* had = stored(old) ? old : nullptr;  // the walk may not have reached old yet
    if (nw == nullptr) {
      if (had != nullptr) index_->replace(had, nullptr);
      return;
    }
    index_->key_def().check_tuple(nw->data());
    const uint64_t prepared = index_->prepare(nw->data());
    Tuple* dup = index_->find_dup(nw, prepared);
    if (dup != nullptr && dup != had) throw duplicate();
    index_->replace(had, nw, prepared);
  } catch (const DbError& e) {
    fail_at(undo_pos, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    fail_at_with(undo_pos, err::kMemory, [&] { return "Out of memory while building index '" + index_->name() + "'"; });
  } catch (...) {
    fail_at_with(undo_pos, err::kMemory, [&] { return "Building index '" + index_->name() + "' failed"; });
  }
}

void IndexBuild::on_restore(Tuple* cur, Tuple* old, size_t undo_pos) noexcept {
  if (failed()) return;
  // cur went in by on_replace (the build was not failed then); old goes back into the primary.
  if (old != nullptr && !fits(old)) {
    fail_at_with(undo_pos, err::kFieldType, [&] {
      return "Index '" + index_->name() + "' cannot hold a tuple of space '" + space_name_ +
             "': a field it indexes is missing or of another type";
    });
    return;
  }
  if (old != nullptr && index_->unique()) {
    Tuple* dup = index_->find_dup(old);
    if (dup != nullptr && dup != cur && dup != old) {
      fail_at_with(undo_pos, err::kDuplicateKey, [&] { return std::string(duplicate().what()); });
      return;
    }
  }
  if (old != nullptr && stored(old)) old = nullptr;  // never in practice; keeps the index a set
  index_->restore(cur, old);
}

void IndexBuild::hold_for_undo(bool hold) noexcept {
  if (failed() || held_ == hold) return;
  index_->hold_for_undo(hold);
  held_ = hold;
}

void IndexBuild::rolled_back() noexcept {
  if (!failed()) index_->rolled_back();
}

bool IndexBuild::step(size_t max_tuples, uint64_t budget_ns) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  if (failed()) throw error();
  for (size_t n = 0; n < max_tuples; n++) {
    if ((n & 63) == 63 &&
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()) >= budget_ns)
      break;
    Tuple* t = walk_->next();
    if (t == nullptr) return true;
    walked_++;
    index_->key_def().check_tuple(t->data());
    const uint64_t prepared = index_->prepare(t->data());
    Tuple* dup = index_->find_dup(t, prepared);
    if (dup == t) continue;  // a write already put it in, or the walk returned it twice
    if (dup != nullptr) throw duplicate();
    index_->replace(nullptr, t, prepared);
  }
  walk_->detach();  // the caller's writes may free the last tuple before the next step
  return false;
}

void Space::begin_index_build(const std::string& name, const std::string& kind, bool unique,
                              std::vector<KeyPart> parts) {
  require_primary();
  std::unique_ptr<Index> idx = new_index(name, kind, unique, std::move(parts));
  if (depth_ > 0) throw DbError(err::kTransaction, "createIndexAsync() cannot begin inside a transaction");
  if (build_)
    throw DbError(err::kUnsupported, "createIndexAsync('" + name + "'): index '" + build_->index().name() +
                                         "' is being built in space '" + name_ + "'; await it first");
  static const uint8_t kNoKey[] = {0x90};
  std::unique_ptr<Cursor> walk = indexes_[0]->make_cursor(
      IterType::kAll, std::string(reinterpret_cast<const char*>(kNoKey), sizeof kNoKey), 0, /*bounded=*/true);
  fault::point();
  build_ = std::make_unique<IndexBuild>(std::move(idx), std::move(walk), name_);
}

int64_t Space::index_build_step(size_t max_tuples, uint64_t budget_ns) {
  if (!build_) throw DbError(err::kIllegalParams, "No index is being built in space '" + name_ + "'");
  if (depth_ > 0) return -1;  // between statements of a transaction: the walk waits for its end
  bool done;
  try {
    if (build_->restart_pending()) {
      static const uint8_t kNoKey[] = {0x90};
      build_->restart(indexes_[0]->make_cursor(
          IterType::kAll, std::string(reinterpret_cast<const char*>(kNoKey), sizeof kNoKey), 0, /*bounded=*/true));
    }
    done = build_->step(max_tuples, budget_ns);
    if (done) {
      fault::point();
      indexes_.reserve(indexes_.size() + 1);
    }
  } catch (...) {
    build_.reset();
    throw;
  }
  if (!done) return -1;
  std::unique_ptr<Index> idx = build_->take_index();
  build_.reset();
  const uint32_t id = idx->id();
  indexes_.push_back(std::move(idx));  // reserved above: cannot throw
  return id;
}

}  // namespace ce
