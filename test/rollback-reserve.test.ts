// A rolled-back transaction gives back what it reserved for its own undo: after many rolled-back
// replaces, a transaction reserves no more index memory than the first one did. A rollback that
// forgot to count its re-inserts down (found by mutation testing, issue 14:
// scripts/mutants/native.json, sp-rollback-reinserts) made every later transaction reserve
// nodes for all the re-inserts of every earlier one.
import { expect, test } from 'vitest';
import { Space } from '../src/index.js';

test('index memory inside a transaction is the same after 500 rolled-back replaces as after one', () => {
  for (const type of ['TREE', 'HASH'] as const) {
    const space = new Space(`reserve-${type}`);
    space.createIndex('primary', { type, parts: [{ field: 1, type: 'unsigned' }] });
    space.createIndex('second', { type: 'TREE', unique: false, parts: [{ field: 2, type: 'unsigned' }] });
    for (let id = 0; id < 200; id++) space.insert([id, id % 10]);
    const rolledBack = (): void => {
      expect(() => space.transaction(() => {
        space.replace([7, 99]);
        throw new Error('undo');
      })).toThrow('undo');
    };
    const inside = (): number => {
      let bytes = 0;
      space.transaction(() => {
        space.replace([8, 98]);
        bytes = space.memory().indexes;
        space.replace([8, 8]);
      });
      return bytes;
    };
    rolledBack();
    const first = inside();
    for (let i = 0; i < 500; i++) rolledBack();
    expect({ type, indexes: inside() }).toEqual({ type, indexes: first });
    expect(space.get(7)).toEqual([7, 7]);
  }
});
