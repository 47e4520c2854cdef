// Edges of delivery and failure handling (issue 14: mutants of task.ts, chunk.ts and
// strategies/ttl.ts that the other tests did not see), on fake timers and a fixed now():
// - onFullScanError gets the first error of a failed pass, not the last;
// - a tuple skipped as poison stays skipped for the rest of the pass, even when the walk meets
//   it again (it moved ahead of the cursor);
// - a failed set is retried in halves right away, in order, before the rest (onExpired and
//   processExpired);
// - a chunk delivered to a synchronous onExpired is committed (its undo log released);
// - the JavaScript TTL check (an async onExpired) expires a TTL equal to now, and BigInt TTLs.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type CappedError, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(name: string, expired: number, live = 0): Space {
  const space = new Space(name);
  space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 1000 + id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}

function runPasses(task: Task, count: number): void {
  const target = task.stats().fullScans + count;
  for (let i = 0; i < 10_000 && task.stats().fullScans < target; i++) vi.advanceTimersToNextTimer();
  expect(task.stats().fullScans).toBe(target);
}

const ids = (tuples: readonly Tuple[]): number[] => tuples.map((t) => t[0] as number);
const skippedKeys = (errors: unknown[]): unknown[] =>
  errors.filter((e) => (e as CappedError).code === 'ER_TUPLE_SKIPPED').map((e) => (e as CappedError).key);

describe('failures in a pass', () => {
  test('onFullScanError gets the first error of the pass', () => {
    const space = makeSpace('first-error', 40, 5);
    const passErrors: string[] = [];
    const task = expirationd.start('first-error', space, {
      field: 3, scanSize: 8, fullScanDelay: 60, now: () => NOW,
      onExpired: (tuples) => {
        for (const poison of [3, 30]) if (ids(tuples).includes(poison)) throw new Error(`poison ${poison}`);
      },
      onFullScanError: (_t, e) => passErrors.push((e as Error).message),
    });
    const errors: unknown[] = [];
    task.on('error', (e) => errors.push(e));
    runPasses(task, 1);
    expect(skippedKeys(errors)).toEqual([3, 30]);
    expect(passErrors).toEqual(['poison 3']);
  });

  test('a tuple skipped as poison stays skipped for the rest of the pass when the walk meets it again', () => {
    const space = makeSpace('skip-pass', 40, 5);
    const offered: number[][] = [];
    const errors: unknown[] = [];
    const task = expirationd.start('skip-pass', space, {
      field: 3, itIndex: 'exp', scanSize: 8, fullScanDelay: 60, now: () => NOW,
      onExpired: (tuples) => {
        offered.push(ids(tuples));
        if (ids(tuples).includes(5)) throw new Error('poison');
      },
    });
    task.on('error', (e) => errors.push(e));
    vi.advanceTimersByTime(0);
    // The first chunk (TTLs 0..7 of the exp index) skipped tuple 5 and backs off.
    expect(skippedKeys(errors)).toEqual([5]);
    expect(task.stats().fullScans).toBe(0);
    // Still expired, but now the last expired tuple of the exp index: ahead of the walk.
    space.replace([5, 'e5', NOW - 1]);
    const before = offered.length;
    runPasses(task, 1);
    expect(offered.slice(before).flat()).not.toContain(5);
    expect(skippedKeys(errors)).toEqual([5]);
    expect(task.stats()).toMatchObject({ skipped: 1, expired: 39 });
    expect(ids(space.select())).toEqual([5, 40, 41, 42, 43, 44]);
  });
});

describe('bisecting a failed set', () => {
  // One chunk of 8 expired tuples, tuple 1 poison: the set fails, then its halves in order, the
  // failing half's halves before the other half, down to the poison alone.
  const ORDER = [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3], [0, 1], [0], [1], [2, 3], [4, 5, 6, 7]];

  test('onExpired: the halves are retried at once, first half first, before the rest of the set', () => {
    const space = makeSpace('bisect', 8, 2);
    const calls: number[][] = [];
    const task = expirationd.start('bisect', space, {
      field: 3, scanSize: 10, fullScanDelay: 60, now: () => NOW,
      onExpired: (tuples) => {
        calls.push(ids(tuples));
        if (ids(tuples).includes(1)) throw new Error('poison');
      },
    });
    task.on('error', () => {});
    runPasses(task, 1);
    expect(calls).toEqual(ORDER);
    expect(ids(space.select())).toEqual([1, 8, 9]);
  });

  test('processExpired: the halves are retried at once, first half first, before the rest of the set', () => {
    const space = makeSpace('bisect-process', 8, 2);
    const calls: number[][] = [];
    const task = expirationd.start('bisect-process', space, {
      field: 3, scanSize: 10, fullScanDelay: 60, now: () => NOW,
      processExpired: (tuples) => {
        calls.push(ids(tuples));
        if (ids(tuples).includes(1)) throw new Error('poison');
        for (const t of tuples) space.delete(t[0] as number);
      },
    });
    task.on('error', () => {});
    runPasses(task, 1);
    expect(calls).toEqual(ORDER);
    expect(ids(space.select())).toEqual([1, 8, 9]);
  });
});

describe('a chunk delivered to a synchronous onExpired', () => {
  test('is committed: the space ends as it does without onExpired (no open transaction holding the deleted tuples)', () => {
    const shape: TaskOptions = { field: 3, scanSize: 64, fullScanDelay: 60, now: () => NOW };
    const delivered = makeSpace('delivered', 1000, 10);
    const plain = makeSpace('plain', 1000, 10);
    const got: number[] = [];
    const a = expirationd.start('delivered', delivered, { ...shape, onExpired: (tuples) => { got.push(...ids(tuples)); } });
    const b = expirationd.start('plain', plain, shape);
    runPasses(a, 1);
    runPasses(b, 1);
    expect(got).toHaveLength(1000);
    expect(delivered.len()).toBe(10);
    expect(delivered.memory()).toEqual(plain.memory());
    // A transaction that fails afterwards undoes only its own change.
    expect(() => delivered.transaction(() => {
      delivered.delete(1005);
      throw new Error('undo');
    })).toThrow('undo');
    expect(delivered.len()).toBe(10);
  });
});

describe('the JavaScript TTL check (an async onExpired)', () => {
  async function expireAsync(ttls: unknown[]): Promise<{ space: Space; delivered: number[] }> {
    const space = new Space('js-ttl');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    ttls.forEach((ttl, id) => space.insert([id, `t${id}`, ttl]));
    const delivered: number[] = [];
    const task = expirationd.start('js-ttl', space, {
      field: 3, scanSize: 2, fullScanDelay: 60, now: () => NOW,
      onExpired: async (tuples) => {
        delivered.push(...ids(tuples));
      },
    });
    for (let i = 0; i < 100 && task.stats().fullScans < 1; i++) {
      await vi.advanceTimersToNextTimerAsync();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(task.stats().fullScans).toBe(1);
    return { space, delivered };
  }

  test('a TTL equal to now is expired, one past it is not (every chunk after the first decides in JavaScript)', async () => {
    const { space, delivered } = await expireAsync([NOW + 1, NOW, NOW - 1, NOW, NOW + 1, NOW]);
    expect(delivered.sort()).toEqual([1, 2, 3, 5]);
    expect(ids(space.select())).toEqual([0, 4]);
  });

  test('BigInt TTLs are compared by value', async () => {
    const huge = 2n ** 62n;
    const { space, delivered } = await expireAsync([NOW + 1, BigInt(NOW), -huge, huge, BigInt(NOW - 1), BigInt(NOW + 1)]);
    expect(delivered.sort()).toEqual([1, 2, 4]);
    expect(ids(space.select())).toEqual([0, 3, 5]);
  });
});
