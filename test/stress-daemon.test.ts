// The daemon under load: random inserts, replaces, deletes, transactions that commit and that
// throw, truncates and clock advances, with one or two tasks running (HASH or TREE primary, with
// and without a TTL TREE index walked with early break). Fake timers and an injected clock make
// the chunks interleave with the operations deterministically. After every step the space equals
// the model (which drops a tuple only when an 'expired' event reports it, and only if it was
// expired), no tuple stays expired past the pacing bound, and the tasks' stats add up.
// Seeded: a failure prints its seed and path; FUZZ_SEED and FUZZ_PATH replay it.
import fc from 'fast-check';
import { describe, test, vi } from 'vitest';
import { PROPERTIES, fcParams, runsFor, type TimerDriver } from './fuzz/properties.js';
import { useTaskTimers } from './support/task-timers.js';

const timers = (): TimerDriver => ({
  now: () => (vi.getMockedSystemTime() as Date).getTime(),
  advance: (ms) => vi.advanceTimersByTime(ms),
  runPending: () => vi.runOnlyPendingTimers(),
});

useTaskTimers({ now: 1_700_000_000_000 });

describe('expirationd under load', () => {
  for (const p of PROPERTIES.filter((x) => x.file === 'stress')) {
    test(p.name, () => {
      fc.assert(p.build(timers), fcParams(runsFor(p)));
    });
  }
});
