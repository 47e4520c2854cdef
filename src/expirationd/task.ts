// Task: one running expiration task. It owns a native cursor over itIndex, a Scheduler and a
// Strategy; each wake-up runs one chunk through the strategy, counts it, reports failures and
// runs the pass callbacks, then schedules the next chunk.
//
// Failure: a chunk whose onExpired or isExpired throws (or whose native call fails) is rolled
// back, the cursor is put back, the error goes to 'error' listeners and onFullScanError, and
// the task carries on after its usual wait with restarts + 1.
import { EventEmitter } from 'node:events';
import { Iter, type NativeCursor, type NativeSpace } from '../native/loader.js';
import { CappedError, illegal } from '../errors.js';
import { handleOf, onDrop, type Space } from '../space/space.js';
import type { Config, PassCallback } from './options.js';
import { tasks } from './registry.js';
import { chunkDelay, Scheduler } from './scheduler.js';
import { earlyBreak } from './strategies/early-break.js';
import { fullScan } from './strategies/full-scan.js';
import { predicate } from './strategies/predicate.js';
import type { ChunkContext, Strategy } from './strategies/strategy.js';

export interface TaskStats {
  /** Tuples visited. */
  checked: number;
  /** Tuples deleted. */
  expired: number;
  /** 1 after start; +1 for every restart() and every failed chunk. */
  restarts: number;
  /** Seconds spent running chunks. */
  workingTime: number;
  /** Completed passes. */
  fullScans: number;
  /** Chunks run (failed ones included). */
  chunks: number;
}

function strategyOf(config: Config): Strategy {
  if (config.isExpired !== undefined) return predicate;
  return config.earlyBreak ? earlyBreak : fullScan;
}

export class Task extends EventEmitter {
  readonly name: string;
  readonly space: Space;
  /** The most recent error of a chunk or callback, whether or not anyone listened for it. */
  lastError: unknown = undefined;
  readonly #config: Config;
  readonly #strategy: Strategy;
  readonly #scheduler: Scheduler;
  readonly #counters: TaskStats = { checked: 0, expired: 0, restarts: 0, workingTime: 0, fullScans: 0, chunks: 0 };
  readonly #out = new Float64Array(5);
  #cursor: NativeCursor | undefined;
  #epoch = 0;
  #tickEpoch = -1;
  #running = false;
  #passStarted = false;
  #passFailed = false;
  #offDrop: (() => void) | undefined;

  /** @internal use expirationd.start() */
  constructor(name: string, space: Space, config: Config) {
    super();
    this.name = name;
    this.space = space;
    this.#config = config;
    this.#strategy = strategyOf(config);
    this.#scheduler = new Scheduler(config.keepAlive);
  }

  /** Seconds to wait after a chunk that did not end a pass. */
  get chunkDelay(): number {
    return chunkDelay(this.#config);
  }

  get isRunning(): boolean {
    return this.#running;
  }

  /** Whether this task breaks each pass at the first live tuple of a TTL TREE index. */
  get earlyBreak(): boolean {
    return this.#config.earlyBreak;
  }

  stats(): TaskStats {
    return { ...this.#counters };
  }

  /** Stops the task: no chunk runs after this returns. Idempotent. */
  kill(): void {
    if (!this.#running) return;
    this.#running = false;
    this.#epoch++;
    this.#scheduler.cancel();
    this.#cursor = undefined;
    this.#offDrop?.();
    this.#offDrop = undefined;
    if (tasks.get(this.name) === this) tasks.delete(this.name);
  }

  /** Kills the task and starts it again from the beginning of a pass; restarts + 1. */
  restart(): this {
    this.kill();
    const other = tasks.get(this.name);
    if (other !== undefined && other !== this) other.kill();
    this.start();
    return this;
  }

  /** @internal */
  start(): void {
    if (this.space.dropped) throw new CappedError(`space '${this.space.name}' was dropped`, 'ER_SPACE_DROPPED');
    this.#cursor = handleOf(this.space).cursor(this.#config.it.id, undefined, Iter.ALL, true);
    this.#running = true;
    this.#passStarted = false;
    this.#passFailed = false;
    this.#counters.restarts++;
    this.#offDrop = onDrop(this.space, () => this.kill());
    tasks.set(this.name, this);
    this.#schedule(0);
  }

  #schedule(seconds: number, betweenPasses = false): void {
    const epoch = this.#epoch;
    this.#scheduler.schedule(seconds, betweenPasses, () => {
      if (this.#running && epoch === this.#epoch) this.#tick();
    });
  }

  #tick(): void {
    const epoch = this.#epoch;
    this.#tickEpoch = epoch;
    if (this.space.dropped) {
      this.kill();
      return;
    }
    if (!this.#passStarted) {
      this.#passStarted = true;
      this.#passFailed = false;
      this.#callback('onFullScanStart');
      if (!this.#running || epoch !== this.#epoch) return;
    }
    const started = process.hrtime.bigint();
    let passEnd = false;
    try {
      const outcome = this.#strategy.runChunk(this.#context());
      this.#counters.checked += outcome.checked;
      this.#counters.expired += outcome.expired;
      passEnd = outcome.passEnd;
      if (outcome.deleted.length > 0 && this.listenerCount('expired') > 0) this.#safeEmit('expired', outcome.deleted);
    } catch (error) {
      this.#counters.restarts++;
      this.#passFailed = true;
      this.#report(error);
      this.#callback('onFullScanError', error);
    } finally {
      this.#counters.chunks++;
      this.#counters.workingTime += Number(process.hrtime.bigint() - started) / 1e9;
    }
    if (!this.#running || epoch !== this.#epoch || this.space.dropped) return;
    if (!passEnd) {
      this.#schedule(this.chunkDelay);
      return;
    }
    this.#counters.fullScans++;
    this.#passStarted = false;
    if (!this.#passFailed) this.#callback('onFullScanSuccess');
    this.#callback('onFullScanComplete');
    this.#safeEmit('fullScan', this.stats());
    if (this.#running && epoch === this.#epoch) this.#schedule(this.chunkDelay + this.#config.fullScanDelay, true);
  }

  #context(): ChunkContext {
    return {
      handle: handleOf(this.space) as NativeSpace,
      cursor: this.#cursor as NativeCursor,
      config: this.#config,
      out: this.#out,
      now: () => this.#currentTime(),
      alive: () => this.#running && this.#epoch === this.#tickEpoch && !this.space.dropped,
      wantsTuples: () => this.listenerCount('expired') > 0,
    };
  }

  #currentTime(): number {
    const now = this.#config.now();
    if (typeof now !== 'number' || Number.isNaN(now)) {
      throw illegal(`expirationd task '${this.name}': now() must return a number, got ${String(now)}`);
    }
    return now;
  }

  #callback(name: PassCallback, error?: unknown): void {
    const fn = this.#config.pass[name];
    if (fn === undefined) return;
    try {
      if (name === 'onFullScanError') fn(this, error);
      else fn(this);
    } catch (callbackError) {
      this.#report(callbackError);
    }
  }

  #report(error: unknown): void {
    this.lastError = error;
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
