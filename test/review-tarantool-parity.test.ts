// Review: semantic parity with the Tarantool modules a user ports from. Every expected value
// below was produced by running the same operations on Tarantool 2.6.0 (memtx, Debian package),
// the Lua expirationd module (tarantool/expirationd 1.7.0, expirationd/init.lua and test/unit/)
// and the capped C module (sonntex/tarantool-capped-expirationd, expirationd.c). Where we
// deliberately differ, README documents it ("Porting from Tarantool" and the sections it points
// to) and the test asserts our documented side ('documented divergences').
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Tuple, type UpdateOp } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

const ids = (tuples: Tuple[]) => tuples.map((t) => t[0]);

// Tarantool: s:create_index('pk', {parts={1,'unsigned'}}),
// 'sk' {unique=false, parts={{2,'string'},{3,'unsigned'}}}, 'nu' {unique=false, parts={3,'unsigned'}},
// 'h' {type='HASH', parts={4,'unsigned'}}, the same six tuples inserted in the same order.
function boxSpace(name: string): Space {
  const s = new Space(name);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.createIndex('sk', { unique: false, parts: [[2, 'string'], [3, 'unsigned']] });
  s.createIndex('nu', { unique: false, parts: [[3, 'unsigned']] });
  s.createIndex('h', { type: 'HASH', parts: [[4, 'unsigned']] });
  for (const t of [[5, 'a', 1, 50], [3, 'a', 2, 30], [1, 'b', 1, 10], [4, 'a', 1, 40], [2, 'b', 2, 20], [6, 'c', 3, 60]]) s.insert(t);
  return s;
}

describe('TREE iterators return what memtx returns (Tarantool 2.6)', () => {
  const s = boxSpace('iters');
  // [index, key, iterator, primary keys in Tarantool's order]
  const cases: [string, unknown[], string, number[]][] = [
    ['sk', ['a'], 'EQ', [4, 5, 3]], ['sk', ['a', 1], 'EQ', [4, 5]], ['nu', [1], 'EQ', [1, 4, 5]], ['pk', [3], 'EQ', [3]],
    ['sk', [], 'EQ', [4, 5, 3, 1, 2, 6]],
    ['sk', ['a'], 'REQ', [3, 5, 4]], ['sk', ['a', 1], 'REQ', [5, 4]], ['nu', [1], 'REQ', [5, 4, 1]], ['pk', [3], 'REQ', [3]],
    ['sk', [], 'REQ', [6, 2, 1, 3, 5, 4]],
    ['sk', ['a'], 'GE', [4, 5, 3, 1, 2, 6]], ['sk', ['a', 1], 'GE', [4, 5, 3, 1, 2, 6]], ['nu', [1], 'GE', [1, 4, 5, 2, 3, 6]],
    ['pk', [3], 'GE', [3, 4, 5, 6]],
    ['sk', ['a'], 'GT', [1, 2, 6]], ['sk', ['a', 1], 'GT', [3, 1, 2, 6]], ['nu', [1], 'GT', [2, 3, 6]], ['pk', [3], 'GT', [4, 5, 6]],
    ['sk', [], 'GT', [4, 5, 3, 1, 2, 6]],
    ['sk', ['a'], 'LE', [3, 5, 4]], ['sk', ['a', 1], 'LE', [5, 4]], ['nu', [1], 'LE', [5, 4, 1]], ['pk', [3], 'LE', [3, 2, 1]],
    ['sk', [], 'LE', [6, 2, 1, 3, 5, 4]],
    ['sk', ['a'], 'LT', []], ['sk', ['a', 1], 'LT', []], ['nu', [1], 'LT', []], ['pk', [3], 'LT', [2, 1]],
    ['sk', [], 'LT', [6, 2, 1, 3, 5, 4]],
    ['sk', [], 'ALL', [4, 5, 3, 1, 2, 6]], ['nu', [], 'ALL', [1, 4, 5, 2, 3, 6]],
  ];
  test.each(cases)('%s:select(%j, {iterator = %s})', (index, key, iterator, expected) => {
    const idx = s.index[index];
    expect(ids(idx.select(key as never, { iterator: iterator as 'EQ' }))).toEqual(expected);
    // pairs() walks the same tuples in the same order
    expect(ids([...idx.pairs(key as never, { iterator: iterator as 'EQ' })])).toEqual(expected);
  });

  test('the default iterator is EQ with a key and ALL without one; select(nil, {iterator = LT}) is all, descending', () => {
    expect(ids(s.index.nu.select(1))).toEqual([1, 4, 5]);
    expect(ids(s.index.nu.select())).toEqual([1, 4, 5, 2, 3, 6]);
    expect(ids(s.index.pk.select(undefined, { iterator: 'LT' }))).toEqual([6, 5, 4, 3, 2, 1]);
    expect(ids(s.index.pk.select(undefined, { iterator: 'REQ' }))).toEqual([6, 5, 4, 3, 2, 1]);
  });

  test('select limit/offset as Tarantool', () => {
    expect(ids(s.select([], { limit: 2, offset: 1 }))).toEqual([2, 3]);
    expect(ids(s.select([], { limit: 2, offset: 10 }))).toEqual([]);
    expect(ids(s.select([], { limit: 0 }))).toEqual([]);
    expect(ids(s.select([5], { iterator: 'LE', limit: 2, offset: 1 }))).toEqual([4, 3]);
    expect(ids(s.index.sk.select(['a'], { iterator: 'REQ', limit: 2, offset: 1 }))).toEqual([5, 4]);
    expect(s.select([], { limit: 1e18 }).length).toBe(6);
  });

  test('min/max with a key are the first/last tuple EQUAL to it (nil when none)', () => {
    expect(s.index.sk.min(['a'])).toEqual([4, 'a', 1, 40]);
    expect(s.index.sk.max(['a'])).toEqual([3, 'a', 2, 30]);
    expect(s.index.sk.max(['a', 1])).toEqual([5, 'a', 1, 50]);
    expect(s.index.nu.min([2])).toEqual([2, 'b', 2, 20]);
    expect(s.index.nu.max([2])).toEqual([3, 'a', 2, 30]);
    expect(s.index.pk.max([3])).toEqual([3, 'a', 2, 30]);
    // Not GE/LE: a key between stored keys gives nil in Tarantool.
    expect(s.index.sk.min(['z'])).toBeUndefined();
    expect(s.index.sk.min(['aa'])).toBeUndefined();
    expect(s.index.sk.max(['aa'])).toBeUndefined();
    expect(s.index.pk.max([9])).toBeUndefined();
    expect(s.index.pk.min([0])).toBeUndefined();
    expect(codeOf(() => s.index.h.min())).toBe('ER_UNSUPPORTED');
  });

  test('count with keys and iterators as Tarantool (ALL ignores the key in count)', () => {
    expect(s.index.sk.count(['a'])).toBe(3);
    expect(s.index.sk.count(['a'], { iterator: 'GT' })).toBe(3);
    expect(s.index.sk.count(['a'], { iterator: 'LE' })).toBe(3);
    expect(s.index.pk.count([3], { iterator: 'GE' })).toBe(4);
    expect(s.index.pk.count([3], { iterator: 'LT' })).toBe(2);
    expect(s.index.pk.count([3], { iterator: 'REQ' })).toBe(1);
    expect(s.index.pk.count([3], { iterator: 'ALL' })).toBe(6);
    expect(s.index.pk.count(undefined, { iterator: 'GT' })).toBe(6);
    expect(s.count()).toBe(6);
    expect(s.index.h.count([30])).toBe(1);
  });

  test('HASH: EQ and ALL; no GT/GE (README: HASH supports ALL and EQ); get() needs a unique index', () => {
    expect(ids(s.index.h.select([30], { iterator: 'EQ' }))).toEqual([3]);
    expect(ids(s.index.h.select(30))).toEqual([3]);
    expect(ids(s.index.h.select()).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(codeOf(() => s.index.h.select([30], { iterator: 'GT' as 'EQ' }))).toBe('ER_ITERATOR_TYPE');
    expect(codeOf(() => s.index.sk.get(['a']))).toBe('ER_UNSUPPORTED');
    expect(codeOf(() => s.index.nu.get([1]))).toBe('ER_UNSUPPORTED');
  });

  test('key part count and key type errors', () => {
    expect(codeOf(() => s.get([1, 2]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.select([1, 2]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.index.sk.select(['a', 1, 5]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.select(['x']))).toBe('ER_KEY_TYPE');
    const h2 = new Space('h2');
    h2.createIndex('pk', { parts: [[1, 'unsigned']] });
    h2.createIndex('h2', { type: 'HASH', parts: [[2, 'string'], [3, 'unsigned']] });
    h2.insert([1, 'a', 1]);
    // Tarantool: "HASH index does not support selects via a partial key (expected 2 parts, got 1)"
    expect(codeOf(() => h2.index.h2.select(['a'], { iterator: 'EQ' }))).toBe('ER_KEY_PART_COUNT');
  });

  test('pairs() while the space changes sees what a memtx iterator sees', () => {
    const p = new Space('pairs-memtx');
    p.createIndex('pk', { parts: [[1, 'unsigned']] });
    p.createIndex('nu', { unique: false, parts: [[3, 'unsigned']] });
    for (let i = 1; i <= 6; i++) p.insert([i * 10, 'x', i % 2]);
    let out: unknown[] = [];
    for (const t of p.index.pk.pairs([], { iterator: 'GE' })) {
      out.push(t[0]);
      if (t[0] === 20) { p.delete(30); p.insert([25, 'y', 0]); p.insert([5, 'z', 0]); }
      if (t[0] === 40) { p.replace([40, 'r', 1]); p.insert([45, 'w', 1]); }
    }
    expect(out).toEqual([10, 20, 25, 40, 45, 50, 60]);
    out = [];
    for (const t of p.index.pk.pairs([], { iterator: 'LE' })) {
      out.push(t[0]);
      if (t[0] === 45) { p.delete(40); p.insert([42, 'y', 0]); p.insert([100, 'z', 0]); }
    }
    expect(out).toEqual([60, 50, 45, 42, 25, 20, 10, 5]);
    out = [];
    for (const t of p.index.nu.pairs([0], { iterator: 'EQ' })) {
      out.push(t[0]);
      if (out.length === 2) { p.insert([7, 'q', 0]); p.insert([99, 'q', 0]); }
    }
    expect(out).toEqual([5, 20, 25, 42, 60, 99, 100]);
    out = [];
    for (const t of p.index.nu.pairs([1], { iterator: 'REQ' })) {
      out.push(t[0]);
      if (out.length === 1) { p.insert([1, 'q', 1]); p.insert([1000, 'q', 1]); }
    }
    expect(out).toEqual([50, 45, 10, 1]);
  });
});

describe('insert/replace/delete/update return values as box', () => {
  test('insert and replace return the new tuple, delete the old one, update of an absent key nothing', () => {
    const s = boxSpace('returns');
    expect(s.insert([10, 'q', 1, 100])).toEqual([10, 'q', 1, 100]);
    expect(s.replace([10, 'r', 1, 100])).toEqual([10, 'r', 1, 100]);
    expect(s.delete(10)).toEqual([10, 'r', 1, 100]);
    expect(s.delete(10)).toBeUndefined();
    expect(s.update(10, [['=', 2, 'x']])).toBeUndefined();
    expect(s.index.h.update(30, [['=', 2, 'hh']])).toEqual([3, 'hh', 2, 30]);
    expect(codeOf(() => s.index.sk.update(['a', 1], [['=', 2, 'hh']]))).toBe('ER_UNSUPPORTED');
    expect(s.upsert([9, 'zz', 1, 90], [['+', 3, 1]])).toBeUndefined();
    expect(s.get(9)).toEqual([9, 'zz', 1, 90]);
  });

  test('bsize() counts MessagePack bytes as space:bsize()', () => {
    const s = new Space('bsize');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([1, 'abc', 10]);
    expect(s.bsize()).toBe(7);
  });
});

// [tuple, ops, Tarantool's update() result, or its error as our code]; upsert: the stored tuple
// after s:upsert({1, 'NEW'}, ops), or 'throws' when Tarantool's upsert raised (we then throw the
// same code as update). Left out, as divergences (see the review report): two arithmetic ops on
// one field (Tarantool: "double update of the same field"), and a splice at offset 0 in upsert
// (Tarantool refuses the call; we skip the op).
type UpdateCase = [unknown[], UpdateOp[], unknown[] | string, unknown[] | 'throws'];
const UPDATE_CASES: UpdateCase[] = [
  [[1, 'abc', 10], [['=', 4, 'x']], [1, 'abc', 10, 'x'], [1, 'abc', 10, 'x']],
  [[1, 'abc', 10], [['=', 5, 'x']], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10], [['=', -1, 'x']], [1, 'abc', 'x'], [1, 'abc', 'x']],
  [[1, 'abc', 10], [['=', -3, 2]], 'ER_CANT_UPDATE_PRIMARY_KEY', [1, 'abc', 10]],
  [[1, 'abc', 10], [['=', -4, 'x']], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10], [['=', 0, 'x']], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [['+', 3, 5]], [1, 'abc', 15], [1, 'abc', 15]],
  [[1, 'abc', 10], [['+', 3, 1.5]], [1, 'abc', 11.5], [1, 'abc', 11.5]],
  [[1, 'abc', 1.5], [['+', 3, 1]], [1, 'abc', 2.5], [1, 'abc', 2.5]],
  [[1, 'abc', 1.5], [['+', 3, 1.5]], [1, 'abc', 3], [1, 'abc', 3]],
  [[1, 'abc', 10], [['-', 3, 20]], [1, 'abc', -10], [1, 'abc', -10]],
  [[1, 'abc', 10], [['-', 3, 0.5]], [1, 'abc', 9.5], [1, 'abc', 9.5]],
  [[1, 'abc', 10], [['+', 2, 1]], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10], [['+', 4, 1]], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10], [['+', -1, 1]], [1, 'abc', 11], [1, 'abc', 11]],
  [[1, 'abc', true], [['+', 3, 1]], 'ER_UPDATE_FIELD', [1, 'abc', true]],
  [[1, 'abc', null], [['+', 3, 1]], 'ER_UPDATE_FIELD', [1, 'abc', null]],
  [[1, 'abc', 10], [['&', 3, 6]], [1, 'abc', 2], [1, 'abc', 2]],
  [[1, 'abc', 10], [['|', 3, 5]], [1, 'abc', 15], [1, 'abc', 15]],
  [[1, 'abc', 10], [['^', 3, 3]], [1, 'abc', 9], [1, 'abc', 9]],
  [[1, 'abc', -10], [['&', 3, 6]], 'ER_UPDATE_FIELD', [1, 'abc', -10]],
  [[1, 'abc', 10], [['&', 3, -6]], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 1.5], [['|', 3, 1]], 'ER_UPDATE_FIELD', [1, 'abc', 1.5]],
  [[1, 'abc', 10], [['|', 3, 1.5]], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [['!', 1, 'x']], 'ER_FIELD_TYPE', 'throws'],
  [[1, 'abc', 10], [['!', 2, 'x']], [1, 'x', 'abc', 10], [1, 'x', 'abc', 10]],
  [[1, 'abc', 10], [['!', 4, 'x']], [1, 'abc', 10, 'x'], [1, 'abc', 10, 'x']],
  [[1, 'abc', 10], [['!', 5, 'x']], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10], [['!', -1, 'x']], [1, 'abc', 10, 'x'], [1, 'abc', 10, 'x']],
  [[1, 'abc', 10], [['!', -3, 'x']], [1, 'x', 'abc', 10], [1, 'x', 'abc', 10]],
  [[1, 'abc', 10], [['!', -4, 'x']], 'ER_FIELD_TYPE', 'throws'],
  [[1, 'abc', 10], [['!', -5, 'x']], 'ER_UPDATE_FIELD', [1, 'abc', 10]],
  [[1, 'abc', 10, 20], [['#', 2, 1]], [1, 10, 20], [1, 10, 20]],
  [[1, 'abc', 10, 20], [['#', 2, 10]], [1], [1]],
  [[1, 'abc', 10, 20], [['#', 3, 0]], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10, 20], [['#', 3, -1]], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10, 20], [['#', 5, 1]], 'ER_UPDATE_FIELD', [1, 'abc', 10, 20]],
  [[1, 'abc', 10, 20], [['#', -1, 1]], [1, 'abc', 10], [1, 'abc', 10]],
  [[1, 'abc', 10, 20], [['#', -2, 5]], [1, 'abc'], [1, 'abc']],
  [[1, 'abc', 10, 20], [['#', -5, 1]], 'ER_UPDATE_FIELD', [1, 'abc', 10, 20]],
  [[1, 'abc', 10, 20], [['#', 1, 1]], 'ER_FIELD_TYPE', 'throws'],
  [[1, 'hello', 10], [[':', 2, 1, 2, 'J']], [1, 'Jllo', 10], [1, 'Jllo', 10]],
  [[1, 'hello', 10], [[':', 2, -1, 1, '!']], [1, 'hello!', 10], [1, 'hello!', 10]],
  [[1, 'hello', 10], [[':', 2, -2, 1, 'X']], [1, 'hellX', 10], [1, 'hellX', 10]],
  [[1, 'hello', 10], [[':', 2, 6, 0, '!']], [1, 'hello!', 10], [1, 'hello!', 10]],
  [[1, 'hello', 10], [[':', 2, 7, 0, '!']], [1, 'hello!', 10], [1, 'hello!', 10]],
  [[1, 'hello', 10], [[':', 2, 100, 3, '!']], [1, 'hello!', 10], [1, 'hello!', 10]],
  [[1, 'hello', 10], [[':', 2, 2, -1, 'X']], [1, 'hXo', 10], [1, 'hXo', 10]],
  [[1, 'hello', 10], [[':', 2, 2, -2, 'X']], [1, 'hXlo', 10], [1, 'hXlo', 10]],
  [[1, 'hello', 10], [[':', 2, 2, -10, 'X']], [1, 'hXello', 10], [1, 'hXello', 10]],
  [[1, 'hello', 10], [[':', 2, 2, 100, 'X']], [1, 'hX', 10], [1, 'hX', 10]],
  [[1, 'hello', 10], [[':', 2, -10, 1, 'X']], 'ER_UPDATE_FIELD', [1, 'hello', 10]],
  [[1, 'hello', 10], [[':', 2, -6, 1, 'X']], [1, 'Xello', 10], [1, 'Xello', 10]],
  [[1, 'hello', 10], [[':', 2, -5, 1, 'X']], [1, 'hXllo', 10], [1, 'hXllo', 10]],
  [[1, 'hello', 10], [[':', 3, 1, 1, 'X']], 'ER_UPDATE_FIELD', [1, 'hello', 10]],
  [[1, 'hello', 10], [[':', 4, 1, 1, 'X']], 'ER_UPDATE_FIELD', [1, 'hello', 10]],
  [[1, 'abc', 10], [['=', 3, 1], ['#', 3, 1]], [1, 'abc'], [1, 'abc']],
  [[1, 'abc', 10], [['!', 2, 'x'], ['=', 3, 'y']], [1, 'x', 'y', 10], [1, 'x', 'y', 10]],
  [[1, 'abc', 10], [['#', 2, 1], ['=', 2, 'y']], [1, 'y'], [1, 'y']],
  [[1, 'abc', 10], [['+', 2, 1], ['=', 3, 'y']], 'ER_UPDATE_FIELD', [1, 'abc', 'y']],
  [[1, 'abc', 10], [['=', 1, 2]], 'ER_CANT_UPDATE_PRIMARY_KEY', [1, 'abc', 10]],
  [[1, 'abc', 10], [['=', 1, 1]], [1, 'abc', 10], [1, 'abc', 10]],
  [[1, 'abc', 10], [['+', 1, 0]], [1, 'abc', 10], [1, 'abc', 10]],
  [[1, 'abc', 10], [['!', 1, 7]], 'ER_CANT_UPDATE_PRIMARY_KEY', [1, 'abc', 10]],
  [[1, 'abc', 10], [['?', 2, 1] as unknown as UpdateOp], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [['+', 2] as unknown as UpdateOp], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [['=', 3, 5, 6] as unknown as UpdateOp], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [['=', '3', 5] as unknown as UpdateOp], 'ER_UPDATE_OP', 'throws'],
  [[1, 'abc', 10], [], [1, 'abc', 10], [1, 'abc', 10]],
  [[1, 'abc', 10], [['=', 2, null]], [1, null, 10], [1, null, 10]],
];

describe('update and upsert operators as Tarantool 2.6 applies them', () => {
  test.each(UPDATE_CASES.map((c, i) => [i + 1, ...c] as const))(
    'case %i: %j update(%j)', (_n, tuple, ops, updated, upserted) => {
      const s = new Space(`upd-${_n}`);
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.insert(tuple);
      if (typeof updated === 'string') {
        expect(codeOf(() => s.update(1, ops))).toBe(updated);
        expect(s.get(1)).toEqual(tuple);   // a failed update changes nothing
      } else {
        expect(s.update(1, ops)).toEqual(updated);
        expect(s.get(1)).toEqual(updated);
      }
      s.replace(tuple);
      if (upserted === 'throws') {
        expect(codeOf(() => s.upsert([1, 'NEW'], ops))).toBe(updated);   // refused at the call, as update is
        expect(s.get(1)).toEqual(tuple);
      } else {
        s.upsert([1, 'NEW'], ops);
        expect(s.get(1)).toEqual(upserted);
      }
    });

  test('upsert: a change of the primary key drops the whole upsert, not only that op', () => {
    const s = new Space('upsert-pk');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([9, 'zz', 1, 90]);
    s.upsert([9, 'q'], [['=', 1, 7], ['=', 2, 'changed']]);
    s.upsert([9, 'q'], [['=', 2, 'changed'], ['=', 1, 7]]);
    expect(s.select()).toEqual([[9, 'zz', 1, 90]]);
  });

  test('upsert of an absent key inserts the tuple as given, the ops unapplied; a malformed op is refused even then', () => {
    const s = new Space('upsert-absent');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.upsert([9, 'zz', 1, 90], [['+', 3, 1], ['=', 5, 1]]);
    expect(s.get(9)).toEqual([9, 'zz', 1, 90]);
    expect(codeOf(() => s.upsert([10, 'zz'], [['?', 2, 1] as unknown as UpdateOp]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.upsert([10, 'zz'], [['#', 2, 0]]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.upsert([10, 'zz'], [['=', 0, 0]]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.upsert([10, 'zz'], [['&', 3, -1]]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.upsert(['x', 'zz'], [['+', 3, 1]]))).toBe('ER_FIELD_TYPE');
    expect(s.get(10)).toBeUndefined();
  });

  // [stored, op, argument, Tarantool's result (BigInt when outside the double range) or 'overflow']
  const INT_CASES: [number | bigint, '+' | '-' | '^' | '&', number | bigint, number | bigint | 'overflow'][] = [
    [9223372036854775807n, '+', 1, 9223372036854775808n],
    [18446744073709551615n, '+', 1, 'overflow'],
    [18446744073709551615n, '-', 1, 18446744073709551614n],
    [-9223372036854775807n, '-', 2, 'overflow'],
    [-9223372036854775808n, '+', -1, 'overflow'],
    [9223372036854775808n, '+', -1, 9223372036854775807n],
    [-1, '+', 18446744073709551615n, 18446744073709551614n],
    [-1, '-', 18446744073709551615n, 'overflow'],
    [0, '-', 9223372036854775808n, -9223372036854775808n],
    [0, '-', 9223372036854775809n, 'overflow'],
    [9007199254740993n, '+', 1, 9007199254740994n],
    [1e308, '+', 1e308, Infinity],
    [18446744073709551615n, '^', 1, 18446744073709551614n],
    [5, '&', 18446744073709551615n, 5],
  ];
  test.each(INT_CASES)('%s %s %s = %s, as Tarantool (int64 min .. uint64 max)', (stored, op, arg, expected) => {
    const s = new Space('int-edges');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([1, stored]);
    if (expected === 'overflow') {
      expect(codeOf(() => s.update(1, [[op, 2, arg as number]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
      expect(s.get(1)).toEqual([1, stored]);
    } else {
      const got = s.update(1, [[op, 2, arg as number]])![1];
      expect(typeof expected === 'bigint' ? BigInt(got as number | bigint) : got).toEqual(expected);
    }
  });
});

describe('expirationd registry and stats as in the Lua module', () => {
  useTaskTimers();

  function lua(name: string, n = 0, type: 'TREE' | 'HASH' = 'TREE'): Space {
    const s = new Space(name);
    s.createIndex('primary', { type, parts: [[1, 'unsigned']] });
    for (let i = 1; i <= n; i++) s.insert([i, String(i)]);
    return s;
  }

  test('unknown names: kill, task and stats(name) throw (Lua: "task \'x\' doesn\'t exist")', () => {
    expect(codeOf(() => expirationd.kill('nope'))).toBe('ER_NO_SUCH_TASK');
    expect(codeOf(() => expirationd.task('nope'))).toBe('ER_NO_SUCH_TASK');
    expect(codeOf(() => expirationd.stats('nope'))).toBe('ER_NO_SUCH_TASK');
  });

  test('test_stats_basic: stats right after start are zero with restarts = 1', () => {
    const s = lua('stats-basic');
    const task = expirationd.start('stats_basic', s, { isExpired: () => true });
    expect(expirationd.stats('stats_basic')).toMatchObject({ checked: 0, expired: 0, restarts: 1, workingTime: 0 });
    expect(task.stats()).toEqual(expirationd.stats('stats_basic'));
  });

  test.each(['TREE', 'HASH'] as const)('test_stats_expired_count (%s): a pass over 3 tuples checks 3 and expires 3', async (type) => {
    const s = lua(`stats-count-${type}`, 3, type);
    const seen: unknown[] = [];
    expirationd.start('stats_expired_count', s, { isExpired: (t) => { seen.push(t[0]); return true; } });
    await vi.advanceTimersByTimeAsync(10);
    if (type === 'TREE') expect(seen).toEqual([1, 2, 3]);
    else expect([...seen].sort()).toEqual([1, 2, 3]);
    expect(expirationd.stats('stats_expired_count')).toMatchObject({ checked: 3, expired: 3, restarts: 1 });
    expect(s.len()).toBe(0);
  });

  test('test_stats_restarts: two restarts give restarts = 3; restart keeps the counters', async () => {
    const s = lua('stats-restarts', 2);
    const task = expirationd.start('stats_restarts', s, { isExpired: () => true });
    await vi.advanceTimersByTimeAsync(10);
    task.restart();
    task.restart();
    expect(expirationd.stats('stats_restarts')).toMatchObject({ checked: 2, expired: 2, restarts: 3 });
  });

  test('tasks() lists names; stats() without a name maps name to stats', () => {
    const s = lua('lists');
    expirationd.start('a', s, { isExpired: () => false });
    expirationd.start('b', s, { isExpired: () => false });
    expect(expirationd.tasks().sort()).toEqual(['a', 'b']);
    const all = expirationd.stats();
    expect(Object.keys(all).sort()).toEqual(['a', 'b']);
    expect(all.a).toMatchObject({ checked: 0, expired: 0, restarts: 1 });
  });

  test('start() with a running name kills the old task; the new one starts with fresh stats', async () => {
    const s = lua('same-name', 2);
    const first = expirationd.start('same', s, { isExpired: () => true });
    await vi.advanceTimersByTimeAsync(10);
    expect(first.stats().expired).toBe(2);
    const second = expirationd.start('same', s, { isExpired: () => true });
    expect(first.state).toBe('killed');
    expect(expirationd.task('same')).toBe(second);
    expect(second.stats()).toMatchObject({ checked: 0, expired: 0, restarts: 1 });
    expect(expirationd.tasks()).toEqual(['same']);
  });

  test('kill() unregisters; task() then throws, and kill is idempotent on the task', () => {
    const s = lua('kill');
    const task = expirationd.start('k', s, { isExpired: () => true });
    expirationd.kill('k');
    expect(codeOf(() => expirationd.task('k'))).toBe('ER_NO_SUCH_TASK');
    expect(() => task.kill()).not.toThrow();
  });

  test('tuples_per_iteration <= 0 and full_scan_time <= 0 are refused, as in Lua', () => {
    const s = lua('bad-opts');
    expect(codeOf(() => expirationd.start('x', s, { field: 2, scanSize: 0 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => expirationd.start('x', s, { field: 2, scanSize: -1 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => expirationd.start('x', s, { field: 2, scanTime: 0 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => expirationd.start('x', s, { field: 2, scanTime: -5 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('test_delays_and_scan_callbacks: start/success/complete per pass, with the task; the space is emptied', async () => {
    const s = lua('callbacks', 10);
    const log: string[] = [];
    const task = expirationd.start('test', s, {
      isExpired: () => true, iterationDelay: 1, fullScanDelay: 2, scanSize: 5,
      onFullScanStart: (t) => log.push(`start:${t.name}`),
      onFullScanSuccess: (t) => log.push(`success:${t.name}`),
      onFullScanError: () => log.push('error'),
      onFullScanComplete: (t) => log.push(`complete:${t.name}`),
    });
    expect(task.chunkDelay).toBe(1);   // min(5 * 3600 / 11, 1)
    await vi.advanceTimersByTimeAsync(4500);
    expect(log.slice(0, 6)).toEqual(['start:test', 'success:test', 'complete:test', 'start:test', 'success:test', 'complete:test']);
    expect(s.len()).toBe(0);
  });

  test('test_error_callback: onFullScanError(task, err) gets the error is_tuple_expired raised, then onFullScanComplete', async () => {
    const s = lua('error-cb', 3);
    const log: unknown[] = [];
    const task = expirationd.start('test', s, {
      isExpired: () => { throw new Error('The error is occurred'); },
      onFullScanError: (t, err) => log.push(['error', t === task, (err as Error).message]),
      onFullScanComplete: () => log.push('complete'),
    });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(10);
    expect(log.slice(0, 2)).toEqual([['error', true, 'The error is occurred'], 'complete']);
    expect(task.stats().restarts).toBeGreaterThan(1);   // Lua: the guardian restarts the worker
    expect(s.len()).toBe(3);
  });
});

describe('the capped C module: positional form, expiry rule, pacing', () => {
  useTaskTimers();

  function tester(name: string, pk: 'TREE' | 'HASH' = 'TREE'): Space {
    const s = new Space(name);
    s.createIndex('primary', { type: pk, parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    return s;
  }

  test('start(name, space, "primary", "exp", 3, 1024, 3600) is the indexed (breakable) task', () => {
    const s = tester('positional');
    const task = expirationd.start('indexed', s, 'primary', 'exp', 3, 1024, 3600);
    expect(task.earlyBreak).toBe(true);
    const full = expirationd.start('non-indexed', s, 'primary', 'primary', 3, 1024, 3600);
    expect(full.earlyBreak).toBe(false);
  });

  test('chunk delay is the C formula: min(scan_size * scan_time / (len + 1), 1)', () => {
    const s = tester('delay');
    for (let i = 1; i <= 10; i++) s.insert([i, 'x', 4e9]);
    expect(expirationd.start('d1', s, 'primary', 'primary', 3, 2, 1).chunkDelay).toBeCloseTo(2 / 11, 12);
    expect(expirationd.start('d2', s, 'primary', 'exp', 3, 1024, 3600).chunkDelay).toBe(1);
    expect(expirationd.start('d3', s, 'primary', 'exp', 3, 1, 5).chunkDelay).toBeCloseTo(5 / 11, 12);
  });

  test('a tuple expires when its TTL <= now (C: `val > now` is live); a missing or non-numeric TTL never', async () => {
    const clock = 1000;
    const s = new Space('c-rule');
    s.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.insertMany([[1, 'eq', 1000], [2, 'past', 999], [3, 'live', 1001], [4, 'none'], [5, 'str', '5']]);
    const task = expirationd.start('c-rule', s, { field: 3, now: () => clock });
    await vi.advanceTimersByTimeAsync(10);
    expect(ids(s.select()).sort()).toEqual([3, 4, 5]);
    expect(task.stats()).toMatchObject({ checked: 5, expired: 2 });
  });

  test('an indexed task breaks at the first live tuple and deletes through rmIndex from every index', async () => {
    let clock = 100;
    const s = tester('c-break', 'HASH');
    s.insertMany([[1, 'a', 50], [2, 'b', 60], [3, 'c', 200], [4, 'd', 300]]);
    const task = expirationd.start('c-break', s, { rmIndex: 'primary', itIndex: 'exp', field: 3, now: () => clock });
    await vi.advanceTimersByTimeAsync(10);
    expect(ids(s.select()).sort()).toEqual([3, 4]);
    expect(ids(s.index.exp.select())).toEqual([3, 4]);
    expect(task.stats()).toMatchObject({ checked: 3, expired: 2, fullScans: 1 });   // expired + 1
    clock = 250;
    await vi.advanceTimersByTimeAsync(2000);
    expect(ids(s.select())).toEqual([4]);
  });

  test('a secondary HASH itIndex is walked whole, as the C module walks it with ITER_ALL', async () => {
    const clock = 100;
    const s = new Space('c-hash-it');
    s.createIndex('primary', { parts: [[1, 'unsigned']] });
    s.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    s.insertMany([[1, 'a', 500], [2, 'b', 50], [3, 'c', 600], [4, 'd', 60]]);
    const task = expirationd.start('c-hash-it', s, 'primary', 'email', 3, 1024, 3600);
    expect(task.earlyBreak).toBe(false);
    task.kill();
    const t2 = expirationd.start('c-hash-it', s, { rmIndex: 'primary', itIndex: 'email', field: 3, now: () => clock });
    await vi.advanceTimersByTimeAsync(10);
    expect(ids(s.select())).toEqual([1, 3]);
    expect(t2.stats()).toMatchObject({ checked: 4, expired: 2 });
  });

  test('rmIndex must be unique (C: "illegal params" when rm_index.unique is false)', () => {
    const s = tester('c-unique');
    expect(codeOf(() => expirationd.start('u', s, 'exp', 'exp', 3, 1024, 3600))).toBe('ER_ILLEGAL_PARAMS');
  });

  test('field 0 is refused, as the C module refuses field_no 0', () => {
    const s = tester('c-field0');
    expect(codeOf(() => expirationd.start('f0', s, 'primary', 'primary', 0, 1024, 3600))).toBe('ER_ILLEGAL_PARAMS');
  });
});

describe('documented divergences', () => {
  // Tarantool 2.6 refuses an explicit EQ with a zero-part key on a HASH index ("HASH index does
  // not support selects via a partial key (expected 2 parts, got 0)"). README "Index": "'EQ' with
  // no key, or an empty one, reads every tuple on either kind".
  test('HASH EQ with no key or an empty one reads every tuple, as on a TREE', () => {
    const s = new Space('hash-eq-empty');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('h2', { type: 'HASH', parts: [[2, 'string'], [3, 'unsigned']] });
    s.insert([1, 'a', 1]);
    s.insert([2, 'a', 2]);
    for (const key of [[], undefined]) {
      expect(ids(s.index.h2.select(key as never, { iterator: 'EQ' })).sort()).toEqual([1, 2]);
      expect(s.index.h2.count(key as never, { iterator: 'EQ' })).toBe(2);
    }
    expect(codeOf(() => s.index.h2.select(['a'], { iterator: 'EQ' }))).toBe('ER_KEY_PART_COUNT');
  });
});
