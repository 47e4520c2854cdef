// bench/lib/slow-calls.ts: what the slow inserts of bench:scale's load were (issue 12). Pure, so
// that test/bench-scale.test.ts checks the rules on made-up calls.
//
// Each slow call is [start, end, busy] in ms: `busy` bounds the time the main thread spent on a
// CPU or runnable waiting for one during the call (Infinity when unknown: see windowBusy()).

export type SlowCall = [start: number, end: number, busy: number];

export type SlowCallSplit = {
  /** Calls over 1 ms / over 5 ms that overlap one of V8's collections. */
  over1InGc: number;
  over5InGc: number;
  /** The longest call that overlaps no collection; 0: none. */
  longestOutsideGc: number;
  /** Calls over 5 ms outside a collection whose busy time was at most 5 ms: over 5 ms only
   * because their virtual CPU was not running (the hypervisor's steal time). */
  over5Host: number;
  /** The longest call outside a collection, counting at most its busy time; 0: none. */
  longestOwn: number;
};

/** schedstat's three counters: ns on a CPU, ns runnable waiting for one, times switched in. */
export type Sched = readonly [run: number, wait: number, slices: number];

/**
 * The busy bound of a call that lies inside a window from `from` to `to` (two schedstat reads):
 * when the thread was never switched out over the window, it was its CPU's current thread all
 * along, and its time on a CPU or waiting for one over the whole window bounds the call's. Linux
 * leaves steal time out of the time on a CPU (CONFIG_PARAVIRT_TIME_ACCOUNTING, any KVM guest), so
 * what the bound leaves of the call is time its virtual CPU did not run. Switched out (asleep or
 * preempted), the window proves nothing: Infinity.
 */
export function windowBusy(from: Sched, to: Sched): number {
  if (to[2] !== from[2]) return Infinity;
  return (to[0] - from[0] + to[1] - from[1]) / 1e6;
}

/** Splits the slow calls by V8's collections ([start, end] in ms, the same clock) and by busy time. */
export function splitSlowCalls(calls: readonly SlowCall[], gcs: ReadonlyArray<readonly [number, number]>): SlowCallSplit {
  const split: SlowCallSplit = { over1InGc: 0, over5InGc: 0, longestOutsideGc: 0, over5Host: 0, longestOwn: 0 };
  for (const [a, b, busy] of calls) {
    const d = b - a;
    if (gcs.some(([g0, g1]) => g0 < b && g1 > a)) {
      split.over1InGc++;
      if (d > 5) split.over5InGc++;
      continue;
    }
    split.longestOutsideGc = Math.max(split.longestOutsideGc, d);
    const own = Math.min(d, busy);
    split.longestOwn = Math.max(split.longestOwn, own);
    if (d > 5 && own <= 5) split.over5Host++;
  }
  return split;
}
