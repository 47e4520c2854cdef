// MessagePack at the boundary: tuples and keys are packed here with msgpackr, and what the
// addon returns is unpacked here. Reads land in one reusable scratch Buffer (the addon returns
// the byte count) unless they are larger, in which case the addon returns a fresh Buffer.
import { Packr, Unpackr } from 'msgpackr';
import type { NativeKey, NativeResult } from './binding.js';
import { CappedError, type ErrorCode } from './errors.js';

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

// msgpackr throws plain errors for what MessagePack cannot hold (a BigInt beyond 64 bits, a
// Symbol, a cyclic array); they become CappedErrors with a code.
function encode(value: unknown, code: ErrorCode, what: string): Buffer {
  try {
    return packr.pack(value);
  } catch (error) {
    throw new CappedError(`${what} cannot be encoded as MessagePack: ${(error as Error).message}`, code);
  }
}

export function pack(value: unknown): Buffer {
  return encode(value, 'ER_TUPLE_FORMAT', 'the tuple');
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

export function decodeOne(result: NativeResult): Tuple | undefined {
  if (result === null) return undefined;
  if (typeof result === 'number') return unpackr.unpack(scratch, { start: 0, end: result }) as Tuple;
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
