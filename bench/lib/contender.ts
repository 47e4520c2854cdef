// The one small interface every contender adapter implements, and the discovery of the adapters:
// each file in bench/contenders/ default-exports a ContenderDefinition, so adding a peer is one file.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Workload } from './workload.js';

/** Where a contender's memory figure comes from. */
export type MemoryKind =
  /** bytes the product itself reports for its native storage */
  | 'native'
  /** growth of the V8 heap (heapUsed) after a full GC */
  | 'heap'
  /** growth of the process's resident set after a full GC (for memory V8 does not see) */
  | 'rss';

export interface ContenderSettings {
  workload: Workload;
  scanSize: number;
  scanTime: number;
  /** multiplies the margin that wall-clock caches leave before their expired entries go stale */
  marginFactor: number;
}

export interface LoadOutcome {
  /**
   * performance.now() ms at which the backlog comes to exist, for contenders whose expiry runs on
   * the wall clock; absent when the clock is injected and the backlog exists once loaded.
   */
  backlogAt?: number;
}

export interface Contender {
  /** Inserts every tuple of the workload; synchronous; calls progress(loaded) now and then. */
  load(progress: (loaded: number) => void): LoadOutcome;
  /** Native bytes the product reports, for memoryKind 'native'. */
  nativeBytes?(): number;
  /**
   * Sets expiry going and resolves once every expired tuple is gone, noticed through the
   * contender's own signals (events, callbacks, the end of its loop), never by polling.
   */
  clear(): Promise<void>;
  /** Expired tuples still present (for progress lines and timeout messages). */
  remainingExpired(): number;
  /** Stops whatever clear() started (tasks, loops). Idempotent. */
  stop(): void;
  /** Tuples the expiry looked at, where the product counts them. */
  checked?(): number;
  /** Every expired tuple is gone and every live one is intact; returns what is wrong (empty: all good). */
  verify(): string[];
  /** Frees everything. */
  close(): void;
}

export interface ContenderDefinition {
  /** Human-readable name for the table and the chart. */
  label: string;
  /** One line on how this contender loads and expires. */
  description: string;
  memoryKind: MemoryKind;
  /** True for products of this repository (highlighted in the report). */
  ours?: boolean;
  create(settings: ContenderSettings): Contender;
}

export const CONTENDERS_DIR = path.resolve(__dirname, '..', 'contenders');

/** The contender the ratios are relative to. */
export const BASELINE = 'capped-indexed';

/** Known contenders in report order; any other adapter file follows, alphabetically. */
const ORDER = ['capped-indexed', 'capped-scan', 'ttlcache', 'lru-cache', 'node-cache', 'sqlite'];

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

/** Counts down to zero and resolves a promise then: the usual shape of "every expired tuple is gone". */
export class Countdown {
  readonly done: Promise<void>;
  private left: number;
  private resolve!: () => void;

  constructor(count: number) {
    this.left = count;
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
    if (count <= 0) this.resolve();
  }

  tick(n = 1): void {
    if (this.left > 0 && (this.left -= n) <= 0) this.resolve();
  }

  get remaining(): number {
    return Math.max(0, this.left);
  }
}
