// Cursor: a position in one index that stays valid while the space changes between steps.
//
// It serves both `index.pairs()` and the expiration daemon's scan. Each index kind has its own
// (TreeCursor in index/tree_index.h, HashCursor in index/hash_index.h), made by
// Index::make_cursor(); callers see only this interface. Each kind's header states how its walk
// survives changes (a TREE cursor re-seeks past the last tuple it returned; a HASH cursor walks
// slots and resumes at the same fraction of the table after a rehash): a tuple that lives
// through a whole walk is returned at least once and never skipped, and the walk ends.
//
// A bounded cursor (the daemon's) ends an ordered walk at the entry that was last when the walk
// began: tuples appended behind it are new, not expired, and without the bound a pass over
// ever-growing keys (timestamps, counters) would never end.
//
// Lifetime: while a caller holds the cursor "attached" (inside one native call, or one
// transaction, during which the tuples it returned cannot be freed) it keeps a pointer to the
// last tuple. detach() copies that tuple's bytes, so the cursor may outlive the tuple; call it
// before control returns to JavaScript. If that copy fails for memory, detach() throws and the
// walk is over (next() returns nullptr): it could not resume safely. The cursor refers to its Index by pointer: the space
// that owns both must outlive it (the binding enforces this and checks for drop()).
//
// save()/restore(): one saved position (the expiry chunk saves at its start and restores when
// it rolls back). at_end() peeks without touching it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "alloc/fault.h"
#include "index.h"
#include "msgpack.h"

namespace ce {

class Cursor {
 public:
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  virtual ~Cursor() = default;

  Index* index() const { return index_; }
  // The iterator type after normalisation (a keyless EQ/GE/GT walks ALL, a keyless REQ/LT LE).
  IterType type() const { return type_; }

  // The next tuple, or nullptr at the end (and every call after). REQUIRES: the index's space
  // is alive; if the cursor is attached, no tuple it returned was freed since.
  virtual Tuple* next() = 0;
  virtual bool exhausted() const = 0;
  // True when next() would return nothing; the cursor does not move.
  virtual bool at_end() = 0;
  // Up to n tuples, as n calls of next() would return them, prefetching each; fewer only at the
  // end. The forward walks the daemon uses (ALL) step without re-checking the index between
  // tuples, which is most of a scan's cost per tuple. REQUIRES: as next(); out holds n.
  virtual uint32_t next_batch(Tuple** out, uint32_t n) = 0;
  // Back to before the first tuple.
  virtual void reset() = 0;
  // Stops relying on the last returned tuple staying allocated (copies its bytes).
  virtual void detach() = 0;
  // Remembers the position; restore() goes back to the last one saved (to the start if none).
  virtual void save() = 0;
  virtual void restore() = 0;
  // Bytes held beyond the cursor object itself (the copies of the last tuple).
  virtual size_t retained_bytes() const = 0;

 protected:
  // `key` is a checked MessagePack array with `key_parts` parts (0 for none).
  Cursor(Index* index, IterType type, std::string key, uint32_t key_parts)
      : index_(index), type_(type), key_(std::move(key)), key_parts_(key_parts) {
    if (key_parts_ > 0) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(key_.data());
      mp::read_array(&p);
      key_first_ = p;
    }
    if (key_parts_ == 0 && (type_ == IterType::kEq || type_ == IterType::kGe || type_ == IterType::kGt))
      type_ = IterType::kAll;
    if (key_parts_ == 0 && (type_ == IterType::kReq || type_ == IterType::kLt)) type_ = IterType::kLe;
  }

  Index* index_;
  IterType type_;
  std::string key_;
  const uint8_t* key_first_ = nullptr;
  uint32_t key_parts_;
};

namespace cursor_detail {

// Prefetches a tuple's first bytes and, for a typical small tuple that straddles two cache
// lines, its last ones (where a TTL field at the end lives). A prefetch never faults.
inline void prefetch_tuple(const Tuple* t) {
  if (t == nullptr) return;
  __builtin_prefetch(t);
  __builtin_prefetch(reinterpret_cast<const uint8_t*>(t) + 48);
}

// A tuple's bytes in 8-byte aligned storage.
inline void copy_tuple(const Tuple* t, std::vector<uint64_t>* out) {
  const size_t bytes = sizeof(Tuple) + t->size;
  out->assign((bytes + 7) / 8, 0);
  std::memcpy(out->data(), t, bytes);
}

}  // namespace cursor_detail

// The state every walk has; a kind's State extends it with its own position.
struct WalkState {
  bool started = false;
  bool done = false;
  bool attached = false;
  Tuple* last = nullptr;             // meaningful while attached
  std::vector<uint64_t> last_copy;   // a Tuple, 8-byte aligned: the last one, once detached
};

// The parts of a cursor that do not depend on the kind. Derived (final) provides
// `Tuple* step()`, the next tuple of the walk or nullptr, and may override next_batch(); State
// is a WalkState with the kind's own fields, all of which save()/restore() copy.
template <class Derived, class State>
class CursorImpl : public Cursor {
 public:
  Tuple* next() final {
    if (s_.done) return nullptr;
    Tuple* t = static_cast<Derived*>(this)->step();
    if (t == nullptr) {
      s_.done = true;
      s_.last = nullptr;
      return nullptr;
    }
    s_.last = t;
    s_.attached = true;
    return t;
  }
  bool exhausted() const final { return s_.done; }
  bool at_end() final {
    if (s_.done) return true;
    State keep = s_;
    const bool end = next() == nullptr;
    s_ = std::move(keep);
    return end;
  }
  uint32_t next_batch(Tuple** out, uint32_t n) override {
    uint32_t k = 0;
    Tuple* t;
    while (k < n && (t = next()) != nullptr) out[k++] = t;
    return k;
  }
  void reset() final { s_ = State{}; }
  void detach() final {
    if (!s_.attached) return;
    if (s_.last != nullptr) {
      try {
        fault::point();
        cursor_detail::copy_tuple(s_.last, &s_.last_copy);
      } catch (...) {
        // No copy: the walk cannot resume past a tuple that may be freed before its next step
        // (marked detached without one, it read an empty copy). It ends here instead.
        s_ = State{};
        s_.done = true;
        throw;
      }
    }
    s_.attached = false;
  }
  void save() final { saved_ = s_; }
  // All or nothing: the copy (which allocates) is made before the state changes.
  void restore() final {
    State back = saved_;
    s_ = std::move(back);
  }
  size_t retained_bytes() const final {
    return (s_.last_copy.capacity() + saved_.last_copy.capacity()) * sizeof(uint64_t);
  }

 protected:
  using Cursor::Cursor;
  State s_;
  State saved_;
};

}  // namespace ce
