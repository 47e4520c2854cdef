// The read/update hot path: the JavaScript decoder of small flat tuples (codec.ts decodeFlat)
// must give what msgpackr gives, its encoder (encodeFlat, behind packRange) must write the very
// bytes msgpackr writes, and update() with one numeric operation (the addon's
// updateNumber, plain arguments) must do and refuse exactly what the packed-Buffer path does.
// bench:space's floor under them (native.testing.floorTuple) must write what a get() would.
import { describe, expect, it } from 'vitest';
import { Packr, Unpackr } from 'msgpackr';
import { CappedError, Space, type Tuple } from '../src/index.js';
import { handleOf } from '../src/space/space.js';
import { decodeOne, packRange, scratchBuffer } from '../src/native/codec.js';
import { checkOps, opsBufferOf, packOpsFast, type UpdateOp } from '../src/space/update.js';
import { mulberry32 } from '../bench/lib/random.js';

const SEED = Number(process.env.HOTPATH_SEED ?? 20261123);
const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, copyBuffers: true });

function outcome(fn: () => unknown): unknown {
  try {
    return { value: fn() };
  } catch (error) {
    if (!(error instanceof CappedError)) throw error;
    return { code: error.code, message: error.message };
  }
}

describe('decoding a returned tuple', () => {
  const NUMBERS = [0, -0, 1, -1, 31, -32, -33, 127, 128, -128, -129, 255, 256, 32767, -32768, -32769, 65535, 65536,
    2 ** 31 - 1, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53, -(2 ** 53), 1.5, -2.25, 1e300, Infinity,
    -Infinity, Number.MIN_VALUE];
  const STRINGS = ['', 'a', 'abcdefg', 'abcdefgh', 'x'.repeat(31), 'x'.repeat(32), 'é', 'naïve', 'z\u0000z', '日本',
    'user12345@tarantool.io', '\u007f'];
  function value(rand: () => number): unknown {
    switch (Math.floor(rand() * 9)) {
      case 0: case 1: return NUMBERS[Math.floor(rand() * NUMBERS.length)];
      case 2: return Math.floor(rand() * 2 ** 32) - 2 ** 31;
      case 3: case 4: return STRINGS[Math.floor(rand() * STRINGS.length)];
      case 5: return rand() < 0.5 ? null : rand() < 0.5;
      case 6: return rand() * 1e6 - 5e5;
      case 7: return rand() < 0.5 ? 123456789012345678n : [1, 'a'];
      default: return Buffer.from([1, 2, 3]);
    }
  }

  it(`gives what msgpackr gives, for random tuples of every field kind (seed ${SEED})`, () => {
    const rand = mulberry32(SEED);
    const space = new Space('decode');
    space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    let flat = 0;
    for (let id = 0; id < 3000; id++) {
      const fields = Math.floor(rand() * 20);
      const tuple: unknown[] = [id];
      for (let f = 0; f < fields; f++) tuple.push(value(rand));
      space.insert(tuple);
      const expected = unpackr.unpack(packr.pack(tuple)) as Tuple;
      const got = space.get(id);
      try {
        expect(got).toStrictEqual(expected);
        for (let f = 0; f < expected.length; f++) {
          if (typeof expected[f] !== 'object') expect(Object.is(got![f], expected[f])).toBe(true);  // -0
        }
      } catch (error) {
        throw new Error(`seed ${SEED}, tuple ${id}: ${(error as Error).message}`);
      }
      if (fields < 15 && tuple.every((v) => typeof v === 'number' || v === null || typeof v === 'boolean')) flat++;
    }
    expect(flat).toBeGreaterThan(50);  // the flat path ran, not only the msgpackr one
  });

  it(`packs tuples into the very bytes msgpackr writes, on the flat path and off it (seed ${SEED})`, () => {
    const rand = mulberry32(SEED + 1);
    const flatOut = packRange([1]);  // the flat encoder's own Buffer (msgpackr's is another)
    let flat = 0;
    for (let id = 0; id < 5000; id++) {
      const fields = Math.floor(rand() * 18);
      const tuple: unknown[] = [];
      for (let f = 0; f < fields; f++) tuple.push(rand() < 0.1 ? Math.floor(rand() * 2 ** 33) - 2 ** 32 : value(rand));
      const r = packRange(tuple);
      const got = Buffer.from(r.subarray(r.start, r.end));
      const expected = packr.pack(tuple);
      if (!got.equals(expected)) throw new Error(`seed ${SEED}, tuple ${id} ${JSON.stringify(tuple, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}: ${got.toString('hex')} != ${expected.toString('hex')}`);
      const flatShape = fields < 16 && tuple.every((v) => typeof v === 'number' || v === null || typeof v === 'boolean' ||
        (typeof v === 'string' && v.length < 32 && /^[\x00-\x7f]*$/.test(v)));
      expect(r === flatOut, `tuple ${id}: flat path taken`).toBe(flatShape);
      if (r === flatOut) flat++;
    }
    expect(flat).toBeGreaterThan(200);  // the flat encoder ran, not only msgpackr
    // The edges one by one: every integer width and sign, -0, NaN, the infinities, 31 and 32
    // characters, a non-ASCII character, 15 and 16 fields.
    const edges: unknown[][] = [...NUMBERS.map((v) => [v]), [NaN], [Number.MAX_VALUE], ['x'.repeat(31)], ['x'.repeat(32)],
      ['\u007f'], ['\u0080'], Array.from({ length: 15 }, (_, i) => i * 1000), Array.from({ length: 16 }, (_, i) => i), [],
      [null, true, false], [undefined], [1, , 3]];  // eslint-disable-line no-sparse-arrays
    for (const t of edges) {
      const r = packRange(t);
      expect(Buffer.from(r.subarray(r.start, r.end)).toString('hex'), JSON.stringify(t)).toBe(packr.pack(t).toString('hex'));
    }
  });

  it('a getter inside a flat tuple that calls the space meets the same refusal as on the msgpackr path', () => {
    const space = new Space('flat_getter');
    space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    const tuple: unknown[] = [1, 'a'];
    Object.defineProperty(tuple, 1, { get: () => { space.insert([2, 'b']); return 'a'; }, enumerable: true });
    expect(() => space.insert(tuple)).toThrow(expect.objectContaining({ code: 'ER_ILLEGAL_PARAMS' }));
    expect(space.len()).toBe(0);
    space.insert([3, 'c']);  // the guard was released
    expect(space.get(3)).toEqual([3, 'c']);
  });

  it('a Proxy tuple goes through the flat path with its traps guarded: a benign one is stored as read, one that calls the space is refused', () => {
    const space = new Space('flat_proxy');
    space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    space.insert(new Proxy([1, 'a', 7], {}));
    expect(space.get(1)).toEqual([1, 'a', 7]);
    const hostile = new Proxy([2, 'b'], {
      get(target, key, receiver) {
        if (key === '1') space.insert([3, 'c']);
        return Reflect.get(target, key, receiver);
      },
    });
    expect(() => space.insert(hostile)).toThrow(expect.objectContaining({ code: 'ER_ILLEGAL_PARAMS' }));
    expect(space.len()).toBe(1);  // neither the outer nor the nested tuple was stored
    const throwing = new Proxy([4, 'd'], { get: (t, k) => { if (k === '1') throw new Error('trap'); return Reflect.get(t, k); } });
    expect(() => space.insert(throwing)).toThrow();
    expect(space.len()).toBe(1);
    space.insert([5, 'e']);  // the guard was released each time
    expect(space.get(5)).toEqual([5, 'e']);
  });

  it('falls back to msgpackr for bytes it does not take, and for trailing bytes', () => {
    const scratch = scratchBuffer();
    const cases: unknown[][] = [[1, 2 ** 40], [1, 0.1], ['é'], [[1]], Array.from({ length: 16 }, (_, i) => i), [1, 'x'.repeat(40)]];
    for (const t of cases) {
      const bytes = packr.pack(t);
      bytes.copy(scratch);
      expect(decodeOne(bytes.length)).toStrictEqual(unpackr.unpack(bytes));
    }
    // [1, 2] followed by a stray byte: msgpackr's answer (it refuses), not a flat misread.
    const stray = Buffer.from([0x92, 0x01, 0x02, 0x05]);
    stray.copy(scratch);
    expect(() => unpackr.unpack(stray)).toThrow('end of buffer not reached');
    expect(() => decodeOne(4)).toThrow('end of buffer not reached');
  });
});

describe('update() with one numeric operation', () => {
  const OPS = ['=', '!', '+', '-', '&', '|', '^', '#'] as const;
  const VALUES = [0, -0, 1, -1, 2, 7, -32, -33, 127, 128, 255, 256, 65535, 65536, 2 ** 31 - 1, -(2 ** 31),
    -(2 ** 31) - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 1.5, -0.5, Infinity, -Infinity];
  const START: unknown[][] = [[1, 5, 'a', 2.5], [2, 2 ** 32, 'b', 0], [3, -7, 'cc', 2 ** 53],
    [4, 18446744073709551615n, 'd', 1], [5, 0, 'e', -9223372036854775808n]];

  function twin(name: string): Space {
    const s = new Space(name);
    s.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    s.createIndex('second', { type: 'TREE', unique: true, parts: [{ field: 3, type: 'string' }] });
    for (const t of START) s.insert(t);
    return s;
  }

  it(`does and refuses what the packed path does, with the same codes and messages (seed ${SEED})`, () => {
    const rand = mulberry32(SEED + 1);
    const fast = twin('twin');
    const packed = twin('twin');
    const h = handleOf(packed);
    for (let i = 0; i < 4000; i++) {
      const key = Math.floor(rand() * 7);  // 6 and 0 are absent
      const op = OPS[Math.floor(rand() * OPS.length)];
      const field = [1, 2, 3, 4, 5, 6, -1, -2, -4, -5][Math.floor(rand() * 10)];
      const v = VALUES[Math.floor(rand() * VALUES.length)];
      const ops = [[op, field, v]] as UpdateOp[];
      const a = outcome(() => fast.update(key, ops));
      const b = outcome(() => {
        const end = packOpsFast(checkOps('update', ops));
        expect(end).toBeGreaterThan(0);
        return decodeOne(h.update(0, key, opsBufferOf(), 0, end, scratchBuffer()));
      });
      try {
        expect(a).toStrictEqual(b);
      } catch (error) {
        throw new Error(`seed ${SEED}, step ${i}: ${JSON.stringify([key, op, field, String(v)])}: ${JSON.stringify(a, (_, x) => typeof x === "bigint" ? `${x}n` : x)} vs ${JSON.stringify(b, (_, x) => typeof x === "bigint" ? `${x}n` : x)}`);
      }
    }
    expect(fast.select()).toStrictEqual(packed.select());
    fast.checkIntegrity();
    packed.checkIntegrity();
  });

  it('keeps its place in a transaction: rolled back with the rest', () => {
    const s = twin('tx');
    expect(() => s.transaction(() => {
      s.update(1, [['+', 2, 10]]);
      throw new Error('undo');
    })).toThrow('undo');
    expect(s.get(1)).toStrictEqual([1, 5, 'a', 2.5]);
    expect(s.update(1, [['+', 2, 10]])).toStrictEqual([1, 15, 'a', 2.5]);
  });

  it('the binding refuses bad arguments with a code, never crashes', () => {
    const s = twin('bad');
    const h = handleOf(s);
    const scratch = Buffer.alloc(64);
    const code = (fn: () => unknown) => (outcome(fn) as { code?: string }).code;
    expect(code(() => h.updateNumber(0, 1, '+' as unknown as number, 2, 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(0, 1, 0, 2, 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(0, 1, 300, 2, 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(0, 1, 43, '2' as unknown as number, 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(0, 1, 43, 2, 1n as unknown as number, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => (h.updateNumber as (...a: unknown[]) => unknown)(0, 1, 43))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(9, 1, 43, 2, 1, scratch))).toBe('ER_NO_SUCH_INDEX');
    expect(code(() => h.updateNumber(-1, 1, 43, 2, 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(code(() => h.updateNumber(0, {} as unknown as number, 43, 2, 1, scratch))).toBe('ER_KEY_TYPE');
    expect(code(() => h.updateNumber(0, 1, 0x3f, 2, 1, scratch))).toBe('ER_UPDATE_OP');  // '?' is no operator
    expect(code(() => h.updateNumber(0, 1, 43, 2, NaN, scratch))).toBe('ER_UPDATE_OP');  // the engine refuses NaN too
    // A result larger than the scratch Buffer comes back as a new Buffer.
    expect(decodeOne(h.updateNumber(0, 2, 43, 4, 1, Buffer.alloc(1)))).toStrictEqual([2, 2 ** 32, 'b', 1]);
    expect(h.updateNumber(0, 6, 43, 2, 1, scratch)).toBeNull();
    s.drop();
    expect(code(() => h.updateNumber(9, 1, 43, 2, 1, scratch))).toBe('ER_SPACE_DROPPED');
  });
});

describe("bench:space's floor (native.testing.floorTuple)", () => {
  it('writes the tuple a get() of that shape returns, into the scratch Buffer, as get() does', async () => {
    const { native } = await import('../src/native/loader.js');
    for (const id of [0, 1, 127, 65536, 2 ** 32 - 1]) {
      const narrow = native.testing.floorTuple(id, scratchBuffer(), false);
      expect(typeof narrow).toBe('number');
      expect(decodeOne(narrow)).toEqual([id, 0]);
      const wide = native.testing.floorTuple(id, scratchBuffer(), true);
      expect(decodeOne(wide)).toEqual([id, 'user@tarantool.example', 1764000000]);
      expect(unpackr.unpack(scratchBuffer().subarray(0, wide as number))).toEqual([id, 'user@tarantool.example', 1764000000]);
    }
    // Past a too-small scratch Buffer it returns a fresh one, as get() does.
    expect(decodeOne(native.testing.floorTuple(9, Buffer.alloc(4), true))).toEqual([9, 'user@tarantool.example', 1764000000]);
    for (const bad of [-1, 1.5, 2 ** 32, '1', undefined]) {
      expect(outcome(() => native.testing.floorTuple(bad as number, scratchBuffer(), true))).toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
    }
  });
});
