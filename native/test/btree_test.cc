// Stress test for native/engine/index/btree.h. Usage: btree_test [large_n]  (default 200000)
//
// Every tree operation is checked against std::set. Elements are {key, hint = key}; the
// comparator aborts when it sees a key that is neither stored nor the key being searched, so a
// stale inner copy of an erased element is caught as soon as it is compared. A second tree holds
// pointers to heap tuples that are deleted right after their erase, for ASan to catch the same.
// operator new is replaced to inject std::bad_alloc and check that a failed insert/build leaves
// the tree unchanged.
#include "index/btree.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <new>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

#ifdef CE_TUPLE_MALLOC
constexpr bool kNodePerAllocation = true;  // every node is its own operator new
#else
constexpr bool kNodePerAllocation = false;  // nodes come from NodePool chunks
#endif
long g_fail_after = -1;  // >= 0: successful allocations left before operator new throws

}  // namespace

// noinline: GCC would otherwise pair the inlined free() with operator new and warn.
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

namespace {

constexpr uint64_t kNone = ~uint64_t{0};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}
void append(std::string& s, const std::string& x) { s += x; }
void append(std::string& s, const char* x) { s += x; }
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> append(std::string& s, T x) {
  s += std::to_string(x);
}
// The message is only assembled on failure.
template <class... Parts>
void expect(bool ok, const Parts&... parts) {
  if (ok) return;
  std::string msg;
  (append(msg, parts), ...);
  fail(msg);
}

// ---- elements checked for liveness -------------------------------------------------------

struct E {
  uint64_t key;
  uint64_t hint;
};

std::vector<uint8_t> g_live;  // g_live[key] != 0: key is stored in the tree under test
uint64_t g_probe = kNone;     // the key the current call searches for (may be absent)

void touch(const E& e) {
  if (e.hint != e.key) fail("corrupt element " + std::to_string(e.key));
  if (e.key != g_probe && (e.key >= g_live.size() || !g_live[e.key])) {
    fail("comparator saw element " + std::to_string(e.key) + ", which is not in the tree");
  }
}

struct ECmp {
  int compare(const E& a, const E& b) const {
    touch(a);
    touch(b);
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  }
};

using Tree = ce::BTree<E, ECmp>;
constexpr size_t kLeafSlots = (512 - 8 - sizeof(void*)) / sizeof(E);  // {count, last, next}, elements

struct Stats {
  uint64_t ops = 0;
  uint64_t checks = 0;
  uint64_t injected = 0;
} g_stats;

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_tree(const Tree& t, const std::string& ctx) {
  std::string why;
  ++g_stats.checks;
  if (!t.check(&why)) fail(ctx + ": check(): " + why);
}

// Full forward and backward walk compared with the model; returns the number of leaves.
size_t compare_all(const Tree& t, const std::set<uint64_t>& model, const std::string& ctx) {
  expect(t.size() == model.size(), ctx, ": size ", t.size(), " != ", model.size());
  size_t leaves = 0;
  const void* leaf = nullptr;
  auto it = t.begin();
  for (uint64_t k : model) {
    expect(t.valid(it), ctx, ": forward walk ended early");
    expect(t.get(it).key == k, ctx, ": forward walk got ", t.get(it).key, ", want ", k);
    if (it.leaf != leaf) ++leaves, leaf = it.leaf;
    t.next(it);
  }
  expect(!t.valid(it) && it == t.end(), ctx, ": forward walk did not end");
  it = t.last();
  for (auto r = model.rbegin(); r != model.rend(); ++r) {
    expect(t.valid(it) && t.get(it).key == *r, ctx, ": backward walk mismatch");
    t.prev(it);
  }
  expect(!t.valid(it), ctx, ": backward walk did not end");
  t.prev(it);
  expect(it == t.last(), ctx, ": prev(end) != last");
  return leaves;
}

// The tree under test and its model, with every answer cross-checked.
struct Harness {
  Tree tree{ECmp{}};
  std::set<uint64_t> model;
  std::string ctx;

  explicit Harness(std::string c, size_t universe) : ctx(std::move(c)) { g_live.assign(universe, 0); }

  bool insert(uint64_t k) {
    const uint64_t v = tree.version();
    g_probe = k;
    const bool r = tree.insert(E{k, k});
    g_probe = kNone;
    const bool want = model.insert(k).second;
    expect(r == want, ctx, ": insert(", k, ") returned ", r);
    expect(tree.version() == v + r, ctx, ": version after insert");
    if (r) g_live[k] = 1;
    ++g_stats.ops;
    return r;
  }

  bool erase(uint64_t k) {
    const uint64_t v = tree.version();
    g_probe = k;
    const bool r = tree.erase(E{k, k});
    g_probe = kNone;
    const bool want = model.erase(k) > 0;
    expect(r == want, ctx, ": erase(", k, ") returned ", r);
    expect(tree.version() == v + r, ctx, ": version after erase");
    ++g_stats.ops;
    if (!r) return false;
    g_live[k] = 0;
    auto succ = tree.erase_successor();
    auto want_succ = model.upper_bound(k);
    if (want_succ == model.end()) {
      expect(!tree.valid(succ), ctx, ": erase_successor should be end");
    } else {
      expect(tree.valid(succ) && tree.get(succ).key == *want_succ, ctx, ": erase_successor(", k, ") wrong");
    }
    tree.prev(succ);  // how a reverse cursor resumes: the element before the erased one
    auto before = model.lower_bound(k);
    if (before == model.begin()) {
      expect(!tree.valid(succ), ctx, ": prev(erase_successor) should be end");
    } else {
      expect(tree.valid(succ) && tree.get(succ).key == *std::prev(before), ctx, ": prev(erase_successor) wrong");
    }
    return true;
  }

  void find(uint64_t k) {
    g_probe = k;
    const E* e = tree.find(E{k, k});
    g_probe = kNone;
    expect((e != nullptr) == (model.count(k) > 0), ctx, ": find(", k, ")");
    if (e) expect(e->key == k, ctx, ": find returned the wrong element");
    ++g_stats.ops;
  }

  void expect_at(Tree::Iterator it, std::set<uint64_t>::const_iterator want, const std::string& what) {
    if (want == model.end()) {
      expect(!tree.valid(it), ctx, ": ", what, " should be end");
    } else {
      expect(tree.valid(it) && tree.get(it).key == *want, ctx, ": ", what, " wrong");
    }
  }

  void bounds(uint64_t k, unsigned shift) {
    g_probe = k;
    expect_at(tree.lower_bound_elem(E{k, k}), model.lower_bound(k), "lower_bound_elem");
    expect_at(tree.upper_bound_elem(E{k, k}), model.upper_bound(k), "upper_bound_elem");
    g_probe = kNone;
    // Key-prefix search: compares key >> shift only (monotonic along the element order).
    auto kc = [k, shift](const E& e) {
      touch(e);
      const uint64_t a = e.key >> shift, b = k >> shift;
      return a < b ? -1 : a > b ? 1 : 0;
    };
    expect_at(tree.lower_bound(kc), model.lower_bound(k >> shift << shift), "lower_bound(kc)");
    expect_at(tree.upper_bound(kc), model.lower_bound(((k >> shift) + 1) << shift), "upper_bound(kc)");
    ++g_stats.ops;
  }

  void walk(uint64_t k, size_t steps, bool forward) {
    g_probe = k;
    auto it = tree.lower_bound_elem(E{k, k});
    g_probe = kNone;
    auto m = model.lower_bound(k);
    for (size_t s = 0; s < steps && tree.valid(it); ++s) {
      expect_at(it, m, "walk");
      if (forward) {
        tree.next(it);
        ++m;
      } else {
        tree.prev(it);
        if (m == model.begin()) {
          expect(!tree.valid(it), ctx, ": prev of first should be end");
          return;
        }
        --m;
      }
    }
    ++g_stats.ops;
  }

  // Inserts k with allocation failures injected at every allocation it makes, in turn.
  void insert_with_failures(uint64_t k, bool compare_contents) {
    const size_t size = tree.size(), memory = tree.memory();
    const uint64_t version = tree.version();
    for (long allowed = 0;; ++allowed) {
      g_probe = k;
      g_fail_after = allowed;
      bool threw = false, r = false;
      try {
        r = tree.insert(E{k, k});
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      g_fail_after = -1;
      g_probe = kNone;
      if (!threw) {
        const bool want = model.insert(k).second;
        expect(r == want, ctx, ": insert after injected failures");
        if (r) g_live[k] = 1;
        break;
      }
      ++g_stats.injected;
      expect(tree.size() == size && tree.memory() == memory && tree.version() == version, ctx, ": failed insert changed size/memory/version");
      check_tree(tree, ctx + " after injected bad_alloc");
      if (compare_contents) compare_all(tree, model, ctx + " after injected bad_alloc");
    }
    ++g_stats.ops;
  }

  void build(const std::vector<uint64_t>& sorted) {
    std::vector<E> elems;
    for (uint64_t k : sorted) elems.push_back(E{k, k});
    if (!sorted.empty()) {  // a failing build keeps the old content
      const size_t memory = tree.memory();
      const uint64_t version = tree.version();
      g_fail_after = static_cast<long>(sorted.size() % 2);  // the vector, then the first node
      bool threw = false;
      try {
        tree.build(elems.data(), elems.size());
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      g_fail_after = -1;
      // With the node pool (no CE_TUPLE_MALLOC) only a new chunk calls operator new.
      expect(threw || !kNodePerAllocation, ctx, ": build did not hit the injected failure");
      if (threw) {
        ++g_stats.injected;
        expect(tree.memory() == memory && tree.version() == version, ctx, ": failed build changed the tree");
      } else {  // the build went through: the tree now holds `sorted`
        for (uint64_t k : model) g_live[k] = 0;
        for (uint64_t k : sorted) g_live[k] = 1;
      }
      check_tree(tree, ctx + " after failed build");
    }
    const uint64_t version = tree.version();
    tree.build(elems.data(), elems.size());
    expect(tree.version() == version + 1, ctx, ": version after build");
    for (uint64_t k : model) g_live[k] = 0;
    model.clear();
    model.insert(sorted.begin(), sorted.end());
    for (uint64_t k : sorted) g_live[k] = 1;
    ++g_stats.ops;
  }

  void clear() {
    const uint64_t version = tree.version();
    tree.clear();
    expect(tree.version() == version + 1 && tree.size() == 0 && tree.memory() == 0, ctx, ": clear");
    expect(!tree.valid(tree.begin()) && !tree.valid(tree.last()), ctx, ": begin/last of empty tree");
    for (uint64_t k : model) g_live[k] = 0;
    model.clear();
    ++g_stats.ops;
  }
};

// Random operation sequences; the tree grows and shrinks in waves so that it splits, merges,
// gains and loses levels many times.
void random_ops(uint64_t seed, uint64_t universe, size_t ops) {
  std::mt19937_64 rng(seed);
  Harness h("random(seed=" + std::to_string(seed) + ", universe=" + std::to_string(universe) + ")", universe);
  auto key = [&] { return rng() % universe; };
  for (size_t op = 0; op < ops; ++op) {
    const bool growing = (op / (ops / 6 + 1)) % 2 == 0;
    const unsigned r = rng() % 1000;
    if (r < (growing ? 450u : 250u)) {
      h.insert(key());
    } else if (r < 700) {
      h.erase(key());
    } else if (r < 740 && !h.model.empty()) {  // erase an element that is present
      auto it = h.model.lower_bound(key());
      h.erase(it == h.model.end() ? *h.model.begin() : *it);
    } else if (r < 800) {
      h.find(key());
    } else if (r < 900) {
      h.bounds(key(), rng() % 8);
    } else if (r < 940) {
      h.walk(key(), rng() % 100, rng() % 2);
    } else if (r < 980) {  // a run of ascending or descending inserts somewhere
      uint64_t k = key();
      const bool up = rng() % 2;
      for (int j = 0; j < 40 && k < universe; ++j, k = up ? k + 1 : k - 1) h.insert(k);
    } else if (r < 995) {
      h.insert_with_failures(key(), h.model.size() < 3000);
    } else if (r < 998) {
      const size_t before = h.model.size();
      compare_all(h.tree, h.model, h.ctx);
      expect(h.model.size() == before, h.ctx);
    } else if (r < 999) {
      std::vector<uint64_t> sorted;
      if (rng() % 2) {
        sorted.assign(h.model.begin(), h.model.end());
      } else {
        const uint64_t n = rng() % (universe / 2 + 1), step = universe / (n + 1);
        for (uint64_t j = 0; j < n; ++j) sorted.push_back(j * step + rng() % std::max<uint64_t>(step, 1));
        sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      }
      h.build(sorted);
    } else if (rng() % 4 == 0) {
      h.clear();
    }
    if (op % (h.model.size() / 256 + 1) == 0) {  // O(256) amortized per op; every op below 256
      std::string why;
      ++g_stats.checks;
      if (!h.tree.check(&why)) fail(h.ctx + " op " + std::to_string(op) + ": check(): " + why);
    }
  }
  compare_all(h.tree, h.model, h.ctx + " final");
  check_tree(h.tree, h.ctx + " final");
}

// Erases in walk order (the expiry chunk's pattern): every k-th element ascending, so each erase
// lies a few elements after the last erase's successor, where erase() and near_successor() take
// their shortcut; with inserts now and then (which must turn the shortcut off). check() after
// every operation; the Harness checks results, versions and erase_successor().
void walk_order_erases(std::mt19937_64& rng) {
  for (uint64_t k : {1u, 2u, 7u, 10u, 16u, 17u, 40u}) {
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
      const uint64_t n = 1500;
      Harness h("walk order k=" + std::to_string(k) + (shuffled ? " shuffled" : ""), 2 * n);
      std::vector<uint64_t> keys;
      for (uint64_t j = 0; j < n; ++j) keys.push_back(2 * j);
      if (shuffled) std::shuffle(keys.begin(), keys.end(), rng);
      for (uint64_t key : keys) h.insert(key);
      size_t near = 0, erases = 0;
      for (uint64_t j = 0; 2 * j < 2 * n; j += k) {
        const uint64_t key = 2 * j;
        if (!h.model.count(key)) continue;
        const auto it = h.tree.near_successor([key](const E& e) { return e.key == key; });
        if (h.tree.valid(it)) {
          ++near;
          g_probe = key;
          expect(it == h.tree.lower_bound_elem(E{key, key}), h.ctx, ": near_successor(", key, ") is not its place");
          g_probe = kNone;
        }
        h.erase(key);
        ++erases;
        if (rng() % 50 == 0) {
          const uint64_t odd = 2 * (rng() % n) + 1;  // an insert: the next lookup must not use a stale successor
          if (h.insert(odd))
            expect(!h.tree.valid(h.tree.near_successor([](const E&) { return true; })), h.ctx,
                   ": near_successor after an insert");
        }
        std::string why;
        ++g_stats.checks;
        if (!h.tree.check(&why)) fail(h.ctx + ": check(): " + why);
      }
      compare_all(h.tree, h.model, h.ctx);
      // With small strides most erases find their element near the successor (the rest lie in
      // the next leaf).
      if (k <= 10) expect(near * 2 >= erases, h.ctx, ": only ", near, " of ", erases, " near");
    }
  }
}

// A leaf that drops below its minimum merges with a sibling whenever the two fit in one leaf,
// exactly full included: leaves shaped {L - min + 1, min} (left sibling) or {min, L - min + 1}
// (right sibling), L the leaf capacity, then one erase from the min-sized leaf at its first, a
// middle and its last position. The merge leaves one leaf fewer (memory() one node less; a root
// left with one child collapses), the order and erase_successor() intact. A third, full leaf on
// the other side of the shrinking one leaves only the exact left merge possible.
void merge_exact_fill() {
  const uint64_t L = kLeafSlots, min = L / 3;
  size_t leaf_bytes;
  {
    Tree one{ECmp{}};
    g_probe = 0;
    one.insert(E{0, 0});
    g_probe = kNone;
    leaf_bytes = one.memory();
  }
  struct Shape {
    const char* name;
    uint64_t leaves;      // full leaves built
    uint64_t shrinking;   // the leaf that drops to min, then below
    uint64_t filler;      // the sibling cut to L - min + 1
  };
  const Shape shapes[] = {
      {"left sibling, no right", 2, 1, 0},
      {"left sibling, full right", 3, 1, 0},
      {"right sibling, no left", 2, 0, 1},
  };
  for (const Shape& s : shapes) {
    for (uint64_t pos : {uint64_t{0}, min / 2, min - 1}) {
      Harness h(std::string("merge exact fill: ") + s.name + ", erase at " + std::to_string(pos), s.leaves * L + 1);
      std::vector<uint64_t> keys(s.leaves * L);
      std::iota(keys.begin(), keys.end(), 0);
      h.build(keys);
      expect(compare_all(h.tree, h.model, h.ctx) == s.leaves, h.ctx, ": build did not make full leaves");
      for (uint64_t j = 0; j < min - 1; ++j) h.erase(s.filler * L + j);
      for (uint64_t j = 0; j < L - min; ++j) h.erase(s.shrinking * L + j);
      check_tree(h.tree, h.ctx + " shaped");
      expect(compare_all(h.tree, h.model, h.ctx) == s.leaves, h.ctx, ": shaping merged leaves");
      const size_t before = h.tree.memory();
      h.erase(s.shrinking * L + (L - min) + pos);  // the Harness checks erase_successor()
      check_tree(h.tree, h.ctx + " merged");
      expect(compare_all(h.tree, h.model, h.ctx) == s.leaves - 1, h.ctx, ": the exactly-fitting leaves were not merged");
      // One leaf freed; a root left with one leaf collapses into it (the tree is then one leaf).
      const size_t want = s.leaves == 2 ? leaf_bytes : before - leaf_bytes;
      expect(h.tree.memory() == want, h.ctx, ": memory ", h.tree.memory(), " after the merge, want ", want);
      for (uint64_t k = 0; k < s.leaves * L; ++k) h.find(k);
    }
  }
}

// Sizes around L (leaf slots, 31), 21*L and 21*21*L (inner) after sequential inserts leave edge
// nodes with a single element or child; erasing around them exercises the cascades at the edges.
void edge_shapes(std::mt19937_64& rng) {
  constexpr uint64_t L = kLeafSlots, I = 21 * L, II = 21 * I;
  const uint64_t sizes[] = {1, 2, L - 1, L, L + 1, L + L / 2, I, I + 1, I + L / 2, I + L, I + L + 1,
                            II, II + 1, II + L / 2, II + L + 1};
  for (uint64_t n : sizes) {
    for (int scenario = 0; scenario < 4; ++scenario) {
      Harness h("edge shapes n=" + std::to_string(n) + " scenario " + std::to_string(scenario), n + 1);
      const bool descending = scenario == 1;
      for (uint64_t j = 0; j < n; ++j) h.insert(descending ? n - 1 - j : j);
      check_tree(h.tree, h.ctx + " filled");
      std::vector<uint64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      if (scenario == 0) std::reverse(order.begin(), order.end());
      if (scenario == 2) std::shuffle(order.begin(), order.end(), rng);
      if (scenario == 3) {  // alternate between the two ends
        for (uint64_t j = 0; j < n; ++j) order[j] = j % 2 ? j / 2 : n - 1 - j / 2;
      }
      for (uint64_t j = 0; j < n; ++j) {
        h.erase(order[j]);
        if (n - j < 800 || j % 64 == 0) check_tree(h.tree, h.ctx + " erasing");
        if (j == n / 2 && j >= 50) {  // put some back, then go on erasing
          for (int q = 0; q < 50; ++q) h.insert(order[j - q]);
          for (int q = 0; q < 50; ++q) h.erase(order[j - q]);
        }
      }
      expect(h.tree.memory() == 0, h.ctx, ": memory left");
    }
  }
}

// ---- large ordered workloads ------------------------------------------------------------

enum class Order { kRandom, kAscending, kDescending, kDaemon };
const char* name(Order o) {
  switch (o) {
    case Order::kRandom: return "random";
    case Order::kAscending: return "ascending";
    case Order::kDescending: return "descending";
    case Order::kDaemon: return "left-end walk";
  }
  return "?";
}

struct Large {
  size_t n;
  std::vector<uint64_t> sorted;  // the keys, ascending
  std::vector<uint64_t> shuffled;

  explicit Large(size_t count, std::mt19937_64& rng) : n(count) {
    for (size_t i = 0; i < n; ++i) sorted.push_back(4 * i + rng() % 4);
    shuffled = sorted;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
  }

  std::vector<uint64_t> in_order(Order o) const {
    if (o == Order::kRandom) return shuffled;
    if (o == Order::kDescending) return std::vector<uint64_t>(sorted.rbegin(), sorted.rend());
    return sorted;
  }

  // Fills t by inserting in the given order; returns {leaf fill, bytes per element}.
  std::pair<double, double> fill(Tree& t, Order o) {
    g_live.assign(4 * n + 4, 0);
    const std::vector<uint64_t> keys = in_order(o);
    for (uint64_t k : keys) {
      g_probe = k;
      if (!t.insert(E{k, k})) fail(std::string("insert failed during ") + name(o) + " fill");
      g_live[k] = 1;
    }
    g_probe = kNone;
    g_stats.ops += keys.size();
    check_tree(t, std::string("after ") + name(o) + " inserts");
    size_t leaves = 0;
    const void* leaf = nullptr;
    size_t i = 0;
    for (auto it = t.begin(); t.valid(it); t.next(it), ++i) {
      if (i >= n || t.get(it).key != sorted[i]) fail(std::string("content after ") + name(o) + " inserts");
      if (it.leaf != leaf) ++leaves, leaf = it.leaf;
    }
    expect(i == n, "element count after inserts");
    for (size_t j = 0; j < n; j += 97) {  // duplicates are rejected and leave the tree alone
      const uint64_t v = t.version(), k = sorted[j];
      g_probe = k;
      expect(!t.insert(E{k, k}) && t.version() == v, "duplicate insert accepted");
    }
    g_probe = kNone;
    return {static_cast<double>(n) / static_cast<double>(leaves * kLeafSlots),
            static_cast<double>(t.memory()) / static_cast<double>(n)};
  }

  void erase_all(Tree& t, Order o, std::mt19937_64& rng) {
    const std::string ctx = std::string(name(o)) + " erase";
    std::vector<uint64_t> keys = in_order(o);
    if (o == Order::kRandom) std::shuffle(keys.begin(), keys.end(), rng);
    std::vector<uint64_t> succ(keys.size());  // erase_successor's key after each erase, kNone for end
    const size_t chunk = keys.size() / 8 + 1;
    auto it = t.begin();
    for (size_t from = 0; from < keys.size(); from += chunk) {
      const size_t to = std::min(keys.size(), from + chunk);
      for (size_t j = from; j < to; ++j) {
        uint64_t k = keys[j];
        if (o == Order::kDaemon) {
          if (!t.valid(it)) fail(ctx + ": walk ended early");
          k = t.get(it).key;
        }
        g_probe = k;
        if (!t.erase(E{k, k})) fail(ctx + ": erase of a present key failed");
        g_probe = kNone;
        g_live[k] = 0;
        it = t.erase_successor();
        succ[j] = t.valid(it) ? t.get(it).key : kNone;
      }
      g_stats.ops += to - from;
      check_tree(t, ctx + " chunk");
      expect(t.size() == keys.size() - to, ctx, ": size");
      for (size_t j = 0; j < keys.size(); j += 17) {  // lookups on the half-erased tree
        const uint64_t k = keys[j];
        g_probe = k;
        if ((t.find(E{k, k}) != nullptr) != (j >= to)) fail(ctx + ": find on a partially erased tree");
      }
      g_probe = kNone;
    }
    expect(t.size() == 0 && t.memory() == 0 && !t.valid(t.begin()), ctx, ": tree not empty at the end");
    std::set<uint64_t> model;  // replay to verify erase_successor
    if (o == Order::kRandom) model.insert(sorted.begin(), sorted.end());
    for (size_t j = 0; j < keys.size(); ++j) {
      uint64_t want = kNone;
      if (o == Order::kRandom) {
        model.erase(keys[j]);
        auto next = model.upper_bound(keys[j]);
        if (next != model.end()) want = *next;
      } else if (o != Order::kDescending && j + 1 < keys.size()) {
        want = sorted[j + 1];
      }
      if (o == Order::kDaemon) expect(keys[j] == sorted[j], ctx, ": walk order");
      expect(succ[j] == want, ctx, ": erase_successor at step ", j);
    }
  }
};

// TTL pattern: keys arrive ascending at the right end while a daemon erases from the left end,
// walking with erase_successor and re-seeking only when an insert moved things.
void ttl_pattern(size_t steps, std::mt19937_64& rng, double* bytes_per_elem) {
  Harness h("ttl", steps + 1);
  std::deque<uint64_t> live;
  uint64_t next = 0;
  Tree::Iterator it{};
  uint64_t it_version = ~uint64_t{0};
  for (size_t s = 0; s < steps; ++s) {
    const bool grow = (s / 20000) % 3 != 2;
    if (rng() % 100 < (grow ? 60u : 35u) || live.empty()) {
      h.insert(next);
      live.push_back(next++);
      continue;
    }
    if (h.tree.version() != it_version) it = h.tree.begin();
    const uint64_t k = h.tree.get(it).key;
    expect(k == live.front(), "ttl: daemon is not at the smallest key");
    h.erase(k);
    live.pop_front();
    it = h.tree.erase_successor();
    it_version = h.tree.version();
    if (s % 4096 == 0) check_tree(h.tree, "ttl");
  }
  compare_all(h.tree, h.model, "ttl final");
  check_tree(h.tree, "ttl final");
  *bytes_per_elem = static_cast<double>(h.tree.memory()) / static_cast<double>(h.tree.size());
}

// A TTL index of many distinct expiry times: each insert goes to the end of its time's run (ties
// ordered by an ascending primary key), so the tree has one append point per run, inside the
// tree, where edge splits do not apply. Splits there must keep the leaves packed: the leaves the
// append points have passed never get another insert. Returns the leaf fill. descending: each
// run grows downwards instead (the new entry goes before the last one). mixed: one insert in
// eight is random, and one in eight erases a random entry.
double grouped_appends(size_t n, uint64_t groups, std::mt19937_64& rng, bool descending = false, bool mixed = false,
                       size_t check_every = 16384) {
  const uint64_t per = n / groups + 1;
  Harness h(std::string("grouped appends") + (descending ? ", descending" : "") + (mixed ? ", mixed" : ""),
            groups * per);
  std::vector<uint64_t> next(groups, 0);
  for (size_t j = 0; j < n; ++j) {
    uint64_t g = rng() % groups;
    while (next[g] == per) g = (g + 1) % groups;
    const uint64_t k = g * per + (descending ? per - 1 - next[g] : next[g]);
    next[g]++;
    if (mixed && rng() % 8 == 0) h.erase(rng() % (groups * per));
    h.insert(mixed && rng() % 8 == 0 ? rng() % (groups * per) : k);
    if (j % check_every == 0) check_tree(h.tree, h.ctx);
  }
  compare_all(h.tree, h.model, h.ctx);
  check_tree(h.tree, h.ctx);
  size_t leaves = 0;
  const void* leaf = nullptr;
  for (auto it = h.tree.begin(); h.tree.valid(it); h.tree.next(it))
    if (it.leaf != leaf) ++leaves, leaf = it.leaf;
  return static_cast<double>(n) / static_cast<double>(leaves * kLeafSlots);
}

// ---- heap tuples: stale comparisons are use-after-free for ASan ----------------------------

struct Tuple {
  uint64_t key;
};
struct TE {
  Tuple* tuple;
  uint64_t hint;
};
struct TCmp {
  int compare(const TE& a, const TE& b) const {
    const uint64_t x = a.tuple->key, y = b.tuple->key;  // always dereferences both
    if (x != a.hint || y != b.hint) fail("tuple hint mismatch");
    return x < y ? -1 : x > y ? 1 : 0;
  }
};

void tuple_ops(size_t ops, std::mt19937_64& rng) {
  ce::BTree<TE, TCmp> tree{TCmp{}};
  std::set<uint64_t> model;
  const uint64_t universe = 30000;
  std::string why;
  auto erase_stored = [&](uint64_t k) {
    Tuple probe{k};
    const TE* stored = tree.find(TE{&probe, k});
    if (!stored) return;
    Tuple* t = stored->tuple;
    expect(tree.erase(TE{&probe, k}), "tuples: erase");
    delete t;  // any later comparison with a copy of it is a heap-use-after-free
    model.erase(k);
    auto succ = tree.erase_successor();
    auto want = model.upper_bound(k);
    expect(tree.valid(succ) == (want != model.end()) && (!tree.valid(succ) || tree.get(succ).tuple->key == *want), "tuples: erase_successor");
  };
  for (size_t op = 0; op < ops; ++op) {
    const bool growing = (op / (ops / 8 + 1)) % 2 == 0;
    const uint64_t k = rng() % universe;
    const unsigned r = rng() % 100;
    if (r < (growing ? 55u : 35u)) {
      Tuple* t = new Tuple{k};
      if (tree.insert(TE{t, k})) model.insert(k);
      else delete t;
    } else if (r < 95) {
      erase_stored(k);
    } else if (r < 98) {
      Tuple probe{k};
      auto it = tree.lower_bound_elem(TE{&probe, k});
      auto want = model.lower_bound(k);
      expect(tree.valid(it) == (want != model.end()) && (!tree.valid(it) || tree.get(it).tuple->key == *want), "tuples: lower_bound_elem");
    } else {  // the expiration daemon: drain a few from the left end
      auto it = tree.begin();
      for (int j = 0; j < 50 && tree.valid(it); ++j) {
        Tuple* t = tree.get(it).tuple;
        const uint64_t key = t->key;
        expect(!model.empty() && key == *model.begin(), "tuples: left end");
        expect(tree.erase(TE{t, key}), "tuples: daemon erase");
        delete t;
        model.erase(key);
        it = tree.erase_successor();
      }
    }
    ++g_stats.ops;
    if (op % 500 == 0 && !tree.check(&why)) fail("tuples: check(): " + why);
  }
  expect(tree.size() == model.size(), "tuples: size");
  std::vector<Tuple*> all;
  for (auto it = tree.begin(); tree.valid(it); tree.next(it)) all.push_back(tree.get(it).tuple);
  tree.clear();
  for (Tuple* t : all) delete t;
}

// ---- timing with a cheap comparator ------------------------------------------------------

struct PlainCmp {
  int compare(const E& a, const E& b) const { return a.key < b.key ? -1 : a.key > b.key ? 1 : 0; }
};

// ns per operation: inserts (random, ascending, descending), erases (random, ascending,
// descending, left-end walk), finds (random).
void bench(const Large& large, double insert_ns[3], double erase_ns[4], double* find_ns) {
  const double n = static_cast<double>(large.n);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> other = large.shuffled;
  std::shuffle(other.begin(), other.end(), rng);
  for (int io = 0; io < 3; ++io) {
    for (int eo = 0; eo < 4; ++eo) {
      if (io > 0 && eo != io) continue;
      ce::BTree<E, PlainCmp> t{PlainCmp{}};
      const std::vector<uint64_t> keys = large.in_order(static_cast<Order>(io));
      double start = now_ns();
      for (uint64_t k : keys) t.insert(E{k, k});
      insert_ns[io] = (now_ns() - start) / n;
      if (eo == 0) {
        size_t found = 0;
        start = now_ns();
        for (uint64_t k : other) found += t.find(E{k, k}) != nullptr;
        *find_ns = (now_ns() - start) / n;
        expect(found == large.n, "bench: find");
      }
      const std::vector<uint64_t> order = eo == 0 ? other : large.in_order(static_cast<Order>(eo));
      start = now_ns();
      if (eo == 3) {
        for (auto it = t.begin(); t.valid(it); it = t.erase_successor()) t.erase(t.get(it));
      } else {
        for (uint64_t k : order) t.erase(E{k, k});
      }
      erase_ns[eo] = (now_ns() - start) / n;
      expect(t.size() == 0 && t.memory() == 0, "bench: erase all");
      g_stats.ops += 2 * large.n;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  if (n < 1000) fail("large_n must be >= 1000");
  std::mt19937_64 rng(20240611);
  const double t0 = now_ns();
  std::string phases;
  double phase_start = t0;
  auto phase = [&](const char* what) {
    const double t = now_ns();
    phases += std::string(phases.empty() ? "" : ", ") + what + " " + std::to_string(static_cast<int>((t - phase_start) / 1e6)) + " ms";
    phase_start = t;
  };

  Large large(n, rng);
  double insert_ns[3] = {}, erase_ns[4] = {}, find_ns = 0;
  bench(large, insert_ns, erase_ns, &find_ns);  // first, on a fresh heap
  phase("bench");

  // Small trees, check() after (almost) every operation.
  random_ops(1, 64, 20000);
  random_ops(2, 600, 60000);
  random_ops(3, 5000, 120000);
  random_ops(4, 60000, 150000);
  edge_shapes(rng);
  walk_order_erases(rng);
  merge_exact_fill();
  phase("random small");
  {  // edge cases of an empty and a one-element tree
    Harness h("tiny", 16);
    expect(!h.tree.valid(h.tree.begin()) && !h.tree.valid(h.tree.last()), "empty begin/last");
    h.erase(3);
    h.find(3);
    h.bounds(3, 0);
    h.insert(3);
    h.bounds(2, 0);
    h.bounds(4, 0);
    h.erase(3);
    expect(h.tree.memory() == 0, "tiny: memory after erasing the only element");
    h.build({});
    h.build({1, 2, 5});
    compare_all(h.tree, h.model, "tiny");
    check_tree(h.tree, "tiny");
  }

  // Large trees: every insert order combined with every erase order.
  const Order inserts[] = {Order::kRandom, Order::kAscending, Order::kDescending};
  const Order erases[] = {Order::kRandom, Order::kAscending, Order::kDescending, Order::kDaemon};
  double leaf_fill[3] = {}, bytes[3] = {};
  for (Order io : inserts) {
    for (Order eo : erases) {
      Tree t{ECmp{}};
      auto [fill, per_elem] = large.fill(t, io);
      leaf_fill[static_cast<int>(io)] = fill;
      bytes[static_cast<int>(io)] = per_elem;
      large.erase_all(t, eo, rng);
    }
  }
  phase("large orders");
  double build_bytes = 0;
  {  // build() packs, then random inserts and erases keep working
    Harness h("after build", 4 * n + 4);
    h.build(large.sorted);
    check_tree(h.tree, h.ctx);
    const double per_elem = static_cast<double>(h.tree.memory()) / static_cast<double>(n);
    for (size_t j = 0; j < n / 4; ++j) {
      h.insert(rng() % (4 * n));
      h.erase(large.shuffled[j]);
      if (j % 8192 == 0) check_tree(h.tree, h.ctx);
    }
    compare_all(h.tree, h.model, h.ctx);
    check_tree(h.tree, h.ctx);
    build_bytes = per_elem;
    // A packed tree of 16-byte entries: 31 to a 512-byte leaf (16 B each) plus the inner nodes.
    expect(per_elem < 16.0 * 512 / 496 + 1, "after build: ", per_elem, " B/elem; a leaf holds fewer than 31");
  }
  phase("build");
  double ttl_bytes = 0;
  ttl_pattern(std::max<size_t>(n, 200000), rng, &ttl_bytes);
  const double grouped_fill = grouped_appends(std::max<size_t>(n, 200000), 200, rng);
  // Every shape the append-aware splits make is checked: small trees, check() after every third insert.
  for (uint64_t groups : {1, 2, 7, 40}) {
    for (int variant = 0; variant < 4; ++variant) grouped_appends(3000, groups, rng, variant & 1, variant & 2, 3);
  }
  expect(grouped_appends(60000, 50, rng, true) >= 0.97, "grouped appends, descending: leaves not packed");
  expect(grouped_fill >= 0.97, "grouped appends: leaf fill ", grouped_fill, " (random inserts give ~0.86)");
  phase("ttl");
  tuple_ops(std::max<size_t>(n / 2, 100000), rng);
  phase("tuples");


  std::printf("n=%zu    leaf fill  bytes/elem  insert ns  erase ns\n", n);
  for (Order o : erases) {
    const int i = static_cast<int>(o);
    if (o == Order::kDaemon) {
      std::printf("%-13s  %9s  %10s  %9s  %8.0f\n", name(o), "", "", "", erase_ns[i]);
    } else {
      std::printf("%-13s  %8.1f%%  %10.2f  %9.0f  %8.0f\n", name(o), 100 * leaf_fill[i], bytes[i], insert_ns[i],
                  erase_ns[i]);
    }
  }
  std::printf("find %.0f ns; after build() %.2f B/elem; ttl pattern %.2f B/elem; grouped appends %.1f%% leaf fill\n",
              find_ns, build_bytes, ttl_bytes, 100 * grouped_fill);
  std::printf("phases: %s\n", phases.c_str());
  std::printf("OK: %llu ops, %llu check() calls, %llu injected bad_alloc, n=%zu, %.1f s\n",
              static_cast<unsigned long long>(g_stats.ops), static_cast<unsigned long long>(g_stats.checks),
              static_cast<unsigned long long>(g_stats.injected), n, (now_ns() - t0) / 1e9);
  return 0;
}
