// The TTL rule, shared by TTL-aware reads (Space, issue 15) and stated exactly as the expiry
// chunk applies it (expiry/ttl_walk.h): a tuple is expired at `now` when its TTL field is a
// number <= now, compared by value whatever its MessagePack encoding. A missing or non-numeric
// TTL, and NaN, never expire. Cost: one walk over the fields before the TTL field, no allocation.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "msgpack.h"

namespace ce {

// "No TTL check": the `now` a read passes when its space declares no TTL.
inline constexpr double kNoTtlCheck = std::numeric_limits<double>::quiet_NaN();
// The TTL field of a space that declares none.
inline constexpr uint32_t kNoTtlField = UINT32_MAX;

// REQUIRES: `tuple` is a validated MessagePack array; now is not NaN.
inline bool ttl_expired(const uint8_t* tuple, uint32_t fieldno, double now) {
  const uint8_t* ttl = mp::field(tuple, fieldno);
  mp::Num value;
  if (ttl == nullptr || !mp::read_num(ttl, &value)) return false;
  if (value.kind == mp::Num::kDouble && std::isnan(value.d)) return false;
  mp::Num limit;
  limit.kind = mp::Num::kDouble;
  limit.d = now;
  return mp::compare_num(value, limit) <= 0;
}

}  // namespace ce
