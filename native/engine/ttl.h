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
//
// A read on the wall clock (Now::wall) reads the coarse clock first (CLOCK_REALTIME_COARSE, 5 ns
// here against 23 ns for the exact one): the time of the kernel's last timer tick, never ahead
// of the exact clock and behind it by at most a tick (1-10 ms; clock_getres() gives it). A TTL
// <= the coarse time is therefore <= the exact time: expired. A TTL more than kCoarseMargin (60
// s, in the unit) past the coarse time is past the exact time: live. Only a TTL in between, one
// due within the next minute, asks for the exact clock, once per call. Each decision is the one
// Date.now() at an instant of the call gives: the coarse bounds agree with the exact clock at the
// instant it is read. (The margin assumes the tick is less than a minute late, which the kernel's
// soft-lockup watchdog already treats as a fault.) Without a coarse clock (not Linux) a wall
// read takes the exact clock at once.
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

// Whether the TTL value at `ttl` (a validated MessagePack value) is a number <= now.
inline bool ttl_value_le(const uint8_t* ttl, double now) {
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

// REQUIRES: `tuple` is a validated MessagePack array; now is not NaN.
inline bool ttl_expired(const uint8_t* tuple, uint32_t fieldno, double now) {
  const uint8_t* ttl = mp::field(tuple, fieldno);
  return ttl != nullptr && ttl_value_le(ttl, now);
}

// The `now` of one TTL-aware read or insert: none (no TTL check), a given time (an injected
// clock's, a test's: a double converts implicitly, NaN meaning none), or the wall clock read
// coarse first (see the file's comment). One object serves one call, so that all its decisions
// are those of one instant: it is passed by reference, and keeps the exact clock once read.
class Now {
 public:
  // How far past the coarse clock, in seconds, a TTL must be to count as live without the
  // exact clock.
  static constexpr double kCoarseMargin = 60;

  Now() = default;
  Now(double fixed) : at_(fixed) {}  // NOLINT(google-explicit-constructor): a number is a given now

  // The wall clock: its coarse reading is kept in whole ms, and the double a TTL compares with
  // is made only for a TTL that needs it (see expired()), so that a read pays no division.
  static Now wall(WallClockUnit unit) {
#ifdef CLOCK_REALTIME_COARSE
    Now n;
    n.unit_ = unit;
    n.exact_ = false;
    timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec < 0) return Now(wall_clock_now(unit));  // a clock before 1970: no integer path
    n.coarse_ms_ = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
    return n;
#else
    return Now(wall_clock_now(unit));
#endif
  }

  // Whether reads at this now hide expired tuples.
  bool checks() const { return !exact_ || !std::isnan(at_); }

  // Whether the tuple is expired at this now: its TTL field is a number <= now.
  // REQUIRES: checks(); `tuple` is a validated MessagePack array.
  bool expired(const uint8_t* tuple, uint32_t fieldno) const {
    const uint8_t* ttl = mp::field(tuple, fieldno);
    if (ttl == nullptr) return false;
    if (exact_) return ttl_value_le(ttl, at_);
    uint64_t u;
    if (unsigned_ttl(ttl, &u)) {
      // An unsigned integer TTL against the coarse time, in integers. In ms the coarse time is
      // the integer coarse_ms_. In s it is coarse_ms_ / 1000, between c = floor(coarse_ms_ /
      // 1000) and c + 1: an integer u is at most it exactly when u <= c (then u * 1000 <=
      // coarse_ms_), and u > c + 61 is more than the margin past it.
      const bool ms = unit_ == WallClockUnit::kMillis;
      const uint64_t coarse = ms ? uint64_t(coarse_ms_) : uint64_t(coarse_ms_) / 1000;
      if (u <= coarse) return true;  // <= the coarse time, so <= the exact one
      if (u > coarse + (ms ? uint64_t(kCoarseMargin) * 1000 : uint64_t(kCoarseMargin) + 1)) return false;
    } else {
      const double coarse = value();
      if (ttl_value_le(ttl, coarse)) return true;
      if (!ttl_value_le(ttl, coarse + (unit_ == WallClockUnit::kMillis ? kCoarseMargin * 1000 : kCoarseMargin)))
        return false;
    }
    at_ = wall_clock_now(unit_);
    exact_ = true;
    return ttl_value_le(ttl, at_);
  }

  // The time this now compares with: the given one, or the wall clock's (the coarse reading
  // until the exact clock was read).
  double value() const {
    if (exact_) return at_;
    const double ms = double(coarse_ms_);
    return unit_ == WallClockUnit::kMillis ? ms : ms / 1000;
  }

 private:
  // An unsigned integer TTL (any unsigned encoding, positive fixint included) into *out.
  static bool unsigned_ttl(const uint8_t* ttl, uint64_t* out) {
    const uint8_t c = *ttl;
    if (c <= 0x7f) { *out = c; return true; }
    switch (c) {
      case 0xce: *out = mp::load32(ttl + 1); return true;
      case 0xcf: *out = mp::load64(ttl + 1); return true;
      case 0xcd: *out = mp::load16(ttl + 1); return true;
      case 0xcc: *out = ttl[1]; return true;
      default: return false;
    }
  }

  mutable double at_ = kNoTtlCheck;
  mutable bool exact_ = true;  // at_ is the time itself (given, or the exact clock once read)
  WallClockUnit unit_ = WallClockUnit::kMillis;
  int64_t coarse_ms_ = 0;  // the coarse clock's reading, while !exact_
};

}  // namespace ce
