// The timer set-up every expirationd test file shares: before each test, fake the four timers a
// task schedules with; after it, kill every task and put the real timers back, even if killAll
// throws.
import { afterEach, beforeEach, vi } from 'vitest';
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
