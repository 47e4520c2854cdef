// Adversarial review of the encoder walk (src/native/codec.ts: walk, walkObject, walkArray,
// walkKeys, sizeOf, checkWalk) after 4f79e3f. Method of test/review-encoder-leaks.test.ts: a
// canary of other writes, then the stored bytes read raw; and codec's pack() against msgpackr's
// own Packr({ useRecords: false, variableMapSize: true }) byte for byte. Tests marked `// Fixed:`
// failed on 4f79e3f (each says what was wrong) and pass since: more built-ins recognised, maps
// handed to msgpackr as their entries (codec.ts Entries), an object handed over as it is returned
// as it is (not its toJSON), a user's extension for Set, Error, RegExp, ArrayBuffer or a byte
// view found by a probe and used, strings, bytes and elements counted toward the bounds, and an
// update argument's length bounded by maxTupleSize.
import { afterEach, describe, expect, test } from 'vitest';
import { Packr, addExtension } from 'msgpackr';
import { Space, expirationd } from '../src/index.js';
import { pack } from '../src/native/codec.js';
import { codeOrNone as codeOf } from './support/errors.js';
import { canary, raw, writePaths } from './support/leaks.js';

const ref = new Packr({ useRecords: false, variableMapSize: true });
const hex = (f: () => Buffer): string => { try { return f().toString('hex'); } catch (e) { return `throws: ${(e as Error).message}`; } };
/** codec's bytes for [v] against msgpackr's: '' when equal. */
const diff = (v: () => unknown): string => {
  const [a, b] = [hex(() => pack([v()])), hex(() => ref.pack([v()]))];
  return a === b ? '' : `codec ${a.slice(0, 90)} | msgpackr ${b.slice(0, 90)}`;
};

const spaces: Space<any, any>[] = [];
afterEach(() => { expirationd.killAll(); for (const s of spaces.splice(0)) if (!s.dropped) s.drop(); });
let n = 0;
function plain(opts: ConstructorParameters<typeof Space>[1] = {}): Space<any[], number> {
  const s = new Space<any[], number>(`rev-walk-${++n}`, opts);
  spaces.push(s);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.insert([1, 'keep']);
  return s;
}
function ttl(): Space<any[], number> {
  const s = new Space<any[], number>(`rev-walk-ttl-${++n}`, { ttl: { field: 2, unit: 'ms', now: () => 1_000 } });
  spaces.push(s);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  return s;
}
const PATHS = writePaths(() => plain(), () => ttl());
/** Paths where make() was neither refused nor stored as exactly `exact` (msgpackr's bytes) without a canary. */
function unsafePaths(make: () => unknown, exact?: Buffer): string[] {
  const bad: string[] = [];
  canary();
  for (const [name, write] of PATHS) {
    let s: Space<any, any> | undefined;
    const code = codeOf(() => { s = write(make()); });
    if (code === 'ER_TUPLE_FORMAT' || code === 'ER_UPDATE_OP') continue;
    const bytes = s ? raw(s) : Buffer.alloc(0);
    if (!(code === 'no error' && exact && bytes.includes(exact) && !bytes.includes('CANARY'))) bad.push(`${name}: ${code === 'no error' ? bytes.toString('hex').slice(-60) : code}`);
  }
  return bad;
}
const f64 = (): Float64Array => new Float64Array([1.5, 2.5]);
/** An enumerable getter that answers 'ok' to the walk and a Float64Array to any later read. */
function flip<T extends object>(o: T, key = 'x'): T {
  let reads = 0;
  Object.defineProperty(o, key, { enumerable: true, configurable: true, get: () => (reads++ ? f64() : 'ok') });
  return o;
}
class K { constructor(readonly id = 1) {} toJSON(): string { return 'k'; } }

describe('findings', () => {
  // Fixed: walkObject's Map branch rebuilds the Map from walked keys (new Map(entries)): keys that walk to one value (functions -> undefined, instances whose toJSON() agree, a toJSON() equal to a string key) collapse into one entry
  test('a Map whose distinct keys pack alike keeps every entry, as msgpackr does', () => {
    expect.soft(diff(() => new Map<unknown, number>([[() => 1, 1], [() => 2, 2]]))).toBe('');
    expect.soft(diff(() => new Map<unknown, number>([[undefined, 1], [function named() {}, 2]]))).toBe('');
    expect.soft(diff(() => new Map<unknown, number>([[new K(1), 1], [new K(2), 2]]))).toBe('');
    expect.soft(diff(() => new Map<unknown, number>([[new K(), 1], ['k', 2]]))).toBe('');
    const s = plain();
    s.insert([2, new Map<unknown, number>([[new K(1), 1], [new K(2), 2]])]);
    expect.soft(raw(s).includes(ref.pack(new Map<unknown, number>([[new K(1), 1], [new K(2), 2]])))).toBe(true);
  });

  // Fixed: walkObject calls toJSON() on an instance of a user's class and hands msgpackr the result, so a class registered with addExtension() that also has a toJSON() (URL, Decimal, Luxon, bson...) is never packed by its extension (README: "a class you register there is stored and read back through it")
  test("a registered class with a toJSON() is packed by its extension, not its toJSON()", () => {
    class Money { constructor(readonly cents: number) {} toJSON(): string { return `${this.cents / 100} EUR`; } }
    addExtension({ Class: Money, type: 71, pack: (m: Money) => Buffer.from([m.cents]), unpack: (b: Buffer) => new Money(b[0]) });
    addExtension({ Class: URL, type: 72, write: (u: URL) => u.href, read: (h: string) => new URL(h) });
    expect.soft(diff(() => new Money(5))).toBe('');
    expect.soft(diff(() => new URL('http://a/b'))).toBe('');
    // (A `write` extension with a `type` writes msgpackr's tag, a second value beside the packed
    // one, which the addon refuses as trailing bytes, as it did before: only Money is stored.)
    const s = plain();
    s.insert([2, new Money(5)]);
    expect.soft(s.get(2)![1]).toBeInstanceOf(Money);
  });

  // Fixed: builtIn()/BUILT_IN lists only some built-ins: an AggregateError, a boxed primitive, a Promise, a WeakMap... is treated as a user's class and not snapshotted, so a getter below it is read again by msgpackr and a Float64Array stores 14 bytes of heap
  test('a getter on a built-in that BUILT_IN lacks is read once (refused or stored as checked)', () => {
    expect.soft(unsafePaths(() => flip(new AggregateError([], 'a'), 'cause'), ref.pack('ok').subarray(0))).toEqual([]);
    for (const make of [() => flip(new Number(1)), () => flip(new String('')), () => flip(Promise.resolve()), () => flip(new WeakMap()), () => ({ a: new AggregateError([], 'a', { cause: flip({}) }) })]) {
      const s = plain();
      const code = codeOf(() => s.insert([2, make()]));
      expect.soft(code === 'no error' && raw(s).includes(Buffer.from('c410', 'hex')) ? 'leaked' : code).not.toBe('leaked');
    }
  });

  // Fixed: sizeOf counts an object handed to msgpackr unchanged (a user's class instance) as 1 byte, so on the memoized walk (limit > 2^22: a tuple of a space whose maxTupleSize is above 4 MiB, or update operations) a shared-reference graph below it reaches msgpackr, which expands it on every path
  test('a DAG below a class instance is refused by the walk, not expanded by msgpackr', () => {
    class Box { constructor(readonly v: unknown) {} }
    let o: object = {};
    for (let i = 0; i < 22; i++) o = { a: o, b: o }; // 2^22 paths, about 25 MB encoded
    const s = plain({ maxTupleSize: 8 << 20 });
    const t0 = performance.now();
    let message = 'stored';
    try { s.insert([2, new Box(o)]); } catch (e) { message = (e as Error).message; }
    expect(message).toMatch(/would encode to more than/); // now: the addon's "Tuple of 25165xxx bytes exceeds"
    expect(performance.now() - t0).toBeLessThan(60_000);
  });

  // Fixed: checkWalk bounds containers (walkVisits) but not strings or binary data on its unmemoized pass: one string or Buffer shared by many elements reaches msgpackr (and each Buffer path is copied by the snapshot) far past `limit`
  test('a field sharing one large string or Buffer many times is refused before msgpackr packs it', () => {
    const s = plain({ maxTupleSize: 1024 });
    for (const big of ['x'.repeat(1 << 20), Buffer.alloc(1 << 20)]) {
      let message = 'stored';
      try { s.insert([2, Array(16).fill(big)]); } catch (e) { message = (e as Error).message; }
      expect.soft(message).toMatch(/would encode to more than/); // now: "Tuple of 16777xxx bytes exceeds maxTupleSize (1024 bytes)"
    }
  });

  // Fixed: update/upsert operations are walked with limitOf(maxTupleSize, ops.length) (about 4.19e9 for 4000 operations at the default 1 MiB), not one argument's bound: walkArray copies an argument's elements up to that many (a sparse array of length 4e9 among 4000 operations is copied element by element into a JS array)
  test("one update argument is bounded by maxTupleSize, not by the operations' count", () => {
    let reads = 0;
    const huge = new Proxy([], { get: (t, p) => (p === 'length' ? 4e9 : p === 'constructor' ? Array : ++reads > 3_000_000 ? (() => { throw new Error('READ-BOUND'); })() : undefined) });
    const ops: unknown[] = Array.from({ length: 3999 }, () => ['=', 2, 0]);
    ops.push(['=', 2, huge]);
    const s = plain();
    codeOf(() => s.update(1, ops as any));
    expect(reads).toBeLessThan((1 << 20) + 64); // now: 3,000,001 reads, stopped only by the Proxy
  });

  // Fixed: walkKeys copies a plain object's own 'constructor: Object' as undefined, so msgpackr takes the snapshot off its plain-object path and calls the snapshot's non-function toJSON: refused where msgpackr packs a map (minor)
  test("{ constructor: Object, toJSON: 'x' } is packed as msgpackr packs it", () => {
    expect.soft(diff(() => ({ constructor: Object, toJSON: 'x' }))).toBe('');
    expect.soft(diff(() => ({ constructor: Object, toJSON: { a: 1 } }))).toBe('');
  });

  // Fixed: walkKeys rebuilds a plain object, whose integer-like keys V8 orders first: a Proxy whose ownKeys answers (consistently) in another order is stored with its keys reordered (minor)
  test('a Proxy object keeps the key order its ownKeys gives, as msgpackr does', () => {
    expect(diff(() => new Proxy({ b: 1, 1: 2 }, { ownKeys: () => ['b', '1'] }))).toBe('');
  });
});

describe('what held', () => {
  const pool = Buffer.from('0123456789abcdefghij');
  const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
  class Point { x = 1; y = [2, { z: 3 }]; }
  class MyErr extends Error { code = 'E'; }
  const CORPUS: Record<string, () => unknown> = {
    nested: () => [[[[{ a: new Map<unknown, unknown>([[1, new Set([2, [3]])], ['k', { d: new Date(5) }]]) }]]]],
    mapObjKeys: () => new Map<unknown, unknown>([[{ a: 1 }, 1], [[1], 2], ['s', 3], [new Date(0), 4], [new Set([1]), 5]]),
    set: () => new Set([1, 'a', { b: 2 }, new Map([[1, 2]])]),
    errors: () => [new Error('m', { cause: new TypeError('t', { cause: { x: 1 } }) }), new RangeError('r'), new MyErr('sub'),
      new AggregateError([new Error('x')], 'agg', { cause: 5 }), Object.assign(new Error('n'), { name: 'Custom' })],
    regexps: () => [/ab+c/gi, /x/suy, new RegExp('é😀', 'u')],
    dates: () => [new Date(0), new Date(NaN), new Date(-1e12), new Date(-1), new Date(1e13 + 123), new Date(1_700_000_000_123), new Date(8.64e15), new Date(2 ** 32 * 1000 + 7)],
    bytes: () => [pool, pool.subarray(3, 9), new Int8Array(pool.buffer, pool.byteOffset + 2, 3), new Uint8ClampedArray(pool.buffer, pool.byteOffset + 5, 4),
      new Uint8Array(pool.buffer, pool.byteOffset + 1, 5), new Uint8Array([1, 2, 3]).buffer, new Uint8Array(0), Buffer.alloc(300, 7), new Uint8Array(70_000).fill(9)],
    sparse: () => [sparse, new Array(20)],
    numKeys: () => ({ 10: 'a', 2: 'b', x: 1, '-1': 2, 4294967295: 3, 4294967294: 4, '01': 5, 1.5: 6 }),
    numbers: () => [-0, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 31) - 1, 2 ** 32, 0.1, 127, 128, -32, -33, 5e-324],
    bigints: () => [0n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n, 2n ** 63n, 255n],
    strings: () => ['', 'x'.repeat(31), 'x'.repeat(32), 'é'.repeat(33), '😀'.repeat(20), 'a'.repeat(70_000), 'ü'.repeat(300)],
    toJSONs: () => ({ a: { toJSON: () => 1 }, b: [new K()], c: Object.assign(() => 0, { toJSON: () => 'f' }), d: { toJSON: () => ({ toJSON: () => [2] }) } }),
    ownToJSON: () => [Object.assign(new Date(0), { toJSON: () => 'no' }), Object.assign(new Set([1]), { toJSON: () => 'no' }), Object.assign(Buffer.from([1]), { toJSON: () => 'no' })],
    subToJSON: () => [new (class extends Set { toJSON() { return 'yes'; } })([1]), new (class extends Error { toJSON() { return 'yes'; } })('e'), new (class extends Uint8Array { toJSON() { return 'yes'; } })(1)],
    classes: () => [new Point(), new (class extends Map<number, number> {})([[1, 2]]), new (class extends Array<number> {})(1, 2), Object.assign(new (class extends Date {} as unknown as DateConstructor)(0), { a: 1 })],
    nullProto: () => Object.assign(Object.create(null), { a: 1, b: Object.assign(Object.create(null), { c: [] }) }),
    protoKey: () => JSON.parse('{"__proto__": {"a": 1}, "b": 2}'),
    functions: () => [() => 1, class A {}, Object.assign(function f() {}, { a: 1 }), Math.max],
    misc: () => [null, undefined, true, false, { constructor: 'str', a: 1 }, JSON.parse('{"constructor": {"x": 1}}'), new Proxy([1, { a: 2 }], {}), new Proxy({ a: 1 }, {})],
  };

  test('byte for byte: what pack() stores is what msgpackr stores, on a wide corpus', () => {
    const bad = Object.entries(CORPUS).map(([name, make]) => [name, diff(make)]).filter(([, d]) => d !== '');
    expect(bad).toEqual([]);
  });

  test('every write path stores exactly msgpackr\'s bytes for honest values, with no canary', () => {
    for (const name of ['nested', 'errors', 'dates', 'bytes', 'numKeys', 'strings', 'classes', 'protoKey']) {
      expect.soft(unsafePaths(CORPUS[name], ref.pack(CORPUS[name]())), name).toEqual([]);
    }
    const s = plain();
    s.insert([2, 'x😀'.repeat(20)]);
    s.update(2, [[':', 2, 1, 1, 'é€'.repeat(20)]]);
    expect(raw(s).includes(ref.pack([2, 'é€'.repeat(20) + '😀' + 'x😀'.repeat(19)]))).toBe(true);
  });

  test('keys: long, non-ASCII and BigInt parts find what was stored', () => {
    const s = new Space<any[], any>(`rev-walk-k${++n}`);
    spaces.push(s);
    s.createIndex('pk', { parts: [[1, 'string'], [2, 'integer']] });
    const rows = [['é'.repeat(40), 2n ** 63n - 1n], ['😀'.repeat(20), -(2n ** 63n)], ['x'.repeat(5000), 1]];
    for (const r of rows) s.insert(r);
    for (const r of rows) {
      expect(s.get(r)).toEqual(r.map((v) => (typeof v === 'bigint' && v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v)));
      expect(s.select([r[0]])).toHaveLength(1);
    }
    expect(s.delete(rows[2])).toBeDefined();
  });

  test('cycles through Maps, Sets, Error causes and toJSON() are refused quickly; odd prototypes terminate', () => {
    const m = new Map<unknown, unknown>(); m.set('self', m);
    const st = new Set<unknown>(); st.add(st);
    const e = new Error('e'); (e as any).cause = e;
    class Loop { toJSON(): unknown { return new Loop(); } }
    const j = new Loop();
    const key = new Map<unknown, unknown>(); key.set(key, 1);
    const s = plain();
    for (const v of [m, st, e, j, key]) {
      const t0 = performance.now();
      expect(codeOf(() => s.insert([2, v]))).toBe('ER_TUPLE_FORMAT');
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
    // a getPrototypeOf trap that answers a new Proxy each time; a 10,000-deep prototype chain
    const endless = (): object => new Proxy({}, { getPrototypeOf: () => endless(), get: (t, p) => (p === 'constructor' ? undefined : Reflect.get(t, p)) });
    expect(['ER_TUPLE_FORMAT', 'no error']).toContain(codeOf(() => s.replace([2, endless()])));
    let deep: object = new Point();
    for (let i = 0; i < 10_000; i++) deep = Object.create(deep);
    expect(codeOf(() => s.replace([2, Object.assign(deep, { own: 1 })]))).toBe('no error');
    expect(s.get(2)).toEqual([2, { own: 1 }]);
    // a Proxy claiming a huge length inside a tuple is refused without reading its elements
    let reads = 0;
    const huge = new Proxy([], { get: (t, p) => (p === 'length' ? 2 ** 32 - 1 : p === 'constructor' ? Array : (reads++, 0)) });
    expect(codeOf(() => s.insert([3, huge]))).toBe('ER_TUPLE_TOO_LARGE');
    expect(reads).toBe(0);
  });
});

// Last: these register global msgpackr extensions for built-in classes, which would change the corpus above.
describe('findings (global extensions for built-in classes)', () => {
  // Fixed: the snapshot (walkObject) turns an Error, a Set or a RegExp into an array and an ArrayBuffer or Int8Array into a Buffer before msgpackr sees it, so a user's addExtension() for such a built-in class (msgpackr runs users' extensions before its own) never runs
  test("an addExtension() for Error or Set is used, as msgpackr uses it", () => {
    // pack/unpack extensions: one MessagePack value each (a `write` with a `type` writes msgpackr's
    // tag beside the value, which the addon refuses as trailing bytes, extension or not).
    addExtension({ Class: Error, type: 73, pack: (e: Error) => Buffer.from(e.message), unpack: (b: Buffer) => new Error(b.toString()) });
    addExtension({ Class: Set, type: 74, pack: (v: Set<number>) => Buffer.from([...v]), unpack: (b: Buffer) => new Set([...b]) });
    expect.soft(diff(() => new Error('m'))).toBe('');
    expect.soft(diff(() => new Set([1]))).toBe('');
    const s = plain();
    s.insert([2, new Set([1]), new TypeError('t')]);
    expect.soft(s.get(2)![1]).toBeInstanceOf(Set);
    expect.soft(s.get(2)![2]).toBeInstanceOf(Error);
  });
});
