// MessagePack at the boundary: tuples and keys are packed here with msgpackr (small flat tuples
// by encodeFlat, into the same bytes), and what the addon returns is unpacked here. Reads land in
// one reusable scratch Buffer (the addon returns the byte count) unless they are larger, in which
// case the addon returns a fresh Buffer.
import { types } from 'node:util';
import { Packr, REUSE_BUFFER_MODE, Unpackr } from 'msgpackr';
import type { NativeKey, NativeResult } from './loader.js';
import { CappedError, textOf, type ErrorCode } from '../errors.js';
import { describe, isArray } from '../validate.js';

export type Tuple = unknown[];
export type KeyPart = number | string | boolean | bigint;
export type Key = KeyPart | KeyPart[];

const packr = new Packr({ useRecords: false, variableMapSize: true });
// copyBuffers: binary fields must not alias the scratch Buffer, which the next read overwrites.
const unpackr = new Unpackr({ useRecords: false, copyBuffers: true });

let scratch = Buffer.allocUnsafeSlow(64 * 1024);
/** msgpackr decodes in progress (a user's msgpackr extension may read the space from its unpack). */
let decoding = 0;

/**
 * The Buffer a read's result lands in. Asked for while a decode runs (an extension's unpack that
 * reads the space), it is a fresh one: the decode in progress keeps reading the bytes it began
 * with, which the nested read would otherwise overwrite. (Of the first size: one of a large
 * read's size for each nested read made a select of 3,000 such tuples 15 times slower.)
 */
export function scratchBuffer(): Buffer {
  if (decoding > 0) scratch = Buffer.allocUnsafeSlow(64 * 1024);
  return scratch;
}

// A string with a lone surrogate has no UTF-8 form: msgpackr would write invalid bytes for a
// short one (which the addon refuses) and silently substitute U+FFFD in a long one. Both are
// refused here, so data never changes on its way in.
//
// The same walk bounds what msgpackr is handed. An object graph that is not a tree (a cycle: a
// parent pointer, a Space inside a tuple; or shared references) made this walk, and then msgpackr,
// visit every path through it: `o.a = o; o.b = o` hung the process at 100% CPU, and 29 levels of
// `{ a: o, b: o }` took msgpackr 74 s and 6 GB. So, with `limit` the most bytes the value may
// encode to (a tuple: its space's maxTupleSize; a batch: that times its length):
// - containers deeper than MAX_WALK_DEPTH are refused (ER_TUPLE_FORMAT): the addon refuses more
//   than 32 levels anyway, so nothing it would store is refused here, and a cycle ends within
//   that many steps;
// - every container the walk meets, once per path to it, is at least one byte of the encoding:
//   past `limit` of them the value is refused (ER_TUPLE_TOO_LARGE) without msgpackr;
// - past WALK_BUDGET of them (a limit above it), the walk starts again memoized (each container
//   walked once, whatever the paths to it) and adds up a lower bound of what its result encodes
//   to, refusing the value once that passes `limit`.
const MAX_WALK_DEPTH = 40;
const WALK_BUDGET = 1 << 22;
/** The memoized walk's bound (values and bytes it copies), whatever the limit. */
const MEMO_BUDGET = 1 << 27;
/** No value may encode to more (maxTupleSize < 2^32; a batch or a key has no smaller bound). */
export const MAX_ENCODED = 2 ** 32;

class WalkError extends Error {
  constructor(readonly kind: 'depth' | 'size' | 'view' | 'surrogate' | 'length', readonly view?: string) {
    super(kind);
  }
}

// The walk follows msgpackr's own dispatch (its pack(): an object's `constructor`, read once,
// against Object, Array and Map; then its extension classes, in its order, with its rule for a
// subclass that has a toJSON(); then Array.isArray, toJSON(), a function, and the object's own
// keys), so that what it checks is what msgpackr would pack; a walk that judged values its own
// way (instanceof Map, for..in, node:util types) let through a Map subclass's own properties, a
// Set subclass's iterator, a byte view's toJSON() and a fake typed array, whose bytes msgpackr
// then wrote with leftovers of its buffer or the heap (test/review-encoder-leaks.test.ts).
//
// And it hands msgpackr a snapshot: as it checks, it copies every array, plain object and Map,
// turns a Set into the array of its values, an Error into [name, message, cause] and a RegExp into
// [source, flags] (what msgpackr writes for them), a Date into a fresh Date and binary data into a
// Buffer of its bytes, each read once. A getter or a Proxy trap below them is never read again, so
// what is stored is what was checked, and the copies pack to the bytes the originals would. Binary
// data is read from its internal slots, not from properties an instance can override (a
// `byteLength` that said 64 over 2 bytes made msgpackr write 62 bytes of the heap), and only this
// realm's byte views and ArrayBuffers pass: msgpackr copies a view's elements, not its bytes, and
// packs another realm's as an object (a typed array's element indices, or nothing). One case is left as it is: an object that reaches
// msgpackr's extensions (not a plain object, array or Map) and is an instance of a class that is
// not built in may be packed by a user's msgpackr extension (addExtension() is global), so it is
// handed over unchanged, checked as msgpackr packs it without one: what lies below it is read
// again by msgpackr, and what a user's extension packs is the user's.
const TypedArray = Object.getPrototypeOf(Uint8Array) as new () => Uint8Array;
const intrinsic = (proto: object, name: string) => Object.getOwnPropertyDescriptor(proto, name)?.get as (this: unknown) => unknown;
const viewBuffer = intrinsic(TypedArray.prototype, 'buffer') as (this: unknown) => ArrayBuffer;
const viewOffset = intrinsic(TypedArray.prototype, 'byteOffset') as (this: unknown) => number;
const viewLength = intrinsic(TypedArray.prototype, 'byteLength') as (this: unknown) => number;
const bufferLength = intrinsic(ArrayBuffer.prototype, 'byteLength') as (this: unknown) => number;
const dateTime = Date.prototype.getTime;
const dateToJSON = Date.prototype.toJSON;
const bufferToJSON = Buffer.prototype.toJSON;
/** msgpackr's own extension classes, in its order (a user's extensions come before them). */
const EXTENSION_CLASSES: unknown[] = [Date, Set, Error, RegExp, ArrayBuffer, TypedArray, DataView];

// The prototypes of what msgpackr packs itself: an object whose prototype chain holds only these
// cannot be an instance of a class a user gave msgpackr an extension for.
const BUILT_IN = new Set<unknown>([Object.prototype, Array.prototype, Map.prototype, Set.prototype, Date.prototype,
  RegExp.prototype, Error.prototype, EvalError.prototype, RangeError.prototype, ReferenceError.prototype,
  SyntaxError.prototype, TypeError.prototype, URIError.prototype, ArrayBuffer.prototype, DataView.prototype,
  TypedArray.prototype, Buffer.prototype, Function.prototype, AggregateError.prototype, Number.prototype, String.prototype,
  Boolean.prototype, Symbol.prototype, BigInt.prototype, Promise.prototype, WeakMap.prototype, WeakSet.prototype,
  WeakRef.prototype, ...[Uint8Array, Int8Array, Uint8ClampedArray, Uint16Array, Int16Array, Uint32Array, Int32Array, Float32Array, Float64Array,
    BigInt64Array, BigUint64Array].map((c) => c.prototype)]);

function builtIn(value: object): boolean {
  let p: unknown = value;
  for (let i = 0; i < 16; i++) {
    p = Object.getPrototypeOf(p);
    if (p === null) return true;
    if (!BUILT_IN.has(p)) return false;
  }
  return false;
}

/**
 * A map as the walk hands it to msgpackr: its entries, in order. msgpackr packs anything whose
 * `constructor` is Map from `size` and its iterator, to the bytes it writes for a plain object of
 * the same string keys; and unlike a copy into an object or a Map, this keeps every key as it
 * came, in its order (no own `constructor` or `toJSON` key to change how msgpackr sees the copy,
 * no two keys that the walk made equal, such as two functions, merged into one).
 */
class Entries {
  constructor(readonly list: [unknown, unknown][]) {}
  get size(): number {
    return this.list.length;
  }
  [Symbol.iterator](): Iterator<[unknown, unknown]> {
    return this.list[Symbol.iterator]();
  }
}
Object.defineProperty(Entries.prototype, 'constructor', { value: Map });

/**
 * Whether a user's msgpackr extension (addExtension() is global) claims the instances of one of
 * msgpackr's own extension classes: then such a value goes to msgpackr as it is, for that
 * extension. Found by packing a sample both ways, once per walk.
 */
const SAMPLES = new Map<unknown, () => [unknown, unknown]>([
  [Set, () => [new Set([1]), [1]]],
  [Error, () => [new Error('m'), ['Error', 'm', undefined]]],
  [RegExp, () => [/a/g, ['a', 'g']]],
  [ArrayBuffer, () => [new Uint8Array([1]).buffer, Buffer.from([1])]],
  [TypedArray, () => [new Int8Array([1]), Buffer.from([1])]],
]);
let claims = new Map<unknown, boolean>();
function claimed(cls: unknown): boolean {
  let claim = claims.get(cls);
  if (claim === undefined) {
    const [sample, as] = (SAMPLES.get(cls) as () => [unknown, unknown])();
    claim = !Buffer.from(packr.pack(sample)).equals(packr.pack(as));
    claims.set(cls, claim);
  }
  return claim;
}

let walkVisits = 0;
let walkBudget = WALK_BUDGET;
let walkLimit = MAX_ENCODED;

function wellFormed(s: string): string {
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) throw new WalkError('surrogate');
  return s;
}

/**
 * What msgpackr is to pack in place of `value` (see above). `copy`: a snapshot (false below an
 * object handed over unchanged, where msgpackr reads the originals: then only checked).
 */
function walk(value: unknown, depth: number, copy: boolean, memo?: Map<object, unknown>): unknown {
  if (typeof value === 'string') {
    // A header byte and its UTF-16 length, at least as many bytes (a shared string is packed on
    // every path).
    if ((walkVisits += 1 + value.length) > walkBudget) throw new WalkError('size');
    return wellFormed(value);
  }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
  if (memo?.has(value)) {
    sawObject = true;
    return memo.get(value);
  }
  if (depth > MAX_WALK_DEPTH) throw new WalkError('depth');
  if (++walkVisits > walkBudget) throw new WalkError('size');
  sawObject = false;
  const out = walkObject(value, depth, copy, memo);
  // Memoized when it holds objects: a graph's paths multiply through those; one that holds none
  // costs its own size on every path, as msgpackr's packing will (and millions of small arrays
  // would otherwise fill the Map).
  if (memo !== undefined && sawObject) memo.set(value, out);
  sawObject = true;
  return out;
}

/** Whether walk() met an object since it last cleared this (the memo's rule above). */
let sawObject = false;

function walkObject(value: object, depth: number, copy: boolean, memo: Map<object, unknown> | undefined): unknown {
  const kind = (value as { constructor?: unknown }).constructor;
  if (kind === Object) return walkKeys(value, depth, copy, memo);
  if (kind === Array) return walkArray(value as unknown[], depth, copy, memo);
  if (kind === Map) {
    const entries: [unknown, unknown][] = [];
    for (const [k, v] of value as Map<unknown, unknown>) entries.push([walk(k, depth + 1, copy, memo), walk(v, depth + 1, copy, memo)]);
    return copy ? new Entries(entries) : value;
  }
  // msgpackr's extensions (a user's first: see above).
  if (copy && !builtIn(value)) copy = false;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  const ownJSON = toJSON !== undefined && toJSON !== dateToJSON && toJSON !== bufferToJSON;
  // The first of msgpackr's extension classes the value is an instance of; none when a subclass's
  // own toJSON() wins (msgpackr then leaves its extensions for the toJSON() below).
  let ext: unknown;
  for (const cls of EXTENSION_CLASSES) {
    if (!(value instanceof (cls as typeof Object))) continue;
    if (kind === cls || !ownJSON) ext = cls;
    break;
  }
  if (copy && SAMPLES.has(ext) && claimed(ext)) copy = false;
  if (ext === Date) {
    const time = dateTime.call(value);
    return copy ? new Date(time) : value;
  }
  if (ext === Set) {
    const values = Array.from(value as Set<unknown>, (v) => walk(v, depth + 1, copy, memo));
    return copy ? values : value;
  }
  if (ext === Error) {
    const e = value as Error;
    const fields = [walk(e.name, depth + 1, copy, memo), walk(e.message, depth + 1, copy, memo), walk(e.cause, depth + 1, copy, memo)];
    return copy ? fields : value;
  }
  if (ext === RegExp) {
    const r = value as RegExp;
    const fields = [walk(r.source, depth + 1, copy, memo), walk(r.flags, depth + 1, copy, memo)];
    return copy ? fields : value;
  }
  if (ext === ArrayBuffer) {
    if (!types.isArrayBuffer(value)) throw new WalkError('view', 'an object posing as an ArrayBuffer');
    const n = bufferLength.call(value);
    // msgpackr reads the byteLength property: one that lies is refused where the value is not copied.
    if (!copy && (value as ArrayBuffer).byteLength !== n) throw new WalkError('view', 'ArrayBuffer whose byteLength lies');
    if ((walkVisits += n) > walkBudget) throw new WalkError('size');
    return copy ? Buffer.from(new Uint8Array(value as ArrayBuffer, 0, n)) : value;
  }
  if (ext === TypedArray) {
    const bytes = types.isUint8Array(value) || types.isInt8Array(value) || types.isUint8ClampedArray(value);
    if (!bytes) throw new WalkError('view', types.isTypedArray(value) ? Object.prototype.toString.call(value).slice(8, -1) : 'an object posing as a typed array');
    const n = viewLength.call(value);
    if (!copy && (value as Uint8Array).byteLength !== n) throw new WalkError('view', `${Object.prototype.toString.call(value).slice(8, -1)} whose byteLength lies`);
    if ((walkVisits += n) > walkBudget) throw new WalkError('size');
    return copy ? Buffer.from(new Uint8Array(viewBuffer.call(value), viewOffset.call(value), n)) : value;
  }
  if (ext === DataView) throw new WalkError('view', 'DataView');
  if (Array.isArray(value)) return walkArray(value, depth, copy, memo);
  if (toJSON) {
    const json: unknown = (toJSON as () => unknown).call(value);
    if (json !== value) {
      const out = walk(json, depth + 1, copy, memo);
      return copy ? out : value;
    }
  }
  if (typeof value === 'function') return copy ? undefined : value;
  // Binary data msgpackr does not know as such (another realm's, a SharedArrayBuffer) would be
  // packed as an object of its own keys: nothing of its bytes.
  if (ArrayBuffer.isView(value) || types.isAnyArrayBuffer(value)) throw new WalkError('view', Object.prototype.toString.call(value).slice(8, -1));
  return walkKeys(value, depth, copy, memo);
}

/** An array as msgpackr's packArray reads it: `length`, then each index. */
function walkArray(value: unknown[], depth: number, copy: boolean, memo: Map<object, unknown> | undefined): unknown {
  const n: unknown = value.length;
  if (typeof n !== 'number' || n >>> 0 !== n) throw new WalkError('length');
  if (n > walkLimit) throw new WalkError('size');  // a byte each at least
  const out: unknown[] = [];
  for (let i = 0; i < n; i++) {
    let v = value[i];
    // Numbers, booleans, null and undefined as they are (the common fields, without a call), a
    // byte each at least; the rest through walk(), which counts them.
    if (typeof v === 'object' ? v !== null : typeof v !== 'number' && typeof v !== 'boolean' && v !== undefined) {
      v = walk(v, depth + 1, copy, memo);
    } else if (++walkVisits > walkBudget) {
      throw new WalkError('size');
    }
    if (copy) out.push(v);
  }
  return copy ? out : value;
}

/** An object as msgpackr writes it: its own enumerable string keys (Object.keys), each value read once. */
function walkKeys(value: object, depth: number, copy: boolean, memo: Map<object, unknown> | undefined): unknown {
  const out: [unknown, unknown][] = [];
  for (const key of Object.keys(value)) {
    if (++walkVisits > walkBudget) throw new WalkError('size');  // the key, a byte at least
    const v = walk((value as Record<string, unknown>)[wellFormed(key)], depth + 1, copy, memo);
    if (copy) out.push([key, v]);
  }
  return copy ? new Entries(out) : value;
}

/**
 * A lower bound of how many bytes a walked value encodes to (a byte per value, a string's UTF-16
 * length, a Buffer's bytes), memoized by container: the walk's output shares what the input
 * shared, and msgpackr expands it on every path. An object handed over unchanged counts 1.
 * Throws WalkError past `limit`.
 */
function sizeOf(value: unknown, memo: Map<object, number>, limit: number): number {
  if (typeof value === 'string') return 1 + value.length;
  if (value === null || typeof value !== 'object') return 1;
  const known = memo.get(value);
  if (known !== undefined) return known;
  let size = 1;
  let children: unknown[];
  if (Buffer.isBuffer(value)) {
    size += value.length;
    children = [];
  } else if (value instanceof Entries || value instanceof Map) {
    children = [...(value as Iterable<[unknown, unknown]>)].flat();
  } else if (Array.isArray(value)) {
    children = value;
  } else if (value instanceof Date) {
    children = [];
  } else {
    // An object handed over as it is: what msgpackr writes of it without an extension, its own
    // keys (the walk refused any cycle below it).
    children = Object.entries(value).flat();
  }
  let nested = false;
  for (const child of children) {
    if (child !== null && typeof child === 'object') nested = true;
    size += sizeOf(child, memo, limit);
    if (size > limit) throw new WalkError('size');
  }
  if (nested) memo.set(value, size);  // as the walk's memo: what holds objects
  return size;
}

/**
 * The walk over a whole value: what msgpackr is to pack, bounded as the comment above says.
 * `inPlace`: the value is an array of our own (a tuple's or a batch's copy), whose elements are
 * replaced by what the walk makes of them.
 */
function checkWalk(value: unknown, code: ErrorCode, what: string, limit: number, inPlace = false, valueLimit = limit): unknown {
  walkVisits = 0;
  walkBudget = Math.min(WALK_BUDGET, limit);
  walkLimit = valueLimit;
  if (claims.size > 0) claims = new Map();
  const take = (memo?: Map<object, unknown>): unknown => {
    if (!inPlace) return walk(value, 0, true, memo);
    const top = value as unknown[];
    walkVisits++;
    for (let i = 0; i < top.length; i++) top[i] = walk(top[i], 1, true, memo);
    return top;
  };
  try {
    try {
      return take();
    } catch (error) {
      if (!(error instanceof WalkError) || error.kind !== 'size') throw error;
      if (walkVisits > limit) throw error;  // that many containers: at least that many bytes
      // A graph of shared references: each container walked once (at most `limit` of them), then
      // what the result encodes to bounded.
      walkVisits = 0;
      walkBudget = Math.min(limit, MEMO_BUDGET);
      const taken = take(new Map());
      sizeOf(taken, new Map(), limit);
      return taken;
    }
  } catch (error) {
    if (!(error instanceof WalkError)) throw error;
    if (error.kind === 'depth') {
      throw new CappedError(`${what} nests containers deeper than ${MAX_WALK_DEPTH} levels (a cycle?); at most 32 are stored`, code);
    }
    if (error.kind === 'view') {
      throw new CappedError(`${what} holds ${/^[A-Z]/.test(error.view ?? '') ? 'a ' : ''}${error.view}, which would not be stored as its bytes: ` +
        'pass a Buffer of them (Buffer.from(view.buffer, view.byteOffset, view.byteLength))', code);
    }
    if (error.kind === 'surrogate') throw new CappedError(`${what} has a string with a lone surrogate, which has no UTF-8 form`, code);
    if (error.kind === 'length') throw new CappedError(`${what} holds an array whose length no array has`, code);
    throw new CappedError(`${what} would encode to more than ${limit} bytes, the most it may take here ` +
      '(an object graph with shared references, expanded on every path?)', 'ER_TUPLE_TOO_LARGE');
  }
}

// msgpackr's pack is not re-entrant (its buffer and position are module state): a getter inside
// a tuple that packed another tuple (an insert from the getter) would overwrite the outer one's
// bytes. So packing refuses to nest.
let packing = false;

/**
 * Writes a number at b[p] as msgpackr does (unsigned 32-bit integers, and -0, as uint; negative
 * 32-bit ones as int; everything else as float64) and returns the position after it.
 */
export function writeNumber(b: Buffer, p: number, v: number): number {
  if (v >>> 0 === v) {
    if (v < 0x80) b[p++] = v;
    else if (v < 0x100) { b[p++] = 0xcc; b[p++] = v; }
    else if (v < 0x10000) { b[p++] = 0xcd; b.writeUInt16BE(v, p); p += 2; }
    else { b[p++] = 0xce; b.writeUInt32BE(v, p); p += 4; }
  } else if (v >> 0 === v) {
    if (v >= -0x20) b[p++] = v & 0xff;
    else if (v >= -0x80) { b[p++] = 0xd0; b.writeInt8(v, p); p += 1; }
    else if (v >= -0x8000) { b[p++] = 0xd1; b.writeInt16BE(v, p); p += 2; }
    else { b[p++] = 0xd2; b.writeInt32BE(v, p); p += 4; }
  } else {
    b[p++] = 0xcb;
    b.writeDoubleBE(v, p);
    p += 8;
  }
  return p;
}

// The common tuple, encoded without msgpackr (the counterpart of decodeFlat below: faster, and
// without the garbage msgpackr's pack makes on every call): an array of fewer than 16
// fields that are numbers, null, booleans and ASCII strings of fewer than 32 characters, in
// exactly the bytes msgpackr writes (test/hotpath.test.ts compares them on seeded tuples).
// Anything else returns undefined, having written nothing that counts, and goes to msgpackr.
// It runs inside encode(), so a getter that calls the space meets the same refusal.
/** The most bytes encodeFlat writes: a header, then 15 fields of at most 32 bytes (a float64 is 9). */
const FLAT_MAX = 1 + 15 * 32;
const flatOut = Buffer.allocUnsafeSlow(FLAT_MAX) as PackedRange;
flatOut.start = 0;

// `length`: the tuple's length when the caller read and checked it already (a Proxy may answer
// differently on a second read).
function encodeFlat(value: unknown, length = -1): PackedRange | undefined {
  const end = encodeFlatAt(value, length, flatOut, 0);
  if (end < 0) return undefined;
  flatOut.end = end;
  return flatOut;
}

/** encodeFlat into b at `at` (at least FLAT_MAX bytes of room): the end, or -1. */
function encodeFlatAt(value: unknown, length: number, b: Buffer, at: number): number {
  if (!Array.isArray(value)) return -1;
  const n = length >= 0 ? length : value.length;
  if (n >= 16) return -1;
  b[at] = 0x90 | n;
  let p = at + 1;
  for (let i = 0; i < n; i++) {
    const v: unknown = value[i];
    if (typeof v === 'number') {
      p = writeNumber(b, p, v);
    } else if (typeof v === 'string') {
      const len = v.length;
      if (len >= 32) return -1;
      b[p++] = 0xa0 | len;
      for (let k = 0; k < len; k++) {
        const c = v.charCodeAt(k);
        if (c >= 0x80) return -1;
        b[p++] = c;
      }
    } else if (v === null) b[p++] = 0xc0;
    else if (v === true) b[p++] = 0xc3;
    else if (v === false) b[p++] = 0xc2;
    else return -1;
  }
  return p;
}

// A tuple a write stores (packTuple, packTupleBuffer, packTuples) is checked inside the guard
// below: its length must be an array length (read once; a Proxy can claim anything), and a
// batch's elements must be arrays. With `copy` (the space has an insert watcher: a running
// task's), each tuple is first copied, each field read once, by index, and encoded from that
// copy, which the space hands to the watcher (takeCopy()): the watcher reads fields after the
// write committed, and no user code (a getter, a Proxy trap) may run then. Without a watcher a
// tuple is copied only when it leaves the fast encoder (the walk and msgpackr then read that
// copy; the walk's snapshot, above, then copies what lies below its fields), to keep the common
// write as fast as it was; its fields the fast encoder read before it gave up are read twice. So
// a getter that answers differently on each read may be stored from another of its answers than
// with a watcher (README, "Tuples"); what is stored is always one of its answers, checked.
let lastCopy: unknown[] = [];

/** The copy the last packTuple/packTuples made with `copy`; it is not kept here. */
export function takeCopy(): unknown[] {
  const copy = lastCopy;
  lastCopy = [];
  return copy;
}

/** value.length, read once; it must be an array length, and at most `limit` (a byte each). */
function checkedLength(value: unknown[], what: string, limit: number): number {
  const n: unknown = value.length;
  if (typeof n !== 'number' || !(n >>> 0 === n || (Number.isInteger(n) && n >= 0 && n <= 0xffffffff))) {
    throw new CappedError(`${what} has a length that no array has: ${textOf(n)}`, 'ER_TUPLE_FORMAT');
  }
  if (n > limit) throw new CappedError(`${what} has ${n} elements: more than the ${limit} bytes it may encode to`, 'ER_TUPLE_TOO_LARGE');
  return n;
}

/** A plain copy of an array's elements, each read once, by index. */
function copyElements(value: unknown[], what: string, limit: number): unknown[] {
  const n = checkedLength(value, what, limit);
  const copy = new Array<unknown>(n);
  for (let i = 0; i < n; i++) copy[i] = value[i];
  return copy;
}

function batchTuple(value: unknown, i: number): unknown[] {
  if (!isArray(value)) throw new CappedError(`insertMany: tuple #${i}: a tuple must be an array, got ${describe(value)}`, 'ER_TUPLE_FORMAT');
  return value;
}

// msgpackr throws plain errors for what MessagePack cannot hold (a BigInt beyond 64 bits, a
// Symbol, a cyclic array); they become CappedErrors with a code.
// tuples: 1, a tuple a write stores; 2, a batch of them (`limit` is then one tuple's, and the
// batch's is limitOf(limit, its length)); checked, and copied with `copy` (see lastCopy).
function encode(value: unknown, code: ErrorCode, what: string, mode = 0, flat = false, limit = MAX_ENCODED,
  tuples: 0 | 1 | 2 = 0, copy = false, valueLimit = limit): Buffer {
  if (packing) {
    throw new CappedError(`${what} cannot be encoded while another tuple or key is being encoded ` +
      '(a getter inside a tuple or key called the space)', 'ER_ILLEGAL_PARAMS');
  }
  packing = true;
  try {
    let length = -1;
    if (tuples === 1) {
      // The space's checkTuple found an array already.
      if (copy) value = lastCopy = copyElements(value as unknown[], what, limit);
      else length = checkedLength(value as unknown[], what, limit);
    } else if (tuples === 2) {
      // The batch's tuples, each read once; with `copy`, each a copy of its fields too.
      const items = copyElements(value as unknown[], 'insertMany: the batch', MAX_ENCODED);
      const lengths: number[] = [];
      for (let i = 0; i < items.length; i++) {
        const tuple = batchTuple(items[i], i);
        if (copy) items[i] = copyElements(tuple, `insertMany: tuple #${i}`, limit);
        else lengths.push(checkedLength(tuple, `insertMany: tuple #${i}`, limit));
      }
      if (copy) lastCopy = items;
      return encodeBatch(items, copy ? undefined : lengths, code, what, limit);
    }
    if (flat) {
      const done = encodeFlat(value, length);
      if (done !== undefined) return done;
    }
    // Off the fast path (or without one: upsert), msgpackr packs the walk's snapshot: a getter
    // that answers differently on each read cannot pass the walk's checks with one answer and be
    // encoded from another (a lone surrogate then became U+FFFD on its way in, a Float64Array the
    // bytes of other writes). A tuple is a copy of our own by then (its elements are replaced by
    // their snapshots), and so is a batch with `copy`.
    if (tuples === 1 && !copy) value = copyElements(value as unknown[], what, limit);
    return packr.pack(checkWalk(value, code, what, limit, tuples === 1, valueLimit), mode);
  } catch (error) {
    if (copy) lastCopy = [];
    if (error instanceof CappedError) throw error;
    throw new CappedError(`${what} cannot be encoded as MessagePack: ${textOf(error)}`, code);
  } finally {
    packing = false;
  }
}

/**
 * A batch of tuples (insertMany) as msgpackr packs an array of them. When every tuple is flat,
 * each is written by encodeFlat straight into a Buffer of the batch's own (each field read once,
 * no msgpackr). Else the batch goes to msgpackr whole, as the walk's snapshot: one msgpackr call
 * for the batch costs less than one a tuple (a nested tuple's fields the fast encoder read before
 * it gave up are read again, as for a single tuple). `lengths`: each tuple's length, read and
 * checked already (the tuples are the caller's arrays); without them the tuples are copies of
 * our own. `limit`: one tuple's; the batch's bounds each tuple, as when msgpackr packed the batch
 * whole, so that a tuple over maxTupleSize is the addon's to refuse, in the batch's order (an
 * earlier tuple's duplicate key is the error then, as in Tarantool).
 */
function encodeBatch(items: unknown[], lengths: number[] | undefined, code: ErrorCode, what: string, limit: number): Buffer {
  const n = items.length;
  const total = limitOf(limit, n);
  let out = Buffer.allocUnsafe(64 + n * 48);
  let end = 0;
  // msgpackr's array header.
  if (n < 0x10) out[end++] = 0x90 | n;
  else if (n < 0x10000) { out[end++] = 0xdc; end = out.writeUInt16BE(n, end); }
  else { out[end++] = 0xdd; end = out.writeUInt32BE(n, end); }
  for (let i = 0; i < n; i++) {
    if (end + FLAT_MAX > out.length) {
      const grown = Buffer.allocUnsafe(Math.max(out.length * 2, end + FLAT_MAX));
      out.copy(grown, 0, 0, end);
      out = grown;
    }
    end = encodeFlatAt(items[i], lengths === undefined ? -1 : lengths[i], out, end);
    if (end < 0) return packr.pack(checkWalk(items, code, what, total, true), 0);
    if (end > total) throw new CappedError(`${what} would encode to more than ${total} bytes, the most it may take here`, 'ER_TUPLE_TOO_LARGE');
  }
  return out.subarray(0, end);
}

/**
 * The most bytes `n` values of at most `max` bytes each (a batch of tuples, update operations
 * whose arguments end up in a tuple) may encode to, with room for their headers.
 */
export function limitOf(max: number, n = 1): number {
  return Math.min(MAX_ENCODED, (max + 16) * Math.max(1, n) + 16);
}

/** `limit`: the most bytes the value may encode to (see checkWalk). */
export function pack(value: unknown, limit = MAX_ENCODED): Buffer {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', 0, false, limit);
}

/** A packed tuple in msgpackr's own buffer: bytes [start, end), valid until the next pack. */
export type PackedRange = Buffer & { start: number; end: number };

// For one tuple on its way straight into the addon, which copies it: msgpackr then returns its
// working buffer with start/end instead of allocating a subarray (about 40 ns a call).
export function packRange(value: unknown, limit = MAX_ENCODED): PackedRange {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', REUSE_BUFFER_MODE, true, limit) as PackedRange;
}

/** packRange for a tuple a write stores, checked and, with `copy`, encoded from a copy (see lastCopy). */
export function packTuple(value: unknown, limit = MAX_ENCODED, copy = false): PackedRange {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', REUSE_BUFFER_MODE, true, limit, 1, copy) as PackedRange;
}

/** packTuple into a Buffer of its own (for a call that packs something else before the addon copies it). */
export function packTupleBuffer(value: unknown, limit = MAX_ENCODED): Buffer {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', 0, false, limit, 1);
}

/** A batch of tuples a write stores, each checked and, with `copy`, copied; `limit`: one tuple's. */
export function packTuples(value: unknown, limit = MAX_ENCODED, copy = false): Buffer {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', 0, false, limit, 2, copy);
}

// Numbers and booleans cross as they are (the addon encodes them, exactly); strings and arrays
// are packed by msgpackr, so that a key's bytes always match the tuple's.
export function packKey(key: Key | undefined): NativeKey {
  if (key === undefined || typeof key === 'number' || typeof key === 'boolean') return key;
  return encode(Array.isArray(key) ? key : [key], 'ER_KEY_TYPE', 'the key');
}

function grow(size: number): void {
  if (size > scratch.length && size <= 16 * 1024 * 1024) {
    scratch = Buffer.allocUnsafeSlow(Math.max(size, scratch.length * 2));
  }
}

const fromCharCode = String.fromCharCode;
// Node's Buffer has it (what toString('latin1', ...) ends in); @types/node does not declare it.
type LatinSlicer = Buffer & { latin1Slice(start: number, end: number): string };

// An ASCII string of n bytes at b[p], or undefined when a byte is not ASCII. Short ones are
// built here; from 8 bytes on, latin1Slice (one native call) is cheaper.
function ascii(b: Buffer, p: number, n: number): string | undefined {
  if (n < 8) {
    let s = '';
    for (let i = 0; i < n; i++) {
      const c = b[p + i];
      if (c >= 0x80) return undefined;
      s += fromCharCode(c);
    }
    return s;
  }
  for (let i = p; i < p + n; i++) if (b[i] >= 0x80) return undefined;
  return (b as LatinSlicer).latin1Slice(p, p + n);
}

/**
 * The common tuple, decoded without msgpackr (a counter [id, n] in about 16 ns instead of 80):
 * an array of fewer than 16 fields that are integers of at most 32 bits, float64s, nil,
 * booleans and ASCII strings of fewer than 32 bytes, the values msgpackr would give. Anything
 * else (and any byte out of place) returns undefined and goes to msgpackr.
 */
function decodeFlat(b: Buffer, end: number): Tuple | undefined {
  const h = b[0];
  if ((h & 0xf0) !== 0x90) return undefined;
  const n = h & 0x0f;
  const out = new Array<unknown>(n);
  let p = 1;
  for (let i = 0; i < n; i++) {
    if (p >= end) return undefined;
    const c = b[p++];
    let v: unknown;
    if (c < 0x80) v = c;
    else if (c >= 0xe0) v = c - 0x100;
    else if (c >= 0xa0 && c < 0xc0) {
      const len = c & 0x1f;
      if (p + len > end || (v = ascii(b, p, len)) === undefined) return undefined;
      p += len;
    } else {
      switch (c) {
        case 0xc0: v = null; break;
        case 0xc2: v = false; break;
        case 0xc3: v = true; break;
        case 0xcc: if (p + 1 > end) return undefined; v = b[p]; p += 1; break;
        case 0xcd: if (p + 2 > end) return undefined; v = b.readUInt16BE(p); p += 2; break;
        case 0xce: if (p + 4 > end) return undefined; v = b.readUInt32BE(p); p += 4; break;
        case 0xd0: if (p + 1 > end) return undefined; v = b.readInt8(p); p += 1; break;
        case 0xd1: if (p + 2 > end) return undefined; v = b.readInt16BE(p); p += 2; break;
        case 0xd2: if (p + 4 > end) return undefined; v = b.readInt32BE(p); p += 4; break;
        case 0xcb: if (p + 8 > end) return undefined; v = b.readDoubleBE(p); p += 8; break;
        default: return undefined;
      }
    }
    out[i] = v;
  }
  return p === end ? out : undefined;
}

export function decodeOne(result: NativeResult): Tuple | undefined {
  if (result === null) return undefined;
  if (typeof result === 'number') {  // a number is the end offset
    return decodeFlat(scratch, result) ?? unpack(scratch, result);
  }
  grow(result.length);
  return unpack(result, result.length);
}

export function decodeMany(result: number | Buffer | undefined): Tuple[] {
  if (result === undefined || result === 0) return [];
  if (typeof result === 'number') return unpackMany(scratch.subarray(0, result));
  if (result.length === 0) return [];
  grow(result.length);
  return unpackMany(result);
}

/**
 * decodeOne for a write's result (delete, update, upsert): the write stands whatever the decode
 * does, so a failure says so.
 */
export function decodeApplied(result: NativeResult, what: string): Tuple | undefined {
  try {
    return decodeOne(result);
  } catch (error) {
    throw applied(what, 'its tuple', error);
  }
}

/** The error of a write that was applied but whose tuples cannot be decoded. */
export function applied(what: string, whose: string, error: unknown): CappedError {
  const cause = error instanceof CappedError && error.cause !== undefined ? error.cause : error;
  return new CappedError(`the ${what} was applied, but ${whose} cannot be decoded: ${textOf(cause)}`, 'ER_TUPLE_FORMAT', { cause });
}

// msgpackr runs the unpack of any extension a user registered with its addExtension(): user code,
// which may throw or read the space. Its error becomes ER_TUPLE_FORMAT, with it as the cause (a
// CappedError from a nested call passes as it is).
function undecodable(error: unknown): CappedError {
  if (error instanceof CappedError) return error;
  return new CappedError(`a stored tuple cannot be decoded: ${textOf(error)}`, 'ER_TUPLE_FORMAT', { cause: error });
}

function unpack(b: Buffer, end: number): Tuple {
  decoding++;
  try {
    return unpackr.unpack(b, end) as Tuple;
  } catch (error) {
    throw undecodable(error);
  } finally {
    decoding--;
  }
}

function unpackMany(b: Buffer): Tuple[] {
  decoding++;
  try {
    return unpackr.unpackMultiple(b) as Tuple[];
  } catch (error) {
    throw undecodable(error);
  } finally {
    decoding--;
  }
}

/** A read's result as bytes: a view of the scratch Buffer for an offset (valid until the next read). */
export function resultBytes(result: number | Buffer | undefined): Buffer {
  if (result === undefined) return scratch.subarray(0, 0);
  return typeof result === 'number' ? scratch.subarray(0, result) : result;
}

/** Tuples that decode, and the failures of those that do not (their bytes). */
export interface Decoded {
  tuples: Tuple[];
  /** Indexes into `tuples` (whose entries there are undefined), with each one's error and bytes. */
  failed: { index: number; error: CappedError; bytes: Buffer }[];
}

/**
 * decodeMany, tuple by tuple when one of them cannot be decoded (a user's msgpackr extension threw
 * in its unpack): the daemon skips such a tuple instead of failing its whole chunk every pass.
 */
export function decodeEach(result: number | Buffer | undefined): Decoded {
  if (result === undefined || result === 0) return { tuples: [], failed: [] };
  const b = resultBytes(result);
  if (typeof result !== 'number') grow(b.length);
  try {
    return { tuples: b.length === 0 ? [] : unpackMany(b), failed: [] };
  } catch {
    // One by one, over a copy: an unpack may read the space and so replace the scratch Buffer.
  }
  const tuples: Tuple[] = [];
  const failed: Decoded['failed'] = [];
  for (const one of splitTuples(Buffer.from(b))) {
    try {
      tuples.push(unpack(one, one.length));
    } catch (error) {
      failed.push({ index: tuples.length, error: undecodable(error), bytes: Buffer.from(one) });
      tuples.push(undefined as unknown as Tuple);
    }
  }
  return { tuples, failed };
}

/** The tuples of a read's bytes, each as a view of them. */
export function splitTuples(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let p = 0; p < bytes.length;) {
    const end = skipValue(bytes, p);
    out.push(bytes.subarray(p, end));
    p = end;
  }
  return out;
}

/**
 * The fields of a tuple that cannot be decoded that decode on their own (its key parts, its TTL:
 * scalars), at their positions; the others are left out (holes). Never throws.
 */
export function decodeFields(bytes: Buffer, fields: readonly number[]): Tuple {
  const out: Tuple = [];
  try {
    const h = bytes[0];
    let n: number;
    let p: number;
    if ((h & 0xf0) === 0x90) [n, p] = [h & 0x0f, 1];
    else if (h === 0xdc) [n, p] = [bytes.readUInt16BE(1), 3];
    else if (h === 0xdd) [n, p] = [bytes.readUInt32BE(1), 5];
    else return out;
    for (let i = 0; i < n && p < bytes.length; i++) {
      const end = skipValue(bytes, p);
      if (fields.includes(i)) {
        try {
          out[i] = unpack(bytes.subarray(p, end), end - p);
        } catch {
          // left out
        }
      }
      p = end;
    }
  } catch {
    // malformed: what was decoded so far
  }
  return out;
}

// The end of the MessagePack value at b[p] (the addon validated it).
function skipValue(b: Buffer, p: number): number {
  let pending = 1;
  while (pending > 0) {
    pending--;
    const c = b[p++];
    if (c <= 0x7f || c >= 0xe0 || c === 0xc0 || c === 0xc2 || c === 0xc3) continue;
    if (c >= 0x80 && c <= 0x8f) { pending += 2 * (c & 0x0f); continue; }
    if (c >= 0x90 && c <= 0x9f) { pending += c & 0x0f; continue; }
    if (c >= 0xa0 && c <= 0xbf) { p += c & 0x1f; continue; }
    switch (c) {
      case 0xc4: case 0xd9: p += 1 + b[p]; break;
      case 0xc5: case 0xda: p += 2 + b.readUInt16BE(p); break;
      case 0xc6: case 0xdb: p += 4 + b.readUInt32BE(p); break;
      case 0xc7: p += 2 + b[p]; break;
      case 0xc8: p += 3 + b.readUInt16BE(p); break;
      case 0xc9: p += 5 + b.readUInt32BE(p); break;
      case 0xca: p += 4; break;
      case 0xcb: p += 8; break;
      case 0xcc: case 0xd0: p += 1; break;
      case 0xcd: case 0xd1: p += 2; break;
      case 0xce: case 0xd2: p += 4; break;
      case 0xcf: case 0xd3: p += 8; break;
      case 0xd4: p += 2; break;
      case 0xd5: p += 3; break;
      case 0xd6: p += 5; break;
      case 0xd7: p += 9; break;
      case 0xd8: p += 17; break;
      case 0xdc: pending += b.readUInt16BE(p); p += 2; break;
      case 0xdd: pending += b.readUInt32BE(p); p += 4; break;
      case 0xde: pending += 2 * b.readUInt16BE(p); p += 2; break;
      case 0xdf: pending += 2 * b.readUInt32BE(p); p += 4; break;
      default: throw new CappedError(`a stored tuple has the byte 0x${c.toString(16)}, which is not MessagePack`, 'ER_INTERNAL');
    }
  }
  return p;
}

/** Update operations on their way into the addon, which copies them: as packRange. */
/** `limit`: all the operations'; `valueLimit`: one array's length in them (its elements go into one tuple). */
export function packOps(ops: unknown, limit = MAX_ENCODED, valueLimit = limit): PackedRange {
  return encode(ops, 'ER_UPDATE_OP', 'the update operations', REUSE_BUFFER_MODE, false, limit, 0, false, valueLimit) as PackedRange;
}
