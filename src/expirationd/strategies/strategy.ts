// The interface between the scheduler and the ways a chunk decides what has expired.
//
// A strategy runs one chunk: it takes up to scanSize tuples from the task's cursor, decides
// which are expired, and has them deleted through the shared chunk machinery (chunk.ts), which
// owns the transactions, the onExpired delivery and the isolation of poison tuples. The task
// (task.ts) only sees the ChunkOutcome, or a Promise of it while an async onExpired settles.
import type { NativeCursor, NativeSpace } from '../../native/loader.js';
import type { Tuple } from '../../native/codec.js';
import type { Config } from '../options.js';
import type { Task } from '../task.js';

export interface ChunkContext {
  readonly handle: NativeSpace;
  readonly cursor: NativeCursor;
  readonly config: Config;
  /** The native out-array: [checked, expired, passEnd, earlyBreak, savepoint]. */
  readonly out: Float64Array;
  /** The task, as processExpired receives it. */
  readonly task: Task;
  /** The task's clock, checked: a number, not NaN, and not a promise. */
  now(): number;
  /** False once anything killed or restarted the task, or dropped the space. */
  alive(): boolean;
  /** Whether anyone wants the deleted tuples ('expired' listeners). */
  wantsTuples(): boolean;
  /** onExpired returns promises: tuples are handed outside any transaction and deleted after. */
  asyncDelivery: boolean;
  /** Whether a tuple was skipped as poison, or handled by processExpired and moved ahead, earlier in this pass. */
  isSkipped(tuple: Tuple): boolean;
  /** Whether any tuple was skipped in this pass. */
  hasSkipped(): boolean;
  /** Skips a poison tuple for the rest of the pass: reported with its key and counted. */
  skip(tuple: Tuple, error: unknown, where: 'isExpired' | 'onExpired' | 'processExpired' | 'decoding'): void;
  /** processExpired handed this tuple and left it expired further on in itIndex: not again in this pass. */
  handled(tuple: Tuple): void;
  /** Reports an error of this chunk (the first one, through 'error'); the chunk and its pass fail. */
  fail(error: unknown): void;
  /** Counts `count` deleted tuples, just committed, and emits 'expired' with them (when decoded). */
  expired(count: number, tuples: Tuple[]): void;
}

/** Which of the visited tuples a strategy calls expired. */
export interface Decision {
  /** Positions (in the visited array) of the expired tuples. */
  positions: number[];
  /** Tuples looked at. */
  checked: number;
  /** The walk ended the pass (an early break; the strategy reset the cursor). */
  passEnd: boolean;
  /** The task was killed while deciding: nothing may be deleted. */
  stopped: boolean;
}

export type Decide = (visited: readonly Tuple[], now: number, ctx: ChunkContext) => Decision;

export interface ChunkOutcome {
  /** Tuples visited. (Deletions are counted as they commit, through ChunkContext.expired.) */
  checked: number;
  /** The chunk ended the pass (the cursor is back at the start). */
  passEnd: boolean;
  /** Some callback failed in this chunk (a poison tuple was skipped, or a delivery was retried). */
  failed: boolean;
}

export interface Strategy {
  readonly name: 'early-break' | 'full-scan' | 'predicate';
  /** Throws (after putting the cursor back) when the chunk as a whole fails. */
  runChunk(ctx: ChunkContext): ChunkOutcome | Promise<ChunkOutcome>;
}
