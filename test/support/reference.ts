// The pieces of a plain JavaScript reference that the model tests share: a seeded PRNG and the
// order of index keys (numbers by value, strings bytewise by UTF-8, booleans false < true, a key
// with fewer parts as a prefix).
import type { IteratorType } from '../../src/index.js';
import { mulberry32 } from '../../bench/lib/random.js';

export type Scalar = number | string | boolean;

export function rng(seed: number) {
  const next = mulberry32(seed);
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
  };
}
export type Rng = ReturnType<typeof rng>;

const utf8 = new Map<string, Buffer>();
function bytes(s: string): Buffer {
  let b = utf8.get(s);
  if (b === undefined) {
    b = Buffer.from(s);
    utf8.set(s, b);
  }
  return b;
}

export function cmpScalar(a: Scalar, b: Scalar): number {
  if (typeof a === 'string') return Buffer.compare(bytes(a), bytes(b as string));
  if (typeof a === 'boolean') return Number(a) - Number(b);
  return a < (b as number) ? -1 : a > (b as number) ? 1 : 0;
}

export function cmpParts(a: Scalar[], b: Scalar[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = cmpScalar(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * What a TREE iterator returns from `rows` (in the index's order): `cmp(row)` compares the row's
 * key with the iterator's key, of `keyLength` parts (0: no key, the whole index in the
 * iterator's direction).
 */
export function selectByIterator<R>(rows: R[], keyLength: number, iterator: IteratorType, cmp: (row: R) => number): R[] {
  if (keyLength === 0) return iterator === 'LE' || iterator === 'LT' || iterator === 'REQ' ? [...rows].reverse() : rows;
  switch (iterator) {
    case 'ALL': return rows;
    case 'EQ': return rows.filter((r) => cmp(r) === 0);
    case 'REQ': return rows.filter((r) => cmp(r) === 0).reverse();
    case 'GE': return rows.filter((r) => cmp(r) >= 0);
    case 'GT': return rows.filter((r) => cmp(r) > 0);
    case 'LE': return rows.filter((r) => cmp(r) <= 0).reverse();
    case 'LT': return rows.filter((r) => cmp(r) < 0).reverse();
  }
}
