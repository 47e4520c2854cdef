#include "expiry/chunk.h"

#include "errors.h"

namespace ce {

ChunkResult Scan::expire(Space& space, const ChunkParams& p, std::string* deleted) {
  const Strategy& strategy = p.early_break ? early_break_strategy() : full_scan_strategy();
  if (p.scan_size == 0) throw DbError(err::kIllegalParams, "scan_size must be positive");
  strategy.check(*cursor_->index(), p);
  cursor_->save();
  const size_t sp = space.begin();
  ChunkResult r;
  try {
    r = strategy.run(space, *cursor_, p, deleted);
    if (!p.keep_open) space.commit(sp);
  } catch (...) {
    space.rollback(sp);
    cursor_->restore();
    throw;
  }
  r.savepoint = sp;
  return r;
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
  const size_t sp = space.begin();
  ChunkResult r;
  try {
    r.expired = ce::delete_visited(space, visited_, positions, count, deleted);
    if (!keep_open) space.commit(sp);
  } catch (...) {
    space.rollback(sp);
    cursor_->restore();
    throw;
  }
  r.savepoint = sp;
  return r;
}

}  // namespace ce
