// Callback contracts (issue 10): no callback result is used as a truth value unless it is a
// boolean. isExpired and now() must be synchronous: a promise (or any thenable) from either rolls
// the chunk back, is reported as ER_ILLEGAL_PARAMS through 'error' and onFullScanError, and its
// rejection is handled. Any other non-boolean verdict makes that tuple a skipped poison tuple.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live: number): Space {
  const space = new Space('contracts');
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 1 - id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}

function start(space: Space, options: TaskOptions): Task {
  return expirationd.start('contracts', space, { field: 3, scanSize: 10, fullScanDelay: 1, now: () => NOW, ...options });
}

const rejections = watchUnhandledRejections({ failAfterEach: false });

/** Lets pending promise callbacks and the unhandled-rejection check run (real time). */
async function settleMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => queueMicrotask(resolve));
  await vi.advanceTimersByTimeAsync(0);
}

describe('isExpired must be synchronous and return a boolean', () => {
  test('an async isExpired deletes nothing, even over 100 live tuples and many passes', async () => {
    const space = makeSpace(0, 100);
    const errors: unknown[] = [];
    const scanErrors: unknown[] = [];
    const task = start(space, { isExpired: (async (t: Tuple, now: number) => (t[2] as number) <= now) as never, onFullScanError: (_t, e) => scanErrors.push(e) });
    task.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(space.len()).toBe(100);
    expect(task.stats().expired).toBe(0);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ code: 'ER_ILLEGAL_PARAMS', message: expect.stringMatching(/isExpired must be synchronous/) });
    expect(scanErrors[0]).toBe(errors[0]);
    expect(task.isRunning).toBe(true);
  });

  test('an async isExpired over expired tuples deletes none of them either (the chunk rolls back)', async () => {
    const space = makeSpace(20, 0);
    const task = start(space, { isExpired: (async () => true) as never });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(5_000);
    expect(space.len()).toBe(20);
    space.checkIntegrity();
  });

  test('a rejecting isExpired promise is handled: no unhandled rejection', async () => {
    const space = makeSpace(5, 5);
    const task = start(space, { isExpired: () => Promise.reject(new Error('rejected verdict')) as never });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(3_000);
    await settleMicrotasks();
    expect(rejections.list).toEqual([]);
    expect(space.len()).toBe(10);
  });

  test('a thenable that is not a Promise counts as a promise', async () => {
    const space = makeSpace(5, 0);
    let thenCalls = 0;
    const thenable = { then: (_ok: unknown, fail?: (e: unknown) => void) => { thenCalls++; fail?.(new Error('thenable')); } };
    const errors: unknown[] = [];
    const task = start(space, { isExpired: () => thenable as never });
    task.on('error', (e) => errors.push(e));
    vi.advanceTimersToNextTimer();
    expect(errors[0]).toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
    expect(thenCalls).toBe(1);
    expect(space.len()).toBe(5);
  });

  test.each<[string, unknown]>([['1', 1], ['"yes"', 'yes'], ['undefined', undefined], ['null', null], ['an object', {}]])(
    'a verdict of %s is not a truth value: the tuple is skipped and reported, not deleted', (_name, verdict) => {
      const space = makeSpace(3, 0);
      const errors: Array<{ code?: string; key?: unknown; cause?: { code?: string } }> = [];
      const task = start(space, { isExpired: (t) => ((t[0] as number) === 1 ? verdict : true) as boolean });
      task.on('error', (e) => errors.push(e));
      vi.advanceTimersToNextTimer();
      expect(space.select().map((t) => t[0])).toEqual([1]);
      const skipped = errors.filter((e) => e.code === 'ER_TUPLE_SKIPPED');
      expect(skipped).toHaveLength(1);
      expect(skipped[0].key).toBe(1);
      expect(skipped[0].cause).toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
      expect(task.stats()).toMatchObject({ skipped: 1, expired: 2 });
    });
});

describe('now() must be synchronous', () => {
  test('a now() that returns a promise rolls the chunk back with ER_ILLEGAL_PARAMS and its rejection is handled', async () => {
    const space = makeSpace(10, 0);
    const errors: unknown[] = [];
    const scanErrors: unknown[] = [];
    const completes: number[] = [];
    const task = start(space, {
      now: (() => Promise.reject(new Error('async clock'))) as never,
      onFullScanError: (_t, e) => scanErrors.push(e),
      onFullScanComplete: (t) => completes.push(t.stats().fullScans),
    });
    task.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(3_000);
    await settleMicrotasks();
    expect(rejections.list).toEqual([]);
    expect(space.len()).toBe(10);
    expect(errors[0]).toMatchObject({ code: 'ER_ILLEGAL_PARAMS', message: expect.stringMatching(/now\(\) must be synchronous/) });
    // Each failed chunk ends its pass: onFullScanError, then onFullScanComplete.
    expect(scanErrors.length).toBeGreaterThan(0);
    expect(completes.length).toBe(scanErrors.length);
  });

  test('an async now() deletes nothing with the native TTL check either', async () => {
    const space = makeSpace(10, 0);
    const task = start(space, { itIndex: 'exp', now: (async () => NOW) as never });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(3_000);
    expect(space.len()).toBe(10);
  });
});

describe('onExpired and pass callbacks', () => {
  test('a pass callback that returns a rejected promise does not cause an unhandled rejection', async () => {
    const space = makeSpace(3, 0);
    const task = start(space, { onFullScanComplete: () => Promise.reject(new Error('async hook')) as never });
    await vi.advanceTimersByTimeAsync(2_000);
    await settleMicrotasks();
    expect(rejections.list).toEqual([]);
    expect(task.stats().fullScans).toBeGreaterThan(0);
    expect(space.len()).toBe(0);
  });

  test('the result of a synchronous onExpired is ignored unless it is a thenable', () => {
    const space = makeSpace(4, 0);
    const got: Tuple[][] = [];
    start(space, { onExpired: (tuples) => (got.push(tuples), false) });
    vi.advanceTimersToNextTimer();
    expect(space.len()).toBe(0);
    expect(got.flat().map((t) => t[0])).toEqual([0, 1, 2, 3]);
  });
});
