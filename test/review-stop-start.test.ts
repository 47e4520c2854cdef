// Review (adversarial): stop()/start() against async onExpired, re-entrance from the pass
// callbacks, and kills and restarts while an old chunk still settles.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live = 0, name = 'rv'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 1 - id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 100 + id]);
  return space;
}

function start(space: Space, options: TaskOptions = {}, name = 'rv'): Task {
  return expirationd.start(name, space, { field: 3, scanSize: 5, now: () => NOW, ...options });
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('async onExpired and stop()/start() from the pass callbacks', () => {
  test('stop() then start() inside onFullScanStart: no second chunk runs while the first one\'s async onExpired is pending', async () => {
    const space = makeSpace(20);
    const pending: Array<() => void> = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const task = start(space, {
      onFullScanStart: (t) => {
        t.stop();
        t.start();
      },
      onExpired: (tuples) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        return new Promise<void>((resolve) => pending.push(() => {
          inFlight--;
          resolve();
        }));
      },
    });
    vi.advanceTimersToNextTimer();
    await flush();
    expect(pending.length).toBe(1);
    // The promise has not settled: the task must not run another chunk meanwhile.
    for (let i = 0; i < 5 && vi.getTimerCount() > 0; i++) {
      vi.advanceTimersToNextTimer();
      await flush();
    }
    expect(maxInFlight).toBe(1);
    expect(task.stats().chunks).toBe(1);
  });

  test('an async onExpired of a killed epoch that rejects during the new pass does not fail that pass', async () => {
    const space = makeSpace(4);
    const rejects: Array<(e: Error) => void> = [];
    const onFullScanError = vi.fn();
    const onFullScanSuccess = vi.fn();
    let first = true;
    const task = start(space, {
      scanSize: 1,
      onFullScanError,
      onFullScanSuccess,
      onExpired: () => {
        if (first) {
          first = false;
          return new Promise<void>((_resolve, reject) => rejects.push(reject));
        }
        return Promise.resolve();
      },
    });
    const errors: unknown[] = [];
    task.on('error', (e) => errors.push(e));
    vi.advanceTimersToNextTimer();
    await flush();
    expect(rejects.length).toBe(1);
    task.restart();
    vi.advanceTimersToNextTimer();  // the new pass's first chunk
    await flush();
    expect(task.stats().fullScans).toBe(0);
    rejects[0](new Error('old epoch'));
    await flush();
    for (let i = 0; i < 50 && task.stats().fullScans === 0; i++) {
      vi.advanceTimersToNextTimer();
      await flush();
    }
    expect(space.len()).toBe(0);
    expect(task.stats().fullScans).toBe(1);
    expect(onFullScanError).not.toHaveBeenCalled();
    expect(onFullScanSuccess).toHaveBeenCalledTimes(1);
    // The old chunk's failure belongs to no pass of the new epoch: restarts is 1 + restart().
    expect(task.stats().restarts).toBe(2);
  });
});

describe('wake() from inside a failing callback', () => {
  test.each([
    ['processExpired', (wake: () => void): TaskOptions => ({ processExpired: () => { wake(); throw new Error('broken'); } })],
    ['onExpired', (wake: () => void): TaskOptions => ({ onExpired: () => { wake(); throw new Error('broken'); } })],
    ['isExpired', (wake: () => void): TaskOptions => ({ isExpired: () => { wake(); throw new Error('broken'); } })],
    ['now', (wake: () => void): TaskOptions => ({ now: () => { wake(); return Number.NaN; } })],
  ])('%s: the backoff still holds, about one chunk a second', (_name, options) => {
    const space = makeSpace(3, 1);
    let task: Task | undefined;
    task = start(space, { itIndex: 'exp', ...options(() => task?.wake()) });
    task.on('error', () => {});
    vi.advanceTimersByTime(10_000);
    expect(task.stats().chunks).toBeLessThan(40);
    expect(task.state).toBe('running');
  });
});
