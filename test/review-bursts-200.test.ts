// Review of commit 16176d4 (MIN_WAKEUP_GAP 0.2 s, k sized once per burst): adversarial tests of
// the promises of README "Wake-ups per pass" and src/expirationd/scheduler.ts. The review found
// three bugs ("Fixed:" below); the fix sizes k after every chunk again, and charges each chunk
// the formula's wait at the length when it ended (task.ts #chargeChunk).
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { cpuClock } from '../src/expirationd/scheduler.js';
import { advanceTo, BASE, fakeCpu, runNow, useKeepupTimers } from './support/keepup.js';

useKeepupTimers();

const LIVE = BASE + 3_600_000;
const DEAD = BASE - 1000;

function makeSpace(n: number, ttl: (id: number) => number = () => LIVE, name = 'rb'): Space {
  const space = new Space(name);
  space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
  const tuples: unknown[][] = [];
  for (let id = 0; id < n; id++) tuples.push([id, ttl(id)]);
  if (tuples.length > 0) space.insertMany(tuples);
  return space;
}

function start(space: Space, options: TaskOptions = {}): Task {
  return expirationd.start('rb', space, { field: 2, unit: 'ms', now: () => Date.now(), ...options });
}

/**
 * Records the fake time at which every chunk starts (cpuClock is read before and after each
 * chunk), and lets a hook run "between chunks" (before chunk number `i` starts, 1-based).
 */
function probe(before?: (chunk: number) => void, cost?: (chunk: number) => number): { starts: number[] } {
  const starts: number[] = [];
  let calls = 0;
  cpuClock.now = () => {
    calls++;
    if (calls % 2 === 1) {
      starts.push(Date.now());
      before?.(starts.length);
    } else if (cost !== undefined) {
      fakeCpu.ms += cost(starts.length);
    }
    return fakeCpu.ms;
  };
  return { starts };
}

/**
 * Chunks in a burst of a pass over `len0` tuples (scanSize 10, scanTime 1) that deletes
 * `deleted` tuples a chunk: k is sized after every chunk, at the length then, and the burst
 * stops once it ran k.
 */
function burstOf(len0: number, deleted: number, passLen = len0): number {
  for (let n = 1; ; n++) {
    const len = len0 - deleted * n;
    const chunksPerPass = Math.ceil((Math.max(len, passLen) + 1) / 10);
    const byGap = Math.ceil(0.2 / Math.min(10 / (len + 1), 1) - 1e-9);
    if (n >= Math.max(1, Math.ceil(chunksPerPass / 100), Math.min(byGap, chunksPerPass))) return n;
  }
}

function untilPasses(task: Task, passes: number, limit = 200_000): void {
  for (let i = 0; i < limit && task.stats().fullScans < passes; i++) vi.advanceTimersToNextTimer();
}

describe('review: average rate', () => {
  test('a poison tuple in the last chunk of each burst must not make the pass faster than scanTime', () => {
    // 10,000 tuples, scanSize 10, scanTime 60: chunkDelay = 600 / 10,001 s (60 ms), 1001 chunks per
    // pass, k = max(11, ceil(200 / 60) = 4) = 11. A poison tuple (isExpired throws) in chunks
    // 10, 21, 32, ...: each burst's 11th chunk fails.
    // Fixed: the pass took about 12 s, 5x faster than the formula: after a failed chunk the
    // back-off waited max(chunkDelay, 2 * chunkDelay) = 120 ms, not the burst's 11 chunk delays
    // (660 ms). The back-off now waits at least what the burst's chunks owe (task.ts #delay).
    const space = makeSpace(10_000);
    const task = start(space, {
      scanSize: 10, scanTime: 60, fullScanDelay: 3600,
      isExpired: (tuple) => {
        const id = tuple[0] as number;
        if (id % 10 === 0 && (id / 10) % 11 === 10) throw new Error('poison');
        return false;
      },
    });
    task.on('error', () => {});
    const startedAt = Date.now();
    let endedAt = 0;
    task.on('fullScan', () => {
      endedAt = Date.now();
    });
    untilPasses(task, 1);
    const { chunks, wakeups, fullScans } = task.stats();
    expect(fullScans).toBe(1);
    expect(wakeups).toBeLessThanOrEqual(100);
    const formula = chunks * 10 * 60 / 10_001 * 1000;
    expect(endedAt - startedAt).toBeGreaterThanOrEqual(Math.floor(formula * 0.98));
  });

  test('a truncate between two chunks of a 201-chunk burst: the next pass comes about chunkDelay later', () => {
    // 100,000 tuples, scanSize 100, scanTime 1: chunkDelay = 100 / 100,001 s (1 ms), k = 201.
    // Other code truncates the space before chunk 51: chunk 51 finds nothing and ends the pass.
    // Fixed: the next pass came 51 * 1 s = 51 s later, every chunk of the burst charged at the
    // empty space's delay (all n chunks were priced at the length when the burst ended; not new
    // in 16176d4). Each chunk is now charged at the length when it ended: 50 chunks at about 1 ms,
    // then the chunk that ends the pass, min(100 * 1 / 1, iterationDelay 1) = 1 s: about 1.05 s.
    const space = makeSpace(100_000);
    const { starts } = probe((i) => {
      if (i === 51) space.truncate();
    });
    const task = start(space, { scanSize: 100, scanTime: 1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 51, fullScans: 1, wakeups: 1 });
    advanceTo(starts[50] + 120_000);
    expect(task.stats().chunks).toBeGreaterThan(51);
    expect(starts[51] - starts[50], 'ms from the chunk that ended the pass to the next pass').toBeLessThanOrEqual(1100);
  });

  test('a space that shrinks in the middle of a burst: the sleep charges each chunk at the length when it ended', () => {
    // 100,000 tuples, scanSize 100, scanTime 1: chunkDelay = 100 / 100,001 s (1.0 ms). Before
    // chunk 51 other code deletes the 5,000 tuples the pass has already visited: len 95,000,
    // chunkDelay 100 / 95,001 s (1.05 ms), and k = ceil(190.001) = 191. The sleep after the burst
    // owes 50 chunks at 1.0 ms and 141 at 1.05 ms: 198.4 ms (all 191 at the end's length would
    // be 201.1 ms).
    const space = makeSpace(100_000);
    const { starts } = probe((i) => {
      if (i === 51) for (let id = 0; id < 5000; id++) space.delete(id);
    });
    const task = start(space, { scanSize: 100, scanTime: 1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 191, wakeups: 1, fullScans: 0 });
    const owed = 50 * 100 / 100_001 * 1000 + 141 * 100 / 95_001 * 1000;
    expect(owed).toBeCloseTo(198.4, 1);
    advanceTo(starts[190] + 205);
    expect(task.stats().wakeups).toBe(2);
    const sleep = starts[191] - starts[190];
    expect(sleep).toBeGreaterThanOrEqual(Math.floor(owed) - 1);
    expect(sleep).toBeLessThanOrEqual(Math.ceil(owed) + 1);
  });

  test('space grows 10x between two chunks of a burst: wake-ups stay at least 200 ms apart', () => {
    // 5,000 tuples with ids 0, 10, ..., 49,990, scanSize 10, scanTime 1: chunkDelay 2 ms, k = 101
    // at the first chunk. Before chunk 2 other code inserts the 45,000 ids between them (inside
    // the pass's bound): chunkDelay becomes 10 / 50,001 s (0.2 ms) and k = 1001.
    // Fixed: with k sized once, at the first chunk, the burst ran 101 chunks and slept 101 * 0.2
    // ms = 20 ms. Sized after every chunk, it runs 1001 chunks, which owe 2.0 + 1000 * 0.2 = 202 ms.
    const space = new Space('rb');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    const initial: unknown[][] = [];
    for (let id = 0; id < 50_000; id += 10) initial.push([id, LIVE]);
    space.insertMany(initial);
    const { starts } = probe((i) => {
      if (i === 2) {
        const more: unknown[][] = [];
        for (let id = 0; id < 50_000; id++) if (id % 10 !== 0) more.push([id, LIVE]);
        space.insertMany(more);
      }
    });
    const task = start(space, { scanSize: 10, scanTime: 1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 1001, wakeups: 1, fullScans: 0 });
    advanceTo(starts[1000] + 1000);
    expect(task.stats().wakeups).toBeGreaterThanOrEqual(2);
    expect(starts[1001] - starts[1000], 'ms between the burst\'s last chunk and the next wake-up').toBeGreaterThanOrEqual(200);
  });

  test('space doubling between bursts: a 1,000-chunk pass keeps <= ~100 wake-ups and about scanTime', () => {
    // 50,000 tuples, scanSize 100, scanTime 60; during every sleep other code adds 1,000 tuples
    // ahead of the cursor (ids grow), so the pass ends around 100k+ tuples.
    const space = makeSpace(50_000);
    let next = 50_000;
    const task = start(space, { scanSize: 100, scanTime: 60, fullScanDelay: 3600 });
    let endedAt = 0;
    task.on('fullScan', () => {
      endedAt = Date.now();
    });
    const startedAt = Date.now();
    let chunksSum = 0;  // the formula's waits, chunk by chunk, at the length of the time
    let seen = 0;
    for (let i = 0; i < 100_000 && task.stats().fullScans < 1; i++) {
      vi.advanceTimersToNextTimer();
      const { chunks } = task.stats();
      chunksSum += (chunks - seen) * 100 * 60 / (space.len() + 1) * 1000;
      seen = chunks;
      if (!vi.getTimerCount()) break;
      if (next < 120_000 && task.stats().fullScans === 0) {
        const more: unknown[][] = [];
        for (let j = 0; j < 1000; j++) more.push([next++, LIVE]);
        space.insertMany(more);
      }
    }
    const stats = task.stats();
    expect(stats.fullScans).toBe(1);
    expect(stats.wakeups).toBeLessThanOrEqual(110);
    expect(endedAt - startedAt).toBeGreaterThanOrEqual(chunksSum * 0.9);
    expect(endedAt - startedAt).toBeLessThanOrEqual(chunksSum * 1.1 + stats.chunks + 10);
  });
});

describe('review: k is fresh for every burst', () => {
  test('a burst cut at BURST_MS of CPU: the next burst gets the full k', () => {
    const space = makeSpace(5000);
    // The first 3 chunks cost 4 ms each (a cut at 12 ms); then chunks are free: k = 101.
    probe(undefined, (i) => (i <= 3 ? 4 : 0));
    const task = start(space, { scanSize: 10, scanTime: 1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 3, wakeups: 1 });
    vi.advanceTimersToNextTimer();
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 3 + 101, wakeups: 2 });
  });

  test('a burst cut by a failed chunk (backOff): the next burst gets the full k', () => {
    const space = makeSpace(5000);
    const task = start(space, {
      scanSize: 10, scanTime: 1,
      isExpired: (tuple) => {
        if (tuple[0] === 55) throw new Error('poison');  // chunk 6
        return false;
      },
    });
    task.on('error', () => {});
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 6, wakeups: 1, restarts: 2 });
    vi.advanceTimersToNextTimer();
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 6 + 101, wakeups: 2 });
  });

  test('task.wake() during the sleep: a new burst of the full k', () => {
    const space = makeSpace(5000);
    const task = start(space, { scanSize: 10, scanTime: 1 });
    runNow(task);
    expect(task.stats().chunks).toBe(101);
    task.wake();
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 202, wakeups: 2 });
    expect(vi.getTimerCount()).toBe(1);
  });

  test('a pass that ends inside a burst: the next pass starts with a fresh k', () => {
    const space = makeSpace(5000);
    const task = start(space, { scanSize: 10, scanTime: 1 });
    untilPasses(task, 1);
    const { chunks, wakeups } = task.stats();
    // 500 or 501 chunks: four bursts of 101, and the rest.
    expect(wakeups).toBe(5);
    expect(chunks - 4 * 101).toBeLessThan(101);
    vi.advanceTimersToNextTimer();
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: chunks + 101, wakeups: 6 });
  });

  test('stop() in onExpired mid-burst then start(): the pass resumes with a fresh burst', () => {
    const space = makeSpace(5000, (id) => (id % 2 === 0 ? DEAD : LIVE));
    let calls = 0;
    const delivered = new Set<number>();
    const task: Task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: (tuples: unknown[][]) => {
        for (const t of tuples) delivered.add(t[0] as number);
        if (++calls === 30) task.stop();
      },
    });
    runNow(task);
    expect(task.stats().chunks).toBe(30);
    expect(task.state).toBe('stopped');
    expect(vi.getTimerCount()).toBe(0);
    task.start();
    runNow(task);
    // The new burst starts at chunk 31, with 30 * 5 tuples deleted (len 4850), and is sized after
    // each of its chunks: 89 of them.
    const k = burstOf(4850, 5, 5000);
    expect(k).toBe(89);
    expect(task.stats()).toMatchObject({ chunks: 30 + k, wakeups: 2, fullScans: 0 });
    for (let id = 0; id < 5000; id++) {
      const stored = space.get(id) !== undefined;
      if (id % 2 === 1) expect(stored).toBe(true);
      else if (!stored) expect(delivered.has(id)).toBe(true);
    }
  });
});

describe('review: misuse inside a 196-chunk burst', () => {
  // 20,000 tuples (half expired) at scanSize 10, scanTime 1: chunkDelay = 10 / 20,001 s (0.5 ms),
  // k = ceil(400.02) = 401 (more than 196: the misuse lands deep inside one burst).
  function mixed(): Space {
    return makeSpace(20_000, (id) => (id % 2 === 0 ? DEAD : LIVE));
  }

  function checkNothingLost(space: Space, delivered: Set<number>): void {
    if (space.dropped) return;
    for (let id = 0; id < 20_000; id++) {
      const stored = space.get(id) !== undefined;
      if (id % 2 === 1) expect(stored, `live ${id}`).toBe(true);
      else if (!stored) expect(delivered.has(id), `delivered ${id}`).toBe(true);
    }
  }

  test.each([
    ['onExpired', 'kill'], ['onExpired', 'drop'], ['onExpired', 'restart'],
    ['expired', 'kill'], ['expired', 'drop'],
  ])('%s calling %s in chunk 150 of a burst', (where, what) => {
    const space = mixed();
    const delivered = new Set<number>();
    let calls = 0;
    const act = (task: Task) => {
      if (what === 'kill') task.kill();
      else if (what === 'drop') space.drop();
      else task.restart();
    };
    let task: Task;
    const { starts } = probe();
    task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: (tuples: unknown[][]) => {
        for (const t of tuples) delivered.add(t[0] as number);
        if (where === 'onExpired' && ++calls === 150) act(task);
      },
    });
    if (where === 'expired') task.on('expired', () => {
      if (++calls === 150) act(task);
    });
    runNow(task);
    const chunks = task.stats().chunks;
    if (what === 'restart') {
      // The restarted task begins a fresh pass and a fresh burst of 401 chunks... after the 150th
      // (the killed epoch's chunk stops at once).
      expect(task.state).toBe('running');
      expect(task.stats().wakeups).toBe(2);
      expect(chunks).toBeGreaterThan(150);
    } else {
      expect(chunks).toBe(150);
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(60_000);
      expect(task.stats().chunks).toBe(150);
    }
    // Never two chunks in one macrotask: every chunk starts at its own fake millisecond.
    expect(new Set(starts).size).toBe(starts.length);
    checkNothingLost(space, delivered);
  });

  test('truncate() from onExpired mid-burst: the pass ends, nothing undelivered, one timer', () => {
    const space = mixed();
    const delivered = new Set<number>();
    let calls = 0;
    const task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: (tuples: unknown[][]) => {
        for (const t of tuples) delivered.add(t[0] as number);
        if (++calls === 100) space.truncate();
      },
    });
    const errors: unknown[] = [];
    task.on('error', (e) => errors.push(e));
    runNow(task);
    expect(task.state).toBe('running');
    expect(vi.getTimerCount()).toBe(1);
    expect(task.stats().fullScans).toBeGreaterThanOrEqual(0);
    expect(space.len()).toBe(0);
    expect(task.stats().expired).toBeLessThanOrEqual(delivered.size);
    expect(errors).toEqual([]);
  });

  test('wake() from onFullScanComplete and kill() from onFullScanStart of the next pass', () => {
    const space = makeSpace(50);
    let passes = 0;
    let task: Task;
    task = start(space, {
      scanSize: 10, scanTime: 0.01, fullScanDelay: 3600,
      onFullScanComplete: () => task.wake(),
      onFullScanStart: () => {
        if (++passes === 2) task.kill();
      },
    });
    runNow(task);
    runNow(task);
    expect(task.state).toBe('killed');
    expect(task.stats()).toMatchObject({ chunks: 5, fullScans: 1 });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('review: edges', () => {
  test('an empty space at the defaults: one chunk a pass, 1 s apart', () => {
    const space = makeSpace(0);
    const { starts } = probe();
    const task = start(space, {});
    runNow(task);
    advanceTo(starts[0] + 5000);
    expect(starts.length).toBe(6);
    expect(starts.slice(1).map((t, i) => t - starts[i])).toEqual([1000, 1000, 1000, 1000, 1000]);
    expect(task.stats().wakeups).toBe(6);
  });

  test('one tuple at scanSize 1: chunkDelay 0.5 s, k = 1', () => {
    const space = makeSpace(1);
    const { starts } = probe();
    const task = start(space, { scanSize: 1, scanTime: 1 });
    runNow(task);
    advanceTo(starts[0] + 2000);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]);
    expect(gaps.every((g) => g === 500)).toBe(true);
    expect(gaps.length).toBe(4);
  });

  test('iterationDelay 0 over a space that shrinks inside the pass: one wake-up per pass', () => {
    const space = makeSpace(3000, (id) => (id % 3 === 0 ? DEAD : LIVE));
    const task = start(space, { scanSize: 10, iterationDelay: 0, fullScanDelay: 3600 });
    runNow(task);
    expect(task.stats()).toMatchObject({ fullScans: 1, wakeups: 1, expired: 1000 });
  });

  test('huge scanTime: k = ceil(chunks / 100), sleeps of k * iterationDelay', () => {
    const space = makeSpace(5000);
    const { starts } = probe();
    const task = start(space, { scanSize: 10, scanTime: 1e9, iterationDelay: 1e6 });
    runNow(task);
    // 501 chunks per pass: k = 6; chunkDelay = min(1e10 / 5001, 1e6) = 1e6 s.
    expect(task.stats()).toMatchObject({ chunks: 6, wakeups: 1 });
    const last = starts[starts.length - 1];
    advanceTo(last + 6e9 - 1);
    expect(task.stats().chunks).toBe(6);
    advanceTo(last + 6e9 + 1);
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 12, wakeups: 2 });
  });
});

describe('review: callbacks that poke the task inside a burst', () => {
  test('wake() and stop()+start() from onExpired keep one chunk per macrotask and the burst size', () => {
    const space = makeSpace(5000, (id) => (id % 2 === 0 ? DEAD : LIVE));
    let calls = 0;
    const { starts } = probe();
    const task: Task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: () => {
        calls++;
        if (calls % 3 === 0) task.wake();
        if (calls % 5 === 0) {
          task.stop();
          task.start();
        }
      },
    });
    runNow(task);
    // k sized after each chunk (5 deleted a chunk): 91 chunks.
    expect(burstOf(5000, 5)).toBe(91);
    expect(task.stats()).toMatchObject({ chunks: 91, wakeups: 1 });
    expect(new Set(starts).size).toBe(starts.length);
    expect(vi.getTimerCount()).toBe(1);
  });

  test('an async onExpired: the burst still runs k chunks, one per turn, then sleeps k delays', async () => {
    const space = makeSpace(5000, (id) => (id % 2 === 0 ? DEAD : LIVE));
    const task: Task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: () => Promise.resolve(),
    });
    for (let i = 0; i < 400 && task.stats().wakeups < 2; i++) await vi.advanceTimersByTimeAsync(1);
    const { chunks } = task.stats();
    // Each chunk deletes its 5 expired tuples once its promise resolves, so k, sized after each
    // chunk, sees the length one chunk late: 91 or 92 chunks.
    expect(chunks).toBeGreaterThanOrEqual(burstOf(5000, 5));
    expect(chunks).toBeLessThanOrEqual(burstOf(5000, 5) + 1);
    expect(task.stats().expired).toBeGreaterThanOrEqual(5 * burstOf(5000, 5) - 5);
  });
});
