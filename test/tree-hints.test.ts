// The B+tree compares 64-bit hints before tuple bytes. A non-unique index on a number ordered by
// a numeric primary key uses a composite hint (the value's integer part and the key's top bits);
// these tests pin its order at the edges: fractions, negatives, -0, Infinity, 2^41 and beyond,
// huge and negative primary keys, float64-encoded integers.
import { describe, expect, test } from 'vitest';
import { mulberry32 as rng } from '../bench/lib/random.js';
import { Space } from '../src/index.js';

/** A Date.now()-sized TTL in ms (fixed, so the cases are the same on every run). */
const NOW_MS = 1_763_900_000_123;

const TTLS = [
  -Infinity, -1e300, -(2 ** 53), -5.5, -5, -1, -0, 0, 0.25, 1, 1.5, 2, 1_800_000_000, 1_800_000_000.5,
  2 ** 41 - 1, 2 ** 41 - 0.5, 2 ** 41, 2 ** 41 + 1, 1.8e12, NOW_MS, 2 ** 53, 2 ** 60, 1e300, Infinity,
];
const PKS = [-(2 ** 52), -(2 ** 31), -1, 0, 1, 2, 7, 1000, 2 ** 31, 2 ** 40, 2 ** 52, 2 ** 53 - 1];

function cmp(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

describe('composite hints of a non-unique numeric index', () => {
  test('entries are ordered by value, then primary key, across every encoding and range', () => {
    const space = new Space('hints');
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'integer']] });
    space.createIndex('ttl', { type: 'TREE', unique: false, parts: [[2, 'number']] });
    const random = rng(7);
    const rows: [number, number][] = [];
    const used = new Set<number>();
    for (let i = 0; i < 3000; i++) {
      const base = PKS[Math.floor(random() * PKS.length)];
      const pk = base > 2 ** 50 ? base - i : base + i; // exact in float64, so distinct
      if (used.has(pk)) continue;
      used.add(pk);
      const ttl = TTLS[Math.floor(random() * TTLS.length)];
      rows.push([pk, ttl]);
    }
    space.insertMany(rows);
    space.checkIntegrity();
    // msgpackr writes -0 as the integer 0, so it reads back as 0 (and compares equal to it).
    const expected = rows.map(([pk, ttl]): [number, number] => [pk, ttl === 0 ? 0 : ttl])
      .sort((a, b) => cmp(a[1], b[1]) || cmp(a[0], b[0]));
    expect(space.index.ttl.select()).toEqual(expected);

    for (const ttl of TTLS) {
      const eq = expected.filter((r) => r[1] === ttl);
      expect(space.index.ttl.select(ttl)).toEqual(eq);
      expect(space.index.ttl.select(ttl, { iterator: 'REQ' })).toEqual([...eq].reverse());
      expect(space.index.ttl.select(ttl, { iterator: 'GE' })).toEqual(expected.filter((r) => r[1] >= ttl));
      expect(space.index.ttl.select(ttl, { iterator: 'GT' })).toEqual(expected.filter((r) => r[1] > ttl));
      expect(space.index.ttl.select(ttl, { iterator: 'LE' })).toEqual(expected.filter((r) => r[1] <= ttl).reverse());
      expect(space.index.ttl.select(ttl, { iterator: 'LT' })).toEqual(expected.filter((r) => r[1] < ttl).reverse());
      expect(space.index.ttl.count(ttl)).toBe(eq.length);
    }
  });

  test('deleting and replacing entries in any order keeps the index consistent', () => {
    const space = new Space('hints2');
    space.createIndex('pk', { type: 'TREE', parts: [[1, 'unsigned']] });
    space.createIndex('ttl', { type: 'TREE', unique: false, parts: [[2, 'unsigned']] });
    const random = rng(11);
    const model = new Map<number, number>();
    for (let i = 0; i < 20_000; i++) {
      const pk = Math.floor(random() * 5000);
      const op = random();
      if (op < 0.6) {
        const ttl = [0, 1, 2 ** 41 - 1, 2 ** 41, 1_800_000_000 + Math.floor(random() * 5), NOW_MS, 2 ** 53][Math.floor(random() * 7)];
        space.replace([pk, ttl]);
        model.set(pk, ttl);
      } else {
        space.delete(pk);
        model.delete(pk);
      }
    }
    space.checkIntegrity();
    const expected = [...model].sort((a, b) => cmp(a[1], b[1]) || cmp(a[0], b[0]));
    expect(space.index.ttl.select()).toEqual(expected);
  });
});
