// processExpired(tuples, task) (issue 11): replaces the delete, as the Lua module's
// process_expired_tuple does. It is handed the expired tuples while they are still stored, inside
// the chunk's transaction, which spans every space: what it writes commits or rolls back with the
// chunk. A throw rolls it back and the chunk isolates the poison tuple as for onExpired. It must be
// synchronous. Whatever it does to the tuples, every pass ends.
import { beforeEach, describe, expect, test, vi } from 'vitest';
import { CappedError, Space, atomic, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live = 0, hash = false, name = 'jobs'): Space {
  const space = new Space(name);
  space.createIndex('primary', { type: hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 100 + id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}

function makeArchive(name = 'archive'): Space {
  const archive = new Space(name);
  archive.createIndex('primary', { parts: [[1, 'unsigned']] });
  return archive;
}

/** Runs timers until `done()` holds (or nothing is left to run). */
function runUntil(done: () => boolean): void {
  for (let i = 0; i < 10_000 && !done() && vi.getTimerCount() > 0; i++) vi.advanceTimersToNextTimer();
}

const ids = (tuples: readonly Tuple[]) => tuples.map((t) => t[0] as number);
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

watchUnhandledRejections();

describe('options', () => {
  const space = () => makeSpace(1);
  test.each([
    ['not a function', { processExpired: 42 }, /processExpired must be a function/],
    ['with onExpired', { processExpired: () => {}, onExpired: () => {} }, /cannot be combined/],
    ['an async function', { processExpired: async () => {} }, /must be synchronous/],
    ['misspelled', { processExpire: () => {} }, /processExpire/],
  ])('%s: ER_ILLEGAL_PARAMS, and no task starts', (_name, options, message) => {
    expect(() => expirationd.start('p', space(), { field: 3, ...(options as TaskOptions) }))
      .toThrow(expect.objectContaining({ code: 'ER_ILLEGAL_PARAMS', message: expect.stringMatching(message) }));
    expect(expirationd.tasks()).toEqual([]);
  });
});

const shapes: Array<[string, TaskOptions, boolean]> = [
  ['TREE full scan', {}, false],
  ['HASH full scan', {}, true],
  ['early break', { itIndex: 'exp' }, false],
  ['isExpired', { isExpired: (t: Tuple, now: number) => (t[2] as number) <= now }, true],
];

describe.each(shapes)('%s', (_name, shape, hash) => {
  let now = NOW;
  beforeEach(() => {
    now = NOW;
  });
  function start(space: Space, options: TaskOptions, name = 'p'): Task {
    return expirationd.start(name, space, { field: 3, scanSize: 4, fullScanDelay: 1, now: () => now, ...shape, ...options });
  }

  test('it is handed the expired tuples while still stored, and the task; nothing is deleted for it', () => {
    const space = makeSpace(10, 3, hash);
    const calls: Array<{ ids: number[]; stored: boolean; task: Task }> = [];
    const expired: number[] = [];
    const task = start(space, {
      processExpired: (tuples, t) => {
        calls.push({ ids: ids(tuples), stored: tuples.every((x) => space.get(x[0] as number) !== undefined), task: t });
      },
    });
    task.on('expired', (tuples: Tuple[]) => expired.push(...ids(tuples)));
    runUntil(() => task.stats().fullScans === 1);
    expect(sorted(calls.flatMap((c) => c.ids))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const c of calls) {
      expect(c.stored).toBe(true);
      expect(c.task).toBe(task);
    }
    expect(space.len()).toBe(13);
    expect(sorted(expired)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(task.stats().expired).toBe(10);
    // Left in place, they come again in the next pass (once each).
    runUntil(() => task.stats().fullScans === 2);
    expect(calls.flatMap((c) => c.ids)).toHaveLength(20);
  });

  test('soft delete: an update that marks the tuples, which stay', () => {
    const space = makeSpace(6, 2, hash);
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) if (t[3] === undefined) space.update(t[0] as number, [['=', 4, 'deleted']]);
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(sorted(ids(space.select().filter((t) => t[3] === 'deleted')))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(space.len()).toBe(8);
  });

  test('re-queue with a new TTL: each tuple once per pass, and again when the new TTL comes', () => {
    const space = makeSpace(6, 2, hash);
    const seen = new Map<number, number>();
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          seen.set(t[0] as number, (seen.get(t[0] as number) ?? 0) + 1);
          space.update(t[0] as number, [['=', 3, now + 60]]);
        }
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect([...seen.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    runUntil(() => task.stats().fullScans === 3);
    expect([...seen.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    now += 60;
    const passes = task.stats().fullScans;
    runUntil(() => task.stats().fullScans === passes + 2);
    expect([...seen.values()]).toEqual([2, 2, 2, 2, 2, 2]);
    expect(space.len()).toBe(8);
  });

  test('delete, and re-insert under the same key: as the default delete, and a new version', () => {
    const space = makeSpace(6, 2, hash);
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          if ((t[0] as number) % 2 === 0) space.delete(t[0] as number);
          else space.replace([t[0], 'again', now + 100]);
        }
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    const byId = (a: unknown[], b: unknown[]) => (a[0] as number) - (b[0] as number);
    expect(space.select().map((t) => [t[0], t[1]]).sort(byId)).toEqual([[1, 'again'], [3, 'again'], [5, 'again'], [6, 'l6'], [7, 'l7']]);
  });

  test('archive and trim: a move to another space in the same transaction', () => {
    const space = makeSpace(12, 2, hash);
    const archive = makeArchive();
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          archive.insert([t[0], t[1]]);
          space.delete(t[0] as number);
        }
        while (archive.len() > 5) archive.delete(archive.index.primary.min()?.[0] as number);
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(sorted(ids(space.select()))).toEqual([12, 13]);
    expect(archive.len()).toBe(5);
    expect(ids(archive.select())).toHaveLength(5);  // the trim keeps the 5 highest ids moved so far
  });

  test('a throw rolls back every space; the poison tuple is skipped, the others are processed', () => {
    const space = makeSpace(8, 1, hash);
    const archive = makeArchive();
    const errors: unknown[] = [];
    const onFullScanError = vi.fn();
    const calls: number[][] = [];
    const task = start(space, {
      scanSize: 8,
      onFullScanError,
      processExpired: (tuples) => {
        calls.push(ids(tuples));
        for (const t of tuples) {
          archive.insert([t[0], 'moved']);
          space.delete(t[0] as number);
          space.insert([1000 + (t[0] as number), 'side effect', NOW + 9999]);
        }
        if (tuples.some((t) => t[0] === 3)) throw new Error('cannot move 3');
      },
    });
    task.on('error', (error) => errors.push(error));
    runUntil(() => task.stats().fullScans === 1);
    expect(ids(archive.select())).toEqual([0, 1, 2, 4, 5, 6, 7]);
    expect(space.get(3)).toEqual([3, 'e3', NOW - 97]);
    expect(space.get(1003)).toBeUndefined();
    expect(space.get(1005)).toBeDefined();
    const skipped = errors.find((e) => e instanceof CappedError && e.code === 'ER_TUPLE_SKIPPED') as CappedError & { key: unknown; cause: unknown };
    expect(skipped.key).toBe(3);
    expect((skipped.cause as Error).message).toBe('cannot move 3');
    expect(skipped.message).toMatch(/processExpired failed on the tuple with key 3/);
    expect(task.stats().skipped).toBe(1);
    expect(task.stats().expired).toBe(7);
    expect(onFullScanError).toHaveBeenCalledTimes(1);
    space.checkIntegrity();
    archive.checkIntegrity();
  });

  test('a promise from a plain function is refused: the call is rolled back everywhere, ER_ILLEGAL_PARAMS', () => {
    const space = makeSpace(4, 1, hash);
    const archive = makeArchive();
    const errors: CappedError[] = [];
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          archive.insert([t[0]]);
          space.delete(t[0] as number);
        }
        return Promise.reject(new Error('async work')) as unknown as void;
      },
    });
    task.on('error', (error: CappedError) => errors.push(error));
    runUntil(() => task.stats().fullScans === 1);
    expect(space.len()).toBe(5);
    expect(archive.len()).toBe(0);
    expect(errors[0]).toMatchObject({ code: 'ER_ILLEGAL_PARAMS', message: expect.stringMatching(/processExpired must be synchronous/) });
    expect(task.stats().expired).toBe(0);
  });

  test('re-entrance: reads, nested atomic() and transaction(), stats() and wake() from inside', () => {
    const space = makeSpace(6, 2, hash);
    const archive = makeArchive();
    const task = start(space, {
      processExpired: (tuples, t) => {
        expect(space.select().length).toBeGreaterThan(0);
        for (const tuple of space.pairs()) {
          expect(tuple).toBeDefined();
          break;
        }
        t.stats();
        t.wake();
        expect(expirationd.tasks()).toEqual(['p']);
        for (const tuple of tuples) {
          // An inner frame that throws undoes only its own changes.
          expect(() => atomic(() => {
            archive.insert([tuple[0], 'inner']);
            throw new Error('inner');
          })).toThrow('inner');
          space.transaction(() => archive.insert([tuple[0], 'kept']));
          space.delete(tuple[0] as number);
        }
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(archive.select().map((t) => t[1])).toEqual(Array(6).fill('kept'));
    expect(space.len()).toBe(2);
    expect(task.lastError).toBeUndefined();
  });

  test('kill() inside: what it did stays, nothing more is processed', () => {
    const space = makeSpace(12, 1, hash);
    const archive = makeArchive();
    let calls = 0;
    const task = start(space, {
      processExpired: (tuples, t) => {
        calls++;
        for (const tuple of tuples) {
          archive.insert([tuple[0]]);
          space.delete(tuple[0] as number);
        }
        t.kill();
      },
    });
    runUntil(() => calls > 0);
    vi.advanceTimersByTime(3_600_000);
    expect(calls).toBe(1);
    expect(task.state).toBe('killed');
    expect(vi.getTimerCount()).toBe(0);
    expect(archive.len()).toBeGreaterThan(0);
    expect(archive.len()).toBeLessThanOrEqual(4);
    expect(space.len()).toBe(13 - archive.len());
  });

  test('restart() inside: what it did stays, and a fresh pass goes on', () => {
    const space = makeSpace(12, 1, hash);
    const archive = makeArchive();
    let restarted = false;
    const task = start(space, {
      processExpired: (tuples, t) => {
        for (const tuple of tuples) {
          archive.insert([tuple[0]]);
          space.delete(tuple[0] as number);
        }
        if (!restarted) {
          restarted = true;
          t.restart();
        }
      },
    });
    runUntil(() => space.len() === 1);
    expect(space.len()).toBe(1);
    expect(archive.len()).toBe(12);
    expect(task.stats().restarts).toBe(2);
    expect(task.state).toBe('running');
  });

  test('dropping the task\'s space inside: the task ends, the other space\'s writes commit, no crash', () => {
    const space = makeSpace(12, 1, hash);
    const archive = makeArchive();
    const task = start(space, {
      processExpired: (tuples) => {
        for (const tuple of tuples) archive.insert([tuple[0]]);
        space.drop();
      },
    });
    runUntil(() => space.dropped);
    expect(task.state).toBe('killed');
    expect(expirationd.tasks()).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(archive.len()).toBeGreaterThan(0);
  });

  test('dropping the other space inside: the task goes on', () => {
    const space = makeSpace(8, 1, hash);
    const archive = makeArchive();
    const task = start(space, {
      processExpired: (tuples) => {
        if (!archive.dropped) {
          archive.insert([tuples[0][0]]);
          archive.drop();
        }
        for (const tuple of tuples) space.delete(tuple[0] as number);
      },
    });
    runUntil(() => space.len() === 1);
    expect(space.len()).toBe(1);
    expect(task.lastError).toBeUndefined();
  });
});

describe('every pass ends, whatever processExpired does to the tuples', () => {
  function start(space: Space, options: TaskOptions): Task {
    return expirationd.start('p', space, {
      field: 3, itIndex: 'exp', scanSize: 3, now: () => NOW, maxCpuShare: 1, ...options,
    });
  }

  test('left in place: each pass hands them once, and the task sleeps between passes', () => {
    const space = makeSpace(7, 2);
    const handed: number[] = [];
    const task = start(space, { processExpired: (tuples) => void handed.push(...ids(tuples)) });
    runUntil(() => task.stats().fullScans === 1);
    expect(sorted(handed)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(vi.getTimerCount()).toBe(1);
    // Between passes: the formula's wait (iterationDelay 1 s here), not a busy loop.
    vi.advanceTimersByTime(10_000);
    expect(task.stats().fullScans).toBeLessThanOrEqual(12);
    expect(handed.length - 7 * task.stats().fullScans).toBeGreaterThanOrEqual(0);
    expect(handed.length - 7 * task.stats().fullScans).toBeLessThan(7);
  });

  test('moved ahead but still expired (a re-queue whose new TTL has passed): once per pass', () => {
    const space = makeSpace(7, 2);
    const handed = new Map<number, number>();
    const task = start(space, {
      processExpired: (tuples) => {
        for (const t of tuples) {
          handed.set(t[0] as number, (handed.get(t[0] as number) ?? 0) + 1);
          space.update(t[0] as number, [['+', 3, 1]]);  // still <= NOW, further on in the TTL index
        }
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(task.stats().fullScans).toBe(1);
    expect([...handed.values()]).toEqual([1, 1, 1, 1, 1, 1, 1]);
    runUntil(() => task.stats().fullScans === 2);
    expect([...handed.values()]).toEqual([2, 2, 2, 2, 2, 2, 2]);
  });

  test('the same with isExpired on the TTL index', () => {
    const space = makeSpace(5, 2);
    let calls = 0;
    const task = start(space, {
      isExpired: (t, now) => (t[2] as number) <= now,
      processExpired: (tuples) => {
        calls += tuples.length;
        for (const t of tuples) space.update(t[0] as number, [['+', 3, 1]]);
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(calls).toBe(5);
  });

  test('re-inserted under new keys, still expired: the pass ends, and the next one takes them', () => {
    const space = makeSpace(5, 2);
    let next = 100;
    const task = start(space, {
      scanSize: 1,  // each chunk would meet the tuple the last one wrote just ahead of the cursor
      processExpired: (tuples) => {
        for (const t of tuples) {
          space.delete(t[0] as number);
          space.insert([next++, 'again', t[2]]);
        }
      },
    });
    runUntil(() => task.stats().fullScans === 1);
    expect(task.stats().fullScans).toBe(1);
    expect(space.len()).toBe(7);
  });

  test('tuples changed since the scan are not handed (a bisected chunk, and isExpired)', () => {
    const space = makeSpace(4, 1);
    const calls: number[][] = [];
    const task = start(space, {
      scanSize: 10,
      processExpired: (tuples) => {
        calls.push(ids(tuples));
        if (tuples.length === 2 && tuples[0][0] === 0) space.delete(2);  // the other half's tuple
        if (tuples.some((t) => t[0] === 3)) throw new Error('poison');
      },
    });
    task.on('error', () => {});
    runUntil(() => task.stats().fullScans === 1);
    expect(calls).toEqual([[0, 1, 2, 3], [0, 1], [3]]);

    const other = makeSpace(3, 1, false, 'other');
    const handed: number[] = [];
    expirationd.start('q', other, {
      field: 3, now: () => NOW, scanSize: 10,
      isExpired: (t, now) => {
        if (t[0] === 0) other.replace([1, 'changed', NOW - 1]);
        return (t[2] as number) <= now;
      },
      processExpired: (tuples) => void handed.push(...ids(tuples)),
    });
    vi.advanceTimersByTime(0);
    expect(handed).toEqual([0, 2]);
  });
});
