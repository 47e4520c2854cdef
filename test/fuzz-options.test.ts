// Task options: random option objects (wrong types, misspelled names, the positional form),
// against the model of expirationd.start's checks. A refused start throws a CappedError with a
// code and leaves the running tasks as they were; an accepted one runs under fake timers and
// deletes only tuples that are expired by its own rule.
// FUZZ_RUNS sets the cases (default 10000); FUZZ_SEED and FUZZ_PATH replay a failure.
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

describe('task options', () => {
  for (const p of PROPERTIES.filter((x) => x.file === 'options')) {
    test(p.name, () => {
      fc.assert(p.build(timers), fcParams(runsFor(p)));
    });
  }
});
