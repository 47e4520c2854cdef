// HASH tables in the middle of a migration (issue 14: mutants of hash_table.h and hash_index.cc
// the growth tests did not see). Deterministic: the keys are fixed sequences, no randomness.
// - Right after a table starts growing, every stored key is found (checkIntegrity() looks each
//   tuple up in every index), including keys whose probe chain wrapped around the old table's
//   end.
import { describe, expect, test } from 'vitest';
import { Space, type Tuple } from '../src/index.js';

// Multiplicative keys spread over the table, so that clusters wrap around its end.
const patterns: Array<[string, (i: number) => number]> = [
  ['multiplicative', (i) => Math.imul(i, 2654435761) >>> 0],
  ['multiplicative, another constant', (i) => Math.imul(i + 17, 2246822519) >>> 0],
];

function hashSpace(name: string): Space {
  const space = new Space(name);
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  return space;
}

describe('lookups during a migration', () => {
  test.each(patterns)('%s keys: every key is found after every insert while the table grows', (_name, keyOf) => {
    const space = hashSpace('wrap');
    const batch: Tuple[] = [];
    for (let i = 0; i < 1500; i++) batch.push([keyOf(i), i]);
    space.insertMany(batch);
    for (let i = 1500; i < 4500; i++) {
      space.insert([keyOf(i), i]);
      space.checkIntegrity();
    }
    expect(space.len()).toBe(4500);
  });
});
