// Allocation failure at every allocation in turn (alloc/fault.h), at the engine level: insert,
// replace (same key and changed keys), delete, insert_many, create_index (TREE and HASH, unique
// and not, on a populated space), expiry chunks (early break, full scan, left open), commit, and
// statements inside an open transaction. After each injected failure the space is unchanged
// (every index walked and compared with a snapshot taken before), sound (check_integrity), and
// a transaction that was open is still open and rolls back to where it began. A rollback (of
// transactions that inserted, replaced and deleted across a packed TREE primary or a HASH
// primary, a unique and a non-unique TREE and a HASH secondary; of a chunk that emptied its
// trees; of random transactions) passes no allocation point and makes no heap allocation at all
// (operator new is counted here) while every allocation is made to fail, and restores every index.
// Savepoints must nest: a stale one is refused and changes nothing.
#include <algorithm>
#include <new>
#include <vector>

#include "alloc/fault.h"
#include "expiry/chunk.h"
#include "space_util.h"

namespace {
long g_news = 0;  // operator new calls, counted while g_counting
bool g_counting = false;
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t n) {
  if (g_counting) g_news++;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using ce::IterType;
using ce::Space;
using test::expect;
using test::Mp;

namespace {

constexpr double kNow = 1000;

std::string row(uint64_t id, uint64_t ttl, const std::string& name) {
  return Mp().array(3).uint(id).uint(ttl).str(name).str();
}
std::string name_of(uint64_t id) { return "n" + std::to_string(id * 7919 % 100003); }

void put(Space& s, const std::string& b, bool replace = false) {
  s.insert(reinterpret_cast<const uint8_t*>(b.data()), b.size(), replace);
}

// Every index, each as its list of tuples (HASH walks sorted: slot order is not the contract).
using Snap = std::vector<std::vector<std::string>>;
Snap snapshot(Space& s) {
  Snap out;
  for (uint32_t i = 0; i < s.index_count(); i++) {
    std::vector<std::string> rows;
    auto c = test::cursor(s, i, IterType::kAll);
    while (ce::Tuple* t = c->next()) rows.emplace_back(reinterpret_cast<const char*>(t->data()), t->size);
    if (std::string(s.index(i).kind()) == "HASH") std::sort(rows.begin(), rows.end());
    out.push_back(std::move(rows));
  }
  return out;
}

// pk (pk_kind, id), ttl (TREE, non-unique), name (TREE unique), name_h (HASH): n tuples, the
// indexes built after the tuples are in (packed trees: every insert into them splits).
std::unique_ptr<Space> populated(const char* pk_kind, uint64_t n, bool secondaries = true) {
  auto s = std::make_unique<Space>("fault", 1 << 20);
  s->create_index("pk", pk_kind, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  for (uint64_t id = 0; id < n; id++) put(*s, row(id * 2, id % 3 == 0 ? uint64_t(kNow - 1) : uint64_t(kNow + id), name_of(id)));
  if (secondaries) {
    s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
    s->create_index("name", "TREE", true, {ce::KeyPart{2, ce::FieldType::kString}});
    s->create_index("name_h", "HASH", true, {ce::KeyPart{2, ce::FieldType::kString}});
  }
  return s;
}

// Rolls back with every allocation failing and every heap allocation counted: none may happen.
void rollback_without_allocating(Space& s, size_t sp, const std::string& what) {
  ce::fault::arm(0);
  g_news = 0;
  g_counting = true;
  try {
    s.rollback(sp);
  } catch (...) {
    g_counting = false;
    ce::fault::disarm();
    test::fail(what + ": rollback threw");
  }
  g_counting = false;
  const uint64_t points = ce::fault::passed();
  expect(!ce::fault::disarm() && points == 0, what, ": rollback passed ", points, " allocation points");
  expect(g_news == 0, what, ": rollback called operator new ", g_news, " times");
}

struct Fixture {
  std::unique_ptr<Space> space;
  bool txn = false;  // a transaction is open (savepoint sp, base: the space before it)
  size_t sp = 0;
  Snap base;
};

// Runs op with the 1st, 2nd, ... allocation failing until it succeeds; returns the count.
template <class Setup, class Op>
long every_failure(const std::string& what, Setup setup, Op op) {
  for (long n = 0;; n++) {
    expect(n < 100000, what, ": still failing after ", n, " allocations");
    Fixture f = setup();
    Space& s = *f.space;
    const Snap before = snapshot(s);
    ce::fault::arm(n);
    bool threw = false;
    try {
      op(s);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    const bool fired = ce::fault::disarm();
    expect(threw == fired, what, ": allocation #", n, threw ? " threw without an injected failure" : " failed and was swallowed");
    if (threw) {
      expect(snapshot(s) == before, what, ": a failure at allocation #", n, " changed the space");
      test::expect_sound(s, what + ": after a failure at allocation #" + std::to_string(n));
      expect(s.in_transaction() == f.txn, what, ": a failure at allocation #", n, " changed the transaction state");
    } else {
      test::expect_sound(s, what + ": after success");
    }
    if (f.txn) {
      rollback_without_allocating(s, f.sp, what + " (the open transaction)");
      expect(snapshot(s) == f.base, what, ": the open transaction did not roll back to where it began");
      test::expect_sound(s, what + ": after the rollback");
    }
    if (!threw) return n;
  }
}

template <class Make>
auto plain(Make make) {
  return [make] { return Fixture{make(), false, 0, {}}; };
}

void statements(const char* pk) {
  const std::string k = pk;
  auto base = [pk] { return populated(pk, 300); };
  every_failure(k + " insert", plain(base), [](Space& s) { put(s, row(1001, 5, "fresh")); });
  every_failure(k + " replace, every key changed", plain(base), [](Space& s) { put(s, row(10, 99999, "renamed"), true); });
  every_failure(k + " replace, same keys", plain(base), [](Space& s) { put(s, row(10, kNow + 5, name_of(5)), true); });
  every_failure(k + " replace, new tuple", plain(base), [](Space& s) { put(s, row(1003, 7, "brand new"), true); });
  every_failure(k + " delete", plain(base), [](Space& s) { test::remove(s, 40); });
  every_failure(k + " insert_many", plain(base), [](Space& s) {
    Mp batch;
    batch.array(60);
    for (uint64_t id = 0; id < 60; id++) batch.raw(row(2001 + id * 2, id, "m" + std::to_string(id)));
    s.insert_many(batch.data(), batch.size());
  });
  every_failure(k + " insert_many with a duplicate", plain(base), [](Space& s) {
    Mp batch;
    batch.array(3);
    batch.raw(row(3001, 1, "a")).raw(row(3003, 1, "b")).raw(row(0, 1, "c"));
    try {
      s.insert_many(batch.data(), batch.size());
    } catch (const ce::DbError& e) {
      expect(std::string(e.code()) == ce::err::kDuplicateKey, "insert_many duplicate: ", e.code());
    }
  });
  auto no_secondaries = [pk] { return populated(pk, 300, false); };
  every_failure(k + " create_index TREE unique", plain(no_secondaries),
                [](Space& s) { s.create_index("u", "TREE", true, {ce::KeyPart{2, ce::FieldType::kString}}); });
  every_failure(k + " create_index TREE non-unique", plain(no_secondaries),
                [](Space& s) { s.create_index("t", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}}); });
  every_failure(k + " create_index HASH", plain(no_secondaries),
                [](Space& s) { s.create_index("h", "HASH", true, {ce::KeyPart{2, ce::FieldType::kString}}); });
  every_failure(k + " truncate inside a transaction", plain(base), [](Space& s) {
    const size_t sp = s.begin();
    try {
      s.truncate();
    } catch (...) {
      s.rollback(sp);
      throw;
    }
    s.commit(sp);
  });
  // Inside an open transaction that already changed every index.
  auto in_txn = [pk] {
    Fixture f{populated(pk, 300), true, 0, {}};
    Space& s = *f.space;
    f.base = snapshot(s);
    f.sp = s.begin();
    for (uint64_t id = 0; id < 300; id += 7) test::remove(s, id * 2);
    for (uint64_t id = 1; id < 300; id += 11) put(s, row(id * 2, 12345 + id, "t" + std::to_string(id)), true);
    for (uint64_t id = 0; id < 20; id++) put(s, row(5001 + id * 2, id, "i" + std::to_string(id)));
    return f;
  };
  every_failure(k + " insert in a transaction", in_txn, [](Space& s) { put(s, row(7001, 5, "fresh")); });
  every_failure(k + " replace in a transaction", in_txn, [](Space& s) { put(s, row(4, 54321, "moved"), true); });
  every_failure(k + " delete in a transaction", in_txn, [](Space& s) { test::remove(s, 6); });
  every_failure(k + " commit", in_txn, [](Space& s) {
    const size_t sp = s.begin();  // nested: the fixture's transaction stays open
    try {
      put(s, row(9001, 1, "c"));
    } catch (...) {
      s.rollback(sp);
      throw;
    }
    s.commit(sp);
  });
  every_failure(k + " commit of the outermost", plain(base), [](Space& s) {
    const size_t sp = s.begin();
    try {
      test::remove(s, 2);
      put(s, row(9003, 1, "d"));
    } catch (...) {
      s.rollback(sp);
      throw;
    }
    s.commit(sp);
  });
}

ce::ChunkParams params(uint32_t scan_size, bool early_break, bool keep_open) {
  ce::ChunkParams p;
  p.fieldno = 1;
  p.scan_size = scan_size;
  p.now = kNow;
  p.early_break = early_break;
  p.keep_open = keep_open;
  return p;
}

void chunks(const char* pk) {
  const std::string k = pk;
  auto base = [pk] { return populated(pk, 300); };
  for (bool keep_open : {false, true}) {
    const std::string mode = keep_open ? " (left open, then committed)" : "";
    every_failure(k + " early-break chunk" + mode, plain(base), [keep_open](Space& s) {
      ce::Scan scan(test::cursor(s, 1, IterType::kAll, Mp().array(0), true));
      const ce::ChunkResult r = scan.expire(s, params(1000, true, keep_open), nullptr);
      expect(r.expired == 100, "early-break chunk expired ", r.expired);
      if (keep_open) s.commit(r.savepoint);
    });
    every_failure(k + " full-scan chunk" + mode, plain(base), [keep_open](Space& s) {
      ce::Scan scan(test::cursor(s, 0, IterType::kAll, Mp().array(0), true));
      std::string deleted;
      const ce::ChunkResult r = scan.expire(s, params(150, false, keep_open), &deleted);
      if (keep_open) s.commit(r.savepoint);
    });
  }
  // A chunk left open that emptied every tree (their pools would be released), rolled back
  // with every allocation failing.
  for (uint64_t n : {1u, 29u, 31u, 700u}) {
    auto s = std::make_unique<Space>("fault", 1 << 20);
    s->create_index("pk", pk, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
    s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
    s->create_index("name", "TREE", true, {ce::KeyPart{2, ce::FieldType::kString}});
    for (uint64_t id = 0; id < n; id++) put(*s, row(id, uint64_t(kNow - 1 - id % 5), name_of(id)));
    const Snap before = snapshot(*s);
    ce::Scan scan(test::cursor(*s, 1, IterType::kAll, Mp().array(0), true));
    const ce::ChunkResult r = scan.expire(*s, params(100000, true, true), nullptr);
    expect(r.expired == n && s->len() == 0, "the open chunk did not empty the space");
    ce::fault::arm(0);
    g_news = 0;
    g_counting = true;
    scan.rollback_open(*s, r.savepoint);
    g_counting = false;
    expect(!ce::fault::disarm(), k, ": rollback_open of an emptying chunk allocated");
    expect(snapshot(*s) == before, k, ": rollback_open of an emptying chunk did not restore ", n, " tuples");
    test::expect_sound(*s, "emptying chunk rolled back");
  }
}

// A transaction over packed trees that inserts, replaces (changing keys) and deletes spread
// out tuples, rolled back with every allocation failing.
void rollback_cannot_fail(const char* pk) {
  for (uint64_t n : {0u, 1u, 30u, 700u, 5000u}) {
    auto s = populated(pk, n);
    const Snap before = snapshot(*s);
    const size_t sp = s->begin();
    for (uint64_t id = 0; id < n; id += 3) test::remove(*s, id * 2);
    for (uint64_t id = 1; id < n; id += 5) put(*s, row(id * 2, 77777 - id, "r" + std::to_string(id)), true);
    for (uint64_t id = 0; id < 300; id++) put(*s, row(id * 2 + 1, id % 17, "x" + std::to_string(id)));
    const size_t inner = s->begin();
    for (uint64_t id = 2; id < n; id += 3) test::remove(*s, id * 2);
    rollback_without_allocating(*s, inner, std::string(pk) + " inner rollback");
    s->truncate();
    test::expect_sound(*s, "truncated in a transaction");
    rollback_without_allocating(*s, sp, std::string(pk) + " rollback of " + std::to_string(n));
    expect(snapshot(*s) == before, pk, ": the rollback of ", n, " did not restore every index");
    test::expect_sound(*s, "rolled back");
  }
}

// Random transactions from random (packed or not) starting points, rolled back without allocating.
void random_rollbacks(const char* pk) {
  test::Rng r(uint32_t(test::g_seed) + 77);
  for (int round = 0; round < 40; round++) {
    const uint64_t n = r.below(3000);
    auto s = std::make_unique<Space>("fault", 1 << 20);
    s->create_index("pk", pk, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
    const bool packed = r.below(2) == 0;
    auto secondaries = [&] {
      s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
      s->create_index("name", "TREE", true, {ce::KeyPart{2, ce::FieldType::kString}});
      s->create_index("name_h", "HASH", true, {ce::KeyPart{2, ce::FieldType::kString}});
    };
    if (!packed) secondaries();
    for (uint64_t id = 0; id < n; id++) put(*s, row(r.below(100000), r.below(50), "s" + std::to_string(id)), true);
    if (packed) secondaries();
    const Snap before = snapshot(*s);
    const size_t sp = s->begin();
    const uint32_t ops = r.below(4000);
    for (uint32_t i = 0; i < ops; i++) {
      const uint64_t id = r.below(100000);
      if (r.below(3) == 0) test::remove(*s, id);
      else put(*s, row(id, r.below(50), "o" + std::to_string(i)), true);
    }
    rollback_without_allocating(*s, sp, std::string(pk) + " random round " + std::to_string(round));
    expect(snapshot(*s) == before, pk, ": random round ", round, " did not restore the space");
    test::expect_sound(*s, "random rollback");
  }
}

}  // namespace

// Savepoints nest (space.h): a commit or rollback with any savepoint but the innermost open
// transaction's is refused (ER_TRANSACTION) and changes nothing, and the right one still works.
// A rollback to a savepoint inside the transaction used to be accepted: it undid part of the
// transaction, ended it, and dropped the rest of its undo log (half the transaction stayed, and
// the tuples it had replaced were never freed).
void savepoints_nest(const char* pk) {
  auto s = populated(pk, 20);
  const Snap base = snapshot(*s);
  const size_t outer = s->begin();
  put(*s, row(0, 5, "replaced"), /*replace=*/true);
  const size_t inner = s->begin();
  put(*s, row(1001, 5, "b"));
  const Snap mid = snapshot(*s);
  for (const size_t bad : {outer, inner + 1, inner + 7}) {
    test::expect_error(ce::err::kTransaction, [&] { s->commit(bad); }, std::string(pk) + ": commit, a stale savepoint");
    test::expect_error(ce::err::kTransaction, [&] { s->rollback(bad); }, std::string(pk) + ": rollback, a stale savepoint");
  }
  expect(snapshot(*s) == mid && s->in_transaction(), pk, ": a refused savepoint changed something");
  rollback_without_allocating(*s, inner, std::string(pk) + ": the inner transaction");
  rollback_without_allocating(*s, outer, std::string(pk) + ": the outer transaction");
  expect(snapshot(*s) == base && !s->in_transaction(), pk, ": not rolled back to where it began");
  test::expect_error(ce::err::kTransaction, [&] { s->commit(0); }, std::string(pk) + ": commit, no transaction");
  test::expect_sound(*s, pk);
}

int main() {
  for (const char* pk : {"TREE", "HASH"}) {
    savepoints_nest(pk);
    statements(pk);
    chunks(pk);
    rollback_cannot_fail(pk);
    random_rollbacks(pk);
  }
  std::puts("fault_test: ok");
  return 0;
}
