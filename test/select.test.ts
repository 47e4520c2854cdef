// select(): every iterator on TREE (single-part, multipart, prefixes), limit/offset, the order of
// equal keys in a non-unique TREE, and HASH ALL/EQ.
import { describe, expect, it } from 'vitest';
import { Space, type IteratorType, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';

const ITERATORS: IteratorType[] = ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'];
type Scalar = number | string | boolean;

function cmpScalar(a: Scalar, b: Scalar): number {
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return Math.sign((a as number) - (b as number));
}

// Compares a tuple's first key.length parts with the key (Tarantool's prefix comparison).
function cmpPrefix(tuple: Tuple, fields: number[], key: Scalar[]): number {
  for (let i = 0; i < key.length; i++) {
    const c = cmpScalar(tuple[fields[i] - 1] as Scalar, key[i]);
    if (c !== 0) return c;
  }
  return 0;
}

// The reference select: what a TREE index on `fields` (then `pkFields` to break ties) returns.
function reference(tuples: Tuple[], fields: number[], pkFields: number[], key: Scalar[] | undefined,
  iterator: IteratorType): Tuple[] {
  const all = [...fields, ...pkFields];
  const sorted = [...tuples].sort((a, b) => cmpPrefix(a, all, all.map((f) => b[f - 1] as Scalar)));
  const k = key ?? [];
  const c = (t: Tuple) => cmpPrefix(t, fields, k);
  switch (iterator) {
    case 'ALL': return sorted;
    case 'EQ': return sorted.filter((t) => c(t) === 0);
    case 'REQ': return sorted.filter((t) => c(t) === 0).reverse();
    case 'GE': return sorted.filter((t) => c(t) >= 0);
    case 'GT': return k.length === 0 ? sorted : sorted.filter((t) => c(t) > 0);
    case 'LE': return sorted.filter((t) => c(t) <= 0).reverse();
    case 'LT': return (k.length === 0 ? sorted : sorted.filter((t) => c(t) < 0)).reverse();
  }
}

function shuffled<T>(items: T[], seed = 1): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe('TREE single-part', () => {
  const space = new Space('single');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  for (const k of shuffled([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])) space.insert([k, `v${k}`]);
  const keys = (ts: Tuple[]) => ts.map((t) => t[0]);

  it('EQ returns the tuple with the key, and is the default with a key', () => {
    expect(space.select(50, { iterator: 'EQ' })).toEqual([[50, 'v50']]);
    expect(space.select(50)).toEqual([[50, 'v50']]);
    expect(space.select([50])).toEqual([[50, 'v50']]);
    expect(space.select(55)).toEqual([]);
  });

  it('ALL returns every tuple in ascending order, and is the default without a key', () => {
    expect(keys(space.select())).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(keys(space.select(undefined, { iterator: 'ALL' }))).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(keys(space.select([], { iterator: 'ALL' }))).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });

  it('GE and GT walk up from the key', () => {
    expect(keys(space.select(50, { iterator: 'GE' }))).toEqual([50, 60, 70, 80, 90, 100]);
    expect(keys(space.select(50, { iterator: 'GT' }))).toEqual([60, 70, 80, 90, 100]);
    expect(keys(space.select(55, { iterator: 'GE' }))).toEqual([60, 70, 80, 90, 100]);
    expect(keys(space.select(55, { iterator: 'GT' }))).toEqual([60, 70, 80, 90, 100]);
    expect(keys(space.select(0, { iterator: 'GT' }))).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(space.select(100, { iterator: 'GT' })).toEqual([]);
    expect(space.select(101, { iterator: 'GE' })).toEqual([]);
  });

  it('LE and LT walk down from the key', () => {
    expect(keys(space.select(50, { iterator: 'LE' }))).toEqual([50, 40, 30, 20, 10]);
    expect(keys(space.select(50, { iterator: 'LT' }))).toEqual([40, 30, 20, 10]);
    expect(keys(space.select(55, { iterator: 'LE' }))).toEqual([50, 40, 30, 20, 10]);
    expect(keys(space.select(55, { iterator: 'LT' }))).toEqual([50, 40, 30, 20, 10]);
    expect(keys(space.select(1000, { iterator: 'LT' }))).toEqual([100, 90, 80, 70, 60, 50, 40, 30, 20, 10]);
    expect(space.select(10, { iterator: 'LT' })).toEqual([]);
    expect(space.select(9, { iterator: 'LE' })).toEqual([]);
  });

  it('REQ returns the equal tuples in reverse order', () => {
    expect(space.select(50, { iterator: 'REQ' })).toEqual([[50, 'v50']]);
    expect(space.select(55, { iterator: 'REQ' })).toEqual([]);
  });

  it('without a key, ascending iterators return all ascending and descending ones all descending', () => {
    const up = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    const down = [...up].reverse();
    expect(keys(space.select(undefined, { iterator: 'GE' }))).toEqual(up);
    expect(keys(space.select(undefined, { iterator: 'GT' }))).toEqual(up);
    expect(keys(space.select(undefined, { iterator: 'EQ' }))).toEqual(up);
    expect(keys(space.select(undefined, { iterator: 'LE' }))).toEqual(down);
    expect(keys(space.select(undefined, { iterator: 'LT' }))).toEqual(down);
    expect(keys(space.select(undefined, { iterator: 'REQ' }))).toEqual(down);
  });

  it('every iterator and key matches the reference, and count agrees', () => {
    const all = space.select();
    for (const iterator of ITERATORS) {
      for (const key of [undefined, 0, 9, 10, 11, 50, 55, 99, 100, 101, 2 ** 40]) {
        const expected = reference(all, [1], [], key === undefined ? undefined : [key], iterator);
        expect(space.select(key, { iterator }), `${iterator} ${key}`).toEqual(expected);
        expect(space.count(key, { iterator }), `count ${iterator} ${key}`).toBe(expected.length);
      }
    }
  });
});

describe('TREE multipart keys and prefixes', () => {
  const space = new Space('multi');
  space.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
  const rows: Tuple[] = [];
  for (const a of [1, 2, 3, 4]) for (const b of ['a', 'b', 'c']) rows.push([a, b, a * 10]);
  for (const t of shuffled(rows, 7)) space.insert(t);
  const ks = (ts: Tuple[]) => ts.map((t) => `${t[0]}${t[1]}`);

  it('a full key selects one tuple', () => {
    expect(space.select([2, 'b'])).toEqual([[2, 'b', 20]]);
    expect(space.select([2, 'bb'])).toEqual([]);
  });

  it('a prefix selects every tuple that starts with it', () => {
    expect(ks(space.select([2]))).toEqual(['2a', '2b', '2c']);
    expect(ks(space.select(2))).toEqual(['2a', '2b', '2c']);
    expect(ks(space.select([2], { iterator: 'REQ' }))).toEqual(['2c', '2b', '2a']);
    expect(space.select([5])).toEqual([]);
  });

  it('GE/GT/LE/LT on a prefix include or skip the whole group', () => {
    expect(ks(space.select([3], { iterator: 'GE' }))).toEqual(['3a', '3b', '3c', '4a', '4b', '4c']);
    expect(ks(space.select([3], { iterator: 'GT' }))).toEqual(['4a', '4b', '4c']);
    expect(ks(space.select([2], { iterator: 'LE' }))).toEqual(['2c', '2b', '2a', '1c', '1b', '1a']);
    expect(ks(space.select([2], { iterator: 'LT' }))).toEqual(['1c', '1b', '1a']);
  });

  it('GE/GT/LE/LT on a full key start at that tuple', () => {
    expect(ks(space.select([2, 'b'], { iterator: 'GE' }))).toEqual(['2b', '2c', '3a', '3b', '3c', '4a', '4b', '4c']);
    expect(ks(space.select([2, 'b'], { iterator: 'GT' }))).toEqual(['2c', '3a', '3b', '3c', '4a', '4b', '4c']);
    expect(ks(space.select([2, 'b'], { iterator: 'LE' }))).toEqual(['2b', '2a', '1c', '1b', '1a']);
    expect(ks(space.select([2, 'b'], { iterator: 'LT' }))).toEqual(['2a', '1c', '1b', '1a']);
    expect(ks(space.select([2, 'bb'], { iterator: 'GE' }))).toEqual(['2c', '3a', '3b', '3c', '4a', '4b', '4c']);
    expect(ks(space.select([2, 'bb'], { iterator: 'LT' }))).toEqual(['2b', '2a', '1c', '1b', '1a']);
  });

  it('every iterator with full keys, prefixes and no key matches the reference', () => {
    const all = space.select();
    const keys: Array<Scalar[] | undefined> = [undefined, [0], [1], [2], [4], [5], [1, ''], [1, 'a'], [2, 'b'],
      [2, 'bb'], [3, 'c'], [3, 'd'], [4, 'c'], [0, 'z'], [9, 'a']];
    for (const iterator of ITERATORS) {
      for (const key of keys) {
        const expected = reference(all, [1, 2], [], key, iterator);
        expect(space.select(key, { iterator }), `${iterator} ${JSON.stringify(key)}`).toEqual(expected);
        expect(space.count(key, { iterator }), `count ${iterator} ${JSON.stringify(key)}`).toBe(expected.length);
      }
    }
  });

  it('a secondary multipart TREE index orders by its parts', () => {
    const s = new Space('sec');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const sec = s.createIndex('sec', { parts: [[3, 'string'], [2, 'integer']] });
    const tuples: Tuple[] = [];
    let id = 0;
    for (const str of ['x', 'y', 'xy', '']) for (const n of [-5, 0, 7]) tuples.push([id++, n, str]);
    for (const t of shuffled(tuples, 3)) s.insert(t);
    expect(sec.select().map((t) => `${t[2]}${t[1]}`)).toEqual(
      ['-5', '0', '7', 'x-5', 'x0', 'x7', 'xy-5', 'xy0', 'xy7', 'y-5', 'y0', 'y7']);
    for (const iterator of ITERATORS) {
      for (const key of [undefined, ['x'], ['x', 0], ['x', 1], [''], ['xz'], ['y', 7], ['a', -100]] as Array<Scalar[] | undefined>) {
        expect(sec.select(key, { iterator }), `${iterator} ${JSON.stringify(key)}`)
          .toEqual(reference(tuples, [3, 2], [], key, iterator));
      }
    }
  });
});

describe('limit and offset', () => {
  const space = new Space('paged');
  space.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'unsigned']] });
  for (let a = 0; a < 10; a++) for (let b = 0; b < 10; b++) space.insert([a, b]);

  it('limit caps and offset skips, in iterator order', () => {
    expect(space.select([3], { limit: 2 })).toEqual([[3, 0], [3, 1]]);
    expect(space.select([3], { offset: 8 })).toEqual([[3, 8], [3, 9]]);
    expect(space.select([3], { offset: 8, limit: 5 })).toEqual([[3, 8], [3, 9]]);
    expect(space.select([3], { iterator: 'LT', limit: 3, offset: 1 })).toEqual([[2, 8], [2, 7], [2, 6]]);
    expect(space.select(undefined, { limit: 1, offset: 99 })).toEqual([[9, 9]]);
  });

  it('limit 0 and an offset past the end return nothing', () => {
    expect(space.select(undefined, { limit: 0 })).toEqual([]);
    expect(space.select([3], { offset: 10 })).toEqual([]);
    expect(space.select(undefined, { offset: 1000 })).toEqual([]);
    expect(space.select(undefined, { limit: Infinity }).length).toBe(100);
  });

  it('every iterator with limit and offset is a slice of the unlimited select', () => {
    for (const iterator of ITERATORS) {
      for (const key of [undefined, [5], [5, 5], [0], [9, 9], [10]]) {
        const full = space.select(key, { iterator });
        for (const [limit, offset] of [[0, 0], [1, 0], [3, 2], [7, 9], [100, 1], [5, 95], [1, 200]]) {
          expect(space.select(key, { iterator, limit, offset }), `${iterator} ${JSON.stringify(key)} ${limit} ${offset}`)
            .toEqual(full.slice(offset, offset + limit));
        }
      }
    }
  });
});

describe('non-unique TREE', () => {
  it('orders equal keys by primary key', () => {
    const space = new Space('nu');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    const exp = space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
    const ids = shuffled(Array.from({ length: 300 }, (_, i) => i), 11);
    for (const id of ids) space.insert([id, id % 3]);
    const ones = exp.select(1);
    expect(ones.map((t) => t[0])).toEqual(Array.from({ length: 100 }, (_, k) => 1 + 3 * k));
    expect(exp.select(1, { iterator: 'REQ' }).map((t) => t[0])).toEqual(Array.from({ length: 100 }, (_, k) => 298 - 3 * k));
    const all = exp.select();
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1], all[i]];
      expect((a[1] as number) < (b[1] as number) || (a[1] === b[1] && (a[0] as number) < (b[0] as number))).toBe(true);
    }
    for (const iterator of ITERATORS) {
      for (const key of [undefined, 0, 1, 2, 3]) {
        expect(exp.select(key, { iterator }), `${iterator} ${key}`)
          .toEqual(reference(all, [2], [1], key === undefined ? undefined : [key], iterator));
        expect(exp.count(key, { iterator })).toBe(reference(all, [2], [1], key === undefined ? undefined : [key], iterator).length);
      }
    }
    expect(exp.select(1, { limit: 3, offset: 2 }).map((t) => t[0])).toEqual([7, 10, 13]);
  });

  it('orders equal keys by a multipart primary key, strings bytewise', () => {
    const space = new Space('nu2');
    space.createIndex('pk', { parts: [[1, 'string'], [2, 'integer']] });
    const tag = space.createIndex('tag', { unique: false, parts: [[3, 'boolean']] });
    const tuples: Tuple[] = [];
    for (const s of ['b', 'a', 'é', 'Z', 'ab']) for (const n of [3, -1]) tuples.push([s, n, n > 0]);
    for (const t of shuffled(tuples, 5)) space.insert(t);
    expect(tag.select(true).map((t) => `${t[0]}${t[1]}`)).toEqual(['Z3', 'a3', 'ab3', 'b3', 'é3']);
    expect(tag.select(false, { iterator: 'REQ' }).map((t) => `${t[0]}${t[1]}`)).toEqual(['é-1', 'b-1', 'ab-1', 'a-1', 'Z-1']);
    expect(tag.select(true, { iterator: 'LT' }).map((t) => `${t[0]}${t[1]}`)).toEqual(['é-1', 'b-1', 'ab-1', 'a-1', 'Z-1']);
    expect(tag.select(false, { iterator: 'GT' }).length).toBe(5);
  });

  it('a multipart non-unique index answers prefixes with equal keys in primary key order', () => {
    const space = new Space('nu3');
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    const idx = space.createIndex('idx', { unique: false, parts: [[2, 'string'], [3, 'number']] });
    const tuples: Tuple[] = [];
    let id = 0;
    for (let i = 0; i < 200; i++) tuples.push([id++, ['p', 'q', 'r'][i % 3], [1, 1.5, -2, 1][i % 4]]);
    for (const t of shuffled(tuples, 9)) space.insert(t);
    for (const iterator of ITERATORS) {
      for (const key of [undefined, ['q'], ['q', 1], ['q', 1.25], ['r', -2], ['a'], ['s'], ['p', Infinity]] as Array<Scalar[] | undefined>) {
        expect(idx.select(key, { iterator }), `${iterator} ${JSON.stringify(key)}`)
          .toEqual(reference(tuples, [2, 3], [1], key, iterator));
      }
    }
  });
});

describe('HASH', () => {
  const space = new Space('hash');
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'string'], [2, 'unsigned']] });
  const tuples: Tuple[] = [];
  for (let i = 0; i < 500; i++) tuples.push([`k${i % 50}`, i, i * 2]);
  space.insertMany(tuples);
  const sortKey = (t: Tuple) => `${t[0]}/${String(t[1]).padStart(4, '0')}`;
  const sorted = (ts: Tuple[]) => [...ts].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1));

  it('ALL returns every tuple exactly once, and is the default without a key', () => {
    expect(sorted(space.select())).toEqual(sorted(tuples));
    expect(sorted(space.select(undefined, { iterator: 'ALL' }))).toEqual(sorted(tuples));
    expect(space.count()).toBe(500);
    expect(space.count(undefined, { iterator: 'ALL' })).toBe(500);
  });

  it('EQ with a full key returns the tuple or nothing', () => {
    expect(space.select(['k7', 57])).toEqual([['k7', 57, 114]]);
    expect(space.select(['k7', 57], { iterator: 'EQ' })).toEqual([['k7', 57, 114]]);
    expect(space.select(['k7', 58])).toEqual([]);
    expect(space.get(['k7', 57])).toEqual(['k7', 57, 114]);
    expect(space.count(['k7', 57])).toBe(1);
    expect(space.count(['k7', 58])).toBe(0);
  });

  it('limit and offset on ALL page through one stable order', () => {
    const full = space.select();
    const pages: Tuple[] = [];
    for (let offset = 0; offset < 500; offset += 64) pages.push(...space.select(undefined, { offset, limit: 64 }));
    expect(pages).toEqual(full);
    expect(space.select(['k1', 1], { limit: 0 })).toEqual([]);
    expect(space.select(['k1', 1], { offset: 1 })).toEqual([]);
  });

  it('refuses ordered iterators and partial keys', () => {
    for (const iterator of ['GE', 'GT', 'LE', 'LT', 'REQ'] as IteratorType[]) {
      expect(codeOf(() => space.select(['k1', 1], { iterator }))).toBe('ER_ITERATOR_TYPE');
    }
    expect(codeOf(() => space.select(['k1']))).toBe('ER_KEY_PART_COUNT');
  });

  it('a single-part HASH takes a scalar key', () => {
    const s = new Space('h1');
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    for (let i = 0; i < 100; i++) s.insert([i * 7]);
    expect(s.select(49)).toEqual([[49]]);
    expect(s.select([49])).toEqual([[49]]);
    expect(s.select(50)).toEqual([]);
    expect(s.select().map((t) => t[0]).sort((a, b) => (a as number) - (b as number)))
      .toEqual(Array.from({ length: 100 }, (_, i) => i * 7));
  });
});
