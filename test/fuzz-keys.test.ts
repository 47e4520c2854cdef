// Keys, index definitions, tuples, iterator names, limits and offsets through the public API:
// random parts, types, fields, TREE/HASH/unique combinations, keys of every kind (and things that
// are not keys), against the reference model. Each case must match the model or fail with a
// CappedError code and change nothing; after each operation the space equals the model.
// FUZZ_RUNS sets the cases per property (default 10000); FUZZ_SEED and FUZZ_PATH replay a failure.
import fc from 'fast-check';
import { describe, test } from 'vitest';
import { PROPERTIES, fcParams, runsFor, type TimerDriver } from './fuzz/properties.js';

const noTimers = (): TimerDriver => {
  throw new Error('these properties use no timers');
};

describe('keys and index definitions', () => {
  for (const p of PROPERTIES.filter((x) => x.file === 'keys')) {
    test(p.name, () => {
      fc.assert(p.build(noTimers), fcParams(runsFor(p)));
    });
  }
});
