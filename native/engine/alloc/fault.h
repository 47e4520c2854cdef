// Allocation-failure injection: makes the Nth allocation the engine makes from now on throw
// std::bad_alloc, so that tests can fail every allocation of an operation in turn.
//
// Every allocation the engine makes passes one point() first: tuple arena slabs, chunks and
// large tuples (tuple_arena.h), node pool chunks and, in the CE_TUPLE_MALLOC build, every node
// (node_pool.h), hash table arrays and every other big_calloc (big_alloc.h), the undo log's
// growth and the other std containers of a statement (space.cc, index builds). An allocation
// that a point does not precede is a bug in this list, not a gap in the tests' reach.
//
// Disarmed (the normal state), point() costs one load of a thread-local and one branch that is
// predicted not taken. It is compiled into every build: the vitest tests arm it in the normal
// addon through the binding's test hook (native/napi/testing.cc). The state is per thread, so a
// test in one worker thread does not fail allocations in another.
#pragma once

#include <cstdint>
#include <new>

namespace ce {
namespace fault {

struct State {
  int64_t countdown = -1;  // >= 0: allocations that still succeed before one fails
  uint64_t passed = 0;     // points passed since arm(), while armed
  bool fired = false;      // the armed failure happened
};

inline thread_local State state;

// The (n + 1)th allocation point from now throws std::bad_alloc (n = 0: the next one); then the
// injection disarms itself. n < 0 disarms.
inline void arm(int64_t n) {
  state.countdown = n < 0 ? -1 : n;
  state.passed = 0;
  state.fired = false;
}

// Disarms; returns whether the armed failure happened.
inline bool disarm() {
  state.countdown = -1;
  return state.fired;
}

inline uint64_t passed() { return state.passed; }

[[gnu::cold, gnu::noinline]] inline void count_down() {
  state.passed++;
  if (state.countdown-- == 0) {
    state.countdown = -1;
    state.fired = true;
    throw std::bad_alloc();
  }
}

// Call right before an allocation. Throws std::bad_alloc when the injection says so.
inline void point() {
  if (__builtin_expect(state.countdown >= 0, 0)) count_down();
}

}  // namespace fault
}  // namespace ce
