// The B+tree at scale, through the Space API: 200k keys inserted in random, ascending and
// descending order force many splits; deleting them in random, ascending and descending order
// forces many merges. A TREE primary and a non-unique TREE secondary are checked along the way:
// full ordered selects, counts, sampled seeks, checkIntegrity(), and index memory that shrinks.
import { describe, expect, it } from 'vitest';
import { Space, type Tuple } from '../src/index.js';

const N = 200_000;
const GROUPS = 997;
const BATCH = 10_000;
const CHECK_EVERY = 25_000;
const INTEGRITY_EVERY = 75_000;

type Order = 'random' | 'ascending' | 'descending';

function permutation(order: Order, seed: number): number[] {
  const keys = Array.from({ length: N }, (_, i) => i);
  if (order === 'descending') keys.reverse();
  if (order === 'random') {
    let s = seed >>> 0;
    for (let i = N - 1; i > 0; i--) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      const j = s % (i + 1);
      [keys[i], keys[j]] = [keys[j], keys[i]];
    }
  }
  return keys;
}

// Key i is stored as 3 * i (gaps let seeks land between keys); the secondary groups by i % GROUPS.
const tupleOf = (i: number): Tuple => [3 * i, i % GROUPS, i & 1 ? 'odd' : 'even'];

function fresh(): Space {
  const space = new Space('btree');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('grp', { unique: false, parts: [[2, 'unsigned']] });
  return space;
}

function insertAll(space: Space, order: Order): void {
  const keys = permutation(order, 12345);
  for (let from = 0; from < N; from += BATCH) {
    expect(space.insertMany(keys.slice(from, from + BATCH).map(tupleOf))).toBe(Math.min(BATCH, N - from));
  }
}

function verifyFull(space: Space): void {
  expect(space.len()).toBe(N);
  expect(space.index.grp.len()).toBe(N);
  const all = space.select();
  expect(all.length).toBe(N);
  for (let i = 0; i < N; i++) if (all[i][0] !== 3 * i) expect(all[i]).toEqual(tupleOf(i));
  const byGroup = space.index.grp.select();
  expect(byGroup.length).toBe(N);
  let at = 0;
  for (let g = 0; g < GROUPS; g++) {
    for (let i = g; i < N; i += GROUPS, at++) if (byGroup[at][0] !== 3 * i) expect(byGroup[at]).toEqual(tupleOf(i));
  }
  const down = space.select(undefined, { iterator: 'LT', limit: 1000 });
  for (let j = 0; j < 1000; j++) if (down[j][0] !== 3 * (N - 1 - j)) expect(down[j]).toEqual(tupleOf(N - 1 - j));
  expect(space.select(3 * 500 + 1, { iterator: 'LE' }).length).toBe(501);
  expect(space.count(3 * 1000, { iterator: 'GE' })).toBe(N - 1000);
  expect(space.count(3 * 1000 + 1, { iterator: 'GT' })).toBe(N - 1001);
  expect(space.count(3 * 1000, { iterator: 'LT' })).toBe(1000);
  expect(space.index.grp.count(5)).toBe(Math.ceil((N - 5) / GROUPS));
  expect(space.index.grp.count(5, { iterator: 'LT' })).toBe(space.index.grp.select(5, { iterator: 'LT' }).length);
  space.checkIntegrity();
}

// Deletes every key in `order`, checking seeks and counts against a bitmap of live keys.
function deleteAll(space: Space, order: Order, full: { indexes: number }): void {
  const alive = new Uint8Array(N).fill(1);
  const perGroup = new Int32Array(GROUPS);
  for (let i = 0; i < N; i++) perGroup[i % GROUPS]++;
  let left = N;
  let probe = 7;
  let halfway = Infinity;
  const keys = permutation(order, 999);
  for (let n = 0; n < N; n++) {
    const i = keys[n];
    const deleted = space.delete(3 * i);
    if (deleted === undefined || deleted[0] !== 3 * i) expect(deleted).toEqual(tupleOf(i));
    alive[i] = 0;
    perGroup[i % GROUPS]--;
    left--;
    if (n % CHECK_EVERY === CHECK_EVERY - 1 || left === 0) {
      expect(space.len()).toBe(left);
      expect(space.index.grp.len()).toBe(left);
      for (let s = 0; s < 20; s++) {
        probe = (probe * 48271) % 2147483647;
        const x = probe % N;
        // GE from 3x - 1 (between keys) finds the next live keys.
        const expectUp: number[] = [];
        for (let j = x; j < N && expectUp.length < 3; j++) if (alive[j]) expectUp.push(3 * j);
        expect(space.select(3 * x - 1 < 0 ? 0 : 3 * x - 1, { iterator: 'GE', limit: 3 }).map((t) => t[0])).toEqual(expectUp);
        const expectDown: number[] = [];
        for (let j = x; j >= 0 && expectDown.length < 3; j--) if (alive[j]) expectDown.push(3 * j);
        expect(space.select(3 * x + 1, { iterator: 'LE', limit: 3 }).map((t) => t[0])).toEqual(expectDown);
        const g = x % GROUPS;
        expect(space.index.grp.count(g)).toBe(perGroup[g]);
        const expectGroup: number[] = [];
        for (let j = g; j < N && expectGroup.length < 3; j += GROUPS) if (alive[j]) expectGroup.push(3 * j);
        expect(space.index.grp.select(g, { limit: 3 }).map((t) => t[0])).toEqual(expectGroup);
      }
      if (n % INTEGRITY_EVERY === INTEGRITY_EVERY - 1 || left === 0) space.checkIntegrity();
      if (left <= N / 2 && halfway === Infinity) {
        halfway = space.memory().indexes;
        // memory() counts the node pools: freed nodes stay in them for later inserts, so deleting
        // never adds memory. (The production pool keeps every block; the sanitizer build, which
        // allocates each node on its own, frees them: there halfway is below full.)
        expect(halfway).toBeLessThanOrEqual(full.indexes);
      }
    }
  }
  expect(space.select()).toEqual([]);
  expect(space.index.grp.select()).toEqual([]);
  const empty = space.memory().indexes;
  expect(empty).toBeLessThan(halfway);
  expect(empty).toBeLessThan(full.indexes / 10);
}

describe('B+tree at scale through the Space API', () => {
  const cases: Array<[Order, Order]> = [['random', 'random'], ['ascending', 'descending'], ['descending', 'ascending']];
  for (const [insertOrder, deleteOrder] of cases) {
    it(`${N} keys inserted in ${insertOrder} order and deleted in ${deleteOrder} order stay ordered and consistent`, () => {
      const space = fresh();
      const empty = space.memory();
      insertAll(space, insertOrder);
      verifyFull(space);
      const full = space.memory();
      expect(full.indexes).toBeGreaterThan(empty.indexes + N * 8);
      deleteAll(space, deleteOrder, full);
      // The emptied tree works as new.
      space.insertMany([tupleOf(5), tupleOf(1), tupleOf(3)]);
      expect(space.select().map((t) => t[0])).toEqual([3, 9, 15]);
      space.checkIntegrity();
      space.drop();
    });
  }

  it('interleaved deletes and re-inserts keep both trees consistent', () => {
    const space = fresh();
    const M = N / 2;
    const keys = permutation('random', 4242).filter((i) => i < M);
    space.insertMany(keys.map(tupleOf));
    // Delete half in random order, put half of those back, then check everything.
    for (let n = 0; n < M / 2; n++) space.delete(3 * keys[n]);
    space.insertMany(keys.slice(0, M / 4).map(tupleOf));
    const alive = new Uint8Array(M).fill(1);
    for (let n = M / 4; n < M / 2; n++) alive[keys[n]] = 0;
    const expected: number[] = [];
    for (let i = 0; i < M; i++) if (alive[i]) expected.push(3 * i);
    expect(space.len()).toBe(expected.length);
    expect(space.select().map((t) => t[0])).toEqual(expected);
    const byGroup = space.index.grp.select();
    for (let j = 1; j < byGroup.length; j++) {
      const [a, b] = [byGroup[j - 1], byGroup[j]];
      if (!((a[1] as number) < (b[1] as number) || (a[1] === b[1] && (a[0] as number) < (b[0] as number)))) {
        expect([a, b]).toEqual('ordered by group, then primary key');
      }
    }
    space.checkIntegrity();
    space.drop();
  });
});
