// atomic(fn) and space.transaction(fn): one transaction over every space of this thread, and the
// expiry chunk's transaction spanning the spaces a synchronous onExpired writes to.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { codeOf } from './support/errors.js';

function space(name: string, rows: Tuple[] = []): Space {
  const s = new Space(name);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.createIndex('v', { unique: false, parts: [[2, 'string']] });
  for (const t of rows) s.insert(t);
  return s;
}

class Boom extends Error {}

const byId = (a: Tuple, b: Tuple): number => (a[0] as number) - (b[0] as number);

describe('atomic', () => {
  test('a throw undoes the changes to every space; otherwise all commit', () => {
    const delayed = space('delayed', [[1, 'job1'], [2, 'job2']]);
    const queue = space('queue');
    expect(() => atomic(() => {
      delayed.delete(1);
      queue.insert([1, 'job1']);
      queue.update(1, [['=', 2, 'running']]);
      queue.upsert([2, 'x'], []);
      throw new Boom();
    })).toThrow(Boom);
    expect(delayed.select()).toEqual([[1, 'job1'], [2, 'job2']]);
    expect(queue.len()).toBe(0);
    expect(atomic(() => {
      delayed.delete(1);
      queue.insert([1, 'job1']);
      return 'done';
    })).toBe('done');
    expect(delayed.select()).toEqual([[2, 'job2']]);
    expect(queue.select()).toEqual([[1, 'job1']]);
    delayed.checkIntegrity();
    queue.checkIntegrity();
  });

  test('space.transaction(fn) spans every space too', () => {
    const a = space('a', [[1, 'x']]);
    const b = space('b');
    expect(() => a.transaction(() => {
      a.truncate();
      b.insertMany([[1, 'y'], [2, 'z']]);
      b.index.pk.update(1, [['=', 2, 'w']]);
      throw new Boom();
    })).toThrow(Boom);
    expect(a.select()).toEqual([[1, 'x']]);
    expect(b.len()).toBe(0);
  });

  test('nesting: an inner frame that throws undoes only its own changes', () => {
    const a = space('a');
    const b = space('b');
    atomic(() => {
      a.insert([1, 'outer']);
      expect(() => atomic(() => {
        a.insert([2, 'inner']);
        b.insert([1, 'inner']);
        throw new Boom();
      })).toThrow(Boom);
      b.transaction(() => b.insert([2, 'inner-ok']));
      atomic(() => b.replace([3, 'inner-ok']));
    });
    expect(a.select()).toEqual([[1, 'outer']]);
    expect(b.select()).toEqual([[2, 'inner-ok'], [3, 'inner-ok']]);
    expect(() => atomic(() => {
      atomic(() => {
        a.delete(1);
        b.delete(2);
      });
      b.insert([9, 'late']);
      throw new Boom();
    })).toThrow(Boom);
    expect(a.select()).toEqual([[1, 'outer']]);
    expect(b.select()).toEqual([[2, 'inner-ok'], [3, 'inner-ok']]);
  });

  test('a space dropped inside fn is skipped, without a second error', () => {
    const a = space('a', [[1, 'x']]);
    const b = space('b', [[1, 'x']]);
    expect(() => atomic(() => {
      a.insert([2, 'y']);
      b.insert([2, 'y']);
      a.drop();
      throw new Boom();
    })).toThrow(Boom);
    expect(a.dropped).toBe(true);
    expect(b.select()).toEqual([[1, 'x']]);
    atomic(() => {
      b.insert([3, 'z']);
      b.drop();
    });
    expect(codeOf(() => b.len())).toBe('ER_SPACE_DROPPED');
    // Writing to a dropped space inside atomic throws the usual error.
    expect(codeOf(() => atomic(() => b.insert([4, 'w'])))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => b.transaction(() => 1))).toBe('ER_SPACE_DROPPED');
  });

  test('a space created inside fn joins on its first write (its tuples are undone)', () => {
    let created: Space | undefined;
    expect(() => atomic(() => {
      created = space('new');
      created.insert([1, 'x']);
      throw new Boom();
    })).toThrow(Boom);
    expect(created?.len()).toBe(0);
    created?.insert([1, 'y']);
    expect(created?.select()).toEqual([[1, 'y']]);
  });

  test('refuses a promise (changes undone) and a non-function', () => {
    const a = space('a');
    expect(codeOf(() => atomic((async () => a.insert([1, 'x'])) as () => unknown))).toBe('ER_TRANSACTION');
    expect(a.len()).toBe(0);
    expect(codeOf(() => atomic('x' as never))).toBe('ER_ILLEGAL_PARAMS');
    // The frames are closed: a later write commits at once.
    a.insert([2, 'y']);
    expect(() => atomic(() => { throw new Boom(); })).toThrow(Boom);
    expect(a.select()).toEqual([[2, 'y']]);
  });

  test('createIndex inside space.transaction() is refused (the space joins at once); outside it works', () => {
    const a = space('a');
    expect(codeOf(() => a.transaction(() => a.createIndex('x', { parts: [[2, 'string']] })))).toBe('ER_TRANSACTION');
    expect(a.createIndex('x', { unique: false, parts: [[2, 'string']] }).name).toBe('x');
  });
});

describe('the expiry chunk spans spaces', () => {
  useTaskTimers();
  const NOW = 1000;
  const tasks: Task[] = [];
  afterEach(() => {
    for (const t of tasks.splice(0)) t.kill();
  });

  function setup(options: TaskOptions): { live: Space; archive: Space; task: Task } {
    const live = space('live');
    for (let id = 0; id < 10; id++) live.insert([id, `v${id}`, NOW - 1]);
    for (let id = 10; id < 12; id++) live.insert([id, `v${id}`, NOW + 100]);
    const archive = space('archive');
    const task = expirationd.start('spans', live, { field: 3, scanSize: 4, fullScanDelay: 60, now: () => NOW, ...options });
    task.on('error', () => {});
    tasks.push(task);
    return { live, archive, task };
  }

  function runPass(task: Task): void {
    const target = task.stats().fullScans + 1;
    for (let i = 0; i < 10_000 && task.stats().fullScans < target; i++) vi.advanceTimersToNextTimer();
    expect(task.stats().fullScans).toBe(target);
  }

  for (const how of ['native', 'isExpired'] as const) {
    const extra: TaskOptions = how === 'isExpired' ? { isExpired: (t: Tuple, now: number) => (t[2] as number) <= now } : {};

    test(`what onExpired writes elsewhere commits with the chunk (${how})`, () => {
      let archive: Space | undefined;
      const { live, task, archive: a } = setup({
        ...extra,
        onExpired: (tuples) => { for (const t of tuples) archive?.insert([t[0], 'archived']); },
      });
      archive = a;
      runPass(task);
      expect(live.select().map((t) => t[0])).toEqual([10, 11]);
      expect(a.select().map((t) => t[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    test(`a throwing onExpired rolls back its writes to other spaces with the chunk (${how})`, () => {
      let archive: Space | undefined;
      const { live, task, archive: a } = setup({
        ...extra,
        onExpired: (tuples) => {
          for (const t of tuples) archive?.insert([t[0], 'archived']);  // a retry would be a duplicate if not undone
          if (tuples.some((t) => t[0] === 3)) throw new Boom('poison');
        },
      });
      archive = a;
      runPass(task);
      // Tuple 3 is skipped (poison); every other expired tuple is deleted and archived once.
      expect(live.select().map((t) => t[0])).toEqual([3, 10, 11]);
      expect(a.select().sort(byId).map((t) => t[0])).toEqual([0, 1, 2, 4, 5, 6, 7, 8, 9]);
      a.checkIntegrity();
    });
  }

  test('an onExpired that always throws leaves every space unchanged', () => {
    let archive: Space | undefined;
    const { live, task, archive: a } = setup({
      onExpired: (tuples) => {
        archive?.insert([tuples[0][0], 'x']);
        archive?.update(tuples[0][0] as number, [['=', 2, 'y']]);
        throw new Boom();
      },
    });
    archive = a;
    runPass(task);
    expect(live.len()).toBe(12);
    expect(a.len()).toBe(0);
  });
});
