// stats().workingTime against an injected clock (issue 14): it is the time, in seconds, spent in
// the chunks' synchronous part, read from cpuClock (src/expirationd/scheduler.ts, in ms), the
// same clock that paces bursts and backlog mode. With the clock advanced only inside the chunks
// (by the isExpired callback and by now()), the exact total is known: a wrong unit (ms or µs for
// s) or a total that keeps only the last chunk fails here.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { Space, expirationd } from '../src/index.js';
import { cpuClock } from '../src/expirationd/scheduler.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;
const fake = { ms: 0 };
const real = cpuClock.now;
beforeEach(() => {
  fake.ms = 0;
  cpuClock.now = () => fake.ms;
});
afterEach(() => {
  cpuClock.now = real;
});

function makeSpace(n: number, ttl: (id: number) => number): Space {
  const space = new Space('working-time');
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [[2, 'unsigned']] });
  for (let id = 0; id < n; id++) space.insert([id, ttl(id)]);
  return space;
}

function runPass(task: { once: (e: 'fullScan', f: () => void) => unknown }): void {
  let done = false;
  task.once('fullScan', () => {
    done = true;
  });
  for (let i = 0; i < 10_000 && !done; i++) vi.advanceTimersToNextTimer();
  expect(done).toBe(true);
}

describe('workingTime', () => {
  test('is 0 before the first chunk', () => {
    const task = expirationd.start('wt', makeSpace(3, () => NOW + 1), { field: 2, now: () => NOW });
    expect(task.stats().workingTime).toBe(0);
  });

  test('sums the chunks\' time in seconds: 12 tuples × 10 ms in isExpired = 0.12 s, over 3 chunks', () => {
    const space = makeSpace(12, () => NOW + 1);
    const task = expirationd.start('wt', space, {
      scanSize: 5,
      fullScanDelay: 3600,
      now: () => NOW,
      isExpired: () => {
        fake.ms += 10;
        return false;
      },
    });
    runPass(task);
    const stats = task.stats();
    expect(stats.chunks).toBe(3);
    expect(stats.checked).toBe(12);
    expect(stats.workingTime).toBeCloseTo(0.12, 9);
  });

  test('counts the native walk\'s chunks too: 250 ms read from now() in each of 3 chunks = 0.75 s', () => {
    const space = makeSpace(30, (id) => (id % 3 === 0 ? NOW - 1 : NOW + 1));
    const task = expirationd.start('wt', space, {
      field: 2,
      scanSize: 10,
      fullScanDelay: 3600,
      now: () => {
        fake.ms += 250;  // now() is called once inside each chunk
        return NOW;
      },
    });
    runPass(task);
    const stats = task.stats();
    // 30 tuples at scanSize 10: 3 chunks (the third sees the end of the index).
    expect(stats.chunks).toBe(3);
    expect(stats.expired).toBe(10);
    expect(stats.workingTime).toBeCloseTo(0.75, 9);
  });

  test('time spent between chunks is not counted', () => {
    const space = makeSpace(4, () => NOW + 1);
    const task = expirationd.start('wt', space, { field: 2, scanSize: 2, fullScanDelay: 3600, now: () => NOW });
    runPass(task);
    expect(task.stats().workingTime).toBe(0);
    fake.ms += 5000;  // between chunks (and between passes)
    expect(task.stats().workingTime).toBe(0);
  });
});
