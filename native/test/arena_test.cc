// TupleArena (alloc/tuple_arena.h) against a model: random allocations and frees over every size
// class and large tuples; every live tuple keeps its bytes (none overlaps another), and the
// slabs a class empties serve the other classes, so memory() follows the live peak, not the
// sum of every class's peak.
#include <algorithm>
#include <cstring>
#include <vector>

#include "alloc/tuple_arena.h"
#include "test_util.h"

using ce::Tuple;
using ce::TupleArena;
using test::expect;

namespace {

struct Live {
  Tuple* t;
  uint8_t fill;
};

void write(Tuple* t, uint8_t fill) { std::memset(t->data(), fill, t->size); }

void check(const Live& l) {
  for (uint32_t i = 0; i < l.t->size; i++) expect(l.t->data()[i] == l.fill, "a live tuple's bytes changed");
}

// Random churn against the model; every tuple is checked when it is freed and at the end.
void churn(uint64_t seed) {
  test::Rng rng{uint32_t(seed)};
  TupleArena arena;
  std::vector<Live> live;
  for (int step = 0; step < 200000; step++) {
    if (live.empty() || rng.below(100) < 52) {
      const uint32_t size = rng.below(10) == 0 ? 1000 + uint32_t(rng.below(2000)) : uint32_t(rng.below(1020));
      Tuple* t = arena.alloc(size);
      const uint8_t fill = uint8_t(rng.below(256));
      write(t, fill);
      live.push_back({t, fill});
    } else {
      const size_t i = rng.below(uint32_t(live.size()));
      check(live[i]);
      arena.free(live[i].t);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (const Live& l : live) check(l);
  for (const Live& l : live) arena.free(l.t);
}

// Rounds that fill about 1 MB of one size and free it all, each round 8 bytes larger: the
// arena's memory stays near one round's, where per-class free lists kept every round.
void drifting_sizes() {
  if (TupleArena::kAlwaysMalloc) return;  // the sanitizer build: every tuple its own malloc block
  TupleArena arena;
  size_t after_10 = 0;
  for (int round = 0; round < 100; round++) {
    const uint32_t size = 40 + 8 * uint32_t(round % 120);
    std::vector<Tuple*> ts;
    for (size_t bytes = 0; bytes < (1 << 20); bytes += TupleArena::footprint(size)) {
      Tuple* t = arena.alloc(size);
      write(t, uint8_t(round));
      ts.push_back(t);
    }
    for (Tuple* t : ts) arena.free(t);
    if (round == 9) after_10 = arena.memory();
  }
  // One class keeps one slab with room; the rest is in the pool for any class.
  expect(arena.memory() <= after_10 + 2 * TupleArena::kChunkSize, "memory grew with the size classes used: ",
         arena.memory(), " after 100 rounds, ", after_10, " after 10");
  expect(arena.memory() <= 8 * (1 << 20), "memory after 100 rounds of 1 MB: ", arena.memory());
}

// A slab whose last tuple is freed is reused by another class before any new slab is carved.
void empty_slab_reused() {
  if (TupleArena::kAlwaysMalloc) return;
  TupleArena arena;
  std::vector<Tuple*> small, other;
  for (int i = 0; i < 5000; i++) small.push_back(arena.alloc(32));
  Tuple* keep = arena.alloc(32);  // its class keeps one slab with room
  for (Tuple* t : small) arena.free(t);
  const size_t before = arena.memory();
  for (int i = 0; i < 1500; i++) other.push_back(arena.alloc(100));  // 3 slabs: the 3 emptied ones
  expect(arena.memory() == before, "a class carved new slabs while empty ones were pooled: ", arena.memory(), " > ", before);
  for (Tuple* t : other) arena.free(t);
  arena.free(keep);
  // Alternating alloc and free of one tuple keeps reusing the same slot.
  Tuple* a = arena.alloc(50);
  arena.free(a);
  Tuple* b = arena.alloc(50);
  expect(a == b, "the freed tuple was not reused");
  arena.free(b);
}

}  // namespace

int main() {
  for (uint64_t seed = 1; seed <= 4; seed++) {
    test::g_seed = seed;
    churn(seed);
  }
  drifting_sizes();
  empty_slab_reused();
  std::puts("arena_test: ok");
  return 0;
}
