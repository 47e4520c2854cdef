// Issue 15, backlog mode: when a chunk of an early-break task ends without reaching a live tuple,
// the next chunk runs at once (a setImmediate: the event loop turns between chunks, each chunk its
// own transaction), until the pass reaches a live tuple or the task's chunks used maxCpuShare of
// one core over the last second; over budget the task waits the formula's chunkDelay. The chunks'
// CPU is injected: onExpired advances the fake CPU clock by 10 ms per chunk.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { advanceTo, BASE, fakeCpu, runNow, useKeepupTimers } from './support/keepup.js';

useKeepupTimers();

const CHUNK_MS = 10;

function makeSpace(expired: number, live: number): Space {
  const space = new Space('backlog');
  space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
  const tuples: unknown[][] = [];
  for (let id = 0; id < expired; id++) tuples.push([id, BASE - 10_000 + id]);
  for (let id = expired; id < expired + live; id++) tuples.push([id, BASE + 3_600_000]);
  space.insertMany(tuples);
  return space;
}

/** Fake time of the last chunk that ran (set by every chunk through onExpired or 'expired'). */
let lastChunkAt = 0;

function start(space: Space, options: TaskOptions = {}): Task {
  const task = expirationd.start('backlog', space, {
    itIndex: 'exp', field: 2, unit: 'ms', now: () => Date.now(), scanSize: 10,
    onExpired: () => {
      fakeCpu.ms += CHUNK_MS;
    },
    ...options,
  });
  task.on('expired', () => {
    lastChunkAt = Date.now();
  });
  return task;
}

describe('backlog mode', () => {
  test('chunks that find only expired tuples are followed at once, on setImmediate, until the pass reaches a live tuple', () => {
    const space = makeSpace(35, 5);
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    const task = start(space);
    runNow(task);
    // 10 + 10 + 10 expired, then 5 expired and the first live tuple: one wake-up, four chunks.
    expect(task.stats()).toMatchObject({ chunks: 4, fullScans: 1, expired: 35, wakeups: 1 });
    expect(space.len()).toBe(5);
    expect(immediate).toHaveBeenCalledTimes(4); // the start, then one between each two chunks
    expect(timeout).toHaveBeenCalledTimes(1); // the wait after the pass
  });

  test('the event loop turns between two chunks of a backlog', () => {
    const space = makeSpace(50, 1);
    const seen: string[] = [];
    const task = start(space, {
      onExpired: (tuples) => {
        fakeCpu.ms += CHUNK_MS;
        seen.push(`chunk ${tuples.length}`);
        setImmediate(() => seen.push('loop'));
      },
    });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 6, fullScans: 1 });
    expect(seen.slice(0, 10)).toEqual(['chunk 10', 'loop', 'chunk 10', 'loop', 'chunk 10', 'loop', 'chunk 10', 'loop', 'chunk 10', 'loop']);
  });

  test.each([[0.25, 25], [0.5, 50], [0.05, 5]])('at maxCpuShare %s the backlog stops after %i chunks of 10 ms, then waits chunkDelay', (share, chunks) => {
    const space = makeSpace(2000, 10);
    const task = start(space, share === 0.25 ? {} : { maxCpuShare: share });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks, fullScans: 0, wakeups: 1, expired: chunks * 10 });
    // Over budget: the formula's wait, min(10 * 3600 / (len + 1), 1) = 1 s, not a millisecond less.
    expect(task.chunkDelay).toBe(1);
    advanceTo(lastChunkAt + 999);
    expect(task.stats().chunks).toBe(chunks);
    advanceTo(lastChunkAt + 1000);
    // The window still holds the budget's worth of CPU (the fake CPU clock did not move): one chunk.
    expect(task.stats()).toMatchObject({ chunks: chunks + 1, wakeups: 2 });
    advanceTo(lastChunkAt + 1000);
    expect(task.stats()).toMatchObject({ chunks: chunks + 2, wakeups: 3 });
    // A second later the window has slid past those chunks: the backlog resumes.
    fakeCpu.ms += 1000;
    advanceTo(lastChunkAt + 1000);
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 2 * chunks + 2, wakeups: 4 });
  });

  test('the budget is a sliding window: chunks older than 1 s stop counting one by one', () => {
    const space = makeSpace(2000, 10);
    const task = start(space, { maxCpuShare: 0.05 }); // 50 ms: 5 chunks of 10 ms
    runNow(task);
    expect(task.stats().chunks).toBe(5); // they ended at 10, 20, 30, 40 and 50 ms
    fakeCpu.ms = 1015;
    advanceTo(lastChunkAt + 1000);
    runNow(task);
    // Chunk 6 ends at 1025 ms: the window (25, 1025] holds the chunks ending at 30, 40, 50 and
    // 1025 ms (40 ms), under budget. Each later chunk lets one more old one out, until the
    // chunk ending at 1065 ms: the window (65, 1065] holds 1025..1065, 50 ms, the budget.
    expect(task.stats()).toMatchObject({ chunks: 10, wakeups: 2 });
  });

  test('backlog mode never waits longer than the formula: with the budget spent, the pace is one chunk per chunkDelay', () => {
    const space = makeSpace(2000, 10);
    const task = start(space, { maxCpuShare: 0.01, iterationDelay: 0.5 });
    runNow(task);
    expect(task.stats().chunks).toBe(1);
    for (let i = 2; i <= 5; i++) {
      advanceTo(lastChunkAt + 499);
      expect(task.stats().chunks).toBe(i - 1);
      advanceTo(lastChunkAt + 500);
      expect(task.stats().chunks).toBe(i);
    }
  });

  test('a full-scan task has no backlog mode: one chunk per wake-up while passes are short', () => {
    const space = makeSpace(200, 10);
    const task = start(space, { itIndex: 'primary' });
    runNow(task);
    expect(task.stats()).toMatchObject({ chunks: 1, wakeups: 1 });
  });

  test('failed chunks back off instead of entering backlog mode', () => {
    const space = makeSpace(200, 10);
    const task = start(space, {
      onExpired: () => {
        fakeCpu.ms += CHUNK_MS;
        throw new Error('down');
      },
    });
    task.on('error', () => {});
    runNow(task);
    // One chunk of 10: bisected into skips, so the chunk failed; the next one waits (backoff).
    expect(task.stats().chunks).toBe(1);
    expect(task.stats().skipped).toBe(10);
  });

  test.each([[0], [-0.5], [1.5], [Number.NaN], ['0.5'], [Infinity]])('maxCpuShare %s is refused with ER_ILLEGAL_PARAMS', (value) => {
    const space = makeSpace(1, 1);
    expect(codeOf(() => start(space, { maxCpuShare: value as number }))).toBe('ER_ILLEGAL_PARAMS');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('maxCpuShare 1 is accepted', () => {
    const space = makeSpace(1, 1);
    expect(start(space, { maxCpuShare: 1 }).isRunning).toBe(true);
  });
});
