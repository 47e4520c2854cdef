// The CPU window behind maxCpuShare (scheduler.ts) keeps only the chunks of its last
// CPU_WINDOW_MS, whether or not anyone asks how much CPU they used: a full-scan task records every
// chunk but never asks, and must not keep one entry per chunk for as long as it runs.
import { describe, expect, test } from 'vitest';
import { CPU_WINDOW_MS, CpuWindow } from '../src/expirationd/scheduler.js';

describe('CpuWindow', () => {
  test('add() alone forgets the chunks that left the window', () => {
    const window = new CpuWindow();
    for (let t = 1; t <= 100_000; t++) window.add(t, 0.25);  // one chunk a millisecond, 100 s
    expect(window.size).toBeLessThanOrEqual(CPU_WINDOW_MS);
    expect(window.used(100_000)).toBeCloseTo(0.25 * CPU_WINDOW_MS, 6);
  });

  test('used() counts a chunk whole while its end is inside the window', () => {
    const window = new CpuWindow();
    window.add(10, 3);
    window.add(500, 4);
    expect(window.used(600)).toBe(7);
    expect(window.used(10 + CPU_WINDOW_MS - 1)).toBe(7);
    expect(window.used(10 + CPU_WINDOW_MS)).toBe(4);
    expect(window.used(500 + CPU_WINDOW_MS)).toBe(0);
    expect(window.size).toBe(0);
  });
});
