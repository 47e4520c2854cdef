// Shared set-up of the issue 15 tests (test/expirationd-keepup-*.test.ts): fake task timers and a
// fake Date (so a task with `now: () => Date.now()` and unit 'ms' sees the fake clock move with the
// timers), an injected CPU clock for the daemon's CPU accounting (cpuClock in
// src/expirationd/scheduler.ts), and the fake Date as the clock of a pending wake-up's time left
// (wakeClock), all put back after each test.
import { afterEach, beforeEach, vi } from 'vitest';
import { expirationd } from '../../src/index.js';
import { cpuClock, wakeClock } from '../../src/expirationd/scheduler.js';
import { TASK_TIMERS } from './task-timers.js';

export const BASE = 1_000_000_000;

export const fakeCpu = { ms: 0 };

export function useKeepupTimers(): void {
  const real = cpuClock.now;
  const realWake = wakeClock.now;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS, 'Date'], now: BASE });
    fakeCpu.ms = 0;
    cpuClock.now = () => fakeCpu.ms;
    wakeClock.now = () => Date.now();  // the fake Date moves with the fake timers
  });
  afterEach(() => {
    try {
      expirationd.killAll();
    } finally {
      cpuClock.now = real;
      wakeClock.now = realWake;
      vi.restoreAllMocks();
      vi.useRealTimers();
    }
  });
}

/**
 * Runs a chain of immediates (a backlog or a burst) on the fake clock. The fake timers give a
 * 0 ms timer created while timers run a delay of 1 ms (so a chain cannot loop forever inside one
 * tick): each link of the chain takes 1 fake ms, and so does the step that finds the chain ended.
 * Steps 1 ms at a time until a step runs no chunk; callers time what follows from the last chunk
 * (lastChunkAt), not from Date.now().
 */
export function runNow(task: { stats(): { chunks: number } }): void {
  vi.advanceTimersByTime(0);
  for (let i = 0; i < 100_000; i++) {
    const chunks = task.stats().chunks;
    vi.advanceTimersByTime(1);
    if (task.stats().chunks === chunks) return;
  }
  throw new Error('runNow: still running chunks after 100000 steps');
}

/** Advances the fake clock to `at` (ms since the epoch, as Date.now()). */
export function advanceTo(at: number): void {
  vi.advanceTimersByTime(at - Date.now());
}
