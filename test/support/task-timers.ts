// The timer set-up every expirationd test file shares: before each test, fake the four timers a
// task schedules with; after it, kill every task and put the real timers back, even if killAll
// throws.
import { afterEach, beforeEach, expect, vi } from 'vitest';
import { expirationd } from '../../src/index.js';

export const TASK_TIMERS = ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] as const;

export function useTaskTimers(options: { now?: number } = {}): void {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS], ...(options.now === undefined ? {} : { now: options.now }) });
  });
  afterEach(() => {
    try {
      expirationd.killAll();
    } finally {
      vi.restoreAllMocks();
      vi.useRealTimers();
    }
  });
}

/** Asserts that the task's next chunk runs exactly `ms` fake milliseconds from now, not a millisecond earlier. */
export function expectNextChunkAfter(task: { stats(): { chunks: number } }, ms: number): void {
  const chunks = task.stats().chunks;
  vi.advanceTimersByTime(ms - 1);
  expect(task.stats().chunks, `no chunk ${ms - 1} ms into a ${ms} ms wait`).toBe(chunks);
  vi.advanceTimersByTime(1);
  expect(task.stats().chunks, `a chunk at ${ms} ms`).toBe(chunks + 1);
}
