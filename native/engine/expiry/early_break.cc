// The early-break strategy (see chunk.h): an ordered index led by the TTL field, ascending;
// the first live tuple ends the pass.
#include "errors.h"
#include "expiry/chunk.h"
#include "expiry/ttl_walk.h"

namespace ce {

namespace {

class EarlyBreak final : public Strategy {
 public:
  void check(const Index& index, const ChunkParams& p) const override {
    if (!index.ordered() || index.key_def().parts()[0].fieldno != p.fieldno)
      throw DbError(err::kIllegalParams, "Early break needs a TREE index whose first part is the TTL field");
  }
  ChunkResult run(Space& space, Cursor& cursor, const ChunkParams& p, std::string* deleted) const override {
    return expiry_detail::ttl_walk<true>(space, cursor, p, deleted);
  }
};

}  // namespace

const Strategy& early_break_strategy() {
  static const EarlyBreak strategy;
  return strategy;
}

}  // namespace ce
