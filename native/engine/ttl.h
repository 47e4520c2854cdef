// The TTL rule, shared by TTL-aware reads (Space, issue 15) and stated exactly as the expiry
// chunk applies it (expiry/ttl_walk.h): a tuple is expired at `now` when its TTL field is a
// number <= now, compared by value whatever its MessagePack encoding. A missing or non-numeric
// TTL, and NaN, never expire. Cost: one walk over the fields before the TTL field, no allocation.
//
// The default clock of a TTL-aware space is the wall clock, read here (wall_clock_now) as
// JavaScript's Date.now() reads it, so that a read need not call back into JavaScript for it:
// CLOCK_REALTIME (a vDSO call, no system call) floored to whole milliseconds, as V8 floors the
// platform's clock, and in seconds that many ms / 1000 as a double, the same division as
// `Date.now() / 1000`. The `now` a read compares with is therefore the very number Date.now()
// (or Date.now() / 1000) would have returned at that instant: same value, same `ttl <= now`
// for integer and float TTLs alike. It is read on every call, never cached.
#pragma once

#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "msgpack.h"

namespace ce {

// "No TTL check": the `now` a read passes when its space declares no TTL.
inline constexpr double kNoTtlCheck = std::numeric_limits<double>::quiet_NaN();
// The TTL field of a space that declares none.
inline constexpr uint32_t kNoTtlField = UINT32_MAX;

enum class WallClockUnit : uint8_t { kSeconds, kMillis };

// Date.now() at this instant (kMillis), or Date.now() / 1000 (kSeconds).
inline double wall_clock_now(WallClockUnit unit) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const double ms = double(int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000);
  return unit == WallClockUnit::kMillis ? ms : ms / 1000;
}

// REQUIRES: `tuple` is a validated MessagePack array; now is not NaN.
inline bool ttl_expired(const uint8_t* tuple, uint32_t fieldno, double now) {
  const uint8_t* ttl = mp::field(tuple, fieldno);
  if (ttl == nullptr) return false;
  // The encodings TTLs come in (msgpackr writes a time in s as an integer below 2^32 or a
  // float64, a time in ms as a float64) compare as doubles, exactly: a float64 as it is (NaN <=
  // now is false), an unsigned integer below 2^32 through its double, which is exact.
  switch (*ttl) {
    case 0xcb: {
      double d;
      const uint64_t bits = mp::load64(ttl + 1);
      std::memcpy(&d, &bits, 8);
      return d <= now;
    }
    case 0xce: return double(mp::load32(ttl + 1)) <= now;
    default: break;
  }
  mp::Num value;
  if (!mp::read_num(ttl, &value)) return false;
  if (value.kind == mp::Num::kDouble && std::isnan(value.d)) return false;
  mp::Num limit;
  limit.kind = mp::Num::kDouble;
  limit.d = now;
  return mp::compare_num(value, limit) <= 0;
}

}  // namespace ce
