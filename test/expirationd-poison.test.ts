// Poison tuples (issue 10): when a chunk fails because onExpired throws or rejects, it is retried
// in halves until the failing tuple is alone; every other expired tuple is delivered and deleted;
// the poison tuple is skipped for the rest of the pass, reported through 'error' with its key,
// and counted in stats().skipped. An isExpired that throws on one tuple skips that tuple alone.
// Each pass completes: onFullScanError once per failed pass, then onFullScanComplete. Repeated
// failures back off, so a broken callback never becomes a busy loop.
import { describe, expect, test, vi } from 'vitest';
import { CappedError, Space, expirationd, type Task, type TaskOptions, type TaskStats, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;
const POISON = 37;

function makeSpace(expired: number, live = 0, hash = false): Space {
  const space = new Space('poison');
  space.createIndex('primary', { type: hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 1000 + id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}

const hasPoison = (tuples: Tuple[]) => tuples.some((t) => t[0] === POISON);
const ttl = (t: Tuple, now: number) => (t[2] as number) <= now;

function runPasses(task: Task, count: number): void {
  const target = task.stats().fullScans + count;
  for (let i = 0; i < 10_000 && task.stats().fullScans < target; i++) vi.advanceTimersToNextTimer();
  expect(task.stats().fullScans).toBe(target);
}

const shapes: Array<[string, TaskOptions, boolean]> = [
  ['TREE full scan', { field: 3 }, false],
  ['HASH full scan', { field: 3 }, true],
  ['early break', { field: 3, itIndex: 'exp' }, false],
  ['HASH with isExpired', { isExpired: ttl }, true],
];

describe.each(shapes)('%s', (_name, shape, hash) => {
  test.each([
    ['throws', (tuples: Tuple[]) => { if (hasPoison(tuples)) throw new Error('poison'); }],
    ['rejects', async (tuples: Tuple[]) => { if (hasPoison(tuples)) throw new Error('poison'); }],
  ])('one tuple on which onExpired %s: every other expired tuple goes, the poison is skipped and reported with its key', async (_how, onExpired) => {
    const space = makeSpace(100, 20, hash);
    const delivered = new Set<number>();
    const log: unknown[] = [];
    const errors: unknown[] = [];
    const task = expirationd.start('poison', space, {
      ...shape, scanSize: 16, fullScanDelay: 60, now: () => NOW,
      onExpired: (tuples) => {
        const r = onExpired(tuples);
        if (!hasPoison(tuples)) for (const t of tuples) delivered.add(t[0] as number);
        return r;
      },
      onFullScanSuccess: () => log.push('success'),
      onFullScanError: (_t, e) => log.push(['error', (e as Error).message]),
      onFullScanComplete: () => log.push('complete'),
    });
    task.on('error', (e) => errors.push(e));
    // Issue 15: in backlog mode the early-break chunks follow each other on setImmediate, so the
    // async delivery that ends the pass can settle after advanceTimersToNextTimerAsync returned;
    // the zero-time step lets it settle before the loop checks fullScans (else the next step
    // would jump to the following pass).
    for (let i = 0; i < 1000 && task.stats().fullScans < 1; i++) {
      await vi.advanceTimersToNextTimerAsync();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(task.stats().fullScans).toBe(1);
    expect(space.select().map((t) => t[0]).sort((a, b) => (a as number) - (b as number)))
      .toEqual([POISON, ...Array.from({ length: 20 }, (_, i) => 100 + i)]);
    expect(delivered.size).toBe(99);
    expect(delivered.has(POISON)).toBe(false);
    const skipped = errors.filter((e) => e instanceof CappedError && e.code === 'ER_TUPLE_SKIPPED') as CappedError[];
    expect(skipped).toHaveLength(1);
    expect(skipped[0].key).toBe(POISON);
    expect(skipped[0].message).toContain(`key ${POISON}`);
    expect((skipped[0] as Error & { cause?: Error }).cause?.message).toBe('poison');
    expect(task.stats()).toMatchObject({ skipped: 1, expired: 99 });
    // onFullScanError once for the pass (not per chunk or per retry), then onFullScanComplete.
    expect(log).toEqual([['error', 'poison'], 'complete']);
    space.checkIntegrity();
  });

  test('an isExpired that throws on one tuple skips that tuple alone', () => {
    const space = makeSpace(50, 5, hash);
    const errors: unknown[] = [];
    const task = expirationd.start('poison', space, {
      ...shape, scanSize: 8, fullScanDelay: 60, now: () => NOW,
      isExpired: (t, now) => {
        if (t[0] === POISON) throw new Error('bad tuple');
        return ttl(t, now);
      },
    });
    task.on('error', (e) => errors.push(e));
    runPasses(task, 1);
    expect(space.select().map((t) => t[0]).sort((a, b) => (a as number) - (b as number))).toEqual([POISON, 50, 51, 52, 53, 54]);
    expect(errors.filter((e) => (e as CappedError).code === 'ER_TUPLE_SKIPPED').map((e) => (e as CappedError).key)).toEqual([POISON]);
    expect(task.stats().skipped).toBe(1);
  });

  test('the poison tuple is offered again in the next pass, and goes once it is no longer poison', () => {
    const space = makeSpace(20, 0, hash);
    let poisoned = true;
    const task = expirationd.start('poison', space, {
      ...shape, scanSize: 8, fullScanDelay: 60, now: () => NOW,
      onExpired: (tuples) => {
        if (poisoned && tuples.some((t) => t[0] === 7)) throw new Error('poison');
      },
    });
    task.on('error', () => {});
    runPasses(task, 1);
    expect(space.select().map((t) => t[0])).toEqual([7]);
    runPasses(task, 1);
    expect(space.len()).toBe(1);
    expect(task.stats().skipped).toBe(2);
    poisoned = false;
    runPasses(task, 1);
    expect(space.len()).toBe(0);
  });
});

describe('pass completion', () => {
  test('an isExpired that always throws: each pass completes with onFullScanError then onFullScanComplete, and fullScans counts them', () => {
    const space = makeSpace(30);
    const log: string[] = [];
    const task = expirationd.start('poison', space, {
      scanSize: 10, fullScanDelay: 1, now: () => NOW,
      isExpired: () => {
        throw new Error('always');
      },
      onFullScanStart: () => log.push('start'),
      onFullScanSuccess: () => log.push('success'),
      onFullScanError: () => log.push('error'),
      onFullScanComplete: () => log.push('complete'),
    });
    task.on('error', () => {});
    runPasses(task, 3);
    expect(log).toEqual(['start', 'error', 'complete', 'start', 'error', 'complete', 'start', 'error', 'complete']);
    expect(task.stats()).toMatchObject({ fullScans: 3, skipped: 90, expired: 0 });
    expect(space.len()).toBe(30);
  });

  test('a clean pass after a failed one calls onFullScanSuccess again', () => {
    const space = makeSpace(10);
    let failing = true;
    const log: string[] = [];
    const task = expirationd.start('poison', space, {
      field: 3, scanSize: 4, fullScanDelay: 1, now: () => NOW,
      onExpired: (tuples) => {
        if (failing && tuples.some((t) => t[0] === 3)) throw new Error('once');
      },
      onFullScanSuccess: () => log.push('success'),
      onFullScanError: () => log.push('error'),
    });
    task.on('error', () => {});
    runPasses(task, 1);
    failing = false;
    runPasses(task, 2);
    expect(log).toEqual(['error', 'success', 'success']);
    expect(space.len()).toBe(0);
  });
});

describe('backoff', () => {
  test('an always-throwing isExpired over 1,000 tuples for 1 s runs a bounded number of chunks, and restarts stays small', () => {
    const space = makeSpace(1000);
    const passes: TaskStats[] = [];
    const task = expirationd.start('poison', space, {
      scanSize: 100, scanTime: 0.001, iterationDelay: 0, fullScanDelay: 0, now: () => NOW,
      isExpired: () => {
        throw new Error('always');
      },
    });
    task.on('error', () => {});
    task.on('fullScan', (s: TaskStats) => passes.push(s));
    vi.advanceTimersByTime(1000);
    const s = task.stats();
    // Without backoff this pacing (chunkDelay ~0.1 µs, an immediate) runs thousands of chunks a
    // second. With it the waits double from 1 ms up to 1 s: at most ~11 chunks in the first second.
    expect(s.chunks).toBeGreaterThan(3);
    expect(s.chunks).toBeLessThanOrEqual(12);
    expect(s.restarts).toBe(1 + s.chunks);
    expect(s.skipped).toBe(s.checked);
    // Later the wait stays at the 1 s cap: about one chunk (one restart) a second.
    vi.advanceTimersByTime(20_000);
    const later = task.stats();
    expect(later.chunks - s.chunks).toBeGreaterThanOrEqual(18);
    expect(later.chunks - s.chunks).toBeLessThanOrEqual(21);
    expect(later.fullScans).toBeGreaterThanOrEqual(2);
    expect(passes.length).toBe(later.fullScans);
    expect(space.len()).toBe(1000);
  });

  test('a clean chunk resets the backoff to the usual pacing', () => {
    const space = makeSpace(0, 50);
    let failing = true;
    const task = expirationd.start('poison', space, {
      field: 3, scanSize: 10, scanTime: 0.001, iterationDelay: 0, fullScanDelay: 5, now: () => NOW,
      isExpired: (t, now) => {
        if (failing) throw new Error('broken');
        return ttl(t, now);
      },
    });
    task.on('error', () => {});
    vi.advanceTimersByTime(0);
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      const chunks = task.stats().chunks;
      let waited = 0;
      while (task.stats().chunks === chunks && waited < 10_000) {
        vi.advanceTimersByTime(1);
        waited++;
      }
      waits.push(waited);
    }
    // Doubling waits: 2, 4, 8, 16, 32, 64 ms (a pass of 5 chunks ends with its fullScanDelay).
    expect(waits.slice(0, 4)).toEqual([2, 4, 8, 16]);
    failing = false;
    const chunks = task.stats().chunks;
    vi.advanceTimersByTime(6_000);
    // Clean chunks are back at the usual (immediate) pacing: a whole pass within the fullScanDelay.
    expect(task.stats().chunks - chunks).toBeGreaterThanOrEqual(5);
    expect(task.stats().restarts).toBe(1 + 7);
  });
});
