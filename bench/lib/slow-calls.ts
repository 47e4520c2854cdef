// bench/lib/slow-calls.ts: what the slow inserts of bench:scale's load were (issue 12). Pure, so
// that test/bench-scale.test.ts checks the rules on made-up calls.
//
// Each slow call is [start, end, own] in ms: `own` bounds from above the part of the call that was
// the thread's own (see ownTime()); a call with no schedstat window has own = its whole time.

export type SlowCall = [start: number, end: number, own: number];

export type SlowCallSplit = {
  /** Calls over 1 ms / over 5 ms that overlap one of V8's collections. */
  over1InGc: number;
  over5InGc: number;
  /** The longest call that overlaps no collection; 0: none. */
  longestOutsideGc: number;
  /** Calls over 5 ms outside a collection whose own time was at most 5 ms: over 5 ms only because
   * the thread was not running (its virtual CPU stolen, or another thread on its CPU). */
  over5NotRunning: number;
  /** The longest own time of a call outside a collection; 0: none. */
  longestOwn: number;
};

/** A schedstat read: ns on a CPU, ns runnable waiting for one, times switched in; and `at`, the
 * wall clock of the read in ms. */
export type Window = { run: number; wait: number; slices: number; at: number };

/**
 * An upper bound of the thread's own time in a call of `ms` that began at `start` (ms, the clock of
 * Window.at) and ended just before the read `to`, in the window since the read `from`.
 *
 * Over the window, time the thread was not running is known in two ways. Runnable but waiting for
 * a CPU (another thread had it) is schedstat's second count. And when the thread was never switched
 * out, it was its CPU's current thread throughout, so the time neither on that CPU nor waiting is
 * time its virtual CPU did not run: Linux leaves steal time out of the first count
 * (CONFIG_PARAVIRT_TIME_ACCOUNTING, any KVM guest). Switched out, the rest could be sleep, which
 * counts as the call's own. At most `start - from.at` of that not-running time lies before the
 * call; the rest was inside it.
 */
export function ownTime(ms: number, start: number, from: Window, to: Window): number {
  const wall = to.at - from.at;
  const run = (to.run - from.run) / 1e6;
  const wait = (to.wait - from.wait) / 1e6;
  const notRunning = to.slices === from.slices ? wall - run : wait;
  const before = Math.max(0, start - from.at);
  return ms - Math.min(ms, Math.max(0, notRunning - before));
}

/** Splits the slow calls by V8's collections ([start, end] in ms, the same clock) and by own time. */
export function splitSlowCalls(calls: readonly SlowCall[], gcs: ReadonlyArray<readonly [number, number]>): SlowCallSplit {
  const split: SlowCallSplit = { over1InGc: 0, over5InGc: 0, longestOutsideGc: 0, over5NotRunning: 0, longestOwn: 0 };
  for (const [a, b, own] of calls) {
    const d = b - a;
    if (gcs.some(([g0, g1]) => g0 < b && g1 > a)) {
      split.over1InGc++;
      if (d > 5) split.over5InGc++;
      continue;
    }
    split.longestOutsideGc = Math.max(split.longestOutsideGc, d);
    const mine = Math.min(d, own);
    split.longestOwn = Math.max(split.longestOwn, mine);
    if (d > 5 && mine <= 5) split.over5NotRunning++;
  }
  return split;
}
