// Loads the native addon (node-gyp-build finds build/Release or a prebuild) and describes its
// surface. CAPPED_EXPIRATIOND_ADDON=/path/to/addon.node loads another build, such as the
// sanitizer build that `npm run test:asan` makes.
import * as path from 'node:path';
import { CappedError } from '../errors.js';

/**
 * The `now` of a read or insert on a TTL-aware space: the current time in the space's unit (an
 * injected clock, or Date.now() when something replaced it). Absent or undefined: no TTL check,
 * except in the reads (get, select, count, minmax, a cursor's next) of a space created with a
 * `wallClock`, where it means that wall clock, read natively as Date.now() reads it: so a TTL
 * space's read on the wall clock crosses N-API as a plain read does.
 */
export type NativeNow = number;

export interface NativeCursor {
  /** now: a TTL space's clock; the tuples expired at now are skipped. */
  next(scratch: Buffer, now?: NativeNow): number | Buffer | null;
  reset(): void;
  /** Puts the cursor back where the last chunk (or scan) started. */
  restore(): void;
}

export type NativeKey = undefined | number | string | boolean | Buffer;
export type NativeResult = number | Buffer | null;

export interface NativeSpace {
  /** inFrame: refused with ER_TRANSACTION (after the definition's own errors), as inside a transaction. */
  createIndex(name: string, type: 'TREE' | 'HASH', unique: boolean, fields: number[], types: string[], inFrame?: boolean): number;
  /** createIndexAsync: starts building an index that stays invisible until buildIndexStep() returns its id. */
  buildIndexBegin(name: string, type: 'TREE' | 'HASH', unique: boolean, fields: number[], types: string[]): void;
  /** Up to maxTuples tuples or budgetMs of work; the new index's id once built, else -1. Throws (and discards the build) when it fails. */
  buildIndexStep(maxTuples: number, budgetMs: number): number;
  /** start/end: the tuple is that range of the Buffer (default: all of it). */
  /** now (every `now` below): a TTL space's clock (see NativeNow); absent, no TTL check. */
  insert(tuple: Buffer, replace: boolean, start?: number, end?: number, now?: NativeNow): void;
  insertMany(tuples: Buffer, now?: NativeNow): number;
  get(index: number, key: NativeKey, scratch: Buffer, now?: NativeNow): NativeResult;
  delete(key: NativeKey, scratch: Buffer): NativeResult;
  select(index: number, key: NativeKey, iterator: number, limit: number, offset: number, scratch: Buffer,
    now?: NativeNow): number | Buffer;
  count(index: number, key: NativeKey, iterator: number, now?: NativeNow): number;
  minmax(index: number, key: NativeKey, max: boolean, scratch: Buffer, now?: NativeNow): NativeResult;
  len(index?: number): number;
  memory(): [number, number];
  truncate(): void;
  drop(): void;
  begin(): number;
  commit(savepoint: number): void;
  rollback(savepoint: number): void;
  /** `bounded`: a walk over ALL stops at the entry that was last when it began (the daemon's). */
  cursor(index: number, key: NativeKey, iterator: number, bounded?: boolean): NativeCursor;
  expireChunk(cursor: NativeCursor, fieldno: number, scanSize: number, now: number, earlyBreak: boolean,
    mode: 0 | 1 | 2, out: Float64Array, scratch: Buffer): number | Buffer | undefined;
  rollbackChunk(cursor: NativeCursor, savepoint: number): void;
  scanChunk(cursor: NativeCursor, scanSize: number, out: Float64Array, scratch: Buffer): number | Buffer;
  deleteVisited(cursor: NativeCursor, positions: Uint32Array, keepOpen: boolean, out: Float64Array,
    scratch: Buffer): number | Buffer;
  checkIntegrity(): string;
  /** ops is [start, end) of its Buffer; the new tuple, or null when the key is absent. */
  update(index: number, key: NativeKey, ops: Buffer, start: number, end: number, scratch: Buffer): NativeResult;
  /** update() with the one operation [op, field, value]: op its character code, value a number. */
  updateNumber(index: number, key: NativeKey, op: number, field: number, value: number, scratch: Buffer): NativeResult;
  /** want: return the stored tuple (null when the update was dropped); else undefined. */
  upsert(tuple: Buffer, ops: Buffer, start: number, end: number, want: boolean, scratch: Buffer): NativeResult | undefined;
  /** The sum of the stored tuples' MessagePack sizes (what maxBytes caps). */
  bsize(): number;
  /** The tuples the last statement evicted (capped spaces), then forgets them; 0 when none. */
  takeEvicted(scratch: Buffer): number | Buffer;
}

/** A capped space's limits for createSpaceHandle (Infinity: no cap). */
export interface NativeCaps {
  maxTuples: number;
  maxBytes: number;
  evict: boolean;
}

type SpaceFunctions = {
  [K in Exclude<keyof NativeSpace, 'memory'>]: (handle: unknown, ...args: Parameters<NativeSpace[K]>) => ReturnType<NativeSpace[K]>;
} & {
  /** Writes [tuple bytes, index bytes] into `out`: no Array is built natively, so no inherited setter runs. */
  memory(handle: unknown, out: Float64Array): void;
};

interface Addon {
  /** A new space's handle: an External, passed first to each of `space`'s functions. */
  /** ttlField: the 0-based TTL field of a TTL-aware space; wallClock: see createSpaceHandle. */
  createSpace(name: string, maxTupleSize: number, ttlField?: number, maxTuples?: number, maxBytes?: number,
    evict?: boolean, wallClock?: boolean): unknown;
  space: SpaceFunctions;
  CursorHandle: new () => NativeCursor;
  setErrorClass(ctor: new (message: string, code: string) => Error): void;
  /** Test hooks (native/napi/testing.cc); the library never calls them. */
  testing: {
    /** n >= 0: the (n + 1)th engine allocation from now on (this thread) throws, then it disarms; n < 0 disarms. */
    failAllocationAfter(n: number): void;
    /** Engine allocations since failAllocationAfter(), while armed (the failing one included). */
    allocationsSince(): number;
    /** Disarms; whether the armed failure happened. */
    disarmAllocationFailure(): boolean;
    /** bench/space.ts's floor: writes [id, 0] (wide: a 3-field tuple) into scratch as get() does; its byte count. */
    floorTuple(id: number, scratch: Buffer, wide: boolean): number | Buffer;
  };
}

function load(): Addon {
  const override = process.env.CAPPED_EXPIRATIOND_ADDON;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const addon: Addon = override ? require(path.resolve(override)) : require('node-gyp-build')(path.join(__dirname, '..', '..'));
  addon.setErrorClass(CappedError as unknown as new (message: string, code: string) => Error);
  return addon;
}

export const native: Addon = load();

export const enum Iter { EQ, REQ, ALL, GE, GT, LE, LT }

const fns = native.space;

const memoryOut = new Float64Array(2);

/**
 * The methods of one native space, over its handle. The handle (an External) is a private
 * field: user code holding a SpaceHandle cannot take it out and pass it elsewhere.
 */
class SpaceHandle implements NativeSpace {
  readonly #h: unknown;

  constructor(name: string, maxTupleSize: number, ttlField?: number, caps?: NativeCaps, wallClock?: boolean) {
    this.#h = native.createSpace(name, maxTupleSize, ttlField, caps?.maxTuples, caps?.maxBytes, caps?.evict, wallClock);
  }

  createIndex(name: string, type: 'TREE' | 'HASH', unique: boolean, fields: number[], types: string[], inFrame = false): number {
    return fns.createIndex(this.#h, name, type, unique, fields, types, inFrame);
  }
  buildIndexBegin(name: string, type: 'TREE' | 'HASH', unique: boolean, fields: number[], types: string[]): void {
    fns.buildIndexBegin(this.#h, name, type, unique, fields, types);
  }
  buildIndexStep(maxTuples: number, budgetMs: number): number {
    return fns.buildIndexStep(this.#h, maxTuples, budgetMs);
  }
  insert(tuple: Buffer, replace: boolean, start?: number, end?: number, now?: NativeNow): void {
    if (now === undefined) fns.insert(this.#h, tuple, replace, start, end);
    else fns.insert(this.#h, tuple, replace, start, end, now);
  }
  insertMany(tuples: Buffer, now?: NativeNow): number {
    return now === undefined ? fns.insertMany(this.#h, tuples) : fns.insertMany(this.#h, tuples, now);
  }
  get(index: number, key: NativeKey, scratch: Buffer, now?: NativeNow): NativeResult {
    return now === undefined ? fns.get(this.#h, index, key, scratch) : fns.get(this.#h, index, key, scratch, now);
  }
  delete(key: NativeKey, scratch: Buffer): NativeResult {
    return fns.delete(this.#h, key, scratch);
  }
  select(index: number, key: NativeKey, iterator: number, limit: number, offset: number, scratch: Buffer,
    now?: NativeNow): number | Buffer {
    return now === undefined ? fns.select(this.#h, index, key, iterator, limit, offset, scratch)
      : fns.select(this.#h, index, key, iterator, limit, offset, scratch, now);
  }
  count(index: number, key: NativeKey, iterator: number, now?: NativeNow): number {
    return now === undefined ? fns.count(this.#h, index, key, iterator) : fns.count(this.#h, index, key, iterator, now);
  }
  minmax(index: number, key: NativeKey, max: boolean, scratch: Buffer, now?: NativeNow): NativeResult {
    return now === undefined ? fns.minmax(this.#h, index, key, max, scratch) : fns.minmax(this.#h, index, key, max, scratch, now);
  }
  len(index?: number): number {
    return fns.len(this.#h, index);
  }
  memory(): [number, number] {
    fns.memory(this.#h, memoryOut);
    return [memoryOut[0], memoryOut[1]];
  }
  truncate(): void {
    fns.truncate(this.#h);
  }
  drop(): void {
    fns.drop(this.#h);
  }
  begin(): number {
    return fns.begin(this.#h);
  }
  commit(savepoint: number): void {
    fns.commit(this.#h, savepoint);
  }
  rollback(savepoint: number): void {
    fns.rollback(this.#h, savepoint);
  }
  cursor(index: number, key: NativeKey, iterator: number, bounded = false): NativeCursor {
    return fns.cursor(this.#h, index, key, iterator, bounded);
  }
  expireChunk(cursor: NativeCursor, fieldno: number, scanSize: number, now: number, earlyBreak: boolean,
    mode: 0 | 1 | 2, out: Float64Array, scratch: Buffer): number | Buffer | undefined {
    return fns.expireChunk(this.#h, cursor, fieldno, scanSize, now, earlyBreak, mode, out, scratch);
  }
  rollbackChunk(cursor: NativeCursor, savepoint: number): void {
    fns.rollbackChunk(this.#h, cursor, savepoint);
  }
  scanChunk(cursor: NativeCursor, scanSize: number, out: Float64Array, scratch: Buffer): number | Buffer {
    return fns.scanChunk(this.#h, cursor, scanSize, out, scratch);
  }
  deleteVisited(cursor: NativeCursor, positions: Uint32Array, keepOpen: boolean, out: Float64Array,
    scratch: Buffer): number | Buffer {
    return fns.deleteVisited(this.#h, cursor, positions, keepOpen, out, scratch);
  }
  checkIntegrity(): string {
    return fns.checkIntegrity(this.#h);
  }
  update(index: number, key: NativeKey, ops: Buffer, start: number, end: number, scratch: Buffer): NativeResult {
    return fns.update(this.#h, index, key, ops, start, end, scratch);
  }
  updateNumber(index: number, key: NativeKey, op: number, field: number, value: number, scratch: Buffer): NativeResult {
    return fns.updateNumber(this.#h, index, key, op, field, value, scratch);
  }
  upsert(tuple: Buffer, ops: Buffer, start: number, end: number, want: boolean, scratch: Buffer): NativeResult | undefined {
    return fns.upsert(this.#h, tuple, ops, start, end, want, scratch);
  }
  bsize(): number {
    return fns.bsize(this.#h);
  }
  takeEvicted(scratch: Buffer): number | Buffer {
    return fns.takeEvicted(this.#h, scratch);
  }
}

/**
 * wallClock (with a ttlField): the space's reads default to the wall clock, in seconds (true) or
 * milliseconds (false), when they pass no `now` (see NativeNow).
 */
export function createSpaceHandle(name: string, maxTupleSize: number, ttlField?: number, caps?: NativeCaps,
  wallClock?: boolean): NativeSpace {
  return new SpaceHandle(name, maxTupleSize, ttlField, caps, wallClock);
}
