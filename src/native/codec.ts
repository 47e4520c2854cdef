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
//   that holds containers walked once, whatever the paths to it) and adds up a lower bound of the
//   encoded size, refusing the value once that passes `limit`.
const MAX_WALK_DEPTH = 40;
const WALK_BUDGET = 1 << 22;
/** No value may encode to more (maxTupleSize < 2^32; a batch or a key has no smaller bound). */
export const MAX_ENCODED = 2 ** 32;

class WalkError extends Error {
  constructor(readonly kind: 'depth' | 'size' | 'view', readonly view?: string) {
    super(kind);
  }
}

// msgpackr writes a typed array as binary data, but copies its elements, not its bytes: a
// Float64Array's header said 16 bytes and held each element cut to one byte, then whatever its
// buffer held before (other writes' data); a DataView came out empty; a view or an ArrayBuffer
// of another realm (node:vm), or a SharedArrayBuffer, fails msgpackr's instanceof checks and
// came out as a plain object. So only this realm's byte views (Uint8Array and Buffer, Int8Array,
// Uint8ClampedArray) and ArrayBuffers pass, stored as their bytes and read back as a Buffer. The
// kind is read from the value's internal slots (node:util types), which a subclass or an own
// BYTES_PER_ELEMENT cannot fake.
function checkView(value: object): void {
  const byteView = types.isUint8Array(value) || types.isInt8Array(value) || types.isUint8ClampedArray(value);
  if (byteView && (value instanceof Uint8Array || value instanceof Int8Array || value instanceof Uint8ClampedArray)) return;
  if (!byteView && types.isArrayBuffer(value) && value instanceof ArrayBuffer) return;
  throw new WalkError('view', Object.prototype.toString.call(value).slice(8, -1));
}

// What msgpackr packs in place of an object that is not a plain object, an array, a Map, a Set,
// a Date or binary data: a user class's toJSON() result; an Error's name, message and cause; a
// RegExp's source and flags. The walks check that instead, so a typed array or a lone surrogate
// reached that way is refused like one in the tuple itself. (toJSON runs here and again in
// msgpackr: one that answers differently the second time is not checked, as a getter is not.)
// msgpackr's rule: a toJSON is used unless the value's class is one msgpackr writes itself (the
// classes below, subclasses excepted) or the toJSON is Date's or Buffer's own.
const WRITTEN_AS_IS = new Set<unknown>([Object, Array, Map, Set, Date, RegExp, Error, ArrayBuffer, Buffer, Uint8Array, Int8Array,
  Uint8ClampedArray, Uint16Array, Int16Array, Uint32Array, Int32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array, DataView]);
const dateToJSON = Date.prototype.toJSON;
const bufferToJSON = Buffer.prototype.toJSON;

function packedInstead(value: object): unknown {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function' && toJSON !== dateToJSON && toJSON !== bufferToJSON && !WRITTEN_AS_IS.has(value.constructor)) {
    return (toJSON as () => unknown).call(value);
  }
  if (value instanceof Error) return [value.name, value.message, (value as { cause?: unknown }).cause];
  if (value instanceof RegExp) return [value.source, value.flags];
  return value;
}

let walkVisits = 0;
let walkBudget = WALK_BUDGET;

function wellFormed(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return (value as unknown as { isWellFormed(): boolean }).isWellFormed();
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return true;
  if (depth > MAX_WALK_DEPTH) throw new WalkError('depth');
  if (++walkVisits > walkBudget) throw new WalkError('size');
  if (typeof value === 'function') {
    // msgpackr packs a function as its toJSON() result, or as nothing (undefined) without one.
    const instead = packedInstead(value);
    return instead === value || wellFormed(instead, depth + 1);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!wellFormed(value[i], depth + 1)) return false;
    return true;
  }
  const instead = packedInstead(value);
  if (instead !== value) return wellFormed(instead, depth + 1);
  if (ArrayBuffer.isView(value) || types.isAnyArrayBuffer(value)) {
    checkView(value);
    return true;
  }
  if (value instanceof Date) return true;
  if (value instanceof Map || value instanceof Set) {
    for (const [k, v] of value.entries()) if (!wellFormed(k, depth + 1) || !wellFormed(v, depth + 1)) return false;
    return true;
  }
  for (const key in value as Record<string, unknown>) {
    if (!wellFormed(key, depth + 1) || !wellFormed((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/**
 * The memoized walk, once the plain one ran out of budget: whether every string is well formed
 * (-1 when not), and a lower bound of how many bytes the value encodes to: a byte per value, a
 * string's UTF-16 length (its UTF-8 form is no shorter), a typed array's bytes; an object's own
 * enumerable keys only (a function as its toJSON() result, or one byte), a Set's values once
 * (what msgpackr writes, or less). A container that holds containers is memoized, so shared ones are walked once;
 * one that holds only scalars is not (nothing to share below it, and a tuple of millions of small
 * arrays would otherwise fill the Map). Throws WalkError past MAX_WALK_DEPTH or past `limit`.
 */
function sizeWalk(value: unknown, depth: number, memo: Map<object, number>, limit: number): number {
  if (typeof value === 'string') {
    if (!(value as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
    return 1 + value.length;
  }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return 1;
  const known = memo.get(value);
  if (known !== undefined) return known;
  if (depth > MAX_WALK_DEPTH) throw new WalkError('depth');
  let size = 1;
  let nested = false;
  const instead = Array.isArray(value) ? value : packedInstead(value);
  if (typeof value === 'function' && instead === value) return 1;  // packed as nothing (undefined)
  if (instead !== value) {
    const n = sizeWalk(instead, depth + 1, memo, limit);
    if (n < 0) return -1;
    size += n;
    nested = true;
  } else if (ArrayBuffer.isView(value) || types.isAnyArrayBuffer(value)) {
    checkView(value);
    size += (value as ArrayBufferView | ArrayBuffer).byteLength;
  } else if (value instanceof Date) {
    // a timestamp
  } else {
    // Array elements, Set values, Map keys and values, or an object's own enumerable keys and
    // values: one list of children, walked by the one loop below.
    let children: unknown[];
    if (Array.isArray(value)) {
      children = value;
    } else if (value instanceof Set) {
      children = [...value.values()];
    } else if (value instanceof Map) {
      children = [];
      for (const [k, v] of value.entries()) children.push(k, v);
    } else {
      children = [];
      // The lone-surrogate check covers every key for..in sees (the plain walk's); the size
      // counts the own ones msgpackr writes.
      for (const key in value as Record<string, unknown>) {
        const v = (value as Record<string, unknown>)[key];
        if (!Object.hasOwn(value, key)) {
          if (!(key as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
          if (typeof v === 'string' && !(v as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
          continue;
        }
        children.push(key, v);
      }
    }
    for (let i = 0; i < children.length; i++) {
      const v = children[i];
      if (v !== null && typeof v === 'object') nested = true;
      const n = sizeWalk(v, depth + 1, memo, limit);
      if (n < 0) return -1;
      size += n;
      if (size > limit) throw new WalkError('size');
    }
  }
  if (nested) memo.set(value, size);
  return size;
}

/** wellFormed over a whole value, bounded as the comment above says. */
function checkWalk(value: unknown, code: ErrorCode, what: string, limit: number): void {
  walkVisits = 0;
  walkBudget = Math.min(WALK_BUDGET, limit);
  let ok: boolean;
  try {
    try {
      ok = wellFormed(value, 0);
    } catch (error) {
      if (!(error instanceof WalkError) || error.kind !== 'size') throw error;
      if (walkVisits > limit) throw error;  // that many containers: at least that many bytes
      ok = sizeWalk(value, 0, new Map(), limit) >= 0;
    }
  } catch (error) {
    if (!(error instanceof WalkError)) throw error;
    if (error.kind === 'depth') {
      throw new CappedError(`${what} nests containers deeper than ${MAX_WALK_DEPTH} levels (a cycle?); at most 32 are stored`, code);
    }
    if (error.kind === 'view') {
      throw new CappedError(`${what} holds a ${error.view}, which would not be stored as its bytes: pass a Buffer of them ` +
        '(Buffer.from(view.buffer, view.byteOffset, view.byteLength))', code);
    }
    throw new CappedError(`${what} would encode to more than ${limit} bytes, the most it may take here ` +
      '(an object graph with shared references, expanded on every path?)', 'ER_TUPLE_TOO_LARGE');
  }
  if (!ok) throw new CappedError(`${what} has a string with a lone surrogate, which has no UTF-8 form`, code);
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
const flatOut = Buffer.allocUnsafeSlow(1 + 15 * 32) as PackedRange;
flatOut.start = 0;

// `length`: the tuple's length when the caller read and checked it already (a Proxy may answer
// differently on a second read).
function encodeFlat(value: unknown, length = -1): PackedRange | undefined {
  if (!Array.isArray(value)) return undefined;
  const n = length >= 0 ? length : value.length;
  if (n >= 16) return undefined;
  const b = flatOut;
  b[0] = 0x90 | n;
  let p = 1;
  for (let i = 0; i < n; i++) {
    const v: unknown = value[i];
    if (typeof v === 'number') {
      p = writeNumber(b, p, v);
    } else if (typeof v === 'string') {
      const len = v.length;
      if (len >= 32) return undefined;
      b[p++] = 0xa0 | len;
      for (let k = 0; k < len; k++) {
        const c = v.charCodeAt(k);
        if (c >= 0x80) return undefined;
        b[p++] = c;
      }
    } else if (v === null) b[p++] = 0xc0;
    else if (v === true) b[p++] = 0xc3;
    else if (v === false) b[p++] = 0xc2;
    else return undefined;
  }
  flatOut.end = p;
  return flatOut;
}

// A tuple a write stores (packTuple, packTupleBuffer, packTuples) is checked inside the guard
// below: its length must be an array length (read once; a Proxy can claim anything), and a
// batch's elements must be arrays. With `copy` (the space has an insert watcher: a running
// task's), each tuple is first copied, each field read once, by index, and encoded from that
// copy, which the space hands to the watcher (takeCopy()): the watcher reads fields after the
// write committed, and no user code (a getter, a Proxy trap) may run then. Without a watcher a
// tuple is copied only when it leaves the fast encoder (the walk and msgpackr then read that
// copy), to keep the common write as fast as it was; its fields the fast encoder read before it
// gave up are read twice, and a batch without a watcher is read by the walk and by msgpackr. So
// a getter that answers differently on each read may be stored from another of its answers than
// with a watcher (README, "Tuples"); what is stored is always well formed.
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
  tuples: 0 | 1 | 2 = 0, copy = false): Buffer {
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
      const batch = value as unknown[];
      if (copy) {
        const copies = copyElements(batch, 'insertMany: the batch', MAX_ENCODED);
        for (let i = 0; i < copies.length; i++) copies[i] = copyElements(batchTuple(copies[i], i), `insertMany: tuple #${i}`, limit);
        value = lastCopy = copies;
        limit = limitOf(limit, copies.length);
      } else {
        const n = checkedLength(batch, 'insertMany: the batch', MAX_ENCODED);
        for (let i = 0; i < n; i++) checkedLength(batchTuple(batch[i], i), `insertMany: tuple #${i}`, limit);
        limit = limitOf(limit, n);
      }
    }
    if (flat) {
      const done = encodeFlat(value, length);
      if (done !== undefined) return done;
    }
    // Off the fast path (or without one: upsert), the walk and msgpackr read the tuple's fields
    // from one copy: a field's getter that answers differently on each read cannot pass the
    // walk's checks with one answer and be encoded from another (a lone surrogate then became
    // U+FFFD on its way in, a Float64Array the bytes of other writes).
    if (tuples === 1 && !copy) value = copyElements(value as unknown[], what, limit);
    checkWalk(value, code, what, limit);
    return packr.pack(value, mode);
  } catch (error) {
    if (copy) lastCopy = [];
    if (error instanceof CappedError) throw error;
    throw new CappedError(`${what} cannot be encoded as MessagePack: ${textOf(error)}`, code);
  } finally {
    packing = false;
  }
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
export function packOps(ops: unknown, limit = MAX_ENCODED): PackedRange {
  return encode(ops, 'ER_UPDATE_OP', 'the update operations', REUSE_BUFFER_MODE, false, limit) as PackedRange;
}
