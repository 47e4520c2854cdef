// The interface between the scheduler and the ways a chunk decides what has expired.
//
// A strategy runs one chunk: it takes up to scanSize tuples from the task's cursor, decides
// which are expired, and deletes them (through ChunkContext, which owns the transaction and the
// callbacks). The scheduler only sees the ChunkOutcome: how many tuples were checked and
// deleted, and whether the pass ended.
import type { NativeCursor, NativeSpace } from '../../native/loader.js';
import type { Tuple } from '../../native/codec.js';
import type { Config } from '../options.js';

export interface ChunkContext {
  readonly handle: NativeSpace;
  readonly cursor: NativeCursor;
  readonly config: Config;
  /** The native out-array: [checked, expired, passEnd, earlyBreak, savepoint]. */
  readonly out: Float64Array;
  /** The task's clock, checked: a number, not NaN. */
  now(): number;
  /** False once user code killed or restarted the task, or dropped the space. */
  alive(): boolean;
  /** Whether anyone wants the deleted tuples ('expired' listeners). */
  wantsTuples(): boolean;
}

export interface ChunkOutcome {
  /** Tuples visited. */
  checked: number;
  /** Tuples deleted (decoded only when onExpired or an 'expired' listener wants them). */
  deleted: Tuple[];
  expired: number;
  /** The chunk ended the pass (the cursor is back at the start). */
  passEnd: boolean;
}

export interface Strategy {
  readonly name: 'early-break' | 'full-scan' | 'predicate';
  runChunk(ctx: ChunkContext): ChunkOutcome;
}
