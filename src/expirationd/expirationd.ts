// expirationd: tasks that expire tuples of a space in paced, transactional chunks.
//
// A task owns a native cursor over itIndex and a timer. Each tick runs one chunk: one native
// call that visits up to scanSize tuples and deletes the expired ones in one transaction
// (expiration.h has the algorithm). After each chunk the task waits
//   chunkDelay = min(scanSize * scanTime / (itIndex.len() + 1), iterationDelay) seconds,
// so a full pass over N tuples takes about scanTime; after the chunk that ends a pass it waits
// chunkDelay + fullScanDelay. (Without the chunkDelay there, an early-break task whose passes
// end at once would spin when fullScanDelay is 0.)
//
// Timers: inside a pass, a wait under 1 ms is a setImmediate, so the event loop still runs
// between chunks; it is ref'd, because libuv does not wake up for an unref'd immediate (it would
// wait for some other event), so a pass at sub-millisecond pacing keeps the process alive until
// it ends. Every other wait, and every wait between passes (at least 1 ms), is a setTimeout,
// unref'd unless keepAlive: an idle task never keeps the process alive.
//
// Failure: a chunk whose onExpired or isExpired throws (or whose native call fails) is rolled
// back, the cursor is put back, the error goes to 'error' listeners and onFullScanError, and
// the task carries on after its usual wait with restarts + 1.
import { EventEmitter } from 'node:events';
import type { NativeCursor } from '../native/loader.js';
import { Iter } from '../native/loader.js';
import { decodeMany, scratchBuffer, type Tuple } from '../native/codec.js';
import { CappedError, illegal } from '../errors.js';
import { dropHooks, Space, type Index } from '../space/space.js';
import { checkCount, checkFunction, checkName, checkOptions, checkPositiveNumber } from '../validate.js';

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

export interface TaskOptions {
  rmIndex?: string;
  itIndex?: string;
  field?: number;
  scanSize?: number;
  scanTime?: number;
  iterationDelay?: number;
  fullScanDelay?: number;
  unit?: 's' | 'ms';
  now?: () => number;
  isExpired?: (tuple: Tuple, now: number) => boolean;
  onExpired?: (tuples: Tuple[]) => void;
  onFullScanStart?: (task: Task) => void;
  onFullScanSuccess?: (task: Task) => void;
  onFullScanError?: (task: Task, error: unknown) => void;
  onFullScanComplete?: (task: Task) => void;
  keepAlive?: boolean;
}

const OPTION_NAMES = [
  'rmIndex', 'itIndex', 'field', 'scanSize', 'scanTime', 'iterationDelay', 'fullScanDelay', 'unit', 'now',
  'isExpired', 'onExpired', 'onFullScanStart', 'onFullScanSuccess', 'onFullScanError', 'onFullScanComplete',
  'keepAlive',
] as const;

interface Config {
  rm: Index;
  it: Index;
  fieldno: number;
  scanSize: number;
  scanTime: number;
  iterationDelay: number;
  fullScanDelay: number;
  now: () => number;
  earlyBreak: boolean;
  keepAlive: boolean;
  options: TaskOptions;
}

const tasks = new Map<string, Task>();

function resolveIndex(space: Space, name: unknown, what: string): Index {
  if (typeof name !== 'string') throw illegal(`expirationd.start: ${what} must be an index name`);
  const index = space.index[name];
  if (index === undefined) {
    throw new CappedError(`expirationd.start: no index '${name}' in space '${space.name}'`, 'ER_NO_SUCH_INDEX');
  }
  return index;
}

function configure(space: Space, raw: unknown): Config {
  if (!(space instanceof Space)) throw illegal('expirationd.start: space must be a Space');
  if (space.dropped) throw new CappedError(`expirationd.start: space '${space.name}' was dropped`, 'ER_SPACE_DROPPED');
  const o = checkOptions('expirationd.start', raw, OPTION_NAMES) as TaskOptions;
  if (space.indexes.length === 0) {
    throw new CappedError(`expirationd.start: space '${space.name}' has no primary index`, 'ER_NO_PRIMARY_INDEX');
  }
  const rm = o.rmIndex === undefined ? space.indexes[0] : resolveIndex(space, o.rmIndex, 'rmIndex');
  const it = o.itIndex === undefined ? rm : resolveIndex(space, o.itIndex, 'itIndex');
  if (!rm.unique) throw illegal(`expirationd.start: rmIndex '${rm.name}' must be unique`);
  const isExpired = checkFunction<TaskOptions['isExpired']>('expirationd.start', 'isExpired', o.isExpired);
  if (o.field === undefined && isExpired === undefined) {
    throw illegal('expirationd.start: field (the 1-based TTL field) is required unless isExpired is given');
  }
  const field = checkCount('expirationd.start', 'field', o.field, 0);
  if (o.field !== undefined && (field < 1 || field > 65535)) {
    throw illegal(`expirationd.start: field must be a 1-based field number, got ${field}`);
  }
  const walksTtlTree = it !== rm && it.type === 'TREE';
  if (walksTtlTree && it.parts[0].field !== field) {
    throw illegal(`expirationd.start: itIndex '${it.name}' is a TREE whose first part is field ${it.parts[0].field}, ` +
      `not the TTL field ${o.field === undefined ? '(none given)' : field}; walk the TTL index or the rmIndex itself`);
  }
  if (walksTtlTree && (it.parts[0].type === 'string' || it.parts[0].type === 'boolean')) {
    throw illegal(`expirationd.start: the TTL field ${field} of index '${it.name}' must be numeric, not ${it.parts[0].type}`);
  }
  if (o.unit !== undefined && o.unit !== 's' && o.unit !== 'ms') throw illegal(`expirationd.start: unit must be 's' or 'ms'`);
  const unit = o.unit ?? 's';
  const now = checkFunction<() => number>('expirationd.start', 'now', o.now) ??
    (unit === 's' ? () => Date.now() / 1000 : () => Date.now());
  for (const cb of ['onExpired', 'onFullScanStart', 'onFullScanSuccess', 'onFullScanError', 'onFullScanComplete'] as const) {
    checkFunction('expirationd.start', cb, o[cb]);
  }
  if (o.keepAlive !== undefined && typeof o.keepAlive !== 'boolean') throw illegal('expirationd.start: keepAlive must be a boolean');
  const scanSize = checkCount('expirationd.start', 'scanSize', o.scanSize, 1024);
  if (scanSize < 1 || scanSize > 1_000_000) throw illegal(`expirationd.start: scanSize must be in [1, 1000000], got ${scanSize}`);
  return {
    rm,
    it,
    fieldno: Math.max(field - 1, 0),
    scanSize,
    scanTime: checkPositiveNumber('expirationd.start', 'scanTime', o.scanTime, 3600),
    iterationDelay: checkPositiveNumber('expirationd.start', 'iterationDelay', o.iterationDelay, 1, true),
    fullScanDelay: checkPositiveNumber('expirationd.start', 'fullScanDelay', o.fullScanDelay, 0, true),
    now,
    earlyBreak: walksTtlTree,
    keepAlive: o.keepAlive ?? false,
    options: o,
  };
}

export class Task extends EventEmitter {
  readonly name: string;
  readonly space: Space;
  /** The most recent error of a chunk or callback, whether or not anyone listened for it. */
  lastError: unknown = undefined;
  private readonly config: Config;
  private readonly counters: TaskStats = { checked: 0, expired: 0, restarts: 0, workingTime: 0, fullScans: 0, chunks: 0 };
  private cursor: NativeCursor | undefined;
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private timerIsImmediate = false;
  private epoch = 0;
  private tickEpoch = -1;
  private running = false;
  private passStarted = false;
  private passFailed = false;
  private readonly out = new Float64Array(5);
  private readonly onDrop = () => this.kill();

  /** @internal use expirationd.start() */
  constructor(name: string, space: Space, config: Config) {
    super();
    this.name = name;
    this.space = space;
    this.config = config;
  }

  /** Seconds to wait after a chunk that did not end a pass. */
  get chunkDelay(): number {
    const { scanSize, scanTime, iterationDelay, it } = this.config;
    return Math.min(scanSize * scanTime / (it.len() + 1), iterationDelay);
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Whether this task breaks each pass at the first live tuple of a TTL TREE index. */
  get earlyBreak(): boolean {
    return this.config.earlyBreak;
  }

  stats(): TaskStats {
    return { ...this.counters };
  }

  /** Stops the task: no chunk runs after this returns. Idempotent. */
  kill(): void {
    if (!this.running) return;
    this.running = false;
    this.epoch++;
    this.clearTimer();
    this.cursor = undefined;
    dropHooks.get(this.space)?.delete(this.onDrop);
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
    this.cursor = this.space.handle.cursor(this.config.it.id, undefined, Iter.ALL, true);
    this.running = true;
    this.passStarted = false;
    this.passFailed = false;
    this.counters.restarts++;
    let hooks = dropHooks.get(this.space);
    if (hooks === undefined) dropHooks.set(this.space, (hooks = new Set()));
    hooks.add(this.onDrop);
    tasks.set(this.name, this);
    this.schedule(0);
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    if (this.timerIsImmediate) clearImmediate(this.timer as NodeJS.Immediate);
    else clearTimeout(this.timer as NodeJS.Timeout);
    this.timer = undefined;
  }

  // `betweenPasses`: the wait may be long-lived, so it is always an unref'able timer.
  private schedule(seconds: number, betweenPasses = false): void {
    const epoch = this.epoch;
    const run = () => {
      this.timer = undefined;
      if (this.running && epoch === this.epoch) this.tick();
    };
    const ms = seconds * 1000;
    this.timerIsImmediate = ms < 1 && !betweenPasses;
    if (this.timerIsImmediate) {
      this.timer = setImmediate(run);
    } else {
      this.timer = setTimeout(run, Math.max(ms, 1));
      if (!this.config.keepAlive) this.timer.unref();
    }
  }

  private tick(): void {
    const epoch = this.epoch;
    this.tickEpoch = epoch;
    if (this.space.dropped) {
      this.kill();
      return;
    }
    if (!this.passStarted) {
      this.passStarted = true;
      this.passFailed = false;
      this.callback('onFullScanStart');
      if (!this.running || epoch !== this.epoch) return;
    }
    const started = process.hrtime.bigint();
    let passEnd = false;
    try {
      passEnd = this.config.options.isExpired ? this.predicateChunk() : this.nativeChunk();
    } catch (error) {
      this.counters.restarts++;
      this.passFailed = true;
      this.report(error);
      this.callback('onFullScanError', error);
    } finally {
      this.counters.chunks++;
      this.counters.workingTime += Number(process.hrtime.bigint() - started) / 1e9;
    }
    if (!this.running || epoch !== this.epoch || this.space.dropped) return;
    if (!passEnd) {
      this.schedule(this.chunkDelay);
      return;
    }
    this.counters.fullScans++;
    this.passStarted = false;
    if (!this.passFailed) this.callback('onFullScanSuccess');
    this.callback('onFullScanComplete');
    this.safeEmit('fullScan', this.stats());
    if (this.running && epoch === this.epoch) this.schedule(this.chunkDelay + this.config.fullScanDelay, true);
  }

  // False when now() (user code) killed or restarted the task, or dropped the space.
  private stillRunning(): boolean {
    return this.running && this.epoch === this.tickEpoch && !this.space.dropped;
  }

  private currentTime(): number {
    const now = this.config.now();
    if (typeof now !== 'number' || Number.isNaN(now)) {
      throw illegal(`expirationd task '${this.name}': now() must return a number, got ${String(now)}`);
    }
    return now;
  }

  // One native call; returns whether the pass ended.
  private nativeChunk(): boolean {
    const { fieldno, scanSize, earlyBreak, options } = this.config;
    const h = this.space.handle;
    const cursor = this.cursor as NativeCursor;
    const listening = this.listenerCount('expired') > 0;
    const mode = options.onExpired ? 2 : listening ? 1 : 0;
    const now = this.currentTime();
    if (!this.stillRunning()) return false;
    const bytes = h.expireChunk(cursor, fieldno, scanSize, now, earlyBreak, mode, this.out, scratchBuffer());
    const [checked, expired, passEnd, , savepoint] = this.out;
    const tuples = mode === 0 ? [] : decodeMany(bytes);
    if (mode === 2) this.finishOpenChunk(cursor, savepoint, tuples);
    this.counters.checked += checked;
    this.counters.expired += expired;
    if (listening && tuples.length > 0) this.safeEmit('expired', tuples);
    return passEnd === 1;
  }

  // The JavaScript predicate: scan natively, decide here, delete natively.
  private predicateChunk(): boolean {
    const { scanSize, earlyBreak, options } = this.config;
    const isExpired = options.isExpired as NonNullable<TaskOptions['isExpired']>;
    const h = this.space.handle;
    const cursor = this.cursor as NativeCursor;
    const now = this.currentTime();
    if (!this.stillRunning()) return false;
    const visited = decodeMany(h.scanChunk(cursor, scanSize, this.out, scratchBuffer()));
    let passEnd = this.out[2] === 1;
    const positions: number[] = [];
    let checked = 0;
    try {
      for (; checked < visited.length; checked++) {
        if (isExpired(visited[checked], now)) {
          positions.push(checked);
        } else if (earlyBreak) {
          checked++;
          passEnd = true;
          cursor.reset();
          break;
        }
      }
    } catch (error) {
      if (!this.space.dropped) cursor.restore();
      throw error;
    }
    if (this.space.dropped) return false;
    let tuples: Tuple[] = [];
    if (positions.length > 0) {
      const keepOpen = options.onExpired !== undefined;
      tuples = decodeMany(h.deleteVisited(cursor, Uint32Array.from(positions), keepOpen, this.out, scratchBuffer()));
      if (keepOpen) this.finishOpenChunk(cursor, this.out[4], tuples);
    }
    this.counters.checked += checked;
    this.counters.expired += tuples.length;
    if (tuples.length > 0 && this.listenerCount('expired') > 0) this.safeEmit('expired', tuples);
    return passEnd;
  }

  // Runs onExpired inside the chunk's open transaction, then commits or rolls back.
  private finishOpenChunk(cursor: NativeCursor, savepoint: number, tuples: Tuple[]): void {
    const h = this.space.handle;
    try {
      if (tuples.length > 0) (this.config.options.onExpired as NonNullable<TaskOptions['onExpired']>)(tuples);
    } catch (error) {
      if (!this.space.dropped) h.rollbackChunk(cursor, savepoint);
      throw error;
    }
    if (!this.space.dropped) h.commit(savepoint);
  }

  private callback(name: 'onFullScanStart' | 'onFullScanSuccess' | 'onFullScanComplete' | 'onFullScanError', error?: unknown): void {
    const fn = this.config.options[name] as ((task: Task, error?: unknown) => void) | undefined;
    if (fn === undefined) return;
    try {
      if (name === 'onFullScanError') fn(this, error);
      else fn(this);
    } catch (callbackError) {
      this.report(callbackError);
    }
  }

  private report(error: unknown): void {
    this.lastError = error;
    if (this.listenerCount('error') === 0) return;
    try {
      this.emit('error', error);
    } catch {
      // An 'error' listener that throws must not take the process down from a timer.
    }
  }

  private safeEmit(event: 'expired' | 'fullScan', payload: unknown): void {
    try {
      this.emit(event, payload);
    } catch (error) {
      this.report(error);
    }
  }
}

type PositionalArgs = [rmIndex?: string, itIndex?: string, field?: number, scanSize?: number, scanTime?: number];

function start(name: string, space: Space, options?: TaskOptions): Task;
function start(name: string, space: Space, ...positional: PositionalArgs): Task;
function start(name: string, space: Space, ...rest: unknown[]): Task {
  checkName('expirationd.start', name);
  let options: unknown = rest[0];
  if (typeof rest[0] === 'string' || rest.length > 1) {
    const [rmIndex, itIndex, field, scanSize, scanTime] = rest as PositionalArgs;
    if (rmIndex !== undefined && typeof rmIndex !== 'string') throw illegal('expirationd.start: rmIndex must be an index name');
    options = Object.fromEntries(Object.entries({ rmIndex, itIndex, field, scanSize, scanTime }).filter(([, v]) => v !== undefined));
  }
  const config = configure(space, options);
  tasks.get(name)?.kill();
  const task = new Task(name, space, config);
  task.start();
  return task;
}

function lookup(name: string): Task {
  const task = tasks.get(name);
  if (task === undefined) throw new CappedError(`expirationd: no task named '${String(name)}'`, 'ER_NO_SUCH_TASK');
  return task;
}

export const expirationd = {
  start,
  /** Stops the named task; throws ER_NO_SUCH_TASK for an unknown name. */
  kill(name: string): void {
    lookup(name).kill();
  },
  /** The named task; throws ER_NO_SUCH_TASK for an unknown name. */
  task(name: string): Task {
    return lookup(name);
  },
  /** Names of the running tasks. */
  tasks(): string[] {
    return [...tasks.keys()];
  },
  /** Stats of one task, or of every running task by name. */
  stats(name?: string): TaskStats | Record<string, TaskStats> {
    if (name !== undefined) return lookup(name).stats();
    return Object.fromEntries([...tasks].map(([n, t]) => [n, t.stats()]));
  },
  /** Kills every task. */
  killAll(): void {
    for (const task of [...tasks.values()]) task.kill();
  },
};
