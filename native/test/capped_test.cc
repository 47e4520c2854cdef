// Capped spaces (space.h, "Capped spaces"): bsize() follows every change (rollback and truncate
// too); 'refuse' throws ER_SPACE_FULL from every statement that would go over a cap and changes
// nothing; 'evict' removes the smallest TTLs (never the tuple being replaced) in one savepoint
// with the store, reports them through evicted(), and is undone with a failed statement or a
// rolled-back transaction; an allocation failure at any point of an evicting statement leaves
// the space as it was; random churn against a model keeps the caps and the smallest-TTL rule.
#include <algorithm>
#include <map>
#include <new>
#include <set>

#include "alloc/fault.h"
#include "space_util.h"

using ce::Space;
using ce::SpaceCaps;
using test::expect;
using test::expect_error;
using test::Mp;

namespace {

const uint8_t* p(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// {id, ttl, pad}: with id and ttl below 128 and a pad under 32 bytes, 4 + pad bytes.
std::string row(uint64_t id, double ttl, uint32_t pad = 0) { return test::tuple_bytes(id, ttl, pad); }

std::unique_ptr<Space> capped(SpaceCaps caps, bool ttl_index = true, const char* pk = "HASH") {
  auto s = std::make_unique<Space>("capped", 1 << 20, 1, caps);
  s->create_index("pk", pk, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  if (ttl_index) s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
  return s;
}

void put(Space& s, const std::string& b, bool replace = false) { s.insert(p(b), b.size(), replace); }

std::string many(std::initializer_list<std::string> rows) {
  Mp m;
  m.array(uint32_t(rows.size()));
  for (const std::string& r : rows) m.raw(r);
  return m.str();
}

std::vector<uint64_t> ids_of(const std::string& bytes) {
  std::vector<uint64_t> out;
  for (const uint8_t* q = p(bytes); q < p(bytes) + bytes.size(); q = ce::mp::next(q)) {
    ce::mp::Num n;
    ce::mp::read_num(ce::mp::field(q, 0), &n);
    out.push_back(n.u);
  }
  return out;
}

uint64_t sum_sizes(Space& s) {
  uint64_t n = 0;
  auto c = test::cursor(s, 0, ce::IterType::kAll);
  while (ce::Tuple* t = c->next()) n += t->size;
  return n;
}

void options() {
  expect_error(ce::err::kIllegalParams, [] { Space("x", 100, 1, SpaceCaps{0, SpaceCaps::kNone, false}); }, "maxTuples 0");
  expect_error(ce::err::kIllegalParams, [] { Space("x", 100, 1, SpaceCaps{SpaceCaps::kNone, 0, false}); }, "maxBytes 0");
  expect_error(ce::err::kIllegalParams, [] { Space("x", 100, 1, SpaceCaps{SpaceCaps::kNone, SpaceCaps::kNone, true}); },
               "evict without a cap");
  expect_error(ce::err::kIllegalParams, [] { Space("x", 100, ce::kNoTtlField, SpaceCaps{5, SpaceCaps::kNone, true}); },
               "evict without a TTL field");
  // Evicting needs a TREE index led by the TTL field, with a numeric type.
  auto s = capped(SpaceCaps{2, SpaceCaps::kNone, true}, false);
  expect_error(ce::err::kIllegalParams, [&] { test::insert(*s, 1, 10); }, "evict without a TTL index");
  s->create_index("ttl_h", "HASH", true, {ce::KeyPart{1, ce::FieldType::kNumber}});
  s->create_index("ttl_s", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}, ce::KeyPart{0, ce::FieldType::kUnsigned}});
  test::insert(*s, 1, 10);
  test::insert(*s, 2, 11);
  test::insert(*s, 3, 12);
  expect(test::ids(*s) == std::set<uint64_t>{2, 3}, "evicts through a TREE index led by the TTL field");
}

void bsize() {
  auto s = capped(SpaceCaps{});  // no caps: bsize() is still kept
  test::insert(*s, 1, 10, 5);
  test::insert(*s, 2, 10, 7);
  expect(s->bsize() == 9 + 11 && s->bsize() == sum_sizes(*s), "bsize after inserts");
  put(*s, row(1, 10, 20), true);
  expect(s->bsize() == 24 + 11, "bsize after a replace");
  const size_t sp = s->begin();
  test::remove(*s, 2);
  put(*s, row(3, 1, 1));
  s->truncate();
  expect(s->bsize() == 0, "bsize after truncate in a transaction");
  s->rollback(sp);
  expect(s->bsize() == 24 + 11 && s->bsize() == sum_sizes(*s), "bsize after a rollback");
  s->truncate();
  expect(s->bsize() == 0 && s->len() == 0, "bsize after truncate");
}

void refuse() {
  auto s = capped(SpaceCaps{2, 30, false});
  test::insert(*s, 1, 10, 5);  // 9 bytes
  test::insert(*s, 2, 20, 5);  // 9 bytes
  expect_error(ce::err::kSpaceFull, [&] { test::insert(*s, 3, 30); }, "insert over maxTuples");
  expect_error(ce::err::kSpaceFull, [&] { put(*s, row(3, 30), true); }, "replace of a new key over maxTuples");
  const std::string batch = many({row(3, 1)});
  expect_error(ce::err::kSpaceFull, [&] { s->insert_many(p(batch), batch.size()); }, "insert_many over maxTuples");
  expect_error(ce::err::kDuplicateKey, [&] { test::insert(*s, 1, 10); }, "a duplicate is reported as one");
  put(*s, row(1, 11, 8), true);  // same key, 12 bytes: 21 in all
  expect_error(ce::err::kSpaceFull, [&] { put(*s, row(1, 11, 20), true); }, "a replace that grows over maxBytes");
  const std::string ops = Mp().array(1).array(3).str("=").integer(3).str(std::string(20, 'q')).str();
  const std::string key = Mp().array(1).uint(2).str();
  expect_error(ce::err::kSpaceFull, [&] { s->update(0, p(key), key.size(), p(ops), ops.size()); }, "an update over maxBytes");
  expect_error(ce::err::kSpaceFull, [&] { s->upsert(p(row(3, 1)), row(3, 1).size(), p(ops), ops.size()); },
               "an upsert that inserts over maxTuples");
  expect_error(ce::err::kSpaceFull, [&] { s->upsert(p(row(2, 1)), row(2, 1).size(), p(ops), ops.size()); },
               "an upsert that updates over maxBytes");
  expect(s->len() == 2 && s->bsize() == 21 && s->bsize() == sum_sizes(*s) && s->evicted().empty(), "refused: nothing changed");
  test::expect_sound(*s, "refuse");
  test::remove(*s, 1);
  test::insert(*s, 3, 30);
  expect(test::ids(*s) == std::set<uint64_t>{2, 3}, "room again after a delete");
}

void evict() {
  auto s = capped(SpaceCaps{3, SpaceCaps::kNone, true});
  for (uint64_t id = 1; id <= 3; id++) test::insert(*s, id, double(100 - id));  // ttl 99, 98, 97
  test::insert(*s, 4, 50);
  expect(ids_of(s->evicted()) == std::vector<uint64_t>{3}, "the smallest TTL goes first");
  expect(test::ids(*s) == std::set<uint64_t>{1, 2, 4}, "the new tuple stays, even with the smallest TTL");
  put(*s, row(4, 60), true);
  expect(s->evicted().empty() && s->len() == 3, "a replace of a stored key evicts nothing");
  // insert_many: one statement; a tuple may evict one the same batch inserted.
  const std::string batch = many({row(5, 10), row(6, 20), row(7, 70)});
  expect(s->insert_many(p(batch), batch.size()) == 3, "insert_many");
  expect(ids_of(s->evicted()) == std::vector<uint64_t>{4, 5, 6}, "insert_many's evictions, in order");
  expect(test::ids(*s) == std::set<uint64_t>{1, 2, 7}, "insert_many result");
  // A failed insert_many restores its evictions.
  const std::string bad = many({row(8, 1), row(1, 5)});
  expect_error(ce::err::kDuplicateKey, [&] { s->insert_many(p(bad), bad.size()); }, "insert_many duplicate");
  expect(test::ids(*s) == std::set<uint64_t>{1, 2, 7} && s->evicted().empty(), "insert_many rolled back its evictions");
  // Inside a transaction the evictions are undone with it.
  const size_t sp = s->begin();
  test::insert(*s, 9, 90);
  test::insert(*s, 10, 91);
  expect(test::ids(*s) == std::set<uint64_t>{1, 2, 10}, "evictions inside a transaction (9 had the smallest TTL)");
  s->rollback(sp);
  expect(test::ids(*s) == std::set<uint64_t>{1, 2, 7} && s->bsize() == sum_sizes(*s), "rolled back");
  test::expect_sound(*s, "evict");
  // maxBytes: the replaced tuple is never evicted, however small its TTL.
  auto b = capped(SpaceCaps{SpaceCaps::kNone, 40, true});
  test::insert(*b, 1, 1, 10);    // 14 bytes, smallest TTL
  test::insert(*b, 2, 50, 10);   // 14
  put(*b, row(1, 1, 27), true);  // 31 + 14 > 40: evicts 2, not 1
  expect(ids_of(b->evicted()) == std::vector<uint64_t>{2} && test::ids(*b) == std::set<uint64_t>{1}, "replace keeps old");
  expect_error(ce::err::kSpaceFull, [&] { test::insert(*b, 3, 5, 40); }, "a tuple larger than maxBytes");
  expect(test::ids(*b) == std::set<uint64_t>{1} && b->bsize() == 31, "nothing evicted for it");
  const std::string ops = Mp().array(1).array(3).str("=").integer(3).str(std::string(30, 'u')).str();
  test::insert(*b, 4, 80);  // 4 bytes: 35
  const std::string key = Mp().array(1).uint(4).str();
  ce::Tuple* t = b->update(0, p(key), key.size(), p(ops), ops.size());  // 4 grows to 34 bytes
  expect(t != nullptr && ids_of(b->evicted()) == std::vector<uint64_t>{1} && b->bsize() == t->size, "an update evicts");
  test::expect_sound(*b, "evict by bytes");
}

// Every allocation of an evicting statement fails in turn: the space is left as it was.
void allocation_failures(const char* pk) {
  for (int what = 0; what < 3; what++) {
    for (long n = 0;; n++) {
      expect(n < 10000, "allocation failures: no end");
      auto s = capped(SpaceCaps{20, SpaceCaps::kNone, true}, true, pk);
      s->create_index("pad", "TREE", false, {ce::KeyPart{2, ce::FieldType::kString}});
      for (uint64_t id = 0; id < 20; id++) test::insert(*s, id, double(id % 7), uint32_t(id % 5));
      size_t sp = 0;
      if (what == 2) sp = s->begin();
      const std::string before = [&] {
        std::string out, k = Mp().array(0).str();
        s->select(1, p(k), k.size(), ce::IterType::kAll, UINT64_MAX, 0, &out);
        return out;
      }();
      const std::string batch = many({row(100, 3), row(101, 4), row(102, 2), row(103, 9)});
      ce::fault::arm(n);
      bool threw = false;
      try {
        if (what == 0) s->insert_many(p(batch), batch.size());
        else test::insert(*s, 100, 3, 9);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      const bool fired = ce::fault::disarm();
      expect(threw == fired, "allocation failures: thrown iff injected");
      test::expect_sound(*s, "allocation failures");
      expect(s->bsize() == sum_sizes(*s), "allocation failures: bsize");
      if (threw) {
        std::string after, k = Mp().array(0).str();
        s->select(1, p(k), k.size(), ce::IterType::kAll, UINT64_MAX, 0, &after);
        expect(after == before && s->len() == 20, "a failure at allocation #", n, " changed the space");
        if (what != 2) expect(s->evicted().empty(), "a failed statement reports no eviction");
      }
      if (what == 2) s->rollback(sp);
      if (!threw) break;
    }
  }
}

// Random churn against a model: the caps always hold, evictions take the smallest (ttl, id)
// other than the replaced tuple, refusals change nothing.
void churn(bool evict) {
  test::Rng rng(uint32_t(test::g_seed) + (evict ? 1 : 0));
  const uint64_t max_tuples = 40, max_bytes = 600;
  auto s = capped(SpaceCaps{max_tuples, max_bytes, evict}, true, "TREE");
  std::map<uint64_t, std::string> model;  // id -> bytes
  auto model_bytes = [&] {
    uint64_t n = 0;
    for (auto& kv : model) n += kv.second.size();
    return n;
  };
  auto ttl_of = [](const std::string& b) {
    ce::mp::Num n;
    ce::mp::read_num(ce::mp::field(p(b), 1), &n);
    return n.kind == ce::mp::Num::kDouble ? n.d : double(n.u);
  };
  for (int step = 0; step < 20000; step++) {
    const uint64_t id = rng.below(80);
    const std::string b = row(id, double(rng.below(100)), rng.below(25));
    const int op = int(rng.below(10));
    if (op == 0) {
      test::remove(*s, id);
      model.erase(id);
      continue;
    }
    const bool replace = op < 5;
    const bool dup = model.count(id) > 0;
    if (dup && !replace) {
      expect_error(ce::err::kDuplicateKey, [&] { put(*s, b, false); }, "churn: duplicate");
      continue;
    }
    // The model's verdict.
    std::map<uint64_t, std::string> next = model;
    next[id] = b;
    std::vector<uint64_t> evicted;
    auto over = [&] {
      uint64_t n = 0;
      for (auto& kv : next) n += kv.second.size();
      return next.size() > max_tuples || n > max_bytes;
    };
    bool full = false;
    while (over()) {
      if (!evict || b.size() > max_bytes) {
        full = true;
        break;
      }
      uint64_t victim = UINT64_MAX;
      double best = 0;
      for (auto& kv : next) {
        if (kv.first == id) continue;
        const double t = ttl_of(kv.second);
        if (victim == UINT64_MAX || t < best || (t == best && kv.first < victim)) victim = kv.first, best = t;
      }
      evicted.push_back(victim);
      next.erase(victim);
    }
    if (full) {
      expect_error(ce::err::kSpaceFull, [&] { put(*s, b, replace); }, "churn: full at step " + std::to_string(step));
    } else {
      put(*s, b, replace);
      expect(ids_of(s->evicted()) == evicted, "churn: evictions at step ", step);
      model = std::move(next);
    }
    expect(s->len() == model.size() && s->bsize() == model_bytes(), "churn: size at step ", step);
    expect(s->len() <= max_tuples && s->bsize() <= max_bytes, "churn: caps at step ", step);
  }
  std::map<uint64_t, std::string> stored;
  auto c = test::cursor(*s, 0, ce::IterType::kAll);
  while (ce::Tuple* t = c->next()) stored[test::id_of(t)] = std::string(reinterpret_cast<const char*>(t->data()), t->size);
  expect(stored == model, "churn: contents");
  test::expect_sound(*s, "churn");
}

}  // namespace

int main() {
  options();
  bsize();
  refuse();
  evict();
  allocation_failures("HASH");
  allocation_failures("TREE");
  churn(false);
  churn(true);
  std::puts("capped_test: ok");
  return 0;
}
