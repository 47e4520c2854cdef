// Early break: a task walking a TTL TREE index (itIndex !== rmIndex, first part = the TTL field)
// ends each pass at the first live tuple, and the next pass starts again at the smallest TTL.
// (Tarantool's C module keeps its cursor after the break, so each later chunk reads one tuple and
// a tuple inserted behind the cursor waits for the walk to wrap; these tests pin that bug down.)
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type TaskStats } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

interface Pass {
  checked: number;
  expired: number;
  chunks: number;
}

/** Records, for every pass, what it checked, expired and how many chunks it took. */
function recordPasses(task: Task): Pass[] {
  const passes: Pass[] = [];
  let last = task.stats();
  task.on('fullScan', (stats: TaskStats) => {
    passes.push({
      checked: stats.checked - last.checked,
      expired: stats.expired - last.expired,
      chunks: stats.chunks - last.chunks,
    });
    last = stats;
  });
  return passes;
}

/** Runs timers until the task has completed `count` more passes. */
function runPasses(task: Task, count: number): void {
  const target = task.stats().fullScans + count;
  for (let i = 0; i < 10_000 && task.stats().fullScans < target; i++) vi.advanceTimersToNextTimer();
  expect(task.stats().fullScans).toBe(target);
}

function ttlSpace(name = 'ttl'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  return space;
}

function ids(space: Space): number[] {
  return space.select().map((t) => t[0] as number);
}

const withField = (extra: TaskOptions = {}): TaskOptions => ({
  rmIndex: 'primary', itIndex: 'exp', field: 3, scanSize: 3, fullScanDelay: 1, ...extra,
});

describe.each([
  ['the native check', {}],
  ['an isExpired predicate', { isExpired: (t: unknown[], now: number) => (t[2] as number) <= now }],
])('early break with %s', (_name, predicate: TaskOptions) => {
  test('early break restarts the next pass at the smallest TTL', () => {
    let clock = 135;
    const space = ttlSpace();
    for (let id = 1; id <= 10; id++) space.insert([id, `u${id}`, 100 + 10 * id]); // TTLs 110..200
    const task = expirationd.start('eb', space, withField({ now: () => clock, ...predicate }));
    expect(task.earlyBreak).toBe(true);
    const passes = recordPasses(task);

    runPasses(task, 1);
    expect(ids(space)).toEqual([4, 5, 6, 7, 8, 9, 10]);
    expect(passes).toEqual([{ checked: 4, expired: 3, chunks: 2 }]);

    // Inserted after the break, behind where the previous pass stopped.
    space.insert([50, 'late', 105]);
    space.insert([51, 'late', 135]);
    runPasses(task, 1);
    expect(ids(space)).toEqual([4, 5, 6, 7, 8, 9, 10]);
    expect(passes[1]).toEqual({ checked: 3, expired: 2, chunks: 1 });

    // Nothing expires: every pass reads one tuple.
    runPasses(task, 3);
    expect(passes.slice(2)).toEqual(Array(3).fill({ checked: 1, expired: 0, chunks: 1 }));

    clock = 175;
    runPasses(task, 1);
    expect(ids(space)).toEqual([8, 9, 10]);
    expect(passes[5]).toEqual({ checked: 5, expired: 4, chunks: 2 });
    for (const pass of passes) expect(pass.checked).toBe(pass.expired + 1);
    space.checkIntegrity();
  });

  test('a tuple whose TTL is lowered by replace() after the break expires in the next pass', () => {
    const clock = 130;
    const space = ttlSpace();
    for (let id = 1; id <= 6; id++) space.insert([id, `u${id}`, 100 + 20 * id]); // 120..220
    const task = expirationd.start('eb', space, withField({ now: () => clock, ...predicate }));
    const passes = recordPasses(task);
    runPasses(task, 1);
    expect(ids(space)).toEqual([2, 3, 4, 5, 6]);
    space.replace([6, 'u6', 10]);
    runPasses(task, 1);
    expect(ids(space)).toEqual([2, 3, 4, 5]);
    expect(passes).toEqual([{ checked: 2, expired: 1, chunks: 1 }, { checked: 2, expired: 1, chunks: 1 }]);
  });

  test('a pass in which everything is expired ends at the end of the index', () => {
    const space = ttlSpace();
    for (let id = 1; id <= 7; id++) space.insert([id, `u${id}`, id]);
    const task = expirationd.start('eb', space, withField({ now: () => 100, ...predicate }));
    const passes = recordPasses(task);
    runPasses(task, 2);
    expect(space.len()).toBe(0);
    expect(passes[0]).toMatchObject({ checked: 7, expired: 7 });
    expect(passes[1]).toMatchObject({ checked: 0, expired: 0, chunks: 1 });
  });

  test('the first live tuple ends the pass without waiting for the rest of the index', () => {
    const space = ttlSpace();
    for (let id = 1; id <= 500; id++) space.insert([id, `u${id}`, 1000 + id]);
    const task = expirationd.start('eb', space, withField({ now: () => 1000, ...predicate }));
    const passes = recordPasses(task);
    runPasses(task, 3);
    expect(passes).toEqual(Array(3).fill({ checked: 1, expired: 0, chunks: 1 }));
    expect(space.len()).toBe(500);
  });
});

describe('when early break applies', () => {
  function space3(): Space {
    const space = new Space('which');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    space.createIndex('exp_id', { parts: [[3, 'unsigned'], [1, 'unsigned']] });
    space.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    for (let id = 1; id <= 9; id++) space.insert([id, `u${id}`, id % 2 === 0 ? 10 : 1000]);
    return space;
  }

  test('a TTL TREE with more parts after the TTL field also breaks early', () => {
    const space = space3();
    const task = expirationd.start('eb', space, { itIndex: 'exp_id', field: 3, fullScanDelay: 1, now: () => 100 });
    expect(task.earlyBreak).toBe(true);
    const passes = recordPasses(task);
    runPasses(task, 1);
    expect(passes[0]).toEqual({ checked: 5, expired: 4, chunks: 1 });
    expect(ids(space)).toEqual([1, 3, 5, 7, 9]);
  });

  test('a HASH primary as rmIndex with a TTL TREE as itIndex breaks early and deletes through the HASH', () => {
    const space = new Space('hash-rm');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'string']] });
    space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    for (let i = 0; i < 20; i++) space.insert([`k${i}`, i + 0.5]);
    const task = expirationd.start('eb', space, { itIndex: 'exp', field: 2, scanSize: 4, fullScanDelay: 1, now: () => 10 });
    expect(task.earlyBreak).toBe(true);
    const passes = recordPasses(task);
    runPasses(task, 1);
    expect(passes[0]).toEqual({ checked: 11, expired: 10, chunks: 3 });
    expect(space.len()).toBe(10);
    expect(space.index.exp.min()).toEqual(['k10', 10.5]);
    space.checkIntegrity();
  });

  test('walking the rmIndex itself visits every tuple (no early break)', () => {
    const space = space3();
    const task = expirationd.start('eb', space, { field: 3, fullScanDelay: 1, now: () => 100 });
    expect(task.earlyBreak).toBe(false);
    const passes = recordPasses(task);
    runPasses(task, 1);
    expect(passes[0]).toMatchObject({ checked: 9, expired: 4 });
    expect(ids(space)).toEqual([1, 3, 5, 7, 9]);
  });

  test('walking a HASH itIndex visits every tuple (no early break)', () => {
    const space = space3();
    const task = expirationd.start('eb', space, { itIndex: 'email', field: 3, fullScanDelay: 1, now: () => 100 });
    expect(task.earlyBreak).toBe(false);
    const passes = recordPasses(task);
    runPasses(task, 1);
    expect(passes[0]).toMatchObject({ checked: 9, expired: 4 });
    expect(ids(space)).toEqual([1, 3, 5, 7, 9]);
    space.checkIntegrity();
  });
});
