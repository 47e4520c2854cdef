// The expiration daemon's chunk: one bounded step of a scan, run natively in one call.
//
// A chunk takes up to `scan_size` tuples from the task's cursor, decides which are expired, and
// deletes them through the space (so a tuple leaves every index, as rmIndex:delete() would).
// How it decides is a Strategy, one file each:
//
//  - early_break.cc: an ordered index led by the TTL field, walked in ascending order; the first
//    live tuple ends the pass and the cursor is reset, so the next pass starts again at the
//    smallest TTL. (Tarantool's C module keeps its cursor after the break, so each later chunk
//    reads one tuple and sleeps; that is a bug we do not copy.) Cost: expired + 1 tuple reads
//    per pass, so expiry costs in proportion to what expires.
//  - full_scan.cc: the whole index; reaching its end ends the pass and resets the cursor.
//    Cost: O(checked) tuple reads plus O(expired) deletions.
//  - predicate.cc: a JavaScript isExpired. The chunk splits in two: scan() copies up to
//    scan_size visited tuples and returns them; delete_visited() deletes the chosen ones by
//    primary key, only where the stored tuple is still byte-for-byte the one visited (the
//    predicate may have changed the space in between).
//
// The two native strategies read each tuple's TTL field and expire it when the field is a
// number <= now (compared by value, whatever its MessagePack encoding). A missing or
// non-numeric TTL (NaN included) is never expired and never ends a pass.
//
// Scan owns what a chunk needs beyond the space: the cursor, the position saved when the chunk
// began, and the predicate path's visited copies. Each chunk runs in its own transaction:
// begin, save the cursor, run, commit, or roll back and restore the cursor; with keep_open the
// transaction is left open (its savepoint is returned) for onExpired, and the caller commits
// it (Space::commit) or calls rollback_open().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cursor.h"
#include "space.h"

namespace ce {

struct ChunkParams {
  uint32_t fieldno = 0;    // the TTL field, 0-based
  uint32_t scan_size = 1;  // tuples to read at most, >= 1
  double now = 0;
  bool early_break = false;
  bool keep_open = false;  // leave the transaction open (the result's savepoint) for onExpired
};

struct ChunkResult {
  uint32_t checked = 0;
  uint32_t expired = 0;
  bool pass_end = false;
  bool early_break = false;
  size_t savepoint = 0;  // the chunk's transaction (open when keep_open)
};

// One way of deciding which tuples of a chunk expire (early_break.cc, full_scan.cc).
class Strategy {
 public:
  virtual ~Strategy() = default;
  // Throws ER_ILLEGAL_PARAMS when it cannot run over this index with these parameters.
  virtual void check(const Index& index, const ChunkParams& p) const = 0;
  // Runs one chunk; appends the bytes of each deleted tuple to *deleted when it is not null.
  // REQUIRES: check() passed; inside a transaction of `space` (which keeps every tuple the
  // cursor returned readable); the cursor walks an index of `space`.
  virtual ChunkResult run(Space& space, Cursor& cursor, const ChunkParams& p, std::string* deleted) const = 0;
};

const Strategy& early_break_strategy();
const Strategy& full_scan_strategy();

// The predicate strategy's halves (predicate.cc), over a Scan's visited buffer.
struct Visited {
  std::string bytes;
  std::vector<size_t> offsets;  // tuple i is bytes[offsets[i], offsets[i + 1])
};
// Copies up to scan_size tuples into *visited; sets *pass_end when the index ended (the cursor
// is then reset). Returns the count.
uint32_t scan_visited(Cursor& cursor, uint32_t scan_size, Visited* visited, bool* pass_end);
// Deletes the visited tuples whose positions are listed, where still stored byte-for-byte;
// appends their bytes to *deleted when it is not null. Returns how many were deleted. Throws
// ER_ILLEGAL_PARAMS for a position that was not visited. REQUIRES: inside a transaction.
uint32_t delete_visited(Space& space, const Visited& visited, const uint32_t* positions, size_t count,
                        std::string* deleted);

class Scan {
 public:
  // REQUIRES: cursor != nullptr; the space that owns its index outlives the Scan.
  explicit Scan(std::unique_ptr<Cursor> cursor) : cursor_(std::move(cursor)) {}

  Cursor& cursor() { return *cursor_; }
  // Bytes held beyond the objects themselves: the cursor's copies and the visited tuples.
  size_t retained_bytes() const {
    return cursor_->retained_bytes() + visited_.bytes.capacity() + visited_.offsets.capacity() * sizeof(size_t);
  }

  // expireChunk: one chunk of the early-break or full-scan strategy, in its own transaction.
  // Throws ER_ILLEGAL_PARAMS when early break is asked of an index that is not ordered with the
  // TTL field first. On any error the chunk's changes are rolled back and the cursor restored.
  // REQUIRES: p.scan_size >= 1; the cursor's index belongs to `space`.
  ChunkResult expire(Space& space, const ChunkParams& p, std::string* deleted);
  // Undoes a chunk left open (keep_open) and puts the cursor back where it began.
  // REQUIRES: `savepoint` is that chunk's; no other transaction was opened after it.
  void rollback_open(Space& space, size_t savepoint);

  // scanChunk: the predicate path's first half (saves the cursor first). The copies, visited(),
  // stay valid until the next scan() on this Scan.
  uint32_t scan(uint32_t scan_size, bool* pass_end);
  const std::string& visited() const { return visited_.bytes; }
  // deleteVisited: the second half, in its own transaction (left open with keep_open); on error
  // rolled back and the cursor restored. result.expired is the count deleted.
  ChunkResult delete_visited(Space& space, const uint32_t* positions, size_t count, bool keep_open,
                             std::string* deleted);

  // Puts the cursor back where the last chunk (or scan) began (a predicate threw).
  void restore() {
    cursor_->restore();
    cursor_->detach();
  }

 private:
  template <class Body>
  ChunkResult in_transaction(Space& space, bool keep_open, Body body);
  std::unique_ptr<Cursor> cursor_;
  Visited visited_;
};

}  // namespace ce
