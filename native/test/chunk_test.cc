// The expiry chunk (expiry/chunk.h) over a real Space: early break stops at the first live
// tuple and resets the cursor; a full scan covers the index and deletes exactly the expired
// tuples; a lone expired tuple at every position (first or last of a 16-tuple batch, on either
// side of a B+tree leaf boundary) is found; a chunk that fails part-way (an allocation failure
// injected at every allocation in turn) changes nothing and puts the cursor back, so the pass
// that retries it skips no tuple (and, over a TREE, re-counts none); a chunk left open is committed or rolled
// back later; the predicate path deletes only visited tuples whose bytes are unchanged.
#include <new>

#include <cmath>
#include <limits>

#include "expiry/chunk.h"
#include "expiry/ttl_walk.h"
#include "space_util.h"

namespace {
long g_fail_after = -1;  // >= 0: successful allocations left before operator new throws
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t n) {
  if (g_fail_after == 0) {
    g_fail_after = -1;
    throw std::bad_alloc();
  }
  if (g_fail_after > 0) --g_fail_after;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using ce::ChunkParams;
using ce::ChunkResult;
using ce::IterType;
using ce::Scan;
using test::expect;
using test::Mp;

namespace {

constexpr double kNow = 1000;

Scan scan_of(ce::Space& s, uint32_t index, bool bounded = true) {
  return Scan(test::cursor(s, index, IterType::kAll, Mp().array(0), bounded));
}

ChunkParams params(uint32_t scan_size, bool early_break) {
  ChunkParams p;
  p.fieldno = 1;
  p.scan_size = scan_size;
  p.now = kNow;
  p.early_break = early_break;
  return p;
}

void early_break_stops_at_first_live() {
  auto s = test::make_space("HASH", true);
  for (uint64_t id = 0; id < 200; id++) test::insert(*s, id, id < 37 ? kNow - 100 + id : kNow + id);
  Scan scan = scan_of(*s, 1);
  const ChunkResult r = scan.expire(*s, params(1000, true), nullptr);
  expect(r.expired == 37 && r.checked == 38 && r.pass_end && r.early_break, "early break: expired ", r.expired,
         " checked ", r.checked);
  expect(s->len() == 163, "early break left ", s->len());
  // The cursor was reset: the next pass starts again at the smallest TTL.
  test::insert(*s, 1000, kNow - 1);
  const ChunkResult again = scan.expire(*s, params(1000, true), nullptr);
  expect(again.expired == 1 && again.checked == 2, "the next pass did not restart at the smallest TTL");
  test::expect_error(ce::err::kIllegalParams, [&] {
    Scan pk = scan_of(*s, 0);
    pk.expire(*s, params(10, true), nullptr);
  }, "early break over the HASH primary");
  test::expect_sound(*s, "early break");
}

void full_scan_covers(const char* kind) {
  auto s = test::make_space(kind, true);
  test::Rng r(uint32_t(test::g_seed) + 5);
  std::set<uint64_t> live;
  for (uint64_t id = 0; id < 5000; id++) {
    const bool expired = r.below(3) == 0;
    test::insert(*s, id, expired ? kNow - r.below(500) : kNow + 1 + r.below(500), r.below(30));
    if (!expired) live.insert(id);
  }
  Scan scan = scan_of(*s, 0);
  uint64_t checked = 0, chunks = 0;
  std::string deleted;
  for (;;) {
    const ChunkResult c = scan.expire(*s, params(97, false), &deleted);
    checked += c.checked;
    expect(++chunks < 1000, kind, ": the pass does not end");
    if (c.pass_end) break;
  }
  expect(checked == 5000, kind, ": the pass checked ", checked, " of 5000");
  expect(test::ids(*s) == live, kind, ": the full scan did not delete exactly the expired tuples");
  test::expect_sound(*s, kind);
}

// Exactly one expired tuple, at every position of a 100-tuple TREE (leaves of 30 entries when
// filled in order, batches of 16).
void lone_expired_at_every_position() {
  for (uint32_t scan_size : {16u, 7u, 1000u}) {
    for (uint64_t at = 0; at < 100; at++) {
      auto s = test::make_space("TREE", false);
      for (uint64_t id = 0; id < 100; id++) test::insert(*s, id, id == at ? kNow : kNow + 1);
      Scan scan = scan_of(*s, 0);
      uint32_t expired = 0, checked = 0;
      for (int guard = 0;; guard++) {
        expect(guard < 200, "pass does not end");
        const ChunkResult c = scan.expire(*s, params(scan_size, false), nullptr);
        expired += c.expired;
        checked += c.checked;
        if (c.pass_end) break;
      }
      expect(expired == 1 && checked == 100 && s->len() == 99 && test::ids(*s).count(at) == 0,
             "lone expired tuple at ", at, " with scanSize ", scan_size, ": expired ", expired, ", checked ", checked);
      test::expect_sound(*s, "lone expired");
    }
  }
  // The same over a TTL index with early break: the expired tuple is first, then a live one.
  auto s = test::make_space("TREE", true);
  for (uint64_t id = 0; id < 100; id++) test::insert(*s, id, id == 57 ? kNow : kNow + 1 + id);
  Scan scan = scan_of(*s, 1);
  const ChunkResult c = scan.expire(*s, params(16, true), nullptr);
  expect(c.expired == 1 && c.checked == 2 && c.early_break, "lone expired first in the TTL index");
}

// A chunk that throws rolls back and restores the cursor.
void failing_chunk_rolls_back(const char* kind) {
  for (long fail_at = 0;; fail_at++) {
    auto s = test::make_space(kind, true);
    std::set<uint64_t> live;
    for (uint64_t id = 0; id < 600; id++) {
      const bool expired = id % 3 != 1;
      test::insert(*s, id, expired ? kNow - 1 : kNow + 1, 40);
      if (!expired) live.insert(id);
    }
    Scan scan = scan_of(*s, 0);
    uint64_t checked = 0;
    std::string deleted;
    ChunkResult first = scan.expire(*s, params(100, false), &deleted);  // the cursor is mid-walk
    checked += first.checked;
    const std::set<uint64_t> before = test::ids(*s);
    bool failed = false;
    std::string more;
    g_fail_after = fail_at;
    try {
      const ChunkResult c = scan.expire(*s, params(250, false), &more);
      checked += c.checked;
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    g_fail_after = -1;
    expect(!s->in_transaction(), kind, ": a failed chunk left its transaction open");
    if (failed) {
      expect(test::ids(*s) == before, kind, ": a chunk that failed at allocation ", fail_at, " changed the space");
      test::expect_sound(*s, "after a failed chunk");
    }
    for (int guard = 0;; guard++) {
      expect(guard < 100, kind, ": the pass does not end");
      const ChunkResult c = scan.expire(*s, params(250, false), &more);
      checked += c.checked;
      if (c.pass_end) break;
    }
    // A TREE walk re-seeks past its last tuple; a HASH walk may return a tuple twice, never skip one.
    if (std::string(kind) == "TREE") expect(checked == 600, kind, ": after a failure at allocation ", fail_at, " the pass checked ", checked, " of 600");
    else expect(checked >= 600, kind, ": after a failure at allocation ", fail_at, " the pass checked ", checked, " of 600");
    expect(test::ids(*s) == live, kind, ": the retried pass did not delete exactly the expired tuples");
    test::expect_sound(*s, kind);
    if (!failed) break;
  }
}

void open_chunk_commit_or_rollback() {
  auto s = test::make_space("HASH", true);
  for (uint64_t id = 0; id < 50; id++) test::insert(*s, id, id < 20 ? kNow - 1 : kNow + 1);
  Scan scan = scan_of(*s, 1);
  ChunkParams p = params(10, true);
  p.keep_open = true;
  std::string deleted;
  ChunkResult r = scan.expire(*s, p, &deleted);
  expect(r.expired == 10 && s->in_transaction() && s->len() == 40, "open chunk");
  scan.rollback_open(*s, r.savepoint);
  expect(!s->in_transaction() && s->len() == 50, "rollback_open did not undo the chunk");
  r = scan.expire(*s, p, &deleted);  // the cursor was put back: the same 10 again
  expect(r.expired == 10 && r.checked == 10, "after rollback_open the chunk did not redo the same tuples");
  s->commit(r.savepoint);
  expect(!s->in_transaction() && s->len() == 40, "commit of an open chunk");
  test::expect_sound(*s, "open chunk");
}

void predicate_deletes_unchanged_visited() {
  auto s = test::make_space("TREE", false);
  for (uint64_t id = 0; id < 30; id++) test::insert(*s, id, 1);
  Scan scan = scan_of(*s, 0);
  bool pass_end = false;
  expect(scan.scan(10, &pass_end) == 10 && !pass_end, "scan of 10");
  const std::string visited = scan.visited();
  // Between the halves (the JavaScript predicate runs): tuple 3 changes, tuple 4 goes.
  const std::string changed = test::tuple_bytes(3, 2);
  s->insert(reinterpret_cast<const uint8_t*>(changed.data()), changed.size(), true);
  test::remove(*s, 4);
  const uint32_t positions[] = {2, 3, 4, 5};
  std::string deleted;
  const ChunkResult r = scan.delete_visited(*s, positions, 4, false, &deleted);
  expect(r.expired == 2 && s->len() == 27, "delete_visited deleted ", r.expired);
  expect(test::ids(*s).count(3) == 1 && test::ids(*s).count(2) == 0 && test::ids(*s).count(5) == 0,
         "delete_visited deleted the wrong tuples");
  expect(scan.visited() == visited, "the visited copies changed before the next scan");
  uint32_t total = 10;
  while (!pass_end) total += scan.scan(7, &pass_end);
  expect(total == 30, "the predicate pass visited ", total, " tuples, not 10 + the 20 after them");
  // A failed delete_visited rolls back and puts the cursor back where its scan began.
  const uint32_t bad[] = {0, 99};
  expect(scan.scan(5, &pass_end) == 5 && scan.scan(5, &pass_end) == 5, "scan after the pass");
  const std::string second = scan.visited();
  test::expect_error(ce::err::kIllegalParams, [&] { scan.delete_visited(*s, bad, 2, false, &deleted); },
                     "position not visited");
  expect(!s->in_transaction() && s->len() == 27, "a failed delete_visited changed the space");
  expect(scan.scan(5, &pass_end) == 5 && scan.visited() == second, "the cursor was not put back");
}


// TtlLimit (ttl_walk.h) decides as the TTL rule does through compare_num, for every encoding
// of a TTL against bounds inside, between and outside the integers' ranges.
void ttl_limit_matches_compare_num() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> values;
  for (uint64_t u : {uint64_t(0), uint64_t(1), uint64_t(127), uint64_t(128), uint64_t(255), uint64_t(999),
                     uint64_t(1000), uint64_t(1001), uint64_t(65535), uint64_t(4294967295u), uint64_t(4294967296u),
                     (uint64_t(1) << 53) + 1, (uint64_t(1) << 63), ~uint64_t(0)})
    values.push_back(Mp().uint(u).str());
  for (int64_t i : {int64_t(-1), int64_t(-2), int64_t(-32), int64_t(-33), int64_t(-128), int64_t(-129),
                    int64_t(-1000), int64_t(INT32_MIN), std::numeric_limits<int64_t>::min()})
    values.push_back(Mp().integer(i).str());
  for (double d : {0.0, -0.0, 0.5, -0.5, 999.5, 1000.0, 1000.5, -1.5, 1e300, -1e300, inf, -inf, nan,
                   18446744073709551616.0, -9223372036854775808.0, 9007199254740993.0})
    values.push_back(Mp().f64(d).str());
  for (float f : {0.25f, 1000.0f, -3.5f}) values.push_back(Mp().f32(f).str());
  values.push_back(Mp().str("1").str());
  values.push_back(Mp().array(0).str());
  for (double now : {0.0, -0.0, 0.5, -0.5, -1.0, -1.5, -2.0, 999.5, 1000.0, 1000.5, 9007199254740992.0,
                     9223372036854775808.0, 18446744073709549568.0, 18446744073709551616.0, 1e300,
                     -9223372036854775808.0, -9223372036854777856.0, -1e300, inf, -inf, nan}) {
    const ce::expiry_detail::TtlLimit limit(now);
    ce::mp::Num bound;
    bound.kind = ce::mp::Num::kDouble;
    bound.d = now;
    for (const std::string& v : values) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
      ce::mp::Num n;
      const bool number = ce::mp::read_num(p, &n) && !(n.kind == ce::mp::Num::kDouble && std::isnan(n.d));
      const auto want = !number ? ce::expiry_detail::TtlLimit::kNoTtl
                        : ce::mp::compare_num(n, bound) <= 0 ? ce::expiry_detail::TtlLimit::kExpired
                                                             : ce::expiry_detail::TtlLimit::kLive;
      expect(limit.check(p) == want, "TtlLimit(", now, ") on a value of ", v.size(), " bytes (first byte ",
             int(uint8_t(v[0])), ") says ", int(limit.check(p)), ", compare_num ", int(want));
    }
    expect(limit.check(nullptr) == ce::expiry_detail::TtlLimit::kNoTtl, "TtlLimit: a missing field");
  }
}

// A full scan over a TREE primary where every k-th tuple is expired: the walk deletes behind
// the cursor, a few entries before the tuple it stands on (the tree's erase near the last
// erase's successor and the cursor's re-find there), across leaves and chunk boundaries.
void full_scan_strided(const char* ttl_kind) {
  for (uint64_t k : {1u, 2u, 3u, 9u, 10u, 15u, 16u, 17u, 31u, 40u}) {
    for (uint32_t scan_size : {16u, 97u, 1000u}) {
      auto s = test::make_space("TREE", ttl_kind != nullptr);
      std::set<uint64_t> live;
      for (uint64_t id = 0; id < 1500; id++) {
        const bool expired = id % k == k / 2;
        test::insert(*s, id, expired ? kNow - double(id % 7) : kNow + 1 + double(id % 5));
        if (!expired) live.insert(id);
      }
      Scan scan = scan_of(*s, 0);
      uint64_t checked = 0;
      for (int guard = 0;; guard++) {
        expect(guard < 1000, "strided pass does not end");
        const ChunkResult c = scan.expire(*s, params(scan_size, false), nullptr);
        checked += c.checked;
        if (c.pass_end) break;
      }
      expect(checked == 1500 && test::ids(*s) == live, "strided full scan k=", k, " scanSize ", scan_size,
             ": checked ", checked, ", left ", s->len(), " of ", live.size());
      test::expect_sound(*s, "strided full scan");
    }
  }
}

}  // namespace

int main() {
  early_break_stops_at_first_live();
  full_scan_covers("TREE");
  full_scan_covers("HASH");
  lone_expired_at_every_position();
  failing_chunk_rolls_back("TREE");
  failing_chunk_rolls_back("HASH");
  open_chunk_commit_or_rollback();
  predicate_deletes_unchanged_visited();
  ttl_limit_matches_compare_num();
  full_scan_strided(nullptr);
  full_scan_strided("TREE");
  std::puts("chunk_test: ok");
  return 0;
}
