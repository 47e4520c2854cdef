// The full-scan strategy (see chunk.h): the whole index, any kind, in its walk order.
#include "expiry/chunk.h"
#include "expiry/ttl_walk.h"

namespace ce {

namespace {

class FullScan final : public Strategy {
 public:
  void check(const Index&, const ChunkParams&) const override {}
  ChunkResult run(Space& space, Cursor& cursor, const ChunkParams& p, std::string* deleted) const override {
    return expiry_detail::ttl_walk<false>(space, cursor, p, deleted);
  }
};

}  // namespace

const Strategy& full_scan_strategy() {
  static const FullScan strategy;
  return strategy;
}

}  // namespace ce
