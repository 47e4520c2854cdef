// An async onExpired (issue 10): at-least-once delivery. The task runs no further chunk until the
// promise settles; the tuples it was handed are deleted only after it resolves, and only those
// still unchanged; a rejection keeps them, is reported through 'error', and they are offered
// again later. Nothing rejects unhandled.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live = 0, hash = false): Space {
  const space = new Space('async');
  space.createIndex('primary', { type: hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 100 + id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}

interface Deferred {
  tuples: Tuple[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** An onExpired whose promises the test settles by hand. */
function manual() {
  const calls: Deferred[] = [];
  const onExpired = (tuples: Tuple[]) => new Promise<void>((resolve, reject) => calls.push({ tuples, resolve, reject }));
  return { calls, onExpired };
}

const ids = (tuples: Tuple[]) => tuples.map((t) => t[0] as number);

const rejections = watchUnhandledRejections({ failAfterEach: false });

const shapes: Array<[string, TaskOptions, boolean]> = [
  ['TREE full scan', {}, false],
  ['HASH full scan', {}, true],
  ['early break', { itIndex: 'exp' }, false],
  ['isExpired', { isExpired: (t: Tuple, now: number) => (t[2] as number) <= now }, true],
];

describe.each(shapes)('%s', (_name, shape, hash) => {
  function start(space: Space, options: TaskOptions): Task {
    return expirationd.start('async', space, { field: 3, scanSize: 4, fullScanDelay: 1, now: () => NOW, ...shape, ...options });
  }

  test('the tuples stay until the promise resolves, and no other chunk runs meanwhile', async () => {
    const space = makeSpace(6, 3, hash);
    const { calls, onExpired } = manual();
    const task = start(space, { onExpired });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    const first = ids(calls[0].tuples);
    expect(first.length).toBeGreaterThan(0);
    for (const id of first) expect(space.get(id)).toBeDefined();
    const chunks = task.stats().chunks;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(1);
    expect(task.stats().chunks).toBe(chunks);
    expect(space.len()).toBe(9);
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    for (const id of first) expect(space.get(id)).toBeUndefined();
    expect(task.stats().expired).toBe(first.length);
    for (let i = 1; i < 20 && space.len() > 3; i++) {
      await vi.advanceTimersByTimeAsync(1_000);
      for (const c of calls) c.resolve();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(space.select().map((t) => t[0]).sort((a, b) => (a as number) - (b as number))).toEqual([6, 7, 8]);
  });

  test('a tuple changed while its promise was pending is not deleted', async () => {
    const space = makeSpace(3, 0, hash);
    const { calls, onExpired } = manual();
    const deleted: Tuple[] = [];
    const task = start(space, { onExpired });
    task.on('expired', (tuples: Tuple[]) => deleted.push(...tuples));
    await vi.advanceTimersByTimeAsync(0);
    expect(ids(calls[0].tuples).sort()).toEqual([0, 1, 2]);
    space.replace([1, 'changed', NOW - 50]);
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(space.select()).toEqual([[1, 'changed', NOW - 50]]);
    expect(ids(deleted).sort()).toEqual([0, 2]);
    expect(task.stats().expired).toBe(2);
  });

  test('a rejection keeps the tuples, is reported, and they are offered again (after a backoff)', async () => {
    const space = makeSpace(4, 0, hash);
    const { calls, onExpired } = manual();
    const errors: unknown[] = [];
    const failure = new Error('queue down');
    const task = start(space, { onExpired });
    task.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(0);
    const all = ids(calls[0].tuples);
    expect([...all].sort()).toEqual([0, 1, 2, 3]);
    calls[0].reject(failure);
    await vi.advanceTimersByTimeAsync(0);
    expect(errors[0]).toBe(failure);
    expect(space.len()).toBe(4);
    // The chunk is retried in halves: the first half is offered while the chunk is still open.
    expect(ids(calls[1].tuples)).toEqual(all.slice(0, 2));
    calls[1].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(ids(calls[2].tuples)).toEqual(all.slice(2));
    calls[2].reject(failure);
    await vi.advanceTimersByTimeAsync(0);
    calls[3].reject(failure);
    await vi.advanceTimersByTimeAsync(0);
    calls[4].reject(failure);
    await vi.advanceTimersByTimeAsync(0);
    expect(ids(calls[3].tuples)).toEqual([all[2]]);
    expect(ids(calls[4].tuples)).toEqual([all[3]]);
    const poison = all.slice(2).sort();
    expect(space.select().map((t) => t[0]).sort()).toEqual(poison);
    expect(errors.filter((e) => (e as { code?: string }).code === 'ER_TUPLE_SKIPPED').map((e) => (e as { key: number }).key))
      .toEqual(all.slice(2));
    expect(task.stats()).toMatchObject({ skipped: 2, expired: 2, restarts: 2 });
    // Later (the next pass) they come again, and this time they go.
    for (let i = 0; i < 20 && space.len() > 0; i++) {
      await vi.advanceTimersByTimeAsync(1_000);
      for (const c of calls.slice(5)) c.resolve();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(space.len()).toBe(0);
    expect(calls.slice(5).flatMap((c) => ids(c.tuples)).sort()).toEqual(poison);
    expect(rejections.list).toEqual([]);
  });

  test('kill while the promise is pending: its resolution deletes nothing', async () => {
    const space = makeSpace(4, 0, hash);
    const { calls, onExpired } = manual();
    const task = start(space, { onExpired });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    task.kill();
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(space.len()).toBe(4);
    expect(task.stats().expired).toBe(0);
    expect(calls).toHaveLength(1);
  });

  test('restart while the promise is pending: the old delivery deletes nothing, the new pass offers the tuples again', async () => {
    const space = makeSpace(2, 0, hash);
    const { calls, onExpired } = manual();
    const task = start(space, { onExpired });
    await vi.advanceTimersByTimeAsync(0);
    task.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(2);
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(space.len()).toBe(2);
    calls[1].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(space.len()).toBe(0);
  });

  test('space.drop() while the promise is pending ends the task cleanly', async () => {
    const space = makeSpace(2, 0, hash);
    const { calls, onExpired } = manual();
    const task = start(space, { onExpired });
    await vi.advanceTimersByTimeAsync(0);
    space.drop();
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(task.isRunning).toBe(false);
    expect(rejections.list).toEqual([]);
  });
});

describe('detecting an async onExpired', () => {
  test('a plain function that returns a promise: its first chunk is undone, and the tuples go once the promise resolves', async () => {
    const space = makeSpace(3, 0);
    const { calls, onExpired } = manual();
    const plain = (tuples: Tuple[]) => onExpired(tuples);
    const task = expirationd.start('async', space, { field: 3, scanSize: 10, fullScanDelay: 1, now: () => NOW, onExpired: plain });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    expect(space.len()).toBe(3);
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(space.len()).toBe(0);
    expect(task.stats().expired).toBe(3);
    space.checkIntegrity();
  });

  test('an async onExpired that rejects: nothing unhandled, nothing lost, the tuples go once it succeeds', async () => {
    const space = makeSpace(3, 0);
    let fail = true;
    const task = expirationd.start('async', space, {
      field: 3, scanSize: 10, fullScanDelay: 1, now: () => NOW,
      onExpired: async () => {
        if (fail) throw new Error('async failure');
      },
    });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(space.len()).toBe(3);
    fail = false;
    for (let i = 0; i < 20 && space.len() > 0; i++) await vi.advanceTimersByTimeAsync(1_000);
    expect(space.len()).toBe(0);
    expect(rejections.list).toEqual([]);
  });
});
