// Review: the README's claims about stop()/start(), processExpired and bursts, one test each
// (those the feature files do not already state).
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { burstSize, MAX_WAKEUPS_PER_PASS } from '../src/expirationd/scheduler.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live = 0, name = 'claims'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, 'e', NOW - 1 - id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, 'l', NOW + 100 + id]);
  return space;
}

function start(space: Space, options: TaskOptions = {}): Task {
  return expirationd.start('claims', space, { field: 3, scanSize: 5, now: () => NOW, ...options });
}

function runUntil(done: () => boolean): void {
  for (let i = 0; i < 10_000 && !done() && vi.getTimerCount() > 0; i++) vi.advanceTimersToNextTimer();
}

describe('Pause and resume', () => {
  test('"start() resumes the same pass ... on the next turn of the event loop"', () => {
    const space = makeSpace(20);
    const task = start(space, { scanTime: 3600 });  // a 1 s wait between chunks
    vi.advanceTimersToNextTimer();
    task.stop();
    task.start();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(0);  // the next turn, not the formula's second
    expect(task.stats().chunks).toBe(2);
    expect(space.len()).toBe(10);
  });

  test('"tuples inserted behind the cursor while it was stopped wait for the next pass"', () => {
    const space = makeSpace(20, 1);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    vi.advanceTimersToNextTimer();
    task.stop();
    space.insert([1, 'behind', NOW - 5]);  // ids 0..9 were deleted: 1 is behind the cursor
    space.delete(15);
    space.insert([15, 'ahead', NOW - 5]);  // ahead of the cursor, before the pass's last entry
    task.start();
    runUntil(() => task.stats().fullScans === 1);
    expect(space.get(1)).toEqual([1, 'behind', NOW - 5]);
    expect(space.get(15)).toBeUndefined();
    runUntil(() => task.stats().fullScans === 2);
    expect(space.get(1)).toBeUndefined();
  });

  test('"stop() on a killed task does nothing", and start() after kill() is a fresh pass with restarts + 1', () => {
    const space = makeSpace(3);
    const task = start(space);
    task.kill();
    expect(task.stop()).toBe(task);
    expect(task.state).toBe('killed');
    task.start();
    expect(task.state).toBe('running');
    expect(task.stats().restarts).toBe(2);
  });
});

describe('processExpired', () => {
  test('"On a TTL-aware space, reads inside it hide the expired tuples it is handed; update, replace and delete act on what is stored"', () => {
    const space = new Space('ttl', { ttl: { field: 3, now: () => NOW } });
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let id = 0; id < 4; id++) space.insert([id, 'e', NOW - 10]);
    const seen: unknown[] = [];
    const task = expirationd.start('claims', space, {
      itIndex: 'exp',
      processExpired: (tuples) => {
        for (const t of tuples) {
          seen.push(space.get(t[0] as number));
          seen.push(space.select(t[0] as number).length);
          const updated = space.update(t[0] as number, [['=', 2, 'soft-deleted']]);
          expect(updated).toEqual([t[0], 'soft-deleted', NOW - 10]);
        }
      },
    });
    runUntil(() => task.stats().fullScans >= 1);
    expect(seen).toEqual([undefined, 0, undefined, 0, undefined, 0, undefined, 0]);
    expect(space.len()).toBe(4);
    expect(space.index.primary.select(undefined).length).toBe(0);  // still hidden: still expired
  });

  test('"\'expired\' is emitted with them after the commit": a listener that throws undoes nothing', () => {
    const space = makeSpace(4);
    const archive = new Space('archive');
    archive.createIndex('primary', { parts: [[1, 'unsigned']] });
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          archive.insert(t);
          space.delete(t[0] as number);
        }
      },
    });
    const inListener: number[] = [];
    task.on('expired', (tuples: Tuple[]) => {
      inListener.push(archive.len());
      throw new Error('listener');
    });
    task.on('error', () => {});
    runUntil(() => task.stats().fullScans === 1);
    expect(inListener).toEqual([4]);
    expect(archive.len()).toBe(4);
    expect(space.len()).toBe(0);
    expect(task.stats().expired).toBe(4);
  });

  test('"A re-queue with a run-at time in the future holds nothing": when it comes due in the same pass, it is handed again', () => {
    let now = NOW;
    const space = makeSpace(10, 1);
    const handed: number[] = [];
    const task = start(space, {
      itIndex: 'exp',
      scanSize: 2,
      now: () => now,
      processExpired: (tuples) => {
        for (const t of tuples) {
          handed.push(t[0] as number);
          if (t[0] === 9) space.update(9, [['=', 3, NOW + 5]]);  // re-queued 5 s ahead
          else space.delete(t[0] as number);
        }
        now += 1;
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(handed.filter((id) => id === 9).length).toBe(2);
    expect(space.select().map((t) => t[0])).toEqual([9, 10]);
  });

  test('"It combines with ... every other option": keepAlive, maxCpuShare, unit ms, fullScanDelay', () => {
    const space = makeSpace(30, 1);
    let calls = 0;
    const task = start(space, {
      itIndex: 'exp', keepAlive: true, maxCpuShare: 1, unit: 'ms', fullScanDelay: 0.5,
      processExpired: (tuples) => {
        calls++;
        for (const t of tuples) space.delete(t[0] as number);
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(space.len()).toBe(1);
    expect(calls).toBe(6);
  });
});

describe('Timing: bursts sized by the pass', () => {
  test('"a pass takes at most about 100 wake-ups": a 20,000-tuple full scan deleting half', () => {
    const space = new Space('burst');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    const tuples: Tuple[] = [];
    for (let id = 0; id < 20_000; id++) tuples.push([id, id % 2 === 0 ? NOW - 1 : NOW + 100_000]);
    space.insertMany(tuples);
    const task = expirationd.start('burst', space, { field: 2, scanSize: 10, scanTime: 60, now: () => NOW });
    const config = { it: space.index.primary, itLen: () => space.index.primary.len(), scanSize: 10, scanTime: 60, iterationDelay: 1 } as unknown as Parameters<typeof burstSize>[0];
    expect(burstSize(config, 20_000)).toBe(Math.ceil(Math.ceil(20_001 / 10) / MAX_WAKEUPS_PER_PASS));
    runUntil(() => task.stats().fullScans === 1);
    expect(space.len()).toBe(10_000);
    expect(task.stats().wakeups).toBeLessThanOrEqual(MAX_WAKEUPS_PER_PASS + 2);
  });
});
