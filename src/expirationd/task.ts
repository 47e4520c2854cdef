// Task: one running expiration task. It owns a native cursor over itIndex, a Scheduler and a
// Strategy; each step runs one chunk through the strategy, counts it, reports failures and runs
// the pass callbacks, then schedules the next chunk: at once (a burst of a paced pass, backlog
// mode) or after a wait (the formula, or a due time); scheduler.ts has the rules. While an async
// onExpired settles, the task waits: the next chunk is scheduled only once the chunk's promise is
// done.
//
// Due time (early-break tasks deciding by the TTL field): when a pass ends at the first live
// tuple, the task reads the first TTL later than now (#firstLiveTtl) and sleeps until it comes,
// or the formula's wait if sooner, never less than fullScanDelay when that is > 0. While it
// sleeps between passes, every insert, replace, insertMany, update or upsert through the space
// (onInsert) compares the tuple's TTL with the due time (one comparison) and brings the wake-up
// forward if it is earlier.
//
// Failures (see chunk.ts for how a chunk isolates a poison tuple):
// - A chunk in which a callback failed but which went through (its poison tuples skipped, the
//   rest deleted) is a failed chunk: restarts + 1, and the next wait backs off.
// - A chunk that fails as a whole (now() or isExpired broke their contract, or a native call
//   failed) is rolled back and ends its pass, as an error ends a pass in the Lua module: the
//   next pass starts again from the beginning after the backoff.
// - A pass with any failure calls onFullScanError once (with its first error), then
//   onFullScanComplete; a clean pass calls onFullScanSuccess, then onFullScanComplete.
// - Backoff: after k failed chunks in a row the wait is max(usual wait,
//   min(max(chunkDelay, 1 ms) * 2^k, 1 s)); a clean chunk resets k.
//
// Kill: kill(), restart() and space.drop() bump the epoch; every step of a chunk checks it
// (ctx.alive()), so after any of them returns the old chunk deletes nothing more.
//
// Stop (a pause): stop() cancels the pending wake-up and keeps everything else: the registry
// entry, the cursor, the pass in progress, the counters. It does not bump the epoch: a chunk
// that is running when stop() is called (from one of its callbacks, or while it waits for an
// async onExpired) finishes as it would, then schedules nothing. start() on a stopped task
// schedules the next chunk of the same pass (on the next turn of the event loop), unless that
// chunk is still running: then its end schedules the next one. A stopped task holds no timer.
import { Iter, type NativeCursor } from '../native/loader.js';
import { decodeFields, packKey, resultBytes, scratchBuffer, type Tuple } from '../native/codec.js';
import { CappedError, illegal, textOf } from '../errors.js';
import { handleOf, onDrop, onInsert, type Space } from '../space/space.js';
import { keyOf } from './chunk.js';
import { ignoreRejection, isThenable } from '../thenable.js';
import type { Config, PassCallback } from './options.js';
import { tasks } from './registry.js';
import { TypedEmitter, type TaskEvents } from './events.js';
import { burstSize, BURST_MS, chunkDelay, chunkObserver, cpuClock, CPU_WINDOW_MS, CpuWindow, Scheduler, wakeClock } from './scheduler.js';
import { earlyBreak } from './strategies/early-break.js';
import { fullScan } from './strategies/full-scan.js';
import { predicate } from './strategies/predicate.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategies/strategy.js';

export interface TaskStats {
  /** Tuples visited. */
  checked: number;
  /** Tuples deleted (with processExpired: tuples handed to a processExpired call that committed). */
  expired: number;
  /** 1 after start; +1 for every restart() and every failed chunk (however many tuples failed in it). */
  restarts: number;
  /** Seconds spent running chunks (their synchronous part: not the wait for an async onExpired). */
  workingTime: number;
  /** Completed passes (a pass that a failed chunk ended counts: it called onFullScanComplete). */
  fullScans: number;
  /** Chunks run (failed ones included). */
  chunks: number;
  /** Poison tuples skipped (each time one is skipped for the rest of a pass). */
  skipped: number;
  /**
   * How far past due the oldest stored expired tuple is, in the task's unit; 0 when none.
   * Early-break tasks: exact, from itIndex.min() (O(log n)). Other tasks: an upper bound, the
   * time since the last completed pass started (every tuple expired before that was visited and
   * deleted, bar skipped poison tuples); before the first pass completes, the time since the
   * task's first chunk; 0 for an empty space, or when the clock or the TTL is not finite. A
   * killed task keeps its last value.
   */
  lag: number;
  /** Wake-ups from a wait (timers, task.wake(), the start); chunks run back to back in a burst or backlog do not count. */
  wakeups: number;
}

const MAX_BACKOFF = 1;

/** A TTL field's value as a number (a BigInt converted), or NaN when it is not one. */
function ttlNumber(value: unknown): number {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : NaN;
}

/** A chunk's context (one per epoch) and the state of the chunk running with it. */
interface ChunkState {
  epoch: number;
  ctx: ChunkContext;
  state: { failed: boolean; reported: boolean };
}

function strategyOf(config: Config): Strategy {
  if (config.isExpired !== undefined) return predicate;
  return config.earlyBreak ? earlyBreak : fullScan;
}

function formatKey(key: unknown): string {
  try {
    return JSON.stringify(key, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(key);
  } catch {
    return String(key);
  }
}

/** See Task.state. */
export type TaskState = 'running' | 'stopped' | 'killed';

/**
 * A running expiration task over a Space<T>; an EventEmitter of TaskEvents<T> ('expired',
 * 'fullScan', 'error').
 */
export class Task<T extends unknown[] = unknown[]> extends TypedEmitter<TaskEvents<T>> {
  readonly name: string;
  readonly space: Space<T, any>;
  /**
   * The most recent error of a chunk or callback, whether or not anyone listened for it. A getter
   * over a private field: the task writes it from timers, where a frozen task (Object.freeze)
   * would otherwise make that write throw and end the process.
   */
  get lastError(): unknown {
    return this.#lastError;
  }
  #lastError: unknown = undefined;
  readonly #config: Config;
  readonly #strategy: Strategy;
  readonly #scheduler: Scheduler;
  readonly #counters: TaskStats = {
    checked: 0, expired: 0, restarts: 0, workingTime: 0, fullScans: 0, chunks: 0, skipped: 0, lag: 0, wakeups: 0,
  };
  readonly #out = new Float64Array(5);
  #cursor: NativeCursor | undefined;
  #epoch = 0;
  #state: TaskState = 'killed';
  /** A chunk of this epoch is running (its synchronous part, or waiting for an async onExpired). */
  #inChunk = false;
  #passStarted = false;
  #passFailed = false;
  #passError: unknown = undefined;
  /** Primary keys of the tuples skipped in this pass. */
  readonly #skippedKeys = new Set<string>();
  /**
   * processExpired: primary keys of tuples it wrote into the space still expired, not to be
   * handed again in this pass (so that the pass ends; see chunk.ts).
   */
  readonly #handledKeys = new Set<string>();
  /** Failed chunks in a row, for the backoff. */
  #failures = 0;
  #asyncDelivery: boolean;
  #offDrop: (() => void) | undefined;
  #offInsert: (() => void) | undefined;
  /** Chunk CPU over the sliding window, for backlog mode. */
  readonly #cpu = new CpuWindow();
  /** Chunks run, and their CPU (ms), since the last wake-up. */
  #burst = 0;
  #burstCpu = 0;
  /**
   * A paced pass's burst: the formula's wait owed for its chunks (seconds), each chunk charged
   * chunkDelay at the length when it ended, and that length (#chargeChunk).
   */
  #burstDelay = 0;
  #burstLen = 0;
  /** itIndex.len() when the running pass began (sizes its bursts). */
  #passLen = 0;
  /**
   * While a due-time task sleeps between passes: when the wake-up is due, and the earliest it may
   * be (task's unit). -Infinity when an insert cannot bring anything forward (running, inside a
   * pass, or already due).
   */
  #dueAt = -Infinity;
  #floorAt = -Infinity;
  /**
   * The same floor in real time (wakeClock ms): the task's clock may jump forward past #floorAt,
   * and an insert must still not wake the task sooner than fullScanDelay after its pass.
   */
  #floorWakeAt = -Infinity;
  /** wake() came while a chunk was running: the next wait is none. */
  #wakeRequested = false;
  /** The clock as the last chunk read it; when the running pass and the last completed one started. */
  #lastNow: number | undefined;
  #inClock = false;
  #passStartNow: number | undefined;
  #lastPassStartNow: number | undefined;
  #firstNow: number | undefined;
  /** The current epoch's chunk context (#context). */
  #chunk: ChunkState | undefined;

  /** @internal use expirationd.start() */
  constructor(name: string, space: Space<T, any>, config: Config) {
    super();
    this.name = name;
    this.space = space;
    this.#config = config;
    this.#strategy = strategyOf(config);
    this.#scheduler = new Scheduler(config.keepAlive);
    this.#asyncDelivery = config.asyncOnExpired;
  }

  /** Seconds to wait after a chunk that did not end a pass. */
  get chunkDelay(): number {
    return chunkDelay(this.#config);
  }

  /**
   * What JSON.stringify(task) writes: its name, state and space's name. No stats(): that reads the
   * task's clock, which is user code.
   */
  toJSON(): { name: string; state: TaskState; space: string } {
    return { name: this.name, state: this.#state, space: this.space.name };
  }

  get isRunning(): boolean {
    return this.#state === 'running';
  }

  /**
   * 'running'; 'stopped' after stop() (still registered, resumes with start()); 'killed' after
   * kill(), or when its space was dropped.
   */
  get state(): TaskState {
    return this.#state;
  }

  /** Whether this task breaks each pass at the first live tuple of a TTL TREE index. */
  get earlyBreak(): boolean {
    return this.#config.earlyBreak;
  }

  stats(): TaskStats {
    if (this.#state !== 'killed' && !this.space.dropped) {
      const lag = this.#lag();
      this.#counters.lag = Number.isFinite(lag) ? lag : 0;  // an infinite clock or TTL tells nothing
    }
    return { ...this.#counters };
  }

  /**
   * Runs a pass now, on the next turn of the event loop: between passes the next pass starts;
   * inside a pass its next chunk runs (as one wake-up). If a chunk is running (or waiting for an
   * async onExpired), the chunk after it follows at once. Returns the task; a no-op on a stopped
   * or killed task.
   */
  wake(): this {
    if (this.#state !== 'running') return this;
    if (!this.#scheduler.pending) this.#wakeRequested = true;
    else if (!this.#scheduler.pendingImmediate) this.#schedule(0, true, 'wake');
    return this;
  }

  /**
   * Kills the task: no chunk runs after this returns, and a chunk it interrupts (from inside a
   * callback, or one waiting for an async onExpired) deletes nothing more. Idempotent; works on a
   * stopped task.
   */
  kill(): void {
    if (this.#state === 'killed') return;
    this.#state = 'killed';
    this.#inChunk = false;
    this.#epoch++;
    this.#scheduler.cancel();
    this.#cursor = undefined;
    this.#chunk = undefined;
    this.#offDrop?.();
    this.#offDrop = undefined;
    this.#offInsert?.();
    this.#offInsert = undefined;
    this.#dueAt = -Infinity;
    this.#wakeRequested = false;
    if (tasks.get(this.name) === this) tasks.delete(this.name);
  }

  /** Kills the task and starts it again from the beginning of a pass; restarts + 1. */
  restart(): this {
    this.kill();
    this.#begin();
    return this;
  }

  /**
   * Pauses the task: no chunk starts after this returns. A chunk that is running (stop() called
   * from one of its callbacks, or while an async onExpired is pending) finishes as it would, and
   * nothing further is scheduled. The task stays registered (expirationd.task(name) finds it),
   * keeps its cursor, pass and counters, holds no timer, and start() resumes it. Idempotent; a
   * no-op on a killed task. Returns the task.
   */
  stop(): this {
    if (this.#state !== 'running') return this;
    this.#state = 'stopped';
    this.#scheduler.cancel();
    this.#dueAt = -Infinity;
    this.#wakeRequested = false;
    return this;
  }

  /**
   * Resumes a stopped task where it stopped: the same pass goes on from the cursor's position
   * (no new pass: onFullScanStart is not called again, fullScans and restarts do not change); its
   * next chunk runs on the next turn of the event loop. A no-op on a running task. On a killed
   * task it starts a fresh pass, as restart() does (restarts + 1, registered again under its
   * name, replacing any task that took it). Throws ER_SPACE_DROPPED when the space was dropped.
   * Returns the task.
   */
  start(): this {
    if (this.#state === 'running') return this;
    if (this.#state === 'killed') {
      this.#begin();
      return this;
    }
    if (this.space.dropped) {
      this.kill();
      throw new CappedError(`space '${this.space.name}' was dropped`, 'ER_SPACE_DROPPED');
    }
    this.#state = 'running';
    if (!this.#inChunk) this.#schedule(0, false, 'wait');
    return this;
  }

  /** Starts a killed (or new) task at the beginning of a pass (expirationd.start, restart, start). */
  #begin(): void {
    if (this.space.dropped) throw new CappedError(`space '${this.space.name}' was dropped`, 'ER_SPACE_DROPPED');
    // What can fail comes first: a start that fails leaves the running task of the name alone.
    const cursor = handleOf(this.space).cursor(this.#config.it.id, undefined, Iter.ALL, true);
    const other = tasks.get(this.name);
    if (other !== undefined && other !== this) other.kill();
    this.#cursor = cursor;
    this.#state = 'running';
    this.#passStarted = false;
    this.#failures = 0;
    this.#counters.restarts++;
    this.#offDrop = onDrop(this.space, () => this.kill());
    if (this.#dueTimed) this.#offInsert = onInsert(this.space, (tuple) => this.#inserted(tuple));
    tasks.set(this.name, this);
    this.#schedule(0, false, 'wait');
  }

  /** An early-break task deciding by the TTL field: its passes can be timed by the smallest TTL. */
  get #dueTimed(): boolean {
    return this.#config.earlyBreak && this.#config.isExpired === undefined;
  }

  /**
   * 'wait': a wake-up after `seconds` (counted in wakeups; a new burst starts). 'continue': the
   * next chunk of a burst or backlog, on a setImmediate. 'wake': a wake-up on a setImmediate.
   */
  #schedule(seconds: number, betweenPasses: boolean, mode: 'wait' | 'continue' | 'wake'): void {
    if (this.#wakeRequested) {
      this.#wakeRequested = false;
      if (mode === 'wait') mode = 'wake';
    }
    this.#dueAt = -Infinity;
    if (this.#state !== 'running') return;  // stopped inside a chunk: nothing further
    // One wake-up is pending at a time (schedule() replaces it), so its epoch and mode live in
    // fields and #onWake is one closure for the task's life, not one per chunk.
    this.#wakeEpoch = this.#epoch;
    this.#wakeContinuing = mode === 'continue';
    this.#scheduler.schedule(seconds, betweenPasses, this.#onWake, mode !== 'wait');
  }

  #wakeEpoch = 0;
  #wakeContinuing = false;
  readonly #onWake = (): void => {
    if (this.#state !== 'running' || this.#wakeEpoch !== this.#epoch) return;
    this.#dueAt = -Infinity;
    if (!this.#wakeContinuing) {
      this.#counters.wakeups++;
      this.#burst = 0;
      this.#burstCpu = 0;
      this.#burstDelay = 0;
    }
    try {
      this.#tick();
    } catch (error) {
      // Runs from a timer, where a throw would end the process. Nothing the task does is meant
      // to throw here; should something (its space dropped behind its back, say), the task
      // reports it and backs off rather than taking the process down or stopping for good.
      this.#inChunk = false;
      this.#report(error);
      if (this.space.dropped) {
        this.kill();
        return;
      }
      if (this.#state === 'running' && !this.#scheduler.pending) {
        this.#failures++;
        try {
          this.#backOff(false);
        } catch {
          // The back-off itself failed (it reads the index's length): wait the longest back-off.
          this.#schedule(MAX_BACKOFF, false, 'wait');
        }
      }
    }
  };

  /** After an insert through the space: an earlier TTL than the due wake-up brings it forward. */
  #inserted(tuple: Tuple): void {
    const ttl = ttlNumber(tuple[this.#config.fieldno]);
    if (!(ttl < this.#dueAt)) return;  // also when nothing can be brought forward (-Infinity), or NaN
    const target = Math.max(ttl, this.#floorAt);
    if (!(target < this.#dueAt)) return;
    let now: unknown;
    try {
      now = this.#callNow();
    } catch {
      return;  // a broken clock is reported by the next chunk, not by the insert
    }
    if (isThenable(now)) ignoreRejection(now);
    if (typeof now !== 'number' || Number.isNaN(now) || this.#state !== 'running' || this.#dueAt === -Infinity) return;
    const wait = Math.max(0, (target - now) * this.#config.unitSeconds, (this.#floorWakeAt - wakeClock.now()) / 1000);
    // Never later than the pending wake-up: the task's clock may have jumped back since it was
    // scheduled (in its terms the target is earlier, in real time it would be later).
    if (wait * 1000 >= this.#scheduler.msLeft) return;
    this.#schedule(wait, true, 'wait');
    // Already due: nothing can be earlier.
    this.#dueAt = target <= now ? -Infinity : target;
  }

  #alive(epoch: number): boolean {
    return this.#state !== 'killed' && epoch === this.#epoch && !this.space.dropped;
  }

  #tick(): void {
    const epoch = this.#epoch;
    if (this.space.dropped) {
      this.kill();
      return;
    }
    // From here the chunk counts as running: a stop() then start() inside onFullScanStart must
    // not schedule a second chunk beside this one.
    this.#inChunk = true;
    if (!this.#passStarted) {
      this.#passStarted = true;
      this.#passLen = this.#config.itLen();
      this.#passStartNow = undefined;
      this.#passFailed = false;
      this.#passError = undefined;
      this.#skippedKeys.clear();
      this.#handledKeys.clear();
      this.#callback('onFullScanStart');
      // Stopped inside onFullScanStart: the pass has begun, its first chunk runs after start().
      if (!this.#alive(epoch) || this.#state !== 'running') {
        if (epoch === this.#epoch) this.#inChunk = false;
        return;
      }
    }
    const cpuStarted = cpuClock.now();
    const chunk = this.#context(epoch);
    const state = chunk.state;
    let result: ChunkOutcome | Promise<ChunkOutcome> | { error: unknown };
    try {
      result = this.#strategy.runChunk(chunk.ctx);
    } catch (error) {
      result = { error };
    }
    this.#counters.chunks++;
    const cpuEnded = cpuClock.now();
    this.#counters.workingTime += (cpuEnded - cpuStarted) / 1000;  // cpuClock is in ms
    if (chunkObserver.onChunk !== undefined) chunkObserver.onChunk(cpuEnded - cpuStarted);
    this.#cpu.add(cpuEnded, cpuEnded - cpuStarted);
    this.#burst++;
    this.#burstCpu += cpuEnded - cpuStarted;
    if (result instanceof Promise) {
      result.then(
        (outcome) => this.#finishChunk(epoch, outcome, state.failed),
        (error: unknown) => this.#finishChunk(epoch, { error }, true),
      ).catch((error: unknown) => this.#report(error));
      return;
    }
    this.#finishChunk(epoch, result, state.failed);
  }

  #finishChunk(epoch: number, result: ChunkOutcome | { error: unknown }, failedInside: boolean): void {
    if (epoch !== this.#epoch) {
      // A chunk of a killed epoch (its async onExpired settled after kill() or restart()): its
      // failures were reported; they belong to no pass of the task as it runs now.
      if ('error' in result) this.#report(result.error);
      else this.#counters.checked += result.checked;
      return;
    }
    this.#inChunk = false;
    if ('error' in result) {
      // The chunk failed as a whole and was rolled back; like an error in the Lua module, it
      // ends the pass, and the next one starts from the beginning.
      this.#counters.restarts++;
      this.#failures++;
      this.#noteFailure(result.error);
      this.#report(result.error);
      if (!this.#alive(epoch)) return;
      this.#chargeChunk();
      (this.#cursor as NativeCursor).reset();
      this.#endPass();
      if (this.#alive(epoch)) this.#backOff(true);
      return;
    }
    this.#counters.checked += result.checked;
    if (result.failed || failedInside) {
      this.#counters.restarts++;
      this.#failures++;
    } else {
      this.#failures = 0;
    }
    if (!this.#alive(epoch)) return;
    this.#chargeChunk();
    if (!result.passEnd) {
      this.#next();
      return;
    }
    this.#endPass();
    if (this.#alive(epoch)) this.#betweenPasses();
  }

  /**
   * A paced pass (a full scan): the chunk that just ended owes the formula's wait at the length
   * the space has now. Charged chunk by chunk, a burst's sleep follows the space as it grows or
   * shrinks during the burst; priced at the length when the burst ends, a truncate in its middle
   * made every chunk of it owe an empty space's wait (iterationDelay: 51 chunks, 51 s).
   */
  #chargeChunk(): void {
    if (this.#config.earlyBreak) return;
    this.#burstLen = this.#config.itLen();
    this.#burstDelay += chunkDelay(this.#config, this.#burstLen);
  }

  /** Inside a pass: backlog mode, the rest of a burst, or the formula's wait for the chunks run. */
  #next(): void {
    if (this.#failures > 0) {
      this.#backOff(false);
      return;
    }
    const config = this.#config;
    if (config.earlyBreak) {
      // Backlog: the chunk found only expired tuples.
      if (this.#cpu.used(cpuClock.now()) < config.maxCpuShare * CPU_WINDOW_MS) this.#schedule(0, false, 'continue');
      else this.#schedule(this.chunkDelay, false, 'wait');
      return;
    }
    if (this.#burst < burstSize(config, this.#passLen, this.#burstLen) && this.#burstCpu < BURST_MS) this.#schedule(0, false, 'continue');
    else this.#schedule(this.#burstDelay, false, 'wait');
  }

  /** After a pass: the formula's wait (for every chunk of the last burst), or sooner at the due time. */
  #betweenPasses(): void {
    const config = this.#config;
    if (this.#failures > 0) {
      this.#backOff(true);
      return;
    }
    if (!config.earlyBreak) {
      this.#schedule(this.#burstDelay + config.fullScanDelay, true, 'wait');
      return;
    }
    const base = this.chunkDelay;
    let wait = base + config.fullScanDelay;
    // The clock as the wait starts, not as the pass's last chunk started: that chunk may have
    // taken a while (an asynchronous onExpired), and a due time measured from its start came late
    // by as much.
    const now = this.#nowOr(this.#lastNow);
    // The clock is the user's code: it may have stopped or killed the task, or dropped its space.
    if (this.#state !== 'running' || this.space.dropped) return;
    if (!this.#dueTimed || now === undefined) {
      this.#schedule(wait, true, 'wait');
      return;
    }
    // The first TTL later than now (#firstLiveTtl); none when no stored tuple is live: then the
    // formula's wait.
    const floor = config.fullScanDelay;
    const ttl = this.#firstLiveTtl(now);
    if (ttl !== undefined && ttl > now) {
      wait = Math.min(wait, (ttl - now) * config.unitSeconds);
      if (floor > 0) wait = Math.max(wait, floor);
    }
    this.#schedule(wait, true, 'wait');
    // Stopped, or a wake() made during the pass turned the wait into the next turn (an insert
    // must not replace that with a timer).
    if (this.#state !== 'running' || this.#scheduler.pendingImmediate) return;
    // Sleeping between passes: an insert with an earlier TTL may bring the wake-up forward.
    this.#dueAt = now + wait / config.unitSeconds;
    this.#floorAt = floor > 0 ? now + floor / config.unitSeconds : -Infinity;
    this.#floorWakeAt = floor > 0 ? wakeClock.now() + floor * 1000 : -Infinity;
  }

  /**
   * The TTL of itIndex's first stored tuple, as a number, or undefined. Read past a TTL space's
   * filter (a NaN now): its min() would hide the expired tuples that lag and due-time wake-ups are
   * about, and would call the space's clock, which may throw or call stats() (and so this) again.
   */
  #minTtl(): number | undefined {
    const { it } = this.#config;
    const result = handleOf(this.space).minmax(it.id, undefined, false, scratchBuffer(), NaN);
    if (result === null) return undefined;
    return this.#ttlOf(resultBytes(result));
  }

  /**
   * The TTL field of one stored tuple's bytes, as a number, or undefined. The field alone: the
   * rest of the tuple may hold a value that a user's msgpackr extension fails to unpack, and this
   * runs from timers, where a throw would end the process.
   */
  #ttlOf(bytes: Buffer): number | undefined {
    const { fieldno } = this.#config;
    const ttl = ttlNumber(decodeFields(bytes, [fieldno])[fieldno]);
    return Number.isNaN(ttl) ? undefined : ttl;
  }

  /**
   * The TTL of itIndex's first tuple whose TTL is past `now` (the next one due), or undefined.
   * Usually the first stored tuple; but a tuple that processExpired left in place, or re-queued
   * already due, stays expired at the head of the index, and timing the next pass by it (or
   * giving up on a due time) made every job behind it wait the formula's chunkDelay. Then a GT
   * seek past `now` finds the first live one (read past a TTL space's filter, as #minTtl).
   */
  #firstLiveTtl(now: number): number | undefined {
    const first = this.#minTtl();
    if (first === undefined || first > now) return first;
    const { it } = this.#config;
    const part = it.parts[0];
    let key: number;
    if (part.type === 'number') key = now;
    else if (part.type !== 'unsigned' && part.type !== 'integer') return undefined;
    else if (now >= (part.type === 'unsigned' ? 2 ** 64 : 2 ** 63)) return undefined;  // no integer TTL is later
    else key = Math.floor(now);  // an integer TTL is > now exactly when it is > floor(now)
    try {
      const result = handleOf(this.space).select(it.id, packKey([key]), Iter.GT, 1, 0, scratchBuffer(), NaN);
      const bytes = resultBytes(result);
      return bytes.length === 0 ? undefined : this.#ttlOf(bytes);
    } catch {
      return undefined;  // from a timer: never throw (the formula's wait applies)
    }
  }

  /**
   * The task's clock now, or `fallback` when it throws, returns a promise or not a number (the
   * next chunk reports that). Never throws: it runs from timers and from stats().
   */
  #nowOr(fallback: number | undefined): number | undefined {
    let now: unknown;
    try {
      now = this.#callNow();
    } catch {
      return fallback;
    }
    if (isThenable(now)) {
      ignoreRejection(now);
      return fallback;
    }
    return typeof now === 'number' && !Number.isNaN(now) ? now : fallback;
  }

  #lag(): number {
    const now = this.#nowOr(this.#lastNow);
    if (now === undefined) return 0;
    try {
      if (this.#config.earlyBreak) {
        const ttl = this.#minTtl();
        return ttl !== undefined && ttl <= now ? now - ttl : 0;
      }
      if (this.#config.rmLen() === 0) return 0;
    } catch {
      return this.#counters.lag;
    }
    const since = this.#lastPassStartNow ?? this.#firstNow;
    return since === undefined ? 0 : Math.max(0, now - since);
  }

  /**
   * After a failed chunk (#failures > 0): the formula's wait, backed off. A wake() made during
   * that chunk (by a callback that calls wake() and fails, or a now() that does) does not cut it
   * short: it would run failing chunks back to back.
   */
  #backOff(betweenPasses: boolean): void {
    this.#wakeRequested = false;
    const base = this.chunkDelay;
    // A paced pass owes the formula's wait for every chunk of its burst: a back-off after a
    // burst's last chunk is no shorter (a poison tuple at the end of every burst made the pass
    // run 5 times faster than scanTime).
    const paced = this.#config.earlyBreak ? base : Math.max(base, this.#burstDelay);
    const usual = paced + (betweenPasses ? this.#config.fullScanDelay : 0);
    const backoff = Math.min(Math.max(base, 0.001) * 2 ** Math.min(this.#failures, 30), MAX_BACKOFF);
    this.#schedule(Math.max(usual, backoff), betweenPasses, 'wait');
  }

  #endPass(): void {
    this.#counters.fullScans++;
    this.#lastPassStartNow = this.#passStartNow;
    this.#passStartNow = undefined;
    this.#passStarted = false;
    this.#skippedKeys.clear();
    this.#handledKeys.clear();
    if (this.#passFailed) this.#callback('onFullScanError', this.#passError);
    else this.#callback('onFullScanSuccess');
    this.#callback('onFullScanComplete');
    this.#safeEmit('fullScan', this.stats());
  }

  #noteFailure(error: unknown): void {
    if (!this.#passFailed) this.#passError = error;
    this.#passFailed = true;
  }

  /**
   * The chunk's context: one per epoch (its closures check that epoch), its per-chunk state reset
   * for each chunk. Chunks of one epoch never overlap (the next is scheduled once one is done,
   * async onExpired included), so a chunk's state is its own until it finished.
   */
  #context(epoch: number): ChunkState {
    let chunk = this.#chunk;
    if (chunk === undefined || chunk.epoch !== epoch) chunk = this.#chunk = this.#newContext(epoch);
    chunk.state = { failed: false, reported: false };
    return chunk;
  }

  #newContext(epoch: number): ChunkState {
    const task = this;
    const chunk: ChunkState = { epoch, ctx: undefined as unknown as ChunkContext, state: { failed: false, reported: false } };
    const fail = (error: unknown): void => {
      const state = chunk.state;
      state.failed = true;
      if (epoch === this.#epoch) this.#noteFailure(error);  // not into a pass of a later epoch
      if (state.reported) return;
      state.reported = true;
      this.#report(error);
    };
    const ctx: ChunkContext = {
      handle: handleOf(this.space),
      cursor: this.#cursor as NativeCursor,
      config: this.#config,
      out: this.#out,
      now: () => this.#currentTime(),
      alive: () => this.#alive(epoch),
      wantsTuples: () => this.listenerCount('expired') > 0,
      get asyncDelivery() {
        return task.#asyncDelivery;
      },
      set asyncDelivery(value: boolean) {
        task.#asyncDelivery = value;
      },
      task: this,
      isSkipped: (tuple: Tuple) => {
        if (this.#skippedKeys.size === 0 && this.#handledKeys.size === 0) return false;
        const { id } = keyOf(ctx, tuple);
        return this.#skippedKeys.has(id) || this.#handledKeys.has(id);
      },
      hasSkipped: () => this.#skippedKeys.size > 0,
      handled: (tuple: Tuple) => {
        this.#handledKeys.add(keyOf(ctx, tuple).id);
      },
      skip: (tuple: Tuple, error: unknown, where: 'isExpired' | 'onExpired' | 'processExpired' | 'decoding') => {
        fail(error);
        if (!this.#alive(epoch)) return;
        const { key, id } = keyOf(ctx, tuple);
        this.#skippedKeys.add(id);
        this.#counters.skipped++;
        this.#report(new CappedError(
          `expirationd task '${this.name}': ${where} failed on the tuple with key ${formatKey(key)}, ` +
          `which is skipped for the rest of this pass: ${textOf(error)}`, 'ER_TUPLE_SKIPPED', { key, cause: error }));
      },
      fail,
      expired: (count: number, tuples: Tuple[]) => {
        this.#counters.expired += count;
        if (tuples.length > 0 && this.listenerCount('expired') > 0) this.#safeEmit('expired', tuples);
      },
    };
    chunk.ctx = ctx;
    return chunk;
  }

  // Calls the user's now(), or returns undefined when it is already running: a now() that calls
  // stats() or inserts into the space must not recurse (stats() and the insert hook read the clock).
  #callNow(): unknown {
    if (this.#inClock) return undefined;
    this.#inClock = true;
    try {
      return this.#config.now();
    } finally {
      this.#inClock = false;
    }
  }

  #currentTime(): number {
    const now: unknown = this.#callNow();
    if (isThenable(now)) {
      ignoreRejection(now);
      throw illegal(`expirationd task '${this.name}': now() must be synchronous and return a number; it returned a promise`);
    }
    if (typeof now !== 'number' || Number.isNaN(now)) {
      throw illegal(`expirationd task '${this.name}': now() must return a number, got ${textOf(now)}`);
    }
    this.#lastNow = now;
    this.#passStartNow ??= now;
    this.#firstNow ??= now;
    return now;
  }

  #callback(name: PassCallback, error?: unknown): void {
    const fn = this.#config.pass[name];
    if (fn === undefined) return;
    try {
      const result = name === 'onFullScanError' ? fn(this, error) : fn(this);
      if (isThenable(result)) ignoreRejection(result);
    } catch (callbackError) {
      this.#report(callbackError);
    }
  }

  #report(error: unknown): void {
    this.#lastError = error;
    if (this.listenerCount('error') === 0) return;
    try {
      this.emit('error', error);
    } catch {
      // An 'error' listener that throws must not take the process down from a timer.
    }
  }

  #safeEmit(event: 'expired' | 'fullScan', payload: unknown): void {
    try {
      this.emit(event, payload);
    } catch (error) {
      this.#report(error);
    }
  }
}
