// Issue 15, fewer wake-ups for a paced pass: a timer wake-up runs k chunks back to back (a
// setImmediate between two of them, each its own transaction), k = max(ceil(chunks per pass /
// 100), ceil(200 ms / chunkDelay)) and at most the chunks per pass, stopping early once the burst
// used 10 ms of CPU, then sleeps n * chunkDelay for the n chunks it ran (plus fullScanDelay after
// the chunk that ends a pass): the formula's average rate, with at most about 100 timer wake-ups
// per pass, at least 200 ms apart while chunks are cheap. The chunks' CPU comes from the injected
// CPU clock.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { cpuClock, MIN_WAKEUP_GAP } from '../src/expirationd/scheduler.js';
import { advanceTo, BASE, fakeCpu, runNow, useKeepupTimers } from './support/keepup.js';

useKeepupTimers();

function makeSpace(live: number): Space {
  const space = new Space('bursts');
  space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
  const tuples: unknown[][] = [];
  for (let id = 0; id < live; id++) tuples.push([id, BASE + 3_600_000]);
  space.insertMany(tuples);
  return space;
}

function start(space: Space, options: TaskOptions = {}): Task {
  return expirationd.start('bursts', space, { field: 2, unit: 'ms', now: () => Date.now(), ...options });
}

/** Fake times at which chunks ran, through the injected CPU clock (read around every chunk). */
function chunkTimes(options: TaskOptions): { times: number[]; options: TaskOptions } {
  const times: number[] = [];
  cpuClock.now = () => {
    times.push(Date.now());
    return 0;
  };
  return { times, options };
}

describe('bursts', () => {
  /**
   * A 5,000-tuple pass at scanSize 10 and this scanTime: the first wake-up runs k chunks (the
   * start's immediate, then one between each two), sleeps k chunk delays, and the second runs k more.
   */
  function expectBursts(scanTime: number, k: number): void {
    const space = makeSpace(5000);
    const { times, options } = chunkTimes({ scanSize: 10, scanTime });
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const task = start(space, options);
    runNow(task);

    expect(task.stats()).toMatchObject({ chunks: k, wakeups: 1 });
    expect(immediate).toHaveBeenCalledTimes(k);
    const sleep = k * 10 * scanTime / 5001 * 1000;
    expect(sleep).toBeGreaterThanOrEqual(MIN_WAKEUP_GAP * 1000);
    const last = times[times.length - 1];
    advanceTo(last + Math.floor(sleep) - 1);
    expect(task.stats().chunks).toBe(k);
    advanceTo(last + Math.ceil(sleep));
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 2 * k, wakeups: 2 });
  }

  test('a 5,000-tuple pass at scanSize 10 and scanTime 30 runs 6 chunks per wake-up and sleeps 6 chunk delays', () => {
    // ceil(5001 / 10) = 501 chunks per pass, k = ceil(501 / 100) = 6; chunkDelay = 10 * 30 / 5001 s
    // (60 ms; the 200 ms gap asks for ceil(200 / 60) = 4, fewer). The sleep: 359.9 ms.
    expectBursts(30, 6);
  });

  test('short waits: the same pass at scanTime 1 runs 101 chunks per wake-up, 202 ms apart', () => {
    // chunkDelay = 10 / 5001 s = 2.0 ms: k = ceil(200 / 2.0) = 101 chunks, then a sleep of 101
    // delays (201.96 ms).
    expect(MIN_WAKEUP_GAP).toBe(0.2);
    expectBursts(1, 101);
  });

  test('a 1,000-chunk pass at scanTime 1 takes 5 wake-ups, each at least 200 ms after the last burst', () => {
    const space = makeSpace(100_000);
    // chunkDelay = 100 / 100,001 s (1.0 ms): k = ceil(200.002) = 201, so ceil(1000 / 201) = 5 wake-ups.
    const { times, options } = chunkTimes({ scanSize: 100, scanTime: 1, fullScanDelay: 3600 });
    const task = start(space, options);
    for (let i = 0; i < 100_000 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    const stats = task.stats();
    expect(stats).toMatchObject({ fullScans: 1, wakeups: 5 });
    expect(stats.chunks).toBe(1000);  // the formula counts one more (len + 1)
    // The fake times at which chunks ran: within a burst each setImmediate link takes 1 fake ms;
    // between two bursts lies the sleep of 201 chunk delays (201.0 ms).
    const distinct = [...new Set(times)];
    const gaps = distinct.slice(1).map((t, i) => t - distinct[i]);
    expect(gaps.filter((g) => g >= 200)).toHaveLength(4);
    expect(gaps.every((g) => g >= 200 || g <= 1)).toBe(true);
  });

  test('a pass shorter than one gap runs whole in one wake-up, as does any pass at iterationDelay 0', () => {
    // 50 tuples at scanSize 10: ceil(51 / 10) = 6 chunks per pass by the formula (the pass ends in
    // its fifth), chunkDelay = 10 * 0.01 / 51 s (2 ms) asks for
    // 102: the whole pass, once.
    const small = start(makeSpace(50), { scanSize: 10, scanTime: 0.01, fullScanDelay: 3600 });
    runNow(small);
    expect(small.stats()).toMatchObject({ chunks: 5, wakeups: 1, fullScans: 1 });
    small.kill();
    const zero = start(makeSpace(3000), { scanSize: 10, iterationDelay: 0, fullScanDelay: 3600 });
    runNow(zero);
    expect(zero.stats()).toMatchObject({ chunks: 300, wakeups: 1, fullScans: 1 });
  });

  test('a pass of 1,000 chunks takes at most 100 wake-ups and keeps the formula\'s average rate', () => {
    const space = makeSpace(100_000);
    // scanTime 60: chunkDelay = 100 * 60 / 100,001 s (60 ms); the gap asks for ceil(200 / 60) = 4.
    const task = start(space, { scanSize: 100, scanTime: 60, fullScanDelay: 3600 });
    const startedAt = Date.now();
    let endedAt = 0;
    task.on('fullScan', () => {
      endedAt = Date.now();
    });
    for (let i = 0; i < 100_000 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    const stats = task.stats();
    expect(stats.fullScans).toBe(1);
    expect(stats.chunks).toBeGreaterThanOrEqual(1000);
    expect(stats.wakeups).toBeLessThanOrEqual(100);
    // ceil(100001 / 100) = 1001 chunks per pass: k = 11.
    expect(stats.wakeups).toBe(Math.ceil(stats.chunks / 11));
    // scanTime 60: the pass takes about 60 s of fake time (the sleeps between bursts, plus the 1 ms
    // each link of a fake immediate chain takes).
    const sleeps = stats.chunks * 100 * 60 / 100_001 * 1000;
    expect(endedAt - startedAt).toBeGreaterThanOrEqual(Math.floor(sleeps * 0.98) - 10);
    expect(endedAt - startedAt).toBeLessThanOrEqual(sleeps + stats.chunks + 10);
  });

  test('k follows the length: a space that doubled between two bursts gets bursts of the new size', () => {
    const space = makeSpace(5000);
    // scanSize 10, scanTime 1: chunkDelay = 10 / 5001 s, k = ceil(200 / 2.0) = 101.
    const task = start(space, { scanSize: 10, scanTime: 1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 101, wakeups: 1 });
    const more: unknown[][] = [];
    for (let id = 5000; id < 10_000; id++) more.push([id, BASE + 3_600_000]);
    space.insertMany(more);
    // Now chunkDelay = 10 / 10,001 s (1.0 ms): the next burst runs ceil(200.02) = 201 chunks.
    vi.advanceTimersToNextTimer();
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 101 + 201, wakeups: 2 });
  });

  test('a burst stops once its chunks used 10 ms of CPU', () => {
    const space = makeSpace(5000);
    // Each chunk costs 4 ms of injected CPU: bursts of 3 chunks (4, 8, 12 ms), not 6.
    const task = start(space, {
      scanSize: 10, scanTime: 1,
      isExpired: () => {
        fakeCpu.ms += 0.4;
        return false;
      },
    });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 3, wakeups: 1 });
    vi.advanceTimersByTime(Math.ceil(3 * 10 / 5001 * 1000));
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 6, wakeups: 2 });
  });

  test('the burst that ends a pass sleeps its chunks\' delays plus fullScanDelay', () => {
    const space = makeSpace(1500);
    // ceil(1501 / 10) = 151 chunks per pass, so k = 2 (chunkDelay = 10 * 45 / 1501 s, 300 ms,
    // above the gap).
    const { times, options } = chunkTimes({ scanSize: 10, scanTime: 45, fullScanDelay: 7 });
    const task = start(space, options);
    for (let i = 0; i < 10_000 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    const chunks = task.stats().chunks;
    const last = times[times.length - 1];
    const { wakeups } = task.stats();
    const lastBurst = chunks - 2 * (wakeups - 1);
    expect(lastBurst === 1 || lastBurst === 2).toBe(true);
    const wait = lastBurst * 10 * 45 / 1501 * 1000 + 7000;
    advanceTo(last + Math.floor(wait) - 1);
    expect(task.stats().chunks).toBe(chunks);
    advanceTo(last + Math.ceil(wait));
    expect(task.stats()).toMatchObject({ wakeups: wakeups + 1, fullScans: 1 });
  });

  test('passes under 100 chunks keep one chunk per wake-up when the wait is at least 200 ms', () => {
    const space = makeSpace(990);
    const task = start(space, { scanSize: 10, scanTime: 99.1 });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 1, wakeups: 1 });
  });

  test('a kill between two chunks of a burst stops it', () => {
    const space = makeSpace(5000);
    const task = start(space, { scanSize: 10, scanTime: 1 });
    vi.advanceTimersByTime(0);
    vi.advanceTimersByTime(1);
    const chunks = task.stats().chunks;
    expect(chunks).toBeGreaterThanOrEqual(1);
    expect(chunks).toBeLessThan(6);
    task.kill();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(task.stats().chunks).toBe(chunks);
  });

  // A careless onExpired inside a 101-chunk burst (scanSize 10, scanTime 1: bursts of 101 chunks):
  // whatever it does, no live tuple is deleted, every deleted tuple was delivered, and a kill or a
  // drop inside the burst ends it with no timer left.
  function mixedSpace(): Space {
    const space = new Space('bursts-misuse');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    const tuples: unknown[][] = [];
    for (let id = 0; id < 5000; id++) tuples.push([id, id % 2 === 0 ? BASE - 1000 : BASE + 3_600_000]);
    space.insertMany(tuples);
    return space;
  }

  function expectNothingLost(space: Space, delivered: Set<number>): void {
    for (let id = 0; id < 5000; id++) {
      const stored = space.get(id) !== undefined;
      if (id % 2 === 1) expect(stored, `live tuple ${id}`).toBe(true);
      else if (!stored) expect(delivered.has(id), `deleted tuple ${id} was delivered`).toBe(true);
    }
  }

  test.each([
    ['throws on every other call', (calls: number) => {
      if (calls % 2 === 0) throw new Error('careless');
    }],
    ['returns a rejected Promise on every third call', (calls: number) =>
      (calls % 3 === 0 ? Promise.reject(new Error('careless')) : undefined)],
  ])('onExpired that %s inside a burst loses nothing', async (_, misbehave) => {
    const space = mixedSpace();
    const delivered = new Set<number>();
    let calls = 0;
    const errors: unknown[] = [];
    const task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: (tuples: unknown[][]) => {
        calls++;
        const result: unknown = misbehave(calls);
        // A call that throws or returns a Promise (rejected here) does not count as a delivery:
        // its tuples must stay stored until a later call takes them.
        if (!(result instanceof Promise)) for (const t of tuples) delivered.add(t[0] as number);
        return result;
      },
    });
    task.on('error', (error) => errors.push(error));
    // The async variant lets settled Promises run their reactions between two timers.
    for (let i = 0; i < 2000 && task.stats().fullScans < 1; i++) await vi.advanceTimersToNextTimerAsync();
    expect(calls).toBeGreaterThan(2);
    expect(errors.length).toBeGreaterThan(0);
    expectNothingLost(space, delivered);
  });

  test.each(['kill()', 'space.drop()'])('onExpired that calls %s in the third chunk of a burst ends it', (what) => {
    const space = mixedSpace();
    const delivered = new Set<number>();
    let calls = 0;
    const task: Task = start(space, {
      scanSize: 10, scanTime: 1,
      onExpired: (tuples: unknown[][]) => {
        for (const t of tuples) delivered.add(t[0] as number);
        if (++calls === 3) {
          if (what === 'kill()') task.kill();
          else space.drop();
        }
      },
    });
    runNow(task);
    expect(calls).toBe(3);
    expect(task.stats().chunks).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10_000);
    expect(task.stats().chunks).toBe(3);
    if (what === 'kill()') expectNothingLost(space, delivered);
    else expect(space.dropped).toBe(true);
  });
});
