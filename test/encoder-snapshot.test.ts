// The encoder's snapshot (src/native/codec.ts, "What msgpackr is handed off the fast path"): the
// walk that checks a tuple copies every array, plain object, Map, Set and Error as it goes, and
// msgpackr packs that copy. So a getter or a Proxy trap nested anywhere below them is read once:
// what is stored is what was checked. Before (the hole README documented), a nested getter that
// answered the checks with a Uint8Array and msgpackr with a Float64Array was stored as 16 bytes,
// 14 of them left over in msgpackr's buffer (heap memory).
//
// And the copies change nothing for honest values: our pack() writes, byte for byte, what a
// Packr with our options writes for the value itself.
import { afterEach, describe, expect, test } from 'vitest';
import { Packr } from 'msgpackr';
import { Space, expirationd } from '../src/index.js';
import { pack, packTuples } from '../src/native/codec.js';
import { codeOrNone as codeOf } from './support/errors.js';

const spaces: Space<any, any>[] = [];
afterEach(() => {
  expirationd.killAll();
  for (const s of spaces.splice(0)) if (!s.dropped) s.drop();
});

let n = 0;
function plain(): Space<any[], number> {
  const s = new Space<any[], number>(`snap-${++n}`);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  spaces.push(s);
  return s;
}

const BYTES = () => new Uint8Array([1, 2]);
const WIDE = () => new Float64Array([1.5, 2.5]);
const LONE = 'x'.repeat(99) + '\ud800';

/** A function answering `first` on its first call, `later` after; and how many times it ran. */
function flip(first: () => unknown, later: () => unknown): { get: () => unknown; reads: () => number } {
  let reads = 0;
  return { get: () => (reads++ === 0 ? first() : later()), reads: () => reads };
}

/** Each container kind holding a flipping value somewhere inside. */
const holders: [string, (get: () => unknown) => unknown][] = [
  ['a plain object\'s getter', (get) => Object.defineProperty({}, 'v', { enumerable: true, get })],
  ['an array index getter', (get) => Object.defineProperty([0], 0, { enumerable: true, get })],
  ['a Proxy of an array', (get) => new Proxy([0], { get: (t, k, r) => (k === '0' ? get() : Reflect.get(t, k, r)) })],
  ['a Proxy of an object', (get) => new Proxy({ v: 0 }, { get: (t, k, r) => (k === 'v' ? get() : Reflect.get(t, k, r)) })],
  ['a Map value behind a getter', (get) => new Map([['k', Object.defineProperty({}, 'v', { enumerable: true, get })]])],
  ['a Set element behind a getter', (get) => new Set([Object.defineProperty({}, 'v', { enumerable: true, get })])],
  ['an Error cause getter', (get) => Object.defineProperty(new Error('m'), 'cause', { get })],
  ['deep inside', (get) => ({ a: [{ b: new Map([['c', [Object.defineProperty({}, 'v', { enumerable: true, get })]]]) }] })],
];

/** Every stored binary field, found anywhere in the tuple. */
function buffersIn(value: unknown, out: Buffer[] = []): Buffer[] {
  if (Buffer.isBuffer(value)) out.push(value);
  else if (Array.isArray(value)) for (const v of value) buffersIn(v, out);
  else if (value instanceof Map) for (const v of value.values()) buffersIn(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) buffersIn(v, out);
  return out;
}

describe('a getter or Proxy below an array, object, Map, Set or Error is read once: stored as checked', () => {
  const writes: [string, (s: Space<any[], number>, field: unknown) => void][] = [
    ['insert', (s, f) => s.insert([1, 'x'.repeat(40), f])],
    ['replace', (s, f) => s.replace([1, 'x'.repeat(40), f])],
    ['insertMany', (s, f) => s.insertMany([[1, f]])],
    ['upsert', (s, f) => s.upsert([1, f], [['=', 2, 0]])],
    ['update \'=\'', (s, f) => {
      s.insert([1, 0]);
      s.update(1, [['=', 2, f]]);
    }],
  ];
  for (const [holder, make] of holders) {
    for (const [path, write] of writes) {
      test(`${holder}, through ${path}: a Uint8Array checked is the Uint8Array stored`, () => {
        const s = plain();
        const f = flip(BYTES, WIDE);
        write(s, make(f.get));
        expect(f.reads()).toBe(1);
        const stored = buffersIn(s.get(1));
        expect(stored.map((b) => [...b])).toEqual([[1, 2]]);
      });
    }
    test(`${holder}: a lone surrogate behind a well-formed first answer never reaches the addon`, () => {
      const s = plain();
      const f = flip(() => 'x'.repeat(100), () => LONE);
      s.insert([1, 'x'.repeat(40), make(f.get)]);
      expect(f.reads()).toBe(1);
      expect(JSON.stringify(s.get(1))).not.toContain('\\ud800');
      expect(JSON.stringify(s.get(1))).not.toContain('\ufffd');
    });
    test(`${holder}: a wide view on the first answer is refused, nothing stored`, () => {
      const s = plain();
      const f = flip(WIDE, BYTES);
      expect(codeOf(() => s.insert([1, 'x'.repeat(40), make(f.get)]))).toBe('ER_TUPLE_FORMAT');
      expect(s.len()).toBe(0);
    });
  }

  test('with a running task watching the space, the watcher is handed the snapshot that was stored', () => {
    const s = new Space<any[], number>(`snap-${++n}`);
    spaces.push(s);
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    expirationd.start(`snap-task-${n}`, s, { itIndex: 'exp', field: 2, now: () => 0 });
    const f = flip(BYTES, WIDE);
    s.insert([1, 100, 'x'.repeat(40), Object.defineProperty({}, 'v', { enumerable: true, get: f.get })]);
    expect(f.reads()).toBe(1);
    expect(buffersIn(s.get(1)).map((b) => [...b])).toEqual([[1, 2]]);
  });
});

describe('the snapshot packs to the bytes msgpackr writes for the value itself', () => {
  const reference = new Packr({ useRecords: false, variableMapSize: true });
  class Point {
    constructor(readonly x: number, readonly y: number) {}
  }
  class Money {
    constructor(readonly cents: number) {}
    toJSON(): unknown {
      return { cents: this.cents, currency: 'EUR' };
    }
  }
  const sparse = [1, , 3];  // eslint-disable-line no-sparse-arrays
  const withProto = JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as unknown;
  const nullProto = Object.assign(Object.create(null) as object, { a: 1, b: [2] });
  const cause = new Error('outer', { cause: new Error('inner') });
  const typeError = new TypeError('t');
  const values: [string, unknown][] = [
    ['nested arrays and objects', [1, 'x'.repeat(40), { a: [1, 2, { b: 'c' }], 'é': -0 }, [[[]]]]],
    ['numbers', [0, -1, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53), 1.5, NaN, Infinity, -0, 2n ** 63n - 1n, 2n ** 64n - 1n, -5n]],
    ['strings', ['', 'ascii', 'ünïcödé', '日本語', '😀'.repeat(20), 'x'.repeat(70_000)]],
    ['a Map with object keys and a Set', [new Map<unknown, unknown>([['k', 1], [2, [3]], [true, new Map([['in', 'ner']])]]), new Set([1, 'a', [2], { b: 3 }])]],
    ['Errors, with a cause and subclassed', [cause, typeError, Object.assign(new Error('named'), { name: 'Custom' })]],
    ['a Date, a RegExp, binary', [new Date(0), new Date(1_700_000_000_123), /a+b/gi, Buffer.from([1, 2, 3]), new Uint8Array([4]), new ArrayBuffer(2)]],
    ['a class instance and one with toJSON', [new Point(1, 2), new Money(250)]],
    ['a function, with and without toJSON', [() => 1, Object.assign(() => 1, { toJSON: () => ({ f: 1 }) })]],
    ['a sparse array, null, undefined, booleans', [sparse, null, undefined, true, false]],
    ['a __proto__ own key and a null-prototype object', [withProto, nullProto]],
    ['many keys', [Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, i]))]],
  ];
  for (const [name, value] of values) {
    test(name, () => {
      expect(pack(value).equals(reference.pack(value))).toBe(true);
    });
  }

  // insertMany's batch: each flat tuple by the fast encoder, the others by msgpackr, one header.
  test('a batch (insertMany) of flat and nested tuples, at every array header size, with and without a watcher\'s copy', () => {
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const tuple = (i: number): unknown[] => {
      switch (rand(6)) {
        case 0: return [i, `user${i}@tarantool.io`, 1_700_000_000 + i];
        case 1: return [i, -i, i / 3, null, true, false, 'x'.repeat(rand(40))];
        case 2: return [i, { nested: [i, 'é'] }, new Map([['k', i]])];
        case 3: return [i, 'ünïcödé', 2 ** 40 + i, -(2 ** 33)];
        case 4: return Array.from({ length: 16 + rand(4) }, (_, k) => k);
        default: return [i, Buffer.from([i & 255]), new Date(i * 1000), [1, [2, [3]]]];
      }
    };
    for (const n of [0, 1, 15, 16, 300, 65_535, 65_536]) {
      const batch = Array.from({ length: n }, (_, i) => tuple(i));
      const expected = reference.pack(batch);
      expect(packTuples(batch, 1 << 20, false).equals(expected)).toBe(true);
      expect(packTuples(batch, 1 << 20, true).equals(expected)).toBe(true);
    }
  });

  test('a shared-reference graph past the walk budget (the memoized snapshot) packs the same', () => {
    const leaf = { a: [1, 'x'] };
    const big: unknown[] = [];
    for (let i = 0; i < (1 << 22) + 8; i++) big.push(i % 2 === 0 ? leaf : []);
    expect(pack(big).equals(reference.pack(big))).toBe(true);
  });
});
