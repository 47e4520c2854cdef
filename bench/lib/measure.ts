// Measuring primitives shared by every contender: full GC, memory snapshots, CPU time, sleeping
// without busy-waiting, the event-loop delay monitor, and medians.
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

let gcFunction: (() => void) | undefined;

/** A full, synchronous GC: the --expose-gc global when present, else the v8 flag trick. */
export function fullGc(): void {
  if (!gcFunction) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (typeof exposed === 'function') {
      gcFunction = exposed;
    } else {
      v8.setFlagsFromString('--expose-gc');
      gcFunction = vm.runInNewContext('gc') as () => void;
    }
  }
  // Twice: the first pass can leave objects that only become unreachable after finalizers ran.
  gcFunction();
  gcFunction();
}

export interface MemorySnapshot {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export function memorySnapshot(): MemorySnapshot {
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
}

export function memoryDelta(before: MemorySnapshot, after: MemorySnapshot): MemorySnapshot {
  return {
    rss: after.rss - before.rss,
    heapUsed: after.heapUsed - before.heapUsed,
    external: after.external - before.external,
    arrayBuffers: after.arrayBuffers - before.arrayBuffers,
  };
}

/** User + system CPU of the whole process (all threads, GC helpers included), in ms. */
export function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** The event-loop delay histogram of the expiry phase, sampled every millisecond. */
export class PauseMonitor {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 1 });

  /**
   * Enables sampling and waits until it has ticked a few times: the histogram records the gap
   * between two ticks, so a pause that starts before the first tick would go unseen.
   */
  async start(primeMs = 12): Promise<void> {
    this.histogram.enable();
    await sleep(primeMs);
  }

  /** Lets the tick that follows the last pause happen, then stops sampling. */
  async stop(): Promise<PauseStats> {
    await sleep(4);
    this.histogram.disable();
    const h = this.histogram;
    return {
      maxMs: h.max / 1e6,
      p99Ms: h.percentile(99) / 1e6,
      meanMs: h.mean / 1e6,
      samples: h.count,
    };
  }
}

export interface PauseStats {
  /** the longest gap between two 1 ms ticks (an idle loop shows about 1.1 ms) */
  maxMs: number;
  p99Ms: number;
  meanMs: number;
  samples: number;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function now(): number {
  return performance.now();
}
