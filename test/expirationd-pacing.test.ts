// Pacing: after a chunk that does not end a pass the task waits
//   chunkDelay = min(scanSize * scanTime / (itIndex.len() + 1), iterationDelay) seconds
// for each chunk of the burst it ran (bursts: test/expirationd-keepup-bursts.test.ts), a
// setImmediate when that is under 1 ms; after the chunk that ends a pass it waits
// chunkDelay + fullScanDelay, always on a setTimeout of at least 1 ms. All checked on a fake
// clock: the next chunk must not run 1 ms before the delay and must run at it.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { cpuClock } from '../src/expirationd/scheduler.js';
import { expectNextChunkAfter, useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(live: number, expired = 0): Space {
  const space = new Space('pacing');
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
  for (let id = 0; id < expired; id++) space.insert([id, NOW - 1]);
  for (let id = expired; id < expired + live; id++) space.insert([id, NOW + 1000]);
  return space;
}

function start(space: Space, options: TaskOptions): Task {
  return expirationd.start('pace', space, { field: 2, now: () => NOW, ...options });
}


describe('between chunks', () => {
  test('the first chunk runs on the next turn of the event loop, not inside start()', () => {
    const space = makeSpace(10);
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const task = start(space, {});
    expect(task.stats().chunks).toBe(0);
    expect(immediate).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(0);
    expect(task.stats().chunks).toBe(1);
  });

  test('the wait is scanSize * scanTime / (len + 1) when that is below iterationDelay', () => {
    const space = makeSpace(99);
    const task = start(space, { scanSize: 10, scanTime: 100, iterationDelay: 60 });
    expect(task.chunkDelay).toBe(10);
    vi.advanceTimersByTime(0);
    expect(task.stats().chunks).toBe(1);
    expectNextChunkAfter(task, 10_000);
    expect(task.chunkDelay).toBe(10);
    expectNextChunkAfter(task, 10_000);
  });

  test('the wait is capped at iterationDelay', () => {
    const space = makeSpace(99);
    const task = start(space, { scanSize: 10, scanTime: 3600, iterationDelay: 2.5 });
    expect(task.chunkDelay).toBe(2.5);
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 2500);
    expectNextChunkAfter(task, 2500);
  });

  test('the default cap is 1 s', () => {
    const space = makeSpace(99);
    const task = start(space, { scanSize: 10 });
    expect(task.chunkDelay).toBe(1);
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 1000);
  });

  test('the wait uses the length of the walked index after the chunk, so it follows deletions and inserts', () => {
    const space = makeSpace(99, 10);
    const task = start(space, { scanSize: 10, scanTime: 100, iterationDelay: 60 });
    // Before the first chunk: 10 * 100 / 110.
    expect(task.chunkDelay).toBeCloseTo(1000 / 110, 9);
    vi.advanceTimersByTime(0);
    // The chunk deleted the 10 expired tuples: 10 * 100 / (99 + 1).
    expect(space.len()).toBe(99);
    expect(task.chunkDelay).toBe(10);
    for (let id = 200; id < 300; id++) space.insert([id, NOW + 1000]);
    expect(task.chunkDelay).toBe(5);
    // The wait already scheduled keeps its length; the next one uses the new length.
    expectNextChunkAfter(task, 10_000);
    expectNextChunkAfter(task, 5000);
  });

  test('a failed chunk is followed by the same wait', () => {
    const space = makeSpace(99, 5);
    let failing = true;
    const task = start(space, {
      scanSize: 10, scanTime: 105, iterationDelay: 60, onExpired: () => {
        if (failing) throw new Error('no');
      },
    });
    vi.advanceTimersByTime(0);
    expect(task.lastError).toBeInstanceOf(Error);
    expect(space.len()).toBe(104);
    expect(task.chunkDelay).toBe(10);
    failing = false;
    expectNextChunkAfter(task, 10_000);
    // Issue 10: the tuples that failed alone are skipped for the rest of the pass.
    expect(space.len()).toBe(104);
  });
});

describe('between passes', () => {
  test('after a pass the task waits chunkDelay + fullScanDelay', () => {
    const space = makeSpace(5);
    const task = start(space, { scanSize: 10, iterationDelay: 1, fullScanDelay: 7 });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1 });
    expect(task.chunkDelay).toBe(1);
    expectNextChunkAfter(task, 8000);
    expect(task.stats().fullScans).toBe(2);
    expectNextChunkAfter(task, 8000);
  });

  test('an early-break pass is followed by chunkDelay + fullScanDelay', () => {
    const space = makeSpace(50, 3);
    const task = start(space, { itIndex: 'exp', scanSize: 10, scanTime: 5, iterationDelay: 60, fullScanDelay: 3 });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1, expired: 3 });
    // 10 * 5 / (50 + 1) s after the deletions, plus 3 s.
    const ms = (10 * 5 / 51 + 3) * 1000;
    const chunks = task.stats().chunks;
    vi.advanceTimersByTime(Math.floor(ms) - 1);
    expect(task.stats().chunks).toBe(chunks);
    vi.advanceTimersByTime(2);
    expect(task.stats()).toMatchObject({ chunks: chunks + 1, fullScans: 2 });
  });

  test('a pass that spans chunks waits chunkDelay inside the pass and chunkDelay + fullScanDelay at its end', () => {
    const space = makeSpace(20);
    const task = start(space, { scanSize: 7, scanTime: 63, iterationDelay: 60, fullScanDelay: 30 });
    // 7 * 63 / 21 = 21 s between chunks; 20 tuples take 3 chunks.
    expect(task.chunkDelay).toBe(21);
    vi.advanceTimersByTime(0);
    expectNextChunkAfter(task, 21_000);
    expectNextChunkAfter(task, 21_000);
    expect(task.stats().fullScans).toBe(1);
    expectNextChunkAfter(task, 51_000);
  });

  test('fullScanDelay 0 still leaves chunkDelay between passes, so an early-break task does not spin', () => {
    const space = makeSpace(50);
    const task = start(space, { itIndex: 'exp', fullScanDelay: 0 });
    vi.advanceTimersByTime(0);
    expect(task.stats()).toMatchObject({ chunks: 1, fullScans: 1, checked: 1 });
    expectNextChunkAfter(task, 1000);
    expectNextChunkAfter(task, 1000);
  });
});

describe('timer kinds', () => {
  function spies() {
    return { immediate: vi.spyOn(globalThis, 'setImmediate'), timeout: vi.spyOn(globalThis, 'setTimeout') };
  }

  test('a chunk delay under 1 ms uses setImmediate', () => {
    const space = makeSpace(99);
    const task = start(space, { scanSize: 1, scanTime: 0.01 });
    expect(task.chunkDelay).toBe(0.0001);
    const { immediate, timeout } = spies();
    vi.advanceTimersByTime(0);
    expect(task.stats().chunks).toBe(1);
    expect(immediate).toHaveBeenCalledTimes(1);
    expect(timeout).not.toHaveBeenCalled();
  });

  test('iterationDelay 0 runs the chunks of a pass back to back on setImmediate', () => {
    const space = makeSpace(99);
    const task = start(space, { scanSize: 10, iterationDelay: 0, fullScanDelay: 3600 });
    const { immediate, timeout } = spies();
    vi.advanceTimersByTime(100);
    expect(task.stats()).toMatchObject({ fullScans: 1, chunks: 10 });
    expect(immediate).toHaveBeenCalledTimes(9);
    expect(timeout).toHaveBeenCalledTimes(1); // the wait after the pass
    expect(timeout).toHaveBeenLastCalledWith(expect.any(Function), 3_600_000);
  });

  test('a chunk delay of exactly 1 ms uses setTimeout', () => {
    // A wait inside a pass is k * chunkDelay for a burst of k chunks, at least 50 ms while chunks
    // are cheap. Here every chunk seems to take 10 ms of CPU, which ends each burst after one
    // chunk: the wait is one chunk delay.
    const real = cpuClock.now;
    let clock = 0;
    cpuClock.now = () => (clock += 10);
    try {
      const space = makeSpace(99);
      const task = start(space, { scanSize: 10, iterationDelay: 0.001 });
      expect(task.chunkDelay).toBe(0.001);
      const { immediate, timeout } = spies();
      vi.advanceTimersByTime(0);
      expect(task.stats().chunks).toBe(1);
      expect(timeout).toHaveBeenCalledTimes(1);
      expect(timeout).toHaveBeenLastCalledWith(expect.any(Function), 1);
      expect(immediate).not.toHaveBeenCalled();
    } finally {
      cpuClock.now = real;
    }
  });

  test.each([[0, 1], [0.0005, 1], [0.002, 2]])('a wait of %s s between passes is a setTimeout of %i ms', (fullScanDelay, ms) => {
    const space = makeSpace(5);
    const task = start(space, { scanSize: 10, iterationDelay: 0, fullScanDelay });
    const { immediate, timeout } = spies();
    vi.advanceTimersByTime(0);
    expect(task.stats().fullScans).toBe(1);
    expect(timeout).toHaveBeenCalledTimes(1);
    expect(timeout).toHaveBeenLastCalledWith(expect.any(Function), ms);
    expect(immediate).not.toHaveBeenCalled();
    expectNextChunkAfter(task, ms);
  });
});
