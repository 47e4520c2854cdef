// Raw MessagePack reaching the native reader: truncated values, oversized lengths, deep nesting,
// every type tag first with random tails, and valid tuples and keys in every encoding, through
// the addon's insert, insertMany, get, select and delete. Each case must match the reference
// model or fail with a CappedError code, and leave the space equal to the model.
// FUZZ_RUNS sets the cases per property (default 10000); FUZZ_SEED and FUZZ_PATH replay a failure.
import fc from 'fast-check';
import { describe, test } from 'vitest';
import { PROPERTIES, fcParams, runsFor, type TimerDriver } from './fuzz/properties.js';

const noTimers = (): TimerDriver => {
  throw new Error('these properties use no timers');
};

describe('raw MessagePack input', () => {
  for (const p of PROPERTIES.filter((x) => x.file === 'msgpack')) {
    test(p.name, () => {
      fc.assert(p.build(noTimers), fcParams(runsFor(p)));
    });
  }
});
