// The one small interface every contender adapter implements, and the discovery of the adapters:
// each file in bench/contenders/ default-exports a ContenderDefinition, so adding a peer is one file.
//
// A trial (trial.ts) drives a contender through the same steps whatever it is:
//   create -> load -> start (expiry runs as its users run it; nothing is due yet) -> idle window
//   -> the backlog becomes due -> the contender reports its deletions to a DeletionTracker
//   -> cleared (or, for the products that leave expired records behind by design, the window ends)
//   -> stop -> finish (completes the deletion outside the measurement, if needed) -> verify -> close.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { now } from './measure.js';
import type { StepClock, Workload } from './workload.js';

/** What the product reports as its own memory, the second memory column. */
export type SelfMemoryKind =
  /** space.memory().total */
  | 'memory()'
  /** SQLite's PRAGMA page_count × page_size */
  | 'pages'
  /** V8 heapUsed growth after a full GC (the caches keep everything on the V8 heap) */
  | 'heap'
  /** Redis INFO memory used_memory growth */
  | 'used_memory';

export interface ContenderSettings {
  workload: Workload;
  scanSize: number;
  scanTime: number;
  /** multiplies the margin that wall-clock caches leave before their expired entries go stale */
  marginFactor: number;
  /** ms the wall-clock contenders must leave between the end of the load and the backlog (idle window, GC) */
  quietMs: number;
  /** the injected clock of the contenders that take time as data; release() makes the backlog due */
  clock: StepClock;
}

export interface LoadOutcome {
  /**
   * performance.now() ms at which the backlog comes to exist, for contenders whose expiry runs on
   * the wall clock; absent when the clock is injected (the trial releases it).
   */
  backlogAt?: number;
}

/** Counts deletions of expired records and remembers when the first and the last happened. */
export class DeletionTracker {
  readonly done: Promise<void>;
  count = 0;
  firstAt: number | null = null;
  lastAt: number | null = null;
  private resolve!: () => void;

  constructor(readonly expected: number) {
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  /**
   * n expired records were deleted; `workStartedAt` (performance.now() ms) is when the work that
   * deleted them began, when the contender knows it (a statement, a chunk), else now.
   */
  deleted(n: number, workStartedAt?: number): void {
    if (n <= 0 || this.lastAt !== null) return;
    if (this.firstAt === null) this.firstAt = workStartedAt ?? now();
    this.count += n;
    if (this.count >= this.expected) {
      this.lastAt = now();
      this.resolve();
    }
  }
}

export interface Contender {
  /** Asynchronous set-up after create() (starting a server), before anything is measured. */
  open?(): Promise<void>;
  /** Inserts every record of the workload; calls progress(loaded) now and then. */
  load(progress: (loaded: number) => void): LoadOutcome | Promise<LoadOutcome>;
  /** Bytes the product reports for what it holds (selfMemory 'memory()', 'pages', 'used_memory'). */
  selfBytes?(): number | Promise<number>;
  /** Resident set of a separate server process, when the product runs in one (Redis). */
  serverRssBytes?(): number;
  /** CPU ms of a separate server process so far (Redis); the trial then uses it instead of this process's. */
  serverCpuMs?(): number;
  /**
   * Starts expiry the way the product's users run it, reporting every deletion of an expired
   * record to `tracker` through the product's own signals (events, callbacks, statement results).
   */
  start(tracker: DeletionTracker): void;
  /** Expired records still stored (for progress lines and messages). */
  remainingExpired(): number | Promise<number>;
  /** Stops whatever start() started (tasks, timers, loops). Idempotent. */
  stop(): void;
  /** Completes the deletion after the measurement window, for contenders that may leave a backlog. */
  finish?(): Promise<void>;
  /** Records the expiry looked at, where the product counts them. */
  checked?(): number;
  /** Every expired record is gone and every live one is intact; returns what is wrong (empty: all good). */
  verify(): string[] | Promise<string[]>;
  /** Frees everything (stops servers). */
  close(): void | Promise<void>;
}

export interface ContenderDefinition {
  /** Human-readable name for the table and the chart. */
  label: string;
  /** How this contender loads and expires, with every option it uses. */
  description: string;
  selfMemory: SelfMemoryKind;
  /** True for products of this repository (highlighted in the report). */
  ours?: boolean;
  /**
   * True when the product by design may leave expired records stored for long (Redis's sampling,
   * our default pacing): the trial then measures for --window seconds and reports what is left,
   * instead of failing at --timeout.
   */
  mayLeaveBacklog?: boolean;
  /** null when the contender can run here; otherwise why not and how to enable it. */
  unavailable?(): string | null;
  create(settings: ContenderSettings): Contender;
}

export const CONTENDERS_DIR = path.resolve(__dirname, '..', 'contenders');

/** The contender the ratios are relative to. */
export const BASELINE = 'capped-indexed';

/** Known contenders in report order; any other adapter file follows, alphabetically. */
const ORDER = [
  'capped-indexed',
  'capped-indexed-defaults',
  'capped-scan',
  'ttlcache',
  'ttlcache-one-ttl',
  'lru-cache',
  'node-cache',
  'sqlite',
  'sqlite-single',
  'redis',
];

/** Names (file names without .ts) of the adapters in bench/contenders/, in report order. */
export function contenderNames(dir: string = CONTENDERS_DIR): string[] {
  const names = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.slice(0, -3));
  const rank = (n: string): number => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

export function contenderFile(name: string, dir: string = CONTENDERS_DIR): string {
  return path.join(dir, `${name}.ts`);
}

export function loadDefinition(name: string, dir: string = CONTENDERS_DIR): ContenderDefinition {
  // require, not import(): the adapters are TypeScript compiled to CommonJS by tsx.
  const mod = require(contenderFile(name, dir)) as { default?: ContenderDefinition };
  const def = mod.default;
  if (!def || typeof def.create !== 'function') {
    throw new Error(`bench/contenders/${name}.ts must default-export a ContenderDefinition`);
  }
  return def;
}
