// The HASH index at scale, through the Space API. 300k keys take the table through many
// rehashes, past the size (2 MiB of slots) where it is mapped on huge pages, and take the tuple
// arena past its malloc'd slabs into huge-page chunks. Along the way: every key is found, absent
// keys are not, duplicates inside one insertMany() batch are refused with nothing kept, deletes
// leave tombstones that later inserts reuse, replace() swaps in place, and checkIntegrity()
// walks every slot.
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type Tuple } from '../src/index.js';

const N = 300_000;
const BATCH = 10_000;

// Keys are spread over 2^32 so that neighbours share no hash structure.
const keyOf = (i: number): number => Math.imul(i, 2654435761) >>> 0;
const tupleOf = (i: number, v = 0): Tuple => [keyOf(i), `user${i}@tarantool.io`, v];

function fresh(secondary: boolean): Space {
  const space = new Space('hash');
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  if (secondary) space.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
  return space;
}

function expectAll(space: Space, live: (i: number) => boolean, value: (i: number) => number): void {
  let seen = 0;
  for (let i = 0; i < N; i++) {
    const got = space.get(keyOf(i));
    if (live(i)) {
      seen++;
      if (got?.[2] !== value(i)) expect(got).toEqual(tupleOf(i, value(i)));
    } else if (got !== undefined) {
      expect(got).toBeUndefined();
    }
  }
  expect(space.len()).toBe(seen);
  expect(space.select().length).toBe(seen);
  space.checkIntegrity();
}

describe('HASH index at 300k keys', () => {
  for (const secondary of [false, true]) {
    it(`insertMany, get, delete, reinsert and replace${secondary ? ' with a unique HASH secondary' : ''}`, () => {
      const space = fresh(secondary);
      for (let from = 0; from < N; from += BATCH) {
        const batch = Array.from({ length: BATCH }, (_, j) => tupleOf(from + j));
        expect(space.insertMany(batch)).toBe(BATCH);
      }
      expectAll(space, () => true, () => 0);
      expect(space.get(keyOf(N))).toBeUndefined();
      expect(space.memory().indexes).toBeGreaterThanOrEqual(N * 8 * (secondary ? 2 : 1));

      for (let i = 0; i < N; i += 2) expect(space.delete(keyOf(i))).toEqual(tupleOf(i));
      expectAll(space, (i) => i % 2 === 1, () => 0);

      for (let i = 0; i < N; i += 2) space.insert(tupleOf(i, 1));
      for (let i = 1; i < N; i += 4) space.replace(tupleOf(i, 2));
      expectAll(space, () => true, (i) => (i % 2 === 0 ? 1 : i % 4 === 1 ? 2 : 0));
      space.drop();
    });
  }

  it('a duplicate deep inside a large insertMany() batch keeps nothing', () => {
    const space = fresh(true);
    space.insertMany(Array.from({ length: N / 2 }, (_, i) => tupleOf(i)));
    const before = space.memory().indexes;
    // The batch grows the table (a rehash) before it meets the duplicate of key 7 at its end.
    const batch = Array.from({ length: N / 2 }, (_, j) => tupleOf(N / 2 + j));
    batch.push(tupleOf(7, 99));
    let error: unknown;
    try {
      space.insertMany(batch);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CappedError);
    expect((error as CappedError).code).toBe('ER_DUPLICATE_KEY');
    expect((error as CappedError).message).toContain(`tuple #${N / 2}`);
    expect(space.len()).toBe(N / 2);
    expect(space.get(keyOf(N / 2))).toBeUndefined();
    expect(space.get(keyOf(7))).toEqual(tupleOf(7));
    expect(space.index.email.get(`user${N - 1}@tarantool.io`)).toBeUndefined();
    expect(space.memory().indexes).toBeGreaterThanOrEqual(before);
    space.checkIntegrity();
    space.drop();
  });

  it('a malformed tuple after valid ones is refused before any is inserted', () => {
    const space = fresh(false);
    const batch: unknown[] = Array.from({ length: BATCH }, (_, i) => tupleOf(i));
    batch.push(['not an unsigned key']);
    expect(() => space.insertMany(batch as Tuple[])).toThrow(expect.objectContaining({ code: 'ER_FIELD_TYPE' }));
    expect(space.len()).toBe(0);
    space.checkIntegrity();
    space.drop();
  });

  it('truncate() releases the table and the arena, and the space fills again', () => {
    const space = fresh(false);
    space.insertMany(Array.from({ length: N / 2 }, (_, i) => tupleOf(i)));
    expect(space.memory().tuples).toBeGreaterThan(4 << 20);
    space.truncate();
    expect(space.len()).toBe(0);
    expect(space.memory().tuples).toBe(0);
    expect(space.memory().indexes).toBe(0);
    space.insertMany(Array.from({ length: N / 2 }, (_, i) => tupleOf(i, 3)));
    expect(space.get(keyOf(12345))).toEqual(tupleOf(12345, 3));
    space.checkIntegrity();
    space.drop();
  });
});
