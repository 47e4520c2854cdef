// The loop shared by the early-break and full-scan strategies (private to expiry/).
//
// Batches of tuples from the cursor: read every TTL first (prefetching what deleting the
// expired ones will touch), then delete. Tuples sit in slabs in insertion order, not in index
// order, so this lets their cache misses overlap instead of queueing one by one; the cursor
// prefetches tuples further ahead as it walks. Small batches keep that steady: with 64, a burst
// of prefetches overran the CPU's miss buffers and the pure HASH scan took 45 ms instead of 35.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "expiry/chunk.h"
#include "msgpack.h"

namespace ce::expiry_detail {

template <bool kEarlyBreak>
ChunkResult ttl_walk(Space& space, Cursor& cursor, const ChunkParams& p, std::string* deleted) {
  ChunkResult r;
  mp::Num limit;
  limit.kind = mp::Num::kDouble;
  limit.d = p.now;
  constexpr uint32_t kBatch = 16;
  Tuple* batch[kBatch];
  bool expired[kBatch];
  uint64_t prepared[kBatch];
  while (r.checked < p.scan_size) {
    const uint32_t want = std::min(kBatch, p.scan_size - r.checked);
    const uint32_t n = cursor.next_batch(batch, want);
    uint32_t stop = n;
    bool broke = false;
    for (uint32_t i = 0; i < n; i++) {
      expired[i] = false;
      const uint8_t* ttl = mp::field(batch[i]->data(), p.fieldno);
      mp::Num value;
      if (ttl == nullptr || !mp::read_num(ttl, &value)) continue;
      if (value.kind == mp::Num::kDouble && std::isnan(value.d)) continue;  // NaN <= now is false
      if (mp::compare_num(value, limit) <= 0) {
        expired[i] = true;
        prepared[i] = space.prepare_remove(batch[i]);
      } else if (kEarlyBreak) {
        stop = i + 1;
        broke = true;
        break;
      }
    }
    for (uint32_t i = 0; i < stop; i++) {
      if (!expired[i]) continue;
      if (deleted != nullptr) deleted->append(reinterpret_cast<const char*>(batch[i]->data()), batch[i]->size);
      space.remove_tuple(batch[i], prepared[i]);
      r.expired++;
    }
    r.checked += stop;
    if (broke || n < want) {
      r.pass_end = true;
      r.early_break = broke;
      cursor.reset();
      return r;
    }
  }
  if (cursor.at_end()) {
    r.pass_end = true;
    cursor.reset();
    return r;
  }
  cursor.detach();
  return r;
}

}  // namespace ce::expiry_detail
