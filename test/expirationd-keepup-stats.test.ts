// Issue 15, stats(): `lag` is how far past due the oldest stored expired tuple is, in the task's
// unit (0 when none): exact for an early-break task (the TTL index's min()), an upper bound for a
// full scan (the time since the last completed pass started). `wakeups` counts the wake-ups from
// a wait; chunks run back to back in a burst or a backlog do not count.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { BASE, runNow, useKeepupTimers } from './support/keepup.js';

useKeepupTimers();

function makeSpace(name = 'lag'): Space {
  const space = new Space(name);
  space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
  return space;
}

const options = (extra: TaskOptions = {}): TaskOptions => ({ field: 2, unit: 'ms', now: () => Date.now(), ...extra });

describe('lag', () => {
  test('early break: now minus the smallest stored TTL, 0 once it is deleted or when none is due', () => {
    const space = makeSpace();
    space.insert([1, BASE - 500]);
    space.insert([2, BASE - 200]);
    space.insert([3, BASE + 10_000]);
    const task = expirationd.start('lag', space, options({ itIndex: 'exp', fullScanDelay: 60 }));
    expect(task.stats().lag).toBe(500);
    vi.advanceTimersByTime(0);
    expect(space.len()).toBe(1);
    expect(task.stats().lag).toBe(0);
    space.insert([4, BASE - 1000]);
    expect(task.stats().lag).toBe(1000);
    vi.advanceTimersByTime(250);
    expect(task.stats().lag).toBe(1250);
    expect(expirationd.stats('lag')).toMatchObject({ lag: 1250 });
  });

  test('early break: a poison tuple left stored shows in the lag', () => {
    const space = makeSpace();
    space.insert([1, BASE - 300]);
    space.insert([2, BASE + 10_000]);
    const task = expirationd.start('lag', space, options({
      itIndex: 'exp', fullScanDelay: 60, onExpired: () => {
        throw new Error('poison');
      },
    }));
    task.on('error', () => {});
    vi.advanceTimersByTime(0);
    expect(task.stats().skipped).toBe(1);
    expect(task.stats().lag).toBe(300);
  });

  test('full scan: an upper bound, the time since the last completed pass started; 0 for an empty space', () => {
    const space = makeSpace();
    for (let id = 0; id < 25; id++) space.insert([id, BASE + 10_000]);
    const task = expirationd.start('lag', space, options({ scanSize: 10, scanTime: 3, fullScanDelay: 60 }));
    expect(task.stats().lag).toBe(0); // no chunk has run: nothing is known
    runNow(task);
    const passStart = BASE;
    // Three chunks, 10 * 3 / 26 s apart; the pass started at BASE.
    for (let i = 0; i < 10 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(task.stats().fullScans).toBe(1);
    expect(task.stats().lag).toBe(Date.now() - passStart);
    vi.advanceTimersByTime(1000);
    expect(task.stats().lag).toBe(Date.now() - passStart);
    space.truncate();
    expect(task.stats().lag).toBe(0);
  });

  test('full scan: a clock that steps back before the pass started gives a lag of 0, never a negative one', () => {
    const space = makeSpace();
    for (let id = 0; id < 25; id++) space.insert([id, BASE + 10_000]);
    let offset = 0;
    const task = expirationd.start('lag', space, options({ scanSize: 10, scanTime: 3, fullScanDelay: 60, now: () => Date.now() + offset }));
    runNow(task);
    for (let i = 0; i < 10 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(task.stats().fullScans).toBe(1);
    expect(task.stats().lag).toBeGreaterThan(0);
    offset = -60_000;  // an NTP step back, a minute before the pass started
    expect(task.stats().lag).toBe(0);
  });

  test('checked: an early-break pass counts the live tuple that ended it, natively and in JavaScript alike', () => {
    const counts: number[] = [];
    for (const js of [false, true]) {
      const space = makeSpace(`checked-${js}`);
      for (let id = 0; id < 3; id++) space.insert([id, BASE - 100 + id]);
      for (let id = 3; id < 5; id++) space.insert([id, BASE + 10_000 + id]);
      // processExpired decides in JavaScript (scan, then the TTL rule there); without it the chunk is native.
      const task = expirationd.start(`checked-${js}`, space, options({
        itIndex: 'exp', fullScanDelay: 60, ...(js ? { processExpired: (ts: unknown[][]) => { for (const t of ts) space.delete(t[0] as number); } } : {}),
      }));
      vi.advanceTimersByTime(0);
      expect(space.len()).toBe(2);
      counts.push(task.stats().checked);
      task.kill();
    }
    expect(counts).toEqual([4, 4]);  // 3 expired, then the first live one
  });

  test('a killed task keeps its last lag; a dropped space does not make stats() throw', () => {
    const space = makeSpace();
    space.insert([1, BASE - 100]);
    space.insert([2, BASE + 10_000]);
    const task = expirationd.start('lag', space, options({ itIndex: 'exp', isExpired: () => false }));
    expect(task.stats().lag).toBe(100);
    task.kill();
    vi.advanceTimersByTime(1000);
    expect(task.stats().lag).toBe(100);
    const other = expirationd.start('other', space, options({ itIndex: 'exp', isExpired: () => false }));
    space.drop();
    expect(() => other.stats()).not.toThrow();
  });

  test('a now() that throws or returns garbage when stats() asks falls back to the last chunk\'s clock', () => {
    const space = makeSpace();
    space.insert([1, BASE + 10_000]);
    let broken = false;
    const task = expirationd.start('lag', space, options({
      itIndex: 'exp', now: () => {
        if (broken) throw new Error('clock');
        return Date.now();
      },
    }));
    vi.advanceTimersByTime(0);
    broken = true;
    expect(() => task.stats()).not.toThrow();
    expect(task.stats().lag).toBe(0);
  });
});

describe('wakeups', () => {
  test('one per wait, none for the chunks of a backlog', () => {
    const space = makeSpace();
    for (let id = 0; id < 45; id++) space.insert([id, BASE - 1000]);
    space.insert([100, BASE + 60_000]);
    const task = expirationd.start('w', space, options({ itIndex: 'exp', scanSize: 10 }));
    expect(task.stats().wakeups).toBe(0);
    runNow(task);
    expect(task.stats()).toMatchObject({ wakeups: 1, chunks: 5, fullScans: 1 });
    vi.advanceTimersByTime(1000);
    expect(task.stats()).toMatchObject({ wakeups: 2, chunks: 6, fullScans: 2 });
  });

  test('expirationd.stats() carries lag and wakeups for every task', () => {
    const a = expirationd.start('a', makeSpace('a'), options({ itIndex: 'exp' }));
    const b = expirationd.start('b', makeSpace('b'), options());
    vi.advanceTimersByTime(0);
    expect(expirationd.stats()).toEqual({ a: a.stats(), b: b.stats() });
    expect(expirationd.stats()).toMatchObject({ a: { lag: 0, wakeups: 1 }, b: { lag: 0, wakeups: 1 } });
  });
});

describe('a clock that reads the task', () => {
  test('now() may call stats(): no recursion, and lag falls back to the last time the task read', () => {
    const space = new Space('clock-reads-stats');
    space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
    space.insertMany([[1, 'a', 10], [2, 'b', 20], [3, 'c', 1000]]);
    let task: Task | undefined;
    let calls = 0;
    task = expirationd.start('clock-reads-stats', space, {
      itIndex: 'exp', field: 3,
      now: () => {
        calls++;
        if (calls > 100) throw new Error('now() recursed');
        task?.stats();
        return 50;
      },
    });
    const s = task.stats();
    expect(calls).toBeLessThan(5);
    expect(s.lag).toBeGreaterThanOrEqual(0);
    task.kill();
    space.drop();
  });
});
