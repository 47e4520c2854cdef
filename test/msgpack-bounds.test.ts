// A tuple, a batch and a key cut at every byte: each prefix is refused with its exact reason, and
// nothing is read past the input (issue 14). The reader's length checks are mutation-tested
// (scripts/mutants/native.json, mp-*): a bounds check one byte too loose accepts a string that
// ends one byte past the input. For a single tuple the refusal looks the same either way (the
// value then ends past the input), so the batch form is the sharp one: there the loose check
// takes the cut tuple for a whole one and reports "trailing bytes" for a tuple that does not
// exist. native/test/msgpack_test.cc cuts the same shapes in exact-size heap buffers, where ASan
// sees the read one byte past.
import { Packr } from 'msgpackr';
import { describe, expect, test } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { handleOf } from '../src/space/space.js';

const packr = new Packr({ useRecords: false });
const TUPLE_FORMAT = 'Tuple is not valid MessagePack (truncated, malformed, trailing bytes, a string that is not ' +
  'well-formed UTF-8 such as a lone surrogate, or nested deeper than 32)';
const KEY_FORMAT = 'Key must be a MessagePack array of parts (strings well-formed UTF-8)';

// Every length-carrying shape the reader knows: fixstr, str8, str16, bin8, fixarray, array16,
// fixmap, map16, int8/16/32/64, uint8/16/32/64, float32/64, nil, bool, multi-byte UTF-8.
function sample(): unknown[] {
  const map16: Record<string, number> = {};
  for (let i = 0; i < 17; i++) map16[`k${i}`] = i;
  return [
    7, 'héllo', 'x'.repeat(40), 'y'.repeat(300), -5, -300, -70000, -(2 ** 40), 200, 60000, 4_000_000_000, 2 ** 40,
    1.5, Math.fround(0.25), null, true, false, Buffer.from([1, 2, 3]), [1, [2, 'ab']],
    Array.from({ length: 20 }, (_, i) => i), { a: 'b' }, map16, '€𝄞', 'z',
  ];
}

function refusal(fn: () => unknown): { code: string; message: string } | undefined {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof CappedError)) throw e;
    return { code: e.code, message: e.message };
  }
  return undefined;
}

/** A fresh copy of exactly these bytes (its own allocation, nothing after it). */
const exact = (bytes: Uint8Array): Buffer => Buffer.from(Uint8Array.prototype.slice.call(bytes));

describe('truncated MessagePack', () => {
  const whole = packr.pack(sample());

  test('the whole tuple is accepted, and reads back as written', () => {
    const space = new Space('whole');
    space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    handleOf(space).insert(exact(whole), false);
    expect(space.get(7)).toEqual(packr.unpack(whole));
  });

  test('a tuple cut at every position is refused as not valid MessagePack, and nothing is stored', () => {
    const space = new Space('cut');
    space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    const h = handleOf(space);
    for (let k = 1; k < whole.length; k++) {
      const prefix = exact(whole.subarray(0, k));
      expect(refusal(() => h.insert(prefix, false)), `cut at ${k} of ${whole.length}`).toEqual({ code: 'ER_TUPLE_FORMAT', message: TUPLE_FORMAT });
      // The same bytes framed in a larger Buffer whose tail would complete them: only [start, end) is read.
      const framed = Buffer.concat([Buffer.from([0xc0]), whole, Buffer.from([0xc0])]);
      expect(refusal(() => h.insert(framed, false, 1, 1 + k)), `framed cut at ${k}`).toEqual({ code: 'ER_TUPLE_FORMAT', message: TUPLE_FORMAT });
    }
    expect(space.len()).toBe(0);
    space.checkIntegrity();
  });

  test('a batch whose only tuple is cut at every position names tuple #0 and inserts nothing', () => {
    const space = new Space('batch');
    space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
    const h = handleOf(space);
    for (let k = 1; k < whole.length; k++) {
      const batch = exact(Buffer.concat([Buffer.from([0x91]), whole.subarray(0, k)]));
      expect(refusal(() => h.insertMany(batch)), `cut at ${k} of ${whole.length}`).toEqual({
        code: 'ER_TUPLE_FORMAT',
        message: 'insertMany(): tuple #0: Tuple is not valid MessagePack; nothing was inserted',
      });
    }
    // A whole tuple first, then the cut one: the reason names tuple #1, and the first is not kept.
    for (let k = 1; k < whole.length; k++) {
      const batch = exact(Buffer.concat([Buffer.from([0x92]), whole, whole.subarray(0, k)]));
      expect(refusal(() => h.insertMany(batch)), `second cut at ${k}`).toEqual({
        code: 'ER_TUPLE_FORMAT',
        message: 'insertMany(): tuple #1: Tuple is not valid MessagePack; nothing was inserted',
      });
    }
    expect(space.len()).toBe(0);
  });

  test('a key cut at every position is refused as a malformed key', () => {
    const space = new Space('keys');
    space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'string' }, { field: 2, type: 'string' }] });
    space.insert(['a'.repeat(40), 'b'.repeat(300)]);
    const key = packr.pack(['a'.repeat(40), 'b'.repeat(300)]);
    const h = handleOf(space);
    const scratch = Buffer.alloc(1024);
    expect(h.get(0, exact(key), scratch)).not.toBeNull();
    for (let k = 1; k < key.length; k++) {
      const prefix = exact(key.subarray(0, k));
      expect(refusal(() => h.get(0, prefix, scratch)), `get cut at ${k}`).toEqual({ code: 'ER_KEY_TYPE', message: KEY_FORMAT });
      expect(refusal(() => h.select(0, prefix, 0, Infinity, 0, scratch)), `select cut at ${k}`).toEqual({ code: 'ER_KEY_TYPE', message: KEY_FORMAT });
    }
  });
});
