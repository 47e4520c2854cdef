// Engine edges found by mutation testing (issue 14), through the public API:
// - a replace whose new key has the same B+tree hint as the old one but is a different key
//   (strings sharing a long prefix, numbers a hint cannot tell apart) moves the tuple to its new
//   place in the order;
// - a savepoint rolled back inside a transaction gives back its reservation: the statements after
//   it reserve for what the transaction can still undo, not for what was undone;
// - a tuple of exactly maxTupleSize bytes is accepted, one byte more refused.
import { describe, expect, test } from 'vitest';
import { Space, atomic } from '../src/index.js';

describe('replace with an equal hint and a different key', () => {
  test.each([
    ['strings with a 24-byte common prefix', 'string', 'p'.repeat(24) + 'a', 'p'.repeat(24) + 'm', 'p'.repeat(24) + 'z'],
    ['large numbers one apart', 'number', 2 ** 53 - 4, 2 ** 53 - 3, 2 ** 53 - 2],
    ['doubles close together', 'number', 1e300, 1.0000000000000002e300, 1.0000000000000004e300],
  ] as const)('%s: the tuple moves past the one between', (_name, type, low, mid, high) => {
    const space = new Space('hints');
    space.createIndex('pk', { type: 'TREE', parts: [[1, 'unsigned']] });
    space.createIndex('sk', { type: 'TREE', parts: [[2, type]] });
    space.insert([1, low]);
    space.insert([2, mid]);
    space.replace([1, high]);
    expect(space.index.sk.select()).toEqual([[2, mid], [1, high]]);
    expect(space.index.sk.get(high)).toEqual([1, high]);
    expect(space.index.sk.get(low)).toBeUndefined();
    expect(space.index.sk.select(mid, { iterator: 'GT' })).toEqual([[1, high]]);
    space.update(1, [['=', 2, low]]);
    expect(space.index.sk.select()).toEqual([[1, low], [2, mid]]);
    space.checkIntegrity();
  });
});

describe('savepoints rolled back inside a transaction', () => {
  function filled(name: string): Space {
    const space = new Space(name);
    space.createIndex('pk', { type: 'TREE', parts: [[1, 'unsigned']] });
    space.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let id = 0; id < 300; id++) space.insert([id, id % 17]);
    return space;
  }

  /** In one transaction: `rounds` savepoints that each delete 200 tuples and roll back, then one insert. */
  function run(space: Space, rounds: number): void {
    atomic(() => {
      for (let r = 0; r < rounds; r++) {
        expect(() => space.transaction(() => {
          for (let id = 0; id < 200; id++) space.delete(id);
          throw new Error('undo');
        })).toThrow('undo');
        expect(space.len()).toBe(300);
      }
      space.insert([1000, 5]);
    });
  }

  test('ten rolled-back savepoints hold no more memory than one', () => {
    const once = filled('once');
    const ten = filled('ten');
    run(once, 1);
    run(ten, 10);
    expect(ten.len()).toBe(301);
    expect(ten.select()).toEqual(once.select());
    expect(ten.memory()).toEqual(once.memory());
    ten.checkIntegrity();
  });
});

describe('maxTupleSize', () => {
  test('a tuple of exactly maxTupleSize bytes is stored; one byte more is ER_TUPLE_TOO_LARGE', () => {
    const space = new Space('sizes', { maxTupleSize: 128 });
    space.createIndex('pk', { type: 'TREE', parts: [[1, 'unsigned']] });
    // [id, s]: fixarray (1) + positive fixint (1) + str8 header (2) + the string.
    const exact = [1, 'x'.repeat(124)];
    expect(space.insert(exact)).toEqual(exact);
    expect(space.replace([1, 'y'.repeat(124)])).toEqual([1, 'y'.repeat(124)]);
    expect(space.insertMany([[2, 'z'.repeat(124)]])).toBe(1);
    expect(() => space.insert([3, 'x'.repeat(125)])).toThrow(expect.objectContaining({ code: 'ER_TUPLE_TOO_LARGE' }));
    expect(() => space.replace([1, 'x'.repeat(125)])).toThrow(/129 bytes exceeds maxTupleSize \(128 bytes\)/);
    expect(space.select()).toEqual([[1, 'y'.repeat(124)], [2, 'z'.repeat(124)]]);
  });
});
