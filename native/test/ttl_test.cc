// ttl.h: ttl_expired() decides exactly as the rule it states (and the expiry chunk applies):
// expired when the TTL field is a number <= now, compared by value (mp::compare_num) whatever
// its encoding; missing, non-numeric and NaN never expire. Its fast paths (float64, uint32) are
// checked against that rule on every encoding, at and around the boundary, and on seeded random
// values; wall_clock_now() is Date.now()'s value: whole ms, and ms / 1000 in seconds.
#include "ttl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

using test::expect;
using test::Mp;

namespace {

// The rule, written out: what ttl_expired must return for the field at `ttl`.
bool rule(const uint8_t* ttl, double now) {
  ce::mp::Num value;
  if (ttl == nullptr || !ce::mp::read_num(ttl, &value)) return false;
  if (value.kind == ce::mp::Num::kDouble && std::isnan(value.d)) return false;
  ce::mp::Num limit;
  limit.kind = ce::mp::Num::kDouble;
  limit.d = now;
  return ce::mp::compare_num(value, limit) <= 0;
}

// [id, "pad", ttl] with ttl written by `write`.
template <class F>
std::string tuple(F write) {
  Mp m;
  m.array(3).uint(7).str("pad");
  write(m);
  return m.str();
}

void check(const std::string& t, double now, const char* what) {
  const uint8_t* data = reinterpret_cast<const uint8_t*>(t.data());
  const bool want = rule(ce::mp::field(data, 2), now);
  expect(ce::ttl_expired(data, 2, now) == want, what, ": ttl_expired disagrees with the rule at now = ", now);
}

void around(double v, double now) {
  check(tuple([&](Mp& m) { m.f64(v); }), now, "float64");
  check(tuple([&](Mp& m) { m.f32(float(v)); }), now, "float32");
  if (v >= 0 && v < 18446744073709551616.0 && std::trunc(v) == v) check(tuple([&](Mp& m) { m.uint(uint64_t(v)); }), now, "uint");
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0 && std::trunc(v) == v)
    check(tuple([&](Mp& m) { m.integer(int64_t(v)); }), now, "int");
}

}  // namespace

int main() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295.0, 4294967296.0, 1763900000,
                                      1763900000123.0, 1763900000.123, 9007199254740992.0, 9007199254740993.0,
                                      18446744073709549568.0, -1, -32, -33, -2147483648.0, -1e18, 0.5, inf, -inf, nan};
  for (double v : values) {
    for (double now : {v, std::nextafter(v, -inf), std::nextafter(v, inf), v - 1, v + 1, v / 1000, v * 1000, 0.0, -inf, inf}) {
      if (std::isnan(now)) continue;  // REQUIRES: now is not NaN
      around(v, now);
    }
  }
  // Integers above 2^53: by value, not through a double.
  const std::string big = tuple([](Mp& m) { m.uint(9007199254740993ull); });
  expect(!ce::ttl_expired(reinterpret_cast<const uint8_t*>(big.data()), 2, 9007199254740992.0), "2^53 + 1 <= 2^53");
  // Missing and non-numeric TTLs never expire.
  for (const std::string& t : {tuple([](Mp& m) { m.str("x"); }), tuple([](Mp& m) { m.nil(); }), tuple([](Mp& m) { m.boolean(true); })})
    expect(!ce::ttl_expired(reinterpret_cast<const uint8_t*>(t.data()), 2, inf), "a non-numeric TTL expired");
  expect(!ce::ttl_expired(reinterpret_cast<const uint8_t*>(big.data()), 3, inf), "a missing TTL expired");
  // Seeded random TTLs in s and ms against a now near them.
  test::Rng rng(test::g_seed);
  for (int i = 0; i < 200000; i++) {
    const double ms = 1.7e12 + std::floor(rng.unit() * 1e11);
    const double v = rng.below(2) ? ms : std::floor(ms / 1000);
    const double now = (rng.below(2) ? ms + double(int(rng.below(5)) - 2) : (ms + double(int(rng.below(5)) - 2)) / 1000);
    around(v, now);
    around(v / 1000, now);
  }
  // The wall clock: whole ms, and the same ms / 1000 in seconds.
  for (int i = 0; i < 1000; i++) {
    const double ms = ce::wall_clock_now(ce::WallClockUnit::kMillis);
    const double s = ce::wall_clock_now(ce::WallClockUnit::kSeconds);
    expect(std::trunc(ms) == ms && ms > 1.6e12, "wall_clock_now(kMillis) is not a whole ms: ", ms);
    expect(s * 1000 >= ms - 1 && s <= (ms + 1000) / 1000, "wall_clock_now(kSeconds) is not ms / 1000: ", s, " vs ", ms);
    expect(std::trunc(s * 1000 + 0.5) / 1000 == s, "wall_clock_now(kSeconds) is not a whole ms / 1000: ", s);
  }
  // Now: a given time decides as ttl_expired; none (NaN, the default) checks nothing.
  expect(!ce::Now().checks() && !ce::Now(nan).checks() && ce::Now(5).checks(), "Now::checks()");
  for (double v : values) {
    if (std::isnan(v)) continue;
    const std::string t = tuple([&](Mp& m) { m.f64(v); });
    const uint8_t* data = reinterpret_cast<const uint8_t*>(t.data());
    for (double now : {v, std::nextafter(v, -inf), std::nextafter(v, inf), v - 1, v + 1})
      expect(ce::Now(now).expired(data, 2) == ce::ttl_expired(data, 2, now), "Now(given) disagrees at ", now);
  }
  // Now::wall (the coarse clock first): every decision is the exact clock's at an instant of the
  // call, so a TTL <= the exact time read before is expired and one > the exact time read after
  // is live, in both units, for TTLs at the boundary, around the coarse margin, far from it, as
  // float64 and as integers, and for several TTLs decided through one Now.
  for (int unit = 0; unit < 2; unit++) {
    const ce::WallClockUnit u = unit == 0 ? ce::WallClockUnit::kMillis : ce::WallClockUnit::kSeconds;
    const double scale = unit == 0 ? 1000 : 1;  // a second in the unit
    const double tick = unit == 0 ? 1 : 0.001;  // a ms in the unit
    for (int i = 0; i < 2000; i++) {
      const double before = ce::wall_clock_now(u);
      const ce::Now now = ce::Now::wall(u);
      std::vector<double> ttls;
      for (double d : {0.0, 1.0, -1.0, 2.0, -2.0, 5.0, -5.0, 20.0, -20.0})
        ttls.push_back(before + d * tick);
      for (double k : {ce::Now::kCoarseMargin, 0.0, 3600.0})
        for (double d : {-1.0, 0.0, 1.0, 5.0}) {
          ttls.push_back(before + k * scale + d * tick);
          ttls.push_back(before - k * scale + d * tick);
        }
      // Whole seconds (and whole ms) around the time and the margin: the integer paths.
      for (double k : {0.0, ce::Now::kCoarseMargin})
        for (double d : {-2.0, -1.0, 0.0, 1.0, 2.0}) {
          ttls.push_back(std::floor(before) + k * scale + d);
          ttls.push_back(std::floor(before) - k * scale + d);
        }
      std::vector<int> got;
      for (double v : ttls) {
        const std::string tf = tuple([&](Mp& m) { m.f64(v); });
        got.push_back(now.expired(reinterpret_cast<const uint8_t*>(tf.data()), 2) ? 1 : 0);
        if (std::trunc(v) == v && v >= 0) {
          const std::string ti = tuple([&](Mp& m) { m.uint(uint64_t(v)); });
          expect(now.expired(reinterpret_cast<const uint8_t*>(ti.data()), 2) == (got.back() == 1),
                 "Now::wall decides an integer TTL unlike the same float64: ", v);
        }
      }
      const double after = ce::wall_clock_now(u);
      for (size_t k = 0; k < ttls.size(); k++) {
        if (ttls[k] <= before) expect(got[k] == 1, "Now::wall: a TTL <= Date.now() before the read is live: ", ttls[k]);
        if (ttls[k] > after) expect(got[k] == 0, "Now::wall: a TTL > Date.now() after the read expired: ", ttls[k]);
      }
      // One instant: an expired TTL is never above a live one.
      double max_expired = -inf, min_live = inf;
      for (size_t k = 0; k < ttls.size(); k++) {
        if (got[k] == 1) max_expired = std::max(max_expired, ttls[k]);
        else min_live = std::min(min_live, ttls[k]);
      }
      expect(max_expired < min_live, "Now::wall: decisions of one call are not those of one instant");
      expect(now.value() <= ce::wall_clock_now(u), "Now::wall is ahead of the exact clock");
    }
  }
  std::puts("ttl_test: ok");
  return 0;
}
