// The tuple arena's boundary between size classes and malloc'd tuples (1024-byte blocks): a
// tuple on either side, inserted and deleted again and again, reuses its memory, so memory()
// stays exactly where the first round left it. An alloc/free disagreement about which side a
// 1024-byte block is on (found by mutation testing, issue 14: scripts/mutants/native.json,
// ta-large-alloc) counted each round's block again and never gave it back.
import { expect, test } from 'vitest';
import { Space } from '../src/index.js';

test('insert/delete rounds of tuples of 980 to 1030 characters (both sides of a 1024-byte block) keep memory() constant after the first', () => {
  for (let length = 980; length <= 1030; length++) {
    const space = new Space(`arena-${length}`);
    space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
    space.insert([0, 'keep']);  // the index keeps a node, so only the tuple's own memory moves
    const tuple = [1, 'x'.repeat(length)];
    space.insert(tuple);
    space.delete(1);
    const after = space.memory().tuples;
    for (let round = 0; round < 50; round++) {
      space.insert(tuple);
      space.delete(1);
    }
    expect({ length, tuples: space.memory().tuples }).toEqual({ length, tuples: after });
    space.drop();
  }
});
