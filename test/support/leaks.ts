// The encoder reviews' harness (test/review-encoder-leaks.test.ts, test/review-encoder-walk.test.ts):
// a canary of other writes, every write path a tuple field (or an update's argument) takes into a
// space, and a space's stored tuples read back as raw MessagePack.
import { Space, atomic, expirationd } from '../../src/index.js';
import { handleOf } from '../../src/space/space.js';

/** Every stored tuple's MessagePack bytes, concatenated (primary index order). */
export function raw(s: Space<any, any>): Buffer {
  const b = Buffer.alloc(1 << 20);
  const r = handleOf(s).select(0, undefined, 2 /* Iter.ALL */, 1_000_000, 0, b, NaN);
  return typeof r === 'number' ? Buffer.from(b.subarray(0, r)) : Buffer.from(r);
}

/** Fills msgpackr's buffers and the heap with markers: 'CANARY' tuples, Buffers of 0xAB. */
export function canary(): void {
  const s = new Space<any[], number>(`canary-${Math.random()}`);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  for (let i = 0; i < 300; i++) s.replace([i % 5, 'CANARY'.repeat(300)]);
  for (let i = 0; i < 20; i++) Buffer.allocUnsafe(4096).fill(0xab);
  s.drop();
}

export type WritePath = [string, (v: unknown) => Space<any, any>];

/**
 * The synchronous write paths, over fresh spaces from `plain` (primary 'pk' on field 1, [1, ...]
 * stored) and `ttl` (TTL field 2 with a TREE 'exp' on it, a clock that never passes 9e15).
 */
export function writePaths(plain: () => Space<any[], number>, ttl: () => Space<any[], number>): WritePath[] {
  let n = 0;
  const task = (s: Space<any[], number>): void => void expirationd.start(`write-path-${++n}-${Math.random()}`, s, { itIndex: 'exp' });
  return [
    ['insert', (v) => { const s = plain(); s.insert([2, v]); return s; }],
    ['replace', (v) => { const s = plain(); s.replace([1, v]); return s; }],
    ['insertMany', (v) => { const s = plain(); s.insertMany([[2, 'a'], [3, v]]); return s; }],
    ['upsert tuple', (v) => { const s = plain(); s.upsert([2, v], [['=', 2, 'x']]); return s; }],
    ['upsert op', (v) => { const s = plain(); s.upsert([1, 'x'], [['=', 2, v]]); return s; }],
    ["update '='", (v) => { const s = plain(); s.update(1, [['=', 2, v]]); return s; }],
    ["update '!'", (v) => { const s = plain(); s.update(1, [['!', 2, v]]); return s; }],
    ['index.update', (v) => { const s = plain(); s.index.pk.update(1, [['=', 2, v]]); return s; }],
    ['atomic insert', (v) => { const s = plain(); atomic(() => { s.insert([2, v]); }); return s; }],
    ['insert, task running', (v) => { const s = ttl(); task(s); s.insert([2, 9e15, v]); return s; }],
    ['insertMany, task running', (v) => { const s = ttl(); task(s); s.insertMany([[2, 9e15, v]]); return s; }],
  ];
}
