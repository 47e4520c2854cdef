// MessagePack at the boundary: tuples and keys are packed here with msgpackr (small flat tuples
// by encodeFlat, into the same bytes), and what the addon returns is unpacked here. Reads land in
// one reusable scratch Buffer (the addon returns the byte count) unless they are larger, in which
// case the addon returns a fresh Buffer.
import { Packr, REUSE_BUFFER_MODE, Unpackr } from 'msgpackr';
import type { NativeKey, NativeResult } from './loader.js';
import { CappedError, textOf, type ErrorCode } from '../errors.js';

export type Tuple = unknown[];
export type KeyPart = number | string | boolean | bigint;
export type Key = KeyPart | KeyPart[];

const packr = new Packr({ useRecords: false, variableMapSize: true });
// copyBuffers: binary fields must not alias the scratch Buffer, which the next read overwrites.
const unpackr = new Unpackr({ useRecords: false, copyBuffers: true });

let scratch = Buffer.allocUnsafeSlow(64 * 1024);

export function scratchBuffer(): Buffer {
  return scratch;
}

// A string with a lone surrogate has no UTF-8 form: msgpackr would write invalid bytes for a
// short one (which the addon refuses) and silently substitute U+FFFD in a long one. Both are
// refused here, so data never changes on its way in.
function wellFormed(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return (value as unknown as { isWellFormed(): boolean }).isWellFormed();
  if (value === null || typeof value !== 'object' || depth > 64) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!wellFormed(value[i], depth + 1)) return false;
    return true;
  }
  if (ArrayBuffer.isView(value) || value instanceof Date) return true;
  for (const key in value as Record<string, unknown>) {
    if (!wellFormed(key, depth + 1) || !wellFormed((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
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

function encodeFlat(value: unknown): PackedRange | undefined {
  if (!Array.isArray(value)) return undefined;
  const n = value.length;
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

// msgpackr throws plain errors for what MessagePack cannot hold (a BigInt beyond 64 bits, a
// Symbol, a cyclic array); they become CappedErrors with a code.
function encode(value: unknown, code: ErrorCode, what: string, mode = 0, flat = false): Buffer {
  if (packing) {
    throw new CappedError(`${what} cannot be encoded while another tuple or key is being encoded ` +
      '(a getter inside a tuple or key called the space)', 'ER_ILLEGAL_PARAMS');
  }
  packing = true;
  try {
    if (flat) {
      const done = encodeFlat(value);
      if (done !== undefined) return done;
    }
    if (!wellFormed(value, 0)) {
      throw new CappedError(`${what} has a string with a lone surrogate, which has no UTF-8 form`, code);
    }
    return packr.pack(value, mode);
  } catch (error) {
    if (error instanceof CappedError) throw error;
    throw new CappedError(`${what} cannot be encoded as MessagePack: ${textOf(error)}`, code);
  } finally {
    packing = false;
  }
}

export function pack(value: unknown): Buffer {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple');
}

/** A packed tuple in msgpackr's own buffer: bytes [start, end), valid until the next pack. */
export type PackedRange = Buffer & { start: number; end: number };

// For one tuple on its way straight into the addon, which copies it: msgpackr then returns its
// working buffer with start/end instead of allocating a subarray (about 40 ns a call).
export function packRange(value: unknown): PackedRange {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple', REUSE_BUFFER_MODE, true) as PackedRange;
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
    return decodeFlat(scratch, result) ?? unpackr.unpack(scratch, result) as Tuple;
  }
  grow(result.length);
  return unpackr.unpack(result) as Tuple;
}

export function decodeMany(result: number | Buffer | undefined): Tuple[] {
  if (result === undefined || result === 0) return [];
  if (typeof result === 'number') return unpackr.unpackMultiple(scratch.subarray(0, result)) as Tuple[];
  if (result.length === 0) return [];
  grow(result.length);
  return unpackr.unpackMultiple(result) as Tuple[];
}

/** Update operations on their way into the addon, which copies them: as packRange. */
export function packOps(ops: unknown): PackedRange {
  return encode(ops, 'ER_UPDATE_OP', 'the update operations', REUSE_BUFFER_MODE) as PackedRange;
}
