// Adversarial review of issue 15: TTL-aware spaces read by a task, backlog mode, due-time
// wake-ups, task.wake(), stats().lag and wakeups, attacked with hostile clocks, re-entrant
// callbacks, clocks that go backwards, getters and huge delays. Every clock is injected and the
// task timers and Date are fake (test/support/keepup.ts): nothing here depends on speed.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { BASE, useKeepupTimers } from './support/keepup.js';
import { expectNextChunkAfter } from './support/task-timers.js';

useKeepupTimers();

type Options = ConstructorParameters<typeof Space>[1];

/** [id, ttl in ms]: a HASH primary and a TTL TREE (the early-break layout). */
function makeSpace(options?: Options): Space {
  const space = new Space('adv', options);
  space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  return space;
}

function start(space: Space, options: TaskOptions = {}): Task {
  return expirationd.start('adv', space, { itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now(), ...options });
}


describe('an early-break task on a TTL-aware space', () => {
  test('stats().lag shows how far past due the oldest stored expired tuple is, as on a plain space', () => {
    for (const ttl of [undefined, { field: 2, unit: 'ms' as const, now: () => Date.now() }]) {
      const space = makeSpace(ttl === undefined ? undefined : { ttl });
      space.insert([1, BASE + 100]);
      const task = start(space);
      task.stop();  // nothing deletes it
      vi.setSystemTime(BASE + 150);
      expect(space.len()).toBe(1);
      expect(task.stats().lag, ttl === undefined ? 'plain space' : 'TTL space').toBe(50);
      task.kill();
      space.drop();
      vi.setSystemTime(BASE);
    }
  });

  test('stats().lag on a wall-clock TTL space counts the expired tuple its reads hide', () => {
    // The fake Date is the task's clock; reads on the space hide what the real wall clock
    // has passed, as this tuple (1970).
    const space = makeSpace({ ttl: { field: 2, unit: 'ms' } });
    space.insert([1, BASE - 5000]);
    expect(space.index.exp.min()).toBeUndefined();
    const task = expirationd.start('adv', space, { itIndex: 'exp' });
    task.stop();
    expect(task.stats().lag).toBe(5000);
  });

  test('a space clock that throws once, whichever read it hits, never throws out of a timer nor stops the task', () => {
    for (let k = 1; k <= 6; k++) {
      let calls = 0;
      let failOn = -1;
      const space = makeSpace({
        ttl: {
          field: 2, unit: 'ms', now: () => {
            if (++calls === failOn) throw new Error('flaky clock');
            return Date.now();
          },
        },
      });
      space.insert([1, BASE + 3_600_000]);
      const task = start(space, { now: undefined });  // the space's clock
      task.on('error', () => {});
      failOn = calls + k;  // the k-th read of the clock from here throws, once
      expect(() => vi.advanceTimersByTime(0), `read #${k}`).not.toThrow();
      expect(() => vi.advanceTimersByTime(5000), `read #${k}`).not.toThrow();
      expect(task.stats().chunks, `read #${k}: the task still wakes`).toBeGreaterThan(2);
      task.kill();
      space.drop();
    }
  });

  test('a space clock that returns garbage (the task has its own clock) never throws out of a timer', () => {
    let garbage = false;
    const space = makeSpace({ ttl: { field: 2, unit: 'ms', now: () => (garbage ? 'soon' : Date.now()) as number } });
    space.insert([1, BASE + 3_600_000]);
    garbage = true;
    const task = start(space);  // now: () => Date.now()
    task.on('error', () => {});
    expect(() => vi.advanceTimersByTime(5000)).not.toThrow();
    expect(task.stats().chunks).toBeGreaterThan(1);
  });

  test('a space clock that calls stats() does not recurse (as a task clock that does)', () => {
    let task: Task | undefined;
    let calls = 0;
    const space = makeSpace({
      ttl: {
        field: 2, unit: 'ms', now: () => {
          // Re-enter at most 10,000 times, so that a recursion shows as a count, not a stall.
          if (++calls < 10_000) task?.stats();
          return Date.now();
        },
      },
    });
    space.insert([1, BASE + 100]);
    space.insert([2, BASE + 3_600_000]);
    task = start(space, { now: undefined });
    calls = 0;
    vi.advanceTimersByTime(0);
    vi.advanceTimersByTime(100);
    expect(task.stats()).toMatchObject({ fullScans: 2, expired: 1 });
    expect(calls).toBeLessThan(100);
  });

  test('the due time still follows the first live tuple (reads hide the expired ones, the task deletes them)', () => {
    const space = makeSpace({ ttl: { field: 2, unit: 'ms', now: () => Date.now() } });
    for (let id = 0; id < 50; id++) space.insert([id, BASE - 10 - id]);
    space.insert([100, BASE + 300]);
    const task = start(space, { now: undefined, scanSize: 20 });
    vi.advanceTimersByTime(10);
    expect(space.len()).toBe(1);
    expect(task.stats().expired).toBe(50);
    expect(space.count()).toBe(1);
    vi.advanceTimersByTime(300);
    expect(space.len()).toBe(0);
  });
});

describe('due-time wake-ups under attack', () => {
  test('a clock that jumps back: an insert with an earlier TTL never pushes the wake-up past the formula\'s wait', () => {
    let clock = BASE;
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space, { now: () => clock });
    vi.advanceTimersByTime(0);
    expect(task.stats().chunks).toBe(1);
    // Due at +1000 ms (the formula). The task's clock jumps back ten minutes, then an insert
    // comes whose TTL is earlier than the due time.
    clock = BASE - 600_000;
    space.insert([2, BASE + 500]);
    vi.advanceTimersByTime(1000);
    expect(task.stats().chunks).toBe(2);
  });

  // Until 2026-11-26 the insert packed the tuple (reading the getter) and then handed the same
  // array to the task, which read the getter again: a getter that changed its answer moved the
  // due-time wake-up, and only the formula's wait (1000 ms) bounded how late the stored TTL was
  // served. With a task watching, a write now reads each field once into a copy, packs that and
  // hands it to the task: the wake-up comes at the TTL that was stored.
  test('a TTL read through a getter that changes its answer: the wake-up comes at the TTL stored', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    let reads = 0;
    const tuple: unknown[] = [2];
    Object.defineProperty(tuple, 1, { enumerable: true, get: () => (reads++ === 0 ? BASE + 200 : BASE + 3_600_000) });
    space.insert(tuple);
    expect(reads).toBe(1);
    expect(space.get(2)).toEqual([2, BASE + 200]);
    expectNextChunkAfter(task, 200);
    expect(space.get(2)).toBeUndefined();
  });

  test('a fullScanDelay over 24.8 days is waited, not turned into 1 ms by setTimeout, and then the pass runs', () => {
    const space = makeSpace();
    space.insert([1, BASE + 1e12]);
    for (const [name, itIndex] of [['early-break', 'exp'], ['full-scan', 'primary']]) {
      const task = expirationd.start(name, space, { itIndex, field: 2, unit: 'ms', now: () => Date.now(), fullScanDelay: 3e6 });
      vi.advanceTimersByTime(0);
      vi.advanceTimersByTime(100);
      expect(task.stats().fullScans, name).toBe(1);
      // The wait is fullScanDelay plus the formula's 1 s: a chain of timers, then the pass.
      vi.advanceTimersByTime(3e9 - 100);
      expect(task.stats().fullScans, name).toBe(1);
      vi.advanceTimersByTime(1000);
      expect(task.stats().fullScans, name).toBe(2);
      task.kill();
    }
  });
});

describe('task.wake() under attack', () => {
  test('a wake() from inside onExpired is not cancelled by an insert before the next turn', () => {
    const space = makeSpace();
    space.insert([1, BASE - 1]);
    space.insert([2, BASE + 3_600_000]);
    let woke = false;
    let clockReads = 0;
    const task = start(space, {
      fullScanDelay: 60,
      now: () => {
        clockReads++;
        return Date.now();
      },
      onExpired: () => {
        if (woke) return;
        woke = true;
        task.wake();
      },
    });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1, expired: 1 });
    // Before the next turn: an insert due in 30 s, sooner than the 61 s wait the wake() replaced.
    // With the next pass already on the next turn, the insert has nothing to bring forward: it
    // does not even read the task's clock.
    const reads = clockReads;
    space.insert([3, BASE + 30_000]);
    expect(clockReads).toBe(reads);
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ chunks: 2, fullScans: 2 });
  });

  // With and without the insert (the control): the wake() runs the next pass on the next turn.
  test.each([true, false])('a wake() from inside onFullScanComplete runs the next pass on the next turn (an insert before it: %s)', (insert) => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    let wakeInside = false;
    const task = start(space, {
      fullScanDelay: 60,
      onFullScanComplete: (t) => {
        if (!wakeInside) return;
        wakeInside = false;
        t.wake();
      },
    });
    vi.advanceTimersByTime(0);
    wakeInside = true;
    task.wake();
    vi.advanceTimersByTime(0);
    expect(task.stats().fullScans).toBe(2);
    if (insert) space.insert([2, BASE + 30_000]);
    vi.advanceTimersByTime(1);
    expect(task.stats().fullScans).toBe(3);
  });
});

describe('attacks that are handled', () => {
  test('10,000 wake() calls between passes run one pass, and leave one timer', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    for (let i = 0; i < 10_000; i++) task.wake();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ chunks: 2, fullScans: 2, wakeups: 2 });
    expect(vi.getTimerCount()).toBe(1);
  });

  test('wake() from inside the task\'s now(): each runs one more pass, then the formula resumes', () => {
    const space = makeSpace();
    space.insert([1, BASE - 1]);
    space.insert([2, BASE + 3_600_000]);
    let wakes = 0;
    let task: Task | undefined;
    // A pass reads the task's clock three times: its chunk, the 'fullScan' event's stats() (lag),
    // and the wait between passes as it starts. Wakes from the first six reads: two more passes.
    task = start(space, {
      now: () => {
        if (wakes++ < 6) task?.wake();
        return Date.now();
      },
    });
    vi.advanceTimersByTime(0);
    for (let i = 0; i < 3; i++) vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ chunks: 3, fullScans: 3, expired: 1 });
    vi.advanceTimersByTime(1000);
    expect(task.stats().chunks).toBe(4);
    expect(space.get(2)).toBeDefined();
  });

  test('TTLs as BigInt, huge, negative, NaN, Infinity, strings: reads and a task on a TTL space agree', () => {
    const values: unknown[] = [100, 100.0000001, 99.5, -1, 2n ** 64n - 1n, -(2n ** 63n), 100n, 101n, NaN, -Infinity,
      Infinity, '50', null, true, [1], { a: 1 }, 2 ** 53, 2 ** 64];
    const live = [1, 4, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17];
    const space = new Space('adv', { ttl: { field: 3, unit: 'ms', now: () => 100 } });
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    values.forEach((v, i) => space.replace([i, 0, v]));
    expect(space.select().map((t) => t[0])).toEqual(live);
    expect(space.count()).toBe(live.length);
    const task = expirationd.start('adv', space, { scanSize: 100 });
    vi.advanceTimersByTime(0);
    expect(task.stats().expired).toBe(values.length - live.length);
    expect(space.len()).toBe(live.length);
  });

  test('a space clock that drops the space from inside a task\'s read ends the task without an uncaught error', () => {
    let drop = false;
    const space = makeSpace({ ttl: { field: 2, unit: 'ms', now: () => { if (drop) space.drop(); return Date.now(); } } });
    space.insert([1, BASE + 3_600_000]);
    const task = start(space, { now: undefined });  // the space's clock is the task's
    drop = true;
    expect(() => vi.advanceTimersByTime(0)).not.toThrow();
    expect(task.state).toBe('killed');
  });
});
