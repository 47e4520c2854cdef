#include "expiry/chunk.h"

#include "errors.h"

namespace ce {

// Runs body() inside its own transaction: committed unless keep_open; on any error rolled back,
// with the cursor put back where the chunk began. Returns body's result with the savepoint.
template <class Body>
ChunkResult Scan::in_transaction(Space& space, bool keep_open, Body body) {
  const size_t sp = space.begin();
  ChunkResult r;
  try {
    r = body();
    if (!keep_open) space.commit(sp);
  } catch (...) {
    space.rollback(sp);
    cursor_->restore();
    throw;
  }
  r.savepoint = sp;
  return r;
}

ChunkResult Scan::expire(Space& space, const ChunkParams& p, std::string* deleted) {
  const Strategy& strategy = p.early_break ? early_break_strategy() : full_scan_strategy();
  if (p.scan_size == 0) throw DbError(err::kIllegalParams, "scan_size must be positive");
  strategy.check(*cursor_->index(), p);
  cursor_->save();
  return in_transaction(space, p.keep_open, [&] { return strategy.run(space, *cursor_, p, deleted); });
}

void Scan::rollback_open(Space& space, size_t savepoint) {
  space.rollback(savepoint);
  restore();
}

uint32_t Scan::scan(uint32_t scan_size, bool* pass_end) {
  cursor_->save();
  return scan_visited(*cursor_, scan_size, &visited_, pass_end);
}

ChunkResult Scan::delete_visited(Space& space, const uint32_t* positions, size_t count, bool keep_open,
                                 std::string* deleted) {
  return in_transaction(space, keep_open, [&] {
    ChunkResult r;
    r.expired = ce::delete_visited(space, visited_, positions, count, deleted);
    return r;
  });
}

}  // namespace ce
