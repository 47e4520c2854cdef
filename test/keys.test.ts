// Key parts compare by value whatever their MessagePack encoding: numbers by value across
// uint/int/float32/float64 encodings (msgpackr writes integers above 2^32, such as Date.now(), as
// float64), strings bytewise by UTF-8, booleans false < true; BigInt keys are exact.
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type FieldType, type Key, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';

function single(type: FieldType, index: 'TREE' | 'HASH' = 'TREE'): Space {
  const space = new Space(`keys-${type}`);
  space.createIndex('pk', { type: index, parts: [[1, type]] });
  return space;
}

// Inserts in a scrambled order and returns the first field of every tuple in index order.
function order(space: Space, values: unknown[]): unknown[] {
  const scrambled = values.map((v, i) => ({ v, k: (i * 7919) % values.length })).sort((a, b) => a.k - b.k);
  for (const { v } of scrambled) space.insert([v]);
  return space.select().map((t) => t[0]);
}

describe('numbers in unsigned fields', () => {
  it('Date.now() (float64 on the wire) orders by value among small integers', () => {
    const space = single('unsigned');
    const now = Date.now();
    const values = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40, now - 1, now, now + 1, 2 ** 41, 2 ** 53 - 1];
    expect(order(space, values)).toEqual(values);
    space.checkIntegrity();
  });

  it('finds a float64-encoded value by scalar, array and BigInt keys', () => {
    const space = single('unsigned');
    const now = Date.now();
    space.insert([now, 'row']);
    space.insert([2 ** 41, 'big']);
    expect(space.get(now)).toEqual([now, 'row']);
    expect(space.get([now])).toEqual([now, 'row']);
    expect(space.get(BigInt(now))).toEqual([now, 'row']);
    expect(space.get([BigInt(now)])).toEqual([now, 'row']);
    expect(space.get(2 ** 41)).toEqual([2 ** 41, 'big']);
    expect(space.select(now, { iterator: 'LT' })).toEqual([]);
    expect(space.select(now, { iterator: 'GT' })).toEqual([[2 ** 41, 'big']]);
    expect(codeOf(() => space.insert([BigInt(now), 'dup']))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([2 ** 41, 'dup']))).toBe('ER_DUPLICATE_KEY');
  });

  it('[1, "a", Date.now()] indexes correctly in an unsigned TTL field', () => {
    const space = new Space('ttl');
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    const exp = space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const now = Date.now();
    space.insert([1, 'a', now]);
    space.insert([2, 'b', now - 1000]);
    space.insert([3, 'c', 5]);
    space.insert([4, 'd', now + 1000]);
    expect(exp.select(now, { iterator: 'LE' }).map((t) => t[0])).toEqual([1, 2, 3]);
    expect(exp.select(now, { iterator: 'GT' }).map((t) => t[0])).toEqual([4]);
    expect(exp.select(now).map((t) => t[0])).toEqual([1]);
    expect(exp.min()).toEqual([3, 'c', 5]);
  });

  it('HASH finds values across encodings too', () => {
    const space = single('unsigned', 'HASH');
    const now = Date.now();
    for (const v of [1, 2 ** 32, now, 2 ** 40]) space.insert([v]);
    for (const v of [1, 2 ** 32, now, 2 ** 40]) {
      expect(space.get(v)).toEqual([v]);
      expect(space.get(BigInt(v))).toEqual([v]);
    }
    expect(codeOf(() => space.insert([BigInt(now)]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([1n]))).toBe('ER_DUPLICATE_KEY');
  });

  it('refuses 1.5, NaN, negatives, Infinity and values of 2^64 and above', () => {
    const space = single('unsigned');
    for (const bad of [1.5, NaN, -1, -0.5, -(2 ** 63), -(2n ** 63n), -(2 ** 40), Infinity, 2 ** 64, 1e300, '1', true, null]) {
      expect(codeOf(() => space.insert([bad])), String(bad)).toBe('ER_FIELD_TYPE');
    }
    for (const bad of [1.5, NaN, -1, 2 ** 64, 'x']) {
      expect(codeOf(() => space.select(bad as Key)), String(bad)).toBe('ER_KEY_TYPE');
    }
    expect(space.len()).toBe(0);
  });

  it('2^53 and 2^53 + 1 are different keys, as are 2^64 - 1 and 2^64 - 2', () => {
    const space = single('unsigned');
    space.insert([2n ** 53n]);
    space.insert([2n ** 53n + 1n]);
    space.insert([2n ** 64n - 1n]);
    space.insert([2n ** 64n - 2n]);
    expect(codeOf(() => space.insert([2 ** 53]))).toBe('ER_DUPLICATE_KEY');
    space.insert([2 ** 53 + 2]);
    expect(space.select().map((t) => BigInt(t[0] as number | bigint))).toEqual(
      [2n ** 53n, 2n ** 53n + 1n, 2n ** 53n + 2n, 2n ** 64n - 2n, 2n ** 64n - 1n]);
    expect(space.get(2n ** 53n + 1n)).toEqual([2n ** 53n + 1n]);
    expect(space.select(2 ** 53, { iterator: 'GT', limit: 1 })).toEqual([[2n ** 53n + 1n]]);
    expect(space.select(2n ** 64n - 1n, { iterator: 'LT', limit: 1 })).toEqual([[2n ** 64n - 2n]]);
  });
});

describe('numbers in integer fields', () => {
  it('negative integers order by value across encodings', () => {
    const space = single('integer');
    const values = [-(2n ** 63n), -(2 ** 53) + 1, -(2 ** 40), -(2 ** 32) - 1, -(2 ** 31) - 1, -(2 ** 31), -32769, -32768, -129, -128,
      -33, -32, -1, 0, 1, 2 ** 31, 2 ** 40, 2n ** 63n - 1n, 2n ** 64n - 1n];
    const got = order(space, values);
    expect(got.map((v) => BigInt(v as number | bigint))).toEqual(values.map((v) => BigInt(v)));
    space.checkIntegrity();
  });

  it('accepts the int64 and uint64 range and refuses values outside it, 1.5 and NaN', () => {
    const space = single('integer');
    space.insert([-(2 ** 63)]);
    space.insert([2 ** 63]);
    for (const bad of [2 ** 64, -(2 ** 63) - 1e4, 1.5, -0.5, NaN, Infinity, -Infinity, 'x', false]) {
      expect(codeOf(() => space.insert([bad])), String(bad)).toBe('ER_FIELD_TYPE');
    }
    for (const bad of [2 ** 64, -(2 ** 63) - 1e4, 1.5, NaN]) {
      expect(codeOf(() => space.select(bad)), String(bad)).toBe('ER_KEY_TYPE');
    }
    expect(space.len()).toBe(2);
  });

  it('a float64-encoded negative integer equals its int64 encoding', () => {
    const space = single('integer');
    space.insert([-(2 ** 40)]);
    expect(space.get(-(2n ** 40n))).toEqual([-(2 ** 40)]);
    expect(codeOf(() => space.insert([-(2n ** 40n)]))).toBe('ER_DUPLICATE_KEY');
  });

  it('BigInt values outside 64 bits are refused with a CappedError', () => {
    const space = single('integer');
    for (const bad of [2n ** 64n, -(2n ** 63n) - 1n]) {
      let error: unknown;
      try {
        space.insert([bad]);
      } catch (e) {
        error = e;
      }
      expect(error, String(bad)).toBeInstanceOf(CappedError);
      expect(['ER_FIELD_TYPE', 'ER_TUPLE_FORMAT']).toContain((error as CappedError).code);
      expect(codeOf(() => space.select(bad)), String(bad)).toBe('ER_KEY_TYPE');
    }
    expect(space.len()).toBe(0);
  });
});

describe('numbers in number fields', () => {
  it('integers and floats of every encoding order by value', () => {
    const space = single('number');
    const values = [-Infinity, -1e300, -(2 ** 63), -(2 ** 40) - 0.5, -3, -2.5, -1, -0.5, 0, 1e-300, 0.5, 1, 1.5, 2,
      2 ** 31 + 0.5, 2 ** 32, 2 ** 53, 2n ** 53n + 1n, 2 ** 64, 1e300, Infinity];
    const got = order(space, values);
    expect(got).toEqual(values);
    space.checkIntegrity();
  });

  it('an integer and the equal float are the same key, and 0 equals -0', () => {
    const space = single('number');
    space.insert([2]);
    space.insert([0]);
    space.insert([2 ** 40]);
    expect(codeOf(() => space.insert([2.0]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([-0]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([2n]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([2n ** 40n]))).toBe('ER_DUPLICATE_KEY');
    expect(space.get(-0)).toEqual([0]);
    expect(space.get(2n)).toEqual([2]);
    expect(space.select(1.999, { iterator: 'GT', limit: 1 })).toEqual([[2]]);
    expect(space.select(2.001, { iterator: 'LT', limit: 1 })).toEqual([[2]]);
    expect(space.select(2, { iterator: 'GT', limit: 1 })).toEqual([[2 ** 40]]);
  });

  it('float32-sized and float64 values compare exactly', () => {
    const space = single('number');
    space.insert([0.1]);
    space.insert([0.30000000000000004]);
    space.insert([0.3]);
    expect(space.select().map((t) => t[0])).toEqual([0.1, 0.3, 0.30000000000000004]);
    expect(space.get(0.3)).toEqual([0.3]);
  });

  it('refuses NaN as a value and as a key; accepts ±Infinity', () => {
    const space = single('number');
    expect(codeOf(() => space.insert([NaN]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => space.select(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => space.select([NaN], { iterator: 'GE' }))).toBe('ER_KEY_TYPE');
    space.insert([Infinity]);
    space.insert([-Infinity]);
    expect(space.select(0, { iterator: 'GE' })).toEqual([[Infinity]]);
    expect(space.len()).toBe(2);
  });
});

describe('strings', () => {
  it('compare bytewise by UTF-8, not by UTF-16 code units or locale', () => {
    const space = single('string');
    // '\uFF71' (EF BD B1) sorts before '😀' (F0 9F 98 80) in UTF-8, after it in UTF-16.
    const values = ['😀', '\uFF71', '', 'a', 'A', 'Z', 'ab', 'a\u0000', 'a\u0000b', 'b', 'é', 'e\u0301', 'z', '€', '~', '\u007f', '\u0080'];
    const expected = [...values].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(expected.indexOf('\uFF71')).toBeLessThan(expected.indexOf('😀'));
    expect(order(space, values)).toEqual(expected);
    space.checkIntegrity();
  });

  it('a string is a prefix-ordered key: shorter first, and GT/LT by bytes', () => {
    const space = single('string');
    for (const s of ['ab', 'abc', 'abd', 'b', 'aa']) space.insert([s]);
    expect(space.select('ab', { iterator: 'GT' }).map((t) => t[0])).toEqual(['abc', 'abd', 'b']);
    expect(space.select('abc', { iterator: 'LT' }).map((t) => t[0])).toEqual(['ab', 'aa']);
    expect(space.select('ab').map((t) => t[0])).toEqual(['ab']);
  });

  it('long strings (str8/str16/str32 encodings) compare by content', () => {
    const space = single('string');
    const values = ['x'.repeat(31), 'x'.repeat(32), 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(65535), 'x'.repeat(65536), 'y'];
    expect(order(space, values)).toEqual(values);
    expect(space.get('x'.repeat(65536))).toEqual(['x'.repeat(65536)]);
  });

  it('HASH finds strings of every length and UTF-8', () => {
    const space = single('string', 'HASH');
    const values = ['', 'a', 'é', '😀', 'x'.repeat(300), 'e\u0301'];
    for (const v of values) space.insert([v]);
    for (const v of values) expect(space.get(v)).toEqual([v]);
    expect(space.get('e')).toBeUndefined();
    expect(codeOf(() => space.insert(['é']))).toBe('ER_DUPLICATE_KEY');
  });

  it('refuses non-strings', () => {
    const space = single('string');
    for (const bad of [1, true, null, ['a'], Buffer.from('a')]) {
      expect(codeOf(() => space.insert([bad])), String(bad)).toBe('ER_FIELD_TYPE');
    }
    expect(codeOf(() => space.select(1))).toBe('ER_KEY_TYPE');
  });
});

describe('booleans', () => {
  it('order false before true and refuse 0 and 1', () => {
    const space = single('boolean');
    expect(order(space, [false, true])).toEqual([false, true]);
    expect(space.select(true, { iterator: 'LT' })).toEqual([[false]]);
    expect(space.select(false, { iterator: 'GT' })).toEqual([[true]]);
    expect(codeOf(() => space.insert([0]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => space.insert(['true']))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => space.select(1))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => space.insert([true]))).toBe('ER_DUPLICATE_KEY');
  });

  it('work as a part of a multipart key', () => {
    const space = new Space('mb');
    space.createIndex('pk', { parts: [[1, 'boolean'], [2, 'integer']] });
    for (const b of [true, false]) for (const n of [1, -1]) space.insert([b, n]);
    expect(space.select().map((t) => `${t[0]}${t[1]}`)).toEqual(['false-1', 'false1', 'true-1', 'true1']);
    expect(space.select([true], { iterator: 'LT' }).map((t) => `${t[0]}${t[1]}`)).toEqual(['false1', 'false-1']);
  });
});

describe('BigInt keys and values', () => {
  it('are stored and returned exactly, and found by number or BigInt keys', () => {
    const space = new Space('big');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    const sec = space.createIndex('sec', { unique: false, parts: [[2, 'integer']] });
    space.insert([1n, -(2n ** 62n)]);
    space.insert([2, 2n ** 62n]);
    space.insert([2n ** 60n, 5]);
    const t = space.get(2n ** 60n) as Tuple;
    expect(BigInt(t[0] as bigint)).toBe(2n ** 60n);
    expect(space.get(1)).toBeDefined();
    expect(space.get([1n])).toBeDefined();
    expect(sec.select(-(2n ** 62n)).length).toBe(1);
    expect(sec.select(0n, { iterator: 'GE' }).map((x) => BigInt(x[1] as bigint))).toEqual([5n, 2n ** 62n]);
    expect(codeOf(() => sec.select([0n, 1n], { iterator: 'GE' }))).toBe('ER_KEY_PART_COUNT');
  });

  it('multipart keys mix BigInt and other parts', () => {
    const space = new Space('bigm');
    space.createIndex('pk', { parts: [[1, 'integer'], [2, 'string']] });
    space.insert([-(2n ** 63n), 'min']);
    space.insert([2n ** 63n - 1n, 'max']);
    space.insert([0, 'zero']);
    expect(space.get([-(2n ** 63n), 'min'])).toEqual([-(2n ** 63n), 'min']);
    expect(space.select([0n], { iterator: 'GT' }).map((t) => t[1])).toEqual(['max']);
    expect(space.select([0], { iterator: 'LT' }).map((t) => t[1])).toEqual(['min']);
  });
});
