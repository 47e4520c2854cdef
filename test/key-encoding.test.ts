// Key and field encodings that only some lengths and values reach: strings of 256 to 65535 bytes
// are str16 on the wire (a one-byte type, a two-byte length), and the engine steps over them to
// reach the fields and key parts after them; a JavaScript number key is encoded by the addon
// itself (the scalar fast path), an integral one as MessagePack's integer, 0 and -0 included, the
// same as an array key holding it, so a key of the wrong type is described the same either way.
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type Tuple } from '../src/index.js';

// Every string encoding: fixstr, str8, str16 (its shortest, a middle and its longest) and str32.
const LENGTHS = [0, 31, 32, 255, 256, 257, 1000, 65535, 65536];
// Ends in 'x' (0x78): a reader one byte short of its end would see a small integer there.
const text = (len: number, tag: number): string => (len === 0 ? '' : `${String.fromCharCode(0x61 + (tag % 26))}${'x'.repeat(len - 1)}`);

// pk unsigned (field 1); a long string (field 2) in front of unique TREE 'after' (field 3) and
// unique HASH 'hashed' (field 4); composite TREE and HASH indexes on [string, unsigned].
function fixture(): Space {
  const space = new Space('key-encoding');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('after', { parts: [[3, 'unsigned']] });
  space.createIndex('hashed', { type: 'HASH', parts: [[4, 'integer']] });
  space.createIndex('pair', { parts: [[2, 'string'], [3, 'unsigned']] });
  space.createIndex('pairHash', { type: 'HASH', parts: [[2, 'string'], [3, 'unsigned']] });
  return space;
}

describe('str16 fields and key parts', () => {
  it('fields after a string of every length are indexed and found by their own value', () => {
    const space = fixture();
    const rows: Tuple[] = LENGTHS.map((len, i) => [i + 1, text(len, i), 1000 + i, -(1000 + i)]);
    for (const t of rows) space.insert(t);
    space.checkIntegrity();
    for (const [i, t] of rows.entries()) {
      const what = `a ${LENGTHS[i]}-byte string before the field`;
      expect(space.index.after.get(1000 + i), what).toEqual(t);
      expect(space.index.hashed.get(-(1000 + i)), what).toEqual(t);
      expect(space.index.after.select(1000 + i), what).toEqual([t]);
      expect(space.index.after.count(1000 + i, { iterator: 'GE' }), what).toBe(rows.length - i);
    }
    expect(space.index.after.select().map((t) => t[0])).toEqual(rows.map((t) => t[0]));
    // The misread last byte of a string, 'x', is 120: no tuple has that value.
    expect(space.index.after.get(120)).toBeUndefined();
  });

  it('a composite key whose string part is str16 reaches its second part', () => {
    const space = fixture();
    const rows: [number, string, number, number][] = [];
    for (const [i, len] of LENGTHS.entries()) {
      // Two tuples per string, told apart by the second part only.
      rows.push([2 * i + 1, text(len, i), 2000 + 2 * i, 2 * i + 1], [2 * i + 2, text(len, i), 2001 + 2 * i, 2 * i + 2]);
    }
    for (const t of rows) space.insert(t);
    for (const t of rows) {
      const what = `a ${t[1].length}-byte string part`;
      expect(space.index.pair.get([t[1], t[2]]), what).toEqual(t);
      expect(space.index.pairHash.get([t[1], t[2]]), what).toEqual(t);
      expect(space.index.pair.select([t[1], t[2]]), what).toEqual([t]);
      expect(space.index.pair.select([t[1], t[2]], { iterator: 'GT' })[0], what).toEqual(rows[rows.indexOf(t) + 1]);
    }
    // A second part that is not an unsigned integer is refused, whatever the string's length.
    for (const len of LENGTHS) {
      expect(() => space.index.pair.get([text(len, 0), 'x'])).toThrow(CappedError);
    }
  });

  it('a key part after a str16 part of the wrong type is described as itself', () => {
    const space = fixture();
    for (const len of [255, 256, 65535]) {
      let error: unknown;
      try {
        space.index.pair.get([text(len, 0), -5]);
      } catch (e) {
        error = e;
      }
      expect(error, `${len}`).toBeInstanceOf(CappedError);
      expect((error as CappedError).code).toBe('ER_KEY_TYPE');
      expect((error as Error).message, `${len}`).toContain('part 2');
      expect((error as Error).message, `${len}`).toContain('integer -5');
    }
  });
});

describe('number keys encoded by the addon', () => {
  function refusal(fn: () => unknown): string {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(CappedError);
      expect((e as CappedError).code).toBe('ER_KEY_TYPE');
      return (e as Error).message;
    }
    throw new Error('expected ER_KEY_TYPE, nothing thrown');
  }

  it('0 and -0 find the tuple stored under 0, by get, select, count and delete', () => {
    for (const type of ['TREE', 'HASH'] as const) {
      const space = new Space(`zero-${type}`);
      space.createIndex('pk', { type, parts: [[1, 'unsigned']] });
      space.createIndex('num', { parts: [[2, 'number']] });
      space.insert([0, 0]);
      space.insert([1, 0.5]);
      for (const key of [0, -0]) {
        expect(space.get(key), `${type} get(${Object.is(key, -0) ? '-0' : '0'})`).toEqual([0, 0]);
        expect(space.select(key), type).toEqual([[0, 0]]);
        expect(space.index.num.select(key), type).toEqual([[0, 0]]);
        expect(space.index.num.count(key, { iterator: 'LE' }), type).toBe(1);
      }
      expect(space.delete(-0)).toEqual([0, 0]);
      expect(space.len()).toBe(1);
    }
  });

  it('a number key of the wrong type is described as MessagePack encodes it, as its array key is', () => {
    const space = new Space('zero-string');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.createIndex('name', { parts: [[2, 'string']] });
    space.insert([1, 'a']);
    const cases: [number, string][] = [[0, 'unsigned 0'], [-0, 'unsigned 0'], [1, 'unsigned 1'], [-1, 'integer -1'], [0.5, 'number 0.5'], [-0.5, 'number -0.5']];
    for (const [key, described] of cases) {
      const what = Object.is(key, -0) ? '-0' : String(key);
      for (const fn of [() => space.index.name.get(key), () => space.index.name.select(key), () => space.index.name.count(key)]) {
        expect(refusal(fn), what).toContain(`got ${described}`);
      }
      if (!Object.is(key, -0)) expect(refusal(() => space.index.name.get(key)), what).toBe(refusal(() => space.index.name.get([key])));
    }
  });
});
