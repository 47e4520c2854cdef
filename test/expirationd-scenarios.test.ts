// The expiration daemon end to end: the seed's two scenarios (non-indexed and indexed) and what
// "expired" means (the TTL boundary, non-numeric TTLs, float64-encoded TTLs).
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type TaskOptions, type TaskStats, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const T0 = 1_700_000_000;

function ids(space: Space): number[] {
  return space.select().map((t) => t[0] as number);
}

describe('the seed scenarios', () => {
  test('non-indexed: every tuple {id, email, now+60} is gone after 60 s', () => {
    let clock = T0;
    const space = new Space('tester');
    space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
    for (let id = 0; id < 10; id++) space.insert([id, `user${id}@example.com`, clock + 60]);

    // Defaults: each pass is one chunk, followed by chunkDelay (1 s) + fullScanDelay (0).
    expirationd.start('clean_all', space, { field: 3, now: () => clock });
    for (let s = 1; s < 60; s++) {
      clock = T0 + s;
      vi.advanceTimersByTime(1000);
    }
    expect(space.len()).toBe(10);

    clock = T0 + 60;
    vi.advanceTimersByTime(1000);
    expect(space.len()).toBe(0);
    expect(expirationd.stats('clean_all')).toMatchObject({ expired: 10 });
  });

  test('indexed: tuples 3–5 remain at 60 s and the pass that expired 0–2 checked exactly 4 tuples', () => {
    let clock = T0;
    const space = new Space('tester');
    space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
    space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
    for (let id = 0; id < 3; id++) space.insert([id, `user${id}@example.com`, clock + 60]);

    const task = expirationd.start('clean_indexed', space, {
      rmIndex: 'primary', itIndex: 'exp', field: 3, now: () => clock,
    });
    const passes: Array<{ checked: number; expired: number }> = [];
    let last: TaskStats = task.stats();
    task.on('fullScan', (stats: TaskStats) => {
      passes.push({ checked: stats.checked - last.checked, expired: stats.expired - last.expired });
      last = stats;
    });

    for (let s = 1; s <= 60; s++) {
      clock = T0 + s;
      if (s === 30) for (let id = 3; id < 6; id++) space.insert([id, `user${id}@example.com`, clock + 60]);
      vi.advanceTimersByTime(1000);
      if (s === 59) expect(ids(space)).toEqual([0, 1, 2, 3, 4, 5]);
    }

    expect(ids(space)).toEqual([3, 4, 5]);
    const expiring = passes.filter((p) => p.expired > 0);
    expect(expiring).toEqual([{ checked: 4, expired: 3 }]);
    // Every other pass stopped at the first (live) tuple.
    expect(passes.filter((p) => p.expired === 0).every((p) => p.checked === 1)).toBe(true);
    space.checkIntegrity();
  });
});

describe('what expired means', () => {
  function run(space: Space, options: TaskOptions): void {
    expirationd.start('boundary', space, { fullScanDelay: 1000, ...options });
    vi.advanceTimersByTime(10_000);
  }

  test.each([
    ['non-indexed', false],
    ['indexed', true],
  ])('%s: a TTL equal to now expires and now+1 does not', (_name, indexed) => {
    const now = 5000;
    const space = new Space('boundary');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    if (indexed) space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
    space.insertMany([[1, now - 1], [2, now], [3, now + 1], [4, now + 2]]);
    run(space, { field: 2, itIndex: indexed ? 'exp' : undefined, now: () => now });
    expect(ids(space)).toEqual([3, 4]);
  });

  test('a fractional TTL in a number field expires exactly at its value', () => {
    const now = 10.5;
    const space = new Space('fractions');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    space.insertMany([[1, 10.25], [2, 10.5], [3, 10.500001], [4, 11]]);
    run(space, { field: 2, itIndex: 'exp', now: () => now });
    expect(ids(space)).toEqual([3, 4]);
  });

  test('non-numeric TTLs (strings, nil, missing, arrays, maps, booleans) are skipped and do not end a non-indexed pass', () => {
    const now = 100;
    const space = new Space('mixed');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    const odd: unknown[] = ['50', null, undefined, [1], { ttl: 1 }, true, false, 'x'];
    const tuples: Tuple[] = [];
    for (let id = 0; id < 40; id++) {
      if (id % 5 === 1) tuples.push([id, 'odd', odd[Math.floor(id / 5)]]);
      else if (id % 5 === 3) tuples.push([id, 'missing']);
      else tuples.push([id, 'num', id % 2 === 0 ? now - id : now + id]);
    }
    space.insertMany(tuples);
    const task = expirationd.start('mixed', space, { field: 3, scanSize: 3, fullScanDelay: 1000, now: () => now });
    vi.advanceTimersByTime(100_000);

    const expected = tuples.filter((t) => !(typeof t[2] === 'number' && t[2] <= now)).map((t) => t[0]);
    expect(ids(space)).toEqual(expected);
    expect(task.stats()).toMatchObject({ fullScans: 1, checked: 40, expired: 40 - expected.length });
  });

  test('NaN, ±Infinity and 64-bit integer TTLs compare by value (NaN is never <= now)', () => {
    const space = new Space('numbers');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.insertMany([
      [1, -5], [2, 18446744073709551615n], [3, Number.NaN], [4, Infinity], [5, -Infinity],
      [6, 2 ** 53 + 2], [7, -(2 ** 63)], [8, 9007199254740993n], [9, 0], [10, -0], [11, 0.5],
    ]);
    run(space, { field: 2, now: () => 0 });
    expect(ids(space)).toEqual([2, 3, 4, 6, 8, 11]);
    expirationd.kill('boundary');
    run(space, { field: 2, now: () => 2 ** 53 }); // 2^53 + 1 (exact as a uint64) is still ahead
    expect(ids(space)).toEqual([2, 3, 4, 6, 8]);
  });

  test("Date.now() TTLs (float64 in MessagePack) expire correctly in an 'unsigned' field with unit 'ms'", () => {
    const base = 1_750_000_000_123; // above 2^32: msgpackr writes it as float64
    let clock = base - 1;
    for (const indexed of [false, true]) {
      const space = new Space(`ms-${indexed}`);
      space.createIndex('primary', { parts: [[1, 'unsigned']] });
      if (indexed) space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
      space.insertMany([[1, 'a', base - 1000], [2, 'b', base], [3, 'c', base + 1], [4, 'd', base + 60_000]]);
      clock = base - 1;
      const task = expirationd.start(`ms-${indexed}`, space, {
        field: 3, unit: 'ms', itIndex: indexed ? 'exp' : undefined, now: () => clock,
      });
      // One timer, one pass (the delays are in seconds whatever the unit).
      vi.advanceTimersToNextTimer();
      expect(ids(space)).toEqual([2, 3, 4]);
      clock = base;
      vi.advanceTimersToNextTimer();
      expect(ids(space)).toEqual([3, 4]);
      clock = base + 1;
      vi.advanceTimersToNextTimer();
      expect(ids(space)).toEqual([4]);
      task.kill();
    }
  });
});
