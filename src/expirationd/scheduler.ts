// The scheduler: when a task's next chunk runs. It knows nothing of how a chunk decides expiry.
//
// The formula (the floor rate; nothing below ever waits longer than it):
//   chunkDelay = min(scanSize * scanTime / (itIndex.len() + 1), iterationDelay) seconds
// after each chunk, so a full pass over N tuples takes about scanTime; after the chunk that ends
// a pass, chunkDelay + fullScanDelay. (Without the chunkDelay there, an early-break task whose
// passes end at once would spin when fullScanDelay is 0.)
//
// Issue 15 runs chunks sooner than that, or several per timer wake-up, in three ways (task.ts
// decides which; every chunk is still its own transaction, and between two chunks there is always
// a setImmediate, so the event loop turns and the longest pause is one chunk):
// - Bursts (a paced pass): a timer wake-up runs up to k = burstSize() chunks back to back, where
//   k = max(ceil(chunks per pass / MAX_WAKEUPS_PER_PASS), ceil(MIN_WAKEUP_GAP / chunkDelay)),
//   at most the chunks per pass, with chunks per pass = ceil((len + 1) / scanSize) and len =
//   itIndex.len() when the pass began (or now, if larger); k is sized again after every chunk,
//   at the length then. A burst stops early once it has used BURST_MS of CPU. Each chunk owes
//   the formula's chunkDelay at the length when it ended, and after n chunks the task sleeps what
//   they owe (n * chunkDelay while the length holds; plus fullScanDelay when the burst ended the
//   pass; a back-off after a failed chunk is no shorter): the formula's average rate, with at
//   most about 100 timer wake-ups per pass, and wake-ups at least MIN_WAKEUP_GAP apart while the
//   chunks are cheap. A 1M pass at scanSize 1024 and scanTime 1 is 977 chunks with a
//   chunkDelay of 1.02 ms: k = 196, about 5 wake-ups (6 measured by bench:anchor, the start
//   included), 200 ms apart. At the default scanTime (chunkDelay 1 s) k = 10: 98 wake-ups. A pass
//   under 100 chunks whose chunkDelay is at least MIN_WAKEUP_GAP runs one chunk per wake-up, as
//   before.
//   Why the gap: a timer wake-up of a Node process on these VMs costs 216-236 µs of CPU after a
//   10-200 ms sleep (Node's timer path run with cold caches after the thread slept; a C program's
//   nanosleep and wake-up costs 49-57 µs), against about 7 µs for a setImmediate hop between two
//   chunks of a burst (`node scripts/wakeup-cost.mjs`, bench/results/wakeup-cost.txt).
//   At 50 ms a 1M pass at scanTime 1 took 21 wake-ups; at 200 ms it takes 6, about 15 * 230 µs
//   less CPU (3.5 ms; more on a busy machine, where a wake-up costs more). What the longer gap
//   costs: a chunk of a paced pass runs up to 200 ms sooner than an even pace would run it (never
//   later), and a burst holds more of the event loop's turns in a row (196 chunks, each its own
//   turn: still one chunk per pause, and at most BURST_MS of CPU per burst).
// - Backlog mode (early-break tasks): a chunk that found only expired tuples is followed at once
//   by the next chunk, while the task's chunks used less than maxCpuShare of one core over the
//   last CPU_WINDOW_MS (a sliding window of the chunks' own durations, CpuWindow below). Over
//   budget it waits the formula's chunkDelay.
// - Due-time wake-ups (early-break TTL tasks): after a pass that stopped at the first live tuple,
//   the next pass is due when that tuple's TTL comes, or after the formula's wait if sooner, never
//   sooner than fullScanDelay when it is > 0. An insert with an earlier TTL, or task.wake(),
//   brings it forward.
//
// Timers: a wait under 1 ms inside a pass, a burst's or backlog's next chunk, and task.wake() are
// a setImmediate; it is ref'd, because libuv does not wake up for an unref'd immediate (it would
// wait for some other event), so a pass at sub-millisecond pacing keeps the process alive until
// it ends. Every other wait, and every wait between passes (at least 1 ms), is a setTimeout,
// unref'd unless keepAlive: an idle task never keeps the process alive. A wait longer than a
// timer can hold (2^31 - 1 ms, about 24.8 days: setTimeout would fire after 1 ms) is a chain of
// timers, and runs once at its end.
import { performance } from 'node:perf_hooks';
import type { Config } from './options.js';

/** A paced pass takes at most about this many timer wake-ups. */
export const MAX_WAKEUPS_PER_PASS = 100;
/** A paced pass's timer wake-ups are at least this far apart (seconds), unless BURST_MS cut a burst. */
export const MIN_WAKEUP_GAP = 0.2;
/** A burst of a paced pass stops once its chunks used this much CPU (ms). */
export const BURST_MS = 10;
/** The sliding window over which maxCpuShare is measured (ms). */
export const CPU_WINDOW_MS = 1000;

/**
 * @internal The clock (in ms) that measures the chunks' CPU for backlog mode and bursts:
 * performance.now() around each chunk's synchronous part. Tests replace `cpuClock.now` to inject
 * the cost of a chunk deterministically; nothing else should. `performance` is imported, not the
 * global: Node loads perf_hooks (eight internal modules) on the global's first use, which was
 * otherwise at a task's first chunk: 1-2 ms of loading in that chunk's pause.
 */
export const cpuClock = { now: (): number => performance.now() };

/**
 * @internal The clock (in ms) against which a pending wake-up's time left is measured, so that
 * bringing a wake-up forward never makes it later. Monotonic, unlike the task's `now`, which may
 * jump. Tests on fake timers replace `wakeClock.now` with the fake Date.
 */
export const wakeClock = { now: (): number => performance.now() };

/** The longest delay setTimeout honours (a longer one fires after 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * @internal Benchmarks only (bench/expiry.ts): when set, called after each chunk's synchronous
 * part with its duration in ms. Unset, a chunk pays one property check.
 */
export const chunkObserver: { onChunk: ((ms: number) => void) | undefined } = { onChunk: undefined };

/** Seconds to wait after a chunk that did not end a pass (the formula). */
export function chunkDelay(config: Config, len = config.itLen()): number {
  const { scanSize, scanTime, iterationDelay } = config;
  return Math.min(scanSize * scanTime / (len + 1), iterationDelay);
}

/**
 * Chunks a timer wake-up of a paced pass runs: ceil(chunks per pass / MAX_WAKEUPS_PER_PASS), or
 * more when the formula's waits are short, so that the sleep after a whole burst (k * chunkDelay)
 * is at least MIN_WAKEUP_GAP; never more than the chunks per pass.
 * `passLen`: itIndex.len() when the pass began. A pass visits every tuple that was there, so the
 * pass is sized by the larger of that and the current len: sized by the current len alone, a pass
 * that deletes as it goes shrinks its bursts and overruns the 100 wake-ups (1M tuples, 10%
 * expired: 101 instead of 98).
 */
export function burstSize(config: Config, passLen = 0, len = config.itLen()): number {
  const chunksPerPass = Math.ceil((Math.max(len, passLen) + 1) / config.scanSize);
  const byPass = Math.ceil(chunksPerPass / MAX_WAKEUPS_PER_PASS);
  const delay = chunkDelay(config, len);
  // A zero wait (iterationDelay 0) asks for no gap at all: the whole pass may run as one burst.
  // (The epsilon keeps a quotient that should be whole, such as 0.2 / (0.2 / 95) = 95.00000000000001,
  // from rounding up to 96.)
  const byGap = delay > 0 ? Math.ceil(MIN_WAKEUP_GAP / delay - 1e-9) : chunksPerPass;
  return Math.max(1, byPass, Math.min(byGap, chunksPerPass));
}

/**
 * The CPU the task's chunks used over the last CPU_WINDOW_MS: each chunk is recorded at its end
 * with its duration, and a chunk counts whole while its end is inside the window. add and used
 * are O(1) amortized.
 */
export class CpuWindow {
  private readonly ends: number[] = [];
  private readonly durations: number[] = [];
  private head = 0;
  private sum = 0;

  add(end: number, duration: number): void {
    this.ends.push(end);
    this.durations.push(duration);
    this.sum += duration;
    // Drop what left the window here too: a task that never asks (a full scan) would otherwise
    // keep one entry per chunk for as long as it runs.
    this.used(end);
  }

  /** Chunks inside the window (for tests). */
  get size(): number {
    return this.ends.length - this.head;
  }

  /** Milliseconds of chunk CPU whose chunks ended within the window before `now`. */
  used(now: number): number {
    while (this.head < this.ends.length && this.ends[this.head] <= now - CPU_WINDOW_MS) {
      this.sum -= this.durations[this.head++];
    }
    if (this.head > 1024 && this.head * 2 > this.ends.length) {
      this.ends.splice(0, this.head);
      this.durations.splice(0, this.head);
      this.head = 0;
    }
    if (this.head === this.ends.length) this.sum = 0; // no drift from float sums
    return this.sum;
  }
}

/**
 * One pending wake-up at a time; cancel() makes sure the pending one never runs. It allocates no
 * closure per wake-up (a paced 1M pass schedules about a thousand): one `wake`, the pending `run`.
 */
export class Scheduler {
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private isImmediate = false;
  /** wakeClock.now() when the pending timer's wait ends. */
  private dueAt = 0;
  /** What a chained long wait has left after the armed link (ms). */
  private rest = 0;
  private run: () => void = () => {};
  private readonly wake = (): void => {
    this.timer = undefined;
    if (this.rest > 0) {
      this.arm(this.rest);
      return;
    }
    this.run();
  };

  constructor(private readonly keepAlive: boolean) {}

  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** Whether the pending wake-up is a setImmediate. */
  get pendingImmediate(): boolean {
    return this.timer !== undefined && this.isImmediate;
  }

  /** Milliseconds until the pending wake-up (0 for an immediate), or Infinity when none is. */
  get msLeft(): number {
    if (this.timer === undefined) return Infinity;
    return this.isImmediate ? 0 : Math.max(0, this.dueAt - wakeClock.now());
  }

  /**
   * `betweenPasses`: the wait may be long-lived, so it is always an unref'able timer.
   * `immediate`: the next turn of the event loop, whatever `seconds` says.
   */
  schedule(seconds: number, betweenPasses: boolean, run: () => void, immediate = false): void {
    this.cancel();
    this.run = run;
    const wake = this.wake;
    const ms = seconds * 1000;
    this.isImmediate = immediate || (ms < 1 && !betweenPasses);
    if (this.isImmediate) {
      this.timer = setImmediate(wake);
    } else {
      // Between passes, whole milliseconds up: a timer truncates a fraction, and a due-time
      // wake-up (unit 's' with fractional TTLs) then came before the TTL, found nothing expired
      // and woke again 1 ms later.
      const wait = betweenPasses ? Math.ceil(ms) : ms;
      this.dueAt = wakeClock.now() + Math.max(wait, 1);
      this.arm(wait);
    }
  }

  /** A timer for ms, or for MAX_TIMER_MS when ms is longer (and wake arms the rest). */
  private arm(ms: number): void {
    const link = Math.min(Math.max(ms, 1), MAX_TIMER_MS);
    this.rest = ms - link;
    this.timer = setTimeout(this.wake, link);
    if (!this.keepAlive) this.timer.unref();
  }

  cancel(): void {
    this.rest = 0;
    if (this.timer === undefined) return;
    if (this.isImmediate) clearImmediate(this.timer as NodeJS.Immediate);
    else clearTimeout(this.timer as NodeJS.Timeout);
    this.timer = undefined;
  }
}
