// The boundaries of the pacing rules (issue 14: mutants of scheduler.ts and task.ts that the other
// pacing tests did not see). Fake timers and a fake Date (unit 'ms'), and the injected CPU clock
// (test/support/keepup.ts): nothing here depends on real time.
// - CpuWindow: a chunk that ended exactly CPU_WINDOW_MS ago no longer counts.
// - A burst stops once its chunks used exactly BURST_MS of CPU (not only more than it).
// - Due time: a first tuple due exactly at the pass's now is no reason to wake at once: like one
//   in the past (a skipped poison tuple), it gets the formula's wait.
// - A successful chunk resets the failure count: the wait after it is the formula's, not a backoff.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type TaskOptions } from '../src/index.js';
import { BURST_MS, CPU_WINDOW_MS, CpuWindow } from '../src/expirationd/scheduler.js';
import { BASE, fakeCpu, runNow, useKeepupTimers } from './support/keepup.js';
import { expectNextChunkAfter } from './support/task-timers.js';

useKeepupTimers();


describe('CpuWindow', () => {
  test('a chunk counts while it ended less than CPU_WINDOW_MS ago, and not once it is exactly that old', () => {
    const w = new CpuWindow();
    w.add(1000, 5);
    w.add(1500, 7);
    expect(w.used(1000 + CPU_WINDOW_MS - 1)).toBe(12);
    expect(w.used(1000 + CPU_WINDOW_MS)).toBe(7);
    expect(w.used(1500 + CPU_WINDOW_MS - 1)).toBe(7);
    expect(w.used(1500 + CPU_WINDOW_MS)).toBe(0);
  });
});

describe('bursts', () => {
  test('a burst whose chunks used exactly BURST_MS of CPU stops there', () => {
    expect(BURST_MS).toBe(10);
    const space = new Space('bounds');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    const tuples: unknown[][] = [];
    for (let id = 0; id < 5000; id++) tuples.push([id, BASE + 3_600_000]);
    space.insertMany(tuples);
    // ceil(5001 / 10) = 501 chunks per pass: bursts of up to 6 chunks. Each chunk checks 10
    // tuples at 0.5 ms of injected CPU each: 5 ms a chunk, so two chunks use exactly 10 ms.
    const task = expirationd.start('bounds', space, {
      field: 2, unit: 'ms', now: () => Date.now(), scanSize: 10, scanTime: 1,
      isExpired: () => {
        fakeCpu.ms += 0.5;
        return false;
      },
    });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 2, wakeups: 1, checked: 20 });
  });
});

describe('due time', () => {
  function dueSpace(): Space {
    const space = new Space('due-bounds');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
    space.insert([1, BASE + 3_600_000]);
    return space;
  }

  test.each([['exactly now', 0], ['in the past', 5]])('a first tuple due %s when the pass ends gets the formula\'s wait, not a wake-up at once', (_name, before) => {
    const space = dueSpace();
    const options: TaskOptions = { itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now() };
    const task = expirationd.start('due-bounds', space, {
      ...options,
      // Inserted as the first pass ends (the task is not sleeping yet, so nothing is brought
      // forward): the pass's now is the fake Date, which does not move inside it.
      onFullScanComplete: () => {
        if (task.stats().fullScans === 1) space.insert([2, Date.now() - before]);
      },
    });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1, expired: 0 });
    expect(space.len()).toBe(2);
    expect(task.chunkDelay).toBeCloseTo(1, 6);
    expectNextChunkAfter(task, Math.round(task.chunkDelay * 1000));
    expect(space.get(2)).toBeUndefined();
  });
});

describe('failures', () => {
  test('a successful chunk resets the failure count: the next wait is the formula\'s, not a backoff', () => {
    const space = new Space('reset');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    const tuples: unknown[][] = [];
    for (let id = 0; id < 40; id++) tuples.push([id, BASE - 1000]);
    for (let id = 40; id < 200; id++) tuples.push([id, BASE + 3_600_000]);
    space.insertMany(tuples);
    let calls = 0;
    const errors: unknown[] = [];
    // iterationDelay caps the formula at 250 ms whatever the length (at least the 200 ms gap
    // between wake-ups: one chunk per wake-up); a chunk that failed once waits max(250 ms,
    // 250 ms * 2^1) = 500 ms.
    const task = expirationd.start('reset', space, {
      field: 2, unit: 'ms', now: () => Date.now(), scanSize: 4, iterationDelay: 0.25,
      onExpired: () => {
        if (calls++ === 0) throw new Error('once');
      },
    });
    task.on('error', (e) => errors.push(e));
    vi.advanceTimersByTime(0);
    expect(task.stats().chunks).toBe(1);
    expect(errors).toHaveLength(1);
    expect(task.chunkDelay).toBe(0.25);
    expectNextChunkAfter(task, 500);  // after the failed chunk: backed off
    expectNextChunkAfter(task, 250);  // after a successful one: the formula again
    expectNextChunkAfter(task, 250);
    expect(errors).toHaveLength(1);
    expect(space.len()).toBe(200 - 16);  // the failed chunk's halves were delivered: 4 chunks of 4
  });
});
