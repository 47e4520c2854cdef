// Loads the native addon (node-gyp-build finds build/Release or a prebuild) and describes its
// surface. CAPPED_EXPIRATIOND_ADDON=/path/to/addon.node loads another build, such as the
// sanitizer build that `npm run test:asan` makes.
import * as path from 'node:path';
import { CappedError } from './errors.js';

export interface NativeCursor {
  next(scratch: Buffer): number | Buffer | null;
  reset(): void;
  /** Puts the cursor back where the last chunk (or scan) started. */
  restore(): void;
}

export type NativeKey = undefined | number | string | boolean | Buffer;
export type NativeResult = number | Buffer | null;

export interface NativeSpace {
  createIndex(name: string, type: 'TREE' | 'HASH', unique: boolean, fields: number[], types: string[]): number;
  insert(tuple: Buffer, replace: boolean): void;
  insertMany(tuples: Buffer): number;
  get(index: number, key: NativeKey, scratch: Buffer): NativeResult;
  delete(key: NativeKey, scratch: Buffer): NativeResult;
  select(index: number, key: NativeKey, iterator: number, limit: number, offset: number, scratch: Buffer): number | Buffer;
  count(index: number, key: NativeKey, iterator: number): number;
  minmax(index: number, key: NativeKey, max: boolean, scratch: Buffer): NativeResult;
  len(index?: number): number;
  memory(): [number, number];
  truncate(): void;
  drop(): void;
  begin(): number;
  commit(savepoint: number): void;
  rollback(savepoint: number): void;
  cursor(index: number, key: NativeKey, iterator: number): NativeCursor;
  expireChunk(cursor: NativeCursor, fieldno: number, scanSize: number, now: number, earlyBreak: boolean,
    mode: 0 | 1 | 2, out: Float64Array, scratch: Buffer): number | Buffer | undefined;
  rollbackChunk(cursor: NativeCursor, savepoint: number): void;
  scanChunk(cursor: NativeCursor, scanSize: number, out: Float64Array, scratch: Buffer): number | Buffer;
  deleteVisited(cursor: NativeCursor, positions: Uint32Array, keepOpen: boolean, out: Float64Array,
    scratch: Buffer): number | Buffer;
  checkIntegrity(): string;
}

interface Addon {
  SpaceHandle: new (name: string, maxTupleSize: number) => NativeSpace;
  CursorHandle: new () => NativeCursor;
  setErrorClass(ctor: new (message: string, code: string) => Error): void;
}

function load(): Addon {
  const override = process.env.CAPPED_EXPIRATIOND_ADDON;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const addon: Addon = override ? require(path.resolve(override)) : require('node-gyp-build')(path.join(__dirname, '..'));
  addon.setErrorClass(CappedError as unknown as new (message: string, code: string) => Error);
  return addon;
}

export const native: Addon = load();

export const enum Iter { EQ, REQ, ALL, GE, GT, LE, LT }
