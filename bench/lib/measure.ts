// Measuring primitives shared by every contender: full GC, memory snapshots, CPU time, sleeping
// without busy-waiting, the event-loop stall sampler, and medians.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';
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

/** A full GC, then a turn of the event loop (finalizers, weak callbacks), then another. */
export async function settledGc(): Promise<void> {
  fullGc();
  await new Promise((resolve) => setImmediate(resolve));
  fullGc();
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

export interface StallStats {
  /** the longest gap between two ticks of a 1 ms timer (an idle loop reads about 1.1 ms) */
  maxMs: number;
  /** the sum of the gaps longer than STALL_MS within the fixed window */
  stalledMs: number;
  /** gaps longer than STALL_MS within the window */
  stalls: number;
  /** length of the window, ms */
  windowMs: number;
  /** ticks recorded */
  samples: number;
}

/** A gap between two 1 ms ticks longer than this counts as a stall. */
export const STALL_MS = 5;

/**
 * Samples the event loop with a chain of 1 ms timers over a fixed window and records every gap:
 * the longest, and the time spent in gaps longer than STALL_MS. The same window for every
 * contender, so the figures compare (a histogram's p99 does not: its sample count depends on how
 * long the loop was idle).
 */
export class StallSampler {
  private last = 0;
  private endAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stats: StallStats = { maxMs: 0, stalledMs: 0, stalls: 0, windowMs: 0, samples: 0 };
  private finished!: Promise<StallStats>;

  /** Starts sampling now, for windowMs; the promise resolves when the window has ended. */
  start(windowMs: number): Promise<StallStats> {
    this.last = now();
    this.endAt = this.last + windowMs;
    this.stats.windowMs = windowMs;
    this.finished = new Promise((resolve) => {
      const tick = (): void => {
        const t = now();
        const gap = Math.min(t, this.endAt) - this.last;
        if (gap > 0) {
          this.stats.samples++;
          if (gap > this.stats.maxMs) this.stats.maxMs = gap;
          if (gap > STALL_MS) {
            this.stats.stalledMs += gap;
            this.stats.stalls++;
          }
        }
        this.last = t;
        if (t >= this.endAt) {
          this.timer = undefined;
          resolve(this.stats);
          return;
        }
        this.timer = setTimeout(tick, 1);
      };
      this.timer = setTimeout(tick, 1);
    });
    return this.finished;
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
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

export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** Median, min and max of the finite values; null when there is none. */
export function spread(values: readonly (number | null | undefined)[]): Spread | null {
  const v = values.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  if (v.length === 0) return null;
  return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
}

/**
 * CPU ms of another process, every thread: the sum of /proc/<pid>/task/<tid>/schedstat's first
 * field (ns on the CPU), or, where schedstat is missing, /proc/<pid>/stat's utime + stime, which
 * count clock ticks (10 ms at CLK_TCK 100: too coarse for a 2 s idle window). NaN when unreadable.
 */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    if (Number.isFinite(ns) && ns > 0) return ns / 1e6;  // 0: schedstat not kept, so the ticks
  } catch {
    // no schedstat (a kernel without CONFIG_SCHEDSTATS): the tick counts below
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

/** Resident set of a process in bytes, from /proc/<pid>/status (VmRSS); NaN when unreadable. */
export function processRssBytes(pid: number | 'self'): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}
