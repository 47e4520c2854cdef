// Issue 15, due-time wake-ups: after an early-break pass stops at the first live tuple, the next
// pass is due when that tuple's TTL comes, or after the formula's wait if sooner, never sooner
// than fullScanDelay when it is > 0. An insert, replace or insertMany whose TTL is earlier brings
// the wake-up forward; task.wake() runs a pass now. The task's clock is the fake Date (unit 'ms').
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { BASE, useKeepupTimers } from './support/keepup.js';
import { expectNextChunkAfter } from './support/task-timers.js';

useKeepupTimers();

function makeSpace(): Space {
  const space = new Space('due');
  space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
  return space;
}

function start(space: Space, options: TaskOptions = {}): Task {
  return expirationd.start('due', space, { itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now(), ...options });
}


describe('due-time wake-ups', () => {
  test('the next pass is due when the first live tuple expires, when that is sooner than the formula', () => {
    const space = makeSpace();
    space.insert([1, BASE + 200]);
    space.insert([2, BASE + 700]);
    space.insert([3, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1, expired: 0 });
    expect(task.chunkDelay).toBe(1); // the formula's wait is 1 s
    expectNextChunkAfter(task, 200);
    expect(space.get(1)).toBeUndefined();
    expect(task.stats()).toMatchObject({ fullScans: 2, expired: 1 });
    expectNextChunkAfter(task, 500);
    expect(space.get(2)).toBeUndefined();
    // Then the formula's wait: the next TTL is an hour away.
    expectNextChunkAfter(task, 1000);
    expect(task.stats()).toMatchObject({ fullScans: 4, expired: 2 });
  });

  test('an expired tuple that processExpired leaves at the head does not hide the first live TTL', () => {
    // 'unsigned' TTLs against a clock with fractions: the seek past now is by floor(now).
    for (const type of ['unsigned', 'number'] as const) {
      const space = new Space(`due-head-${type}`);
      space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
      space.createIndex('exp', { unique: false, parts: [[2, type]] });
      const t0 = Date.now();
      space.insert([1, t0 - 1]);      // due, and left in place every pass
      space.insert([2, t0 + 200]);
      space.insert([3, t0 + 3_600_000]);
      const handed: number[] = [];
      const task = expirationd.start(`due-head-${type}`, space, {
        itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now() + 0.5,
        processExpired: (tuples) => {
          for (const [id] of tuples as [number, number][]) {
            handed.push(id);
            if (id !== 1) space.delete(id);
          }
        },
      });
      vi.advanceTimersByTime(0);
      expect(handed).toEqual([1]);
      // Due when tuple 2's TTL comes (about 200 ms on this clock), not after the formula's 1 s.
      vi.advanceTimersByTime(198);
      expect(handed).not.toContain(2);
      vi.advanceTimersByTime(3);
      expect(handed.filter((id) => id === 2)).toEqual([2]);
      expect(space.get(2)).toBeUndefined();
      // Then the formula's wait: the next live TTL is an hour away.
      const chunks = task.stats().chunks;
      vi.advanceTimersByTime(990);
      expect(task.stats().chunks).toBe(chunks);
      vi.advanceTimersByTime(20);
      expect(task.stats().chunks).toBe(chunks + 1);
      task.kill();
      space.drop();
    }
  });

  test('a clock that kills its task while an insertMany brings the wake-up forward: the batch goes in, nothing throws', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    let killNow = false;
    const task = start(space, {
      now: () => {
        if (killNow) task.kill();
        return Date.now();
      },
    });
    vi.advanceTimersByTime(0);  // the first pass ends at tuple 1: the next is due in 1 s (the formula)
    killNow = true;
    // Each tuple's TTL is earlier than the due wake-up: the task's insert hook reads the clock,
    // which kills the task and so unregisters the hook halfway through the batch.
    expect(space.insertMany([[2, BASE + 100], [3, BASE + 200], [4, BASE + 300]])).toBe(3);
    expect(task.state).toBe('killed');
    expect(space.len()).toBe(4);
    space.drop();
  });

  test('the formula\'s wait when it is sooner than the first live TTL', () => {
    const space = makeSpace();
    space.insert([1, BASE + 5000]);
    const task = start(space, { iterationDelay: 0.3 });
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 300);
    expectNextChunkAfter(task, 300);
  });

  test('never sooner than fullScanDelay when one is set', () => {
    const space = makeSpace();
    space.insert([1, BASE + 200]);
    const task = start(space, { fullScanDelay: 0.5 });
    vi.advanceTimersByTime(0);
    // min(1 s + 0.5 s, 200 ms) = 200 ms, raised to fullScanDelay.
    expectNextChunkAfter(task, 500);
    expect(space.len()).toBe(0);
  });

  test('an empty space waits the formula', () => {
    const task = start(makeSpace());
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 1000);
  });

  test('a task with isExpired keeps the formula\'s wait (its verdicts need not follow the TTL)', () => {
    const space = makeSpace();
    space.insert([1, BASE + 200]);
    const task = start(space, { isExpired: (t, now) => (t[1] as number) <= now });
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 1000);
  });

  test('a live tuple in seconds: the wait converts the unit', () => {
    const space = makeSpace();
    const now = BASE / 1000;
    space.insert([1, now + 1]);
    const task = start(space, { unit: 's', now: () => Date.now() / 1000, iterationDelay: 5 });
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 1000);
    expect(space.len()).toBe(0);
  });
});

describe('an insert with an earlier TTL brings the wake-up forward', () => {
  test.each([
    ['insert', (s: Space, t: unknown[]) => s.insert(t)],
    ['replace', (s: Space, t: unknown[]) => s.replace(t)],
    ['insertMany', (s: Space, t: unknown[]) => s.insertMany([[99, BASE + 3_600_000], t])],
  ])('%s', (_name, put) => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    vi.advanceTimersByTime(100);
    put(space, [2, BASE + 400]);
    // Due at 400 ms, no longer at 1000 ms.
    expectNextChunkAfter(task, 300);
    expect(space.get(2)).toBeUndefined();
    expect(task.stats().expired).toBe(1);
  });

  test('also after a pass that emptied the space (no live tuple to time the wake-up by)', () => {
    const space = makeSpace();
    space.insert([1, BASE - 10]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    expect(space.len()).toBe(0);
    vi.advanceTimersByTime(100);
    space.insert([2, BASE + 250]);
    expectNextChunkAfter(task, 150);
    expect(space.len()).toBe(0);
  });

  test('a later TTL changes nothing', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    space.insert([2, BASE + 5000]);
    space.insert([3, BASE + 1000]); // exactly when the wake-up is due
    expect(timeout).not.toHaveBeenCalled();
    expectNextChunkAfter(task, 1000);
  });

  test('a TTL already past wakes the task within a millisecond', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space);
    vi.advanceTimersByTime(0);
    vi.advanceTimersByTime(10);
    space.insert([2, BASE - 50]);
    expectNextChunkAfter(task, 1);
    expect(space.get(2)).toBeUndefined();
  });

  test('the earlier wake-up still respects fullScanDelay', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space, { fullScanDelay: 0.5 });
    vi.advanceTimersByTime(0);
    space.insert([2, BASE + 100]);
    expectNextChunkAfter(task, 500);
    expect(space.get(2)).toBeUndefined();
  });

  test('inside a pass, or after kill, an insert schedules nothing', () => {
    const space = makeSpace();
    for (let id = 0; id < 30; id++) space.insert([id, BASE - 1000]);
    space.insert([100, BASE + 3_600_000]);
    let insertedInside = false;
    const task = start(space, {
      scanSize: 10, onExpired: () => {
        if (insertedInside) return;
        insertedInside = true;
        space.insert([200, BASE + 10]); // from inside a chunk: the pass is running
      },
    });
    vi.advanceTimersByTime(0);
    expect(insertedInside).toBe(true);
    task.kill();
    expect(vi.getTimerCount()).toBe(0);
    space.insert([300, BASE - 10]);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a full-scan task does not watch inserts', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space, { itIndex: 'primary' });
    vi.advanceTimersByTime(0);
    space.insert([2, BASE + 100]);
    expectNextChunkAfter(task, 1000);
  });

  test('a now() that throws when an insert asks does not break the insert', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    let broken = false;
    const task = start(space, {
      now: () => {
        if (broken) throw new Error('clock');
        return Date.now();
      },
    });
    vi.advanceTimersByTime(0);
    broken = true;
    expect(() => space.insert([2, BASE + 100])).not.toThrow();
    expect(space.get(2)).toEqual([2, BASE + 100]);
    broken = false;
    expectNextChunkAfter(task, 1000);
  });

  test('two tasks on one space each bring their own wake-up forward', () => {
    const space = makeSpace();
    space.createIndex('exp3', { unique: false, parts: [[3, 'unsigned']] });
    space.insert([1, BASE + 3_600_000, BASE + 3_600_000]);
    const a = expirationd.start('a', space, { itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now() });
    const b = expirationd.start('b', space, { itIndex: 'exp3', field: 3, unit: 'ms', now: () => Date.now() });
    vi.advanceTimersByTime(0);
    space.insert([2, BASE + 100, BASE + 3_600_000]);
    vi.advanceTimersByTime(100);
    expect(a.stats()).toMatchObject({ chunks: 2, expired: 1 });
    expect(b.stats().chunks).toBe(1);
  });
});

describe('task.wake()', () => {
  test('runs a pass now and returns the task', () => {
    const space = makeSpace();
    space.insert([1, BASE + 3_600_000]);
    const task = start(space, { fullScanDelay: 60 });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ fullScans: 1, wakeups: 1 });
    vi.advanceTimersByTime(10);
    space.insert([2, BASE - 1]);
    expect(task.wake()).toBe(task);
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ fullScans: 2, wakeups: 2, expired: 1 });
    // The wait after that pass starts again from the formula.
    expectNextChunkAfter(task, 61_000);
  });

  test('is a no-op once the task is killed', () => {
    const space = makeSpace();
    const task = start(space);
    task.kill();
    expect(task.wake()).toBe(task);
    expect(vi.getTimerCount()).toBe(0);
    expect(task.stats().chunks).toBe(0);
  });

  test('from inside a chunk: the next chunk follows at once', () => {
    const space = makeSpace();
    space.insert([1, BASE - 1]);
    space.insert([2, BASE + 3_600_000]);
    let woke = false;
    const task = start(space, {
      onExpired: () => {
        if (woke) return;
        woke = true;
        task.wake();
      },
    });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1 });
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ chunks: 2, fullScans: 2, wakeups: 2 });
  });

  test('while waiting for an async onExpired: the next chunk follows as soon as it settles', async () => {
    const space = makeSpace();
    space.insert([1, BASE - 1]);
    space.insert([2, BASE + 3_600_000]);
    let release: () => void = () => {};
    const task = start(space, { onExpired: () => new Promise<void>((r) => { release = r; }) });
    await vi.advanceTimersByTimeAsync(0);
    expect(task.stats().chunks).toBe(1);
    task.wake();
    release();
    await vi.advanceTimersByTimeAsync(1);
    expect(task.stats()).toMatchObject({ chunks: 2, fullScans: 2, expired: 1 });
  });
});
