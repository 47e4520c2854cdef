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

// The TTL rule (ttl.h: a number <= now, by value, NaN never) against one `now`, decoded once
// per chunk: an integer TTL (the usual encoding) compares with an integer bound instead of
// going through compare_num's integer-to-double rules. For an integer v, v <= now exactly when
// v <= floor(now); a bound outside the integer's range makes every or no such TTL expired.
class TtlLimit {
 public:
  explicit TtlLimit(double now) : now_(now) {
    if (std::isnan(now)) return;  // nothing expires
    if (now >= 18446744073709551616.0) uint_ = kAll;
    else if (now >= 0) uint_ = kUpTo, ulimit_ = uint64_t(std::floor(now));
    if (now >= 0) int_ = kAll;
    else if (now >= -9223372036854775808.0) int_ = kUpTo, ilimit_ = int64_t(std::floor(now));
  }
  enum Verdict : uint8_t { kNoTtl, kExpired, kLive };
  // `ttl`: the tuple's TTL field, or nullptr when it has none. kNoTtl: missing, not a number,
  // or NaN (never expires, never ends a pass).
  Verdict check(const uint8_t* ttl) const {
    mp::Num v;
    if (ttl == nullptr || !mp::read_num(ttl, &v)) return kNoTtl;
    switch (v.kind) {
      case mp::Num::kUint: return uint_ == kAll || (uint_ == kUpTo && v.u <= ulimit_) ? kExpired : kLive;
      case mp::Num::kInt: return int_ == kAll || (int_ == kUpTo && v.i <= ilimit_) ? kExpired : kLive;
      default:
        if (std::isnan(v.d)) return kNoTtl;
        return v.d <= now_ ? kExpired : kLive;  // a NaN now expires nothing
    }
  }

 private:
  enum Range : uint8_t { kNone, kUpTo, kAll };
  double now_;
  Range uint_ = kNone;  // unsigned TTLs (read_num's kUint)
  Range int_ = kNone;   // negative ones (kInt)
  uint64_t ulimit_ = 0;
  int64_t ilimit_ = 0;
};

template <bool kEarlyBreak>
ChunkResult ttl_walk(Space& space, Cursor& cursor, const ChunkParams& p, std::string* deleted) {
  ChunkResult r;
  const TtlLimit limit(p.now);
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
      const TtlLimit::Verdict verdict = limit.check(mp::field(batch[i]->data(), p.fieldno));
      if (verdict == TtlLimit::kNoTtl) continue;
      if (verdict == TtlLimit::kExpired) {
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
