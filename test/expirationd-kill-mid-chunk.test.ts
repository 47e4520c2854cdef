// Kill means stop (issue 10): after kill(), restart() or space.drop() returns, from anywhere
// (isExpired, onExpired, now(), an event listener, a pass callback), the task deletes nothing
// more. A chunk still collecting tuples stops there and deletes nothing it has not handed to
// onExpired.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, name = 'kill'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 100 + id]);
  return space;
}

const ttl = (t: Tuple, now: number) => (t[2] as number) <= now;
type Stop = 'kill' | 'expirationd.kill' | 'restart' | 'drop';

function stopper(how: Stop, task: () => Task, space: Space): () => void {
  return () => {
    if (how === 'kill') task().kill();
    else if (how === 'expirationd.kill') expirationd.kill(task().name);
    else if (how === 'restart') task().restart();
    else space.drop();
  };
}

describe.each<Stop>(['kill', 'expirationd.kill', 'restart', 'drop'])('%s', (how) => {
  test('from inside isExpired: the predicate runs no more and nothing is deleted', () => {
    const space = makeSpace(50);
    let task: Task | undefined;
    const stop = stopper(how, () => task as Task, space);
    let calls = 0;
    let stopped = false;
    task = expirationd.start('kill', space, {
      scanSize: 50, now: () => NOW,
      isExpired: (t, now) => {
        calls++;
        if (!stopped) {
          stopped = true;
          stop();
        }
        return ttl(t, now);
      },
    });
    vi.advanceTimersToNextTimer();
    expect(calls).toBe(1);
    if (how === 'drop') {
      expect(space.dropped).toBe(true);
      return;
    }
    if (how === 'restart') {
      // The restarted task starts a fresh pass on its next tick; the interrupted chunk deleted nothing.
      expect(space.len()).toBe(50);
      vi.advanceTimersToNextTimer();
      expect(space.len()).toBe(0);
      return;
    }
    expect(space.len()).toBe(50);
    expect(task.stats().expired).toBe(0);
    vi.advanceTimersByTime(3_600_000);
    expect(space.len()).toBe(50);
    expect(calls).toBe(1);
  });

  test('from inside now(): the chunk deletes nothing', () => {
    const space = makeSpace(20);
    let task: Task | undefined;
    const stop = stopper(how, () => task as Task, space);
    let stopped = false;
    task = expirationd.start('kill', space, {
      field: 3, scanSize: 50,
      now: () => {
        if (!stopped) {
          stopped = true;
          stop();
        }
        return NOW;
      },
    });
    vi.advanceTimersToNextTimer();
    if (how === 'drop') return;
    expect(space.len()).toBe(20);
    if (how !== 'restart') {
      vi.advanceTimersByTime(3_600_000);
      expect(space.len()).toBe(20);
    }
  });

  test.each<[string, TaskOptions]>([
    ['native TTL', { field: 3 }],
    ['isExpired', { isExpired: ttl }],
  ])('from an \'error\' listener while a poisoned chunk is split (%s): nothing more is delivered or deleted', (_name, options) => {
    const space = makeSpace(16);
    let task: Task | undefined;
    const stop = stopper(how, () => task as Task, space);
    const handed: number[][] = [];
    let stopped = false;
    task = expirationd.start('kill', space, {
      ...options, scanSize: 16, now: () => NOW,
      onExpired: (tuples) => {
        handed.push(tuples.map((t) => t[0] as number));
        if (!stopped) throw new Error('whole chunk fails');
      },
    });
    task.on('error', () => {
      if (stopped) return;
      stopped = true;
      stop();
    });
    vi.advanceTimersToNextTimer();
    expect(handed).toHaveLength(1);
    if (how === 'drop') return;
    expect(space.len()).toBe(16);
  });
});

describe('an async onExpired', () => {
  test('kill from inside the async onExpired before it resolves: the tuples stay (offered again by a later task)', async () => {
    const space = makeSpace(6);
    let task: Task | undefined;
    let resolveIt: (() => void) | undefined;
    task = expirationd.start('kill', space, {
      field: 3, scanSize: 10, now: () => NOW,
      onExpired: async () => {
        (task as Task).kill();
        await new Promise<void>((resolve) => (resolveIt = resolve));
      },
    });
    await vi.advanceTimersByTimeAsync(0);
    (resolveIt as () => void)();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(space.len()).toBe(6);
    // At-least-once: a later task delivers them.
    const delivered: number[] = [];
    expirationd.start('kill', space, { field: 3, now: () => NOW, onExpired: async (tuples) => void delivered.push(...tuples.map((t) => t[0] as number)) });
    await vi.advanceTimersByTimeAsync(0);
    expect(delivered.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(space.len()).toBe(0);
  });

  test("kill from the 'expired' listener after the first half of a split chunk: the second half is not deleted", async () => {
    const space = makeSpace(8);
    let failOnce = true;
    const task = expirationd.start('kill', space, {
      field: 3, scanSize: 8, now: () => NOW,
      onExpired: async () => {
        if (failOnce) {
          failOnce = false;
          throw new Error('once');
        }
      },
    });
    task.on('error', () => {});
    task.on('expired', () => task.kill());
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(task.stats().expired).toBe(4);
    expect(space.len()).toBe(4);
  });
});

test('a sync onExpired that kills the task: what it was handed commits, nothing after it', () => {
  const space = makeSpace(12);
  let task: Task | undefined;
  const handed: number[] = [];
  let first = true;
  task = expirationd.start('kill', space, {
    field: 3, scanSize: 12, now: () => NOW,
    onExpired: (tuples) => {
      handed.push(...tuples.map((t) => t[0] as number));
      if (first) {
        first = false;
        throw new Error('split the chunk');
      }
      (task as Task).kill();
    },
  });
  task.on('error', () => {});
  vi.advanceTimersToNextTimer();
  // The whole chunk failed; its first half was delivered (and killed the task) and stays deleted.
  expect(space.select().map((t) => t[0])).toEqual([6, 7, 8, 9, 10, 11]);
  vi.advanceTimersByTime(3_600_000);
  expect(space.len()).toBe(6);
});
