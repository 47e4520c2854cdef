// Lifecycle faults: space.drop(), task.kill() and a throw from every callback and event of a
// task, for every shape of task (indexed with early break, HASH scan, TREE scan, JavaScript
// predicate, with and without onExpired); callbacks that re-enter the space; many tasks started
// and killed with nothing left behind (fake timers). The real-time cases (real timers, processes
// that must or must not exit by themselves) are in test/slow/lifecycle-real-timers.test.ts.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { CappedError, Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';

const NOW = 1000;
const TOTAL = 60;
// Tuple i: [i, ttl, key]; two in three are expired, spread over every index order.
const isExpiredId = (i: number) => i % 3 !== 0;
const EXPIRED = Array.from({ length: TOTAL }, (_, i) => i).filter(isExpiredId).length;
const LIVE = TOTAL - EXPIRED;

function makeSpace(name = 'faults'): Space {
  const space = new Space(name);
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  space.createIndex('sk', { parts: [[3, 'string']] });
  for (let i = 0; i < TOTAL; i++) {
    space.insert([i, isExpiredId(i) ? NOW - 1 - i : NOW + 100 + i, `k${String((i * 919) % 1000).padStart(3, '0')}`]);
  }
  return space;
}

const expiredLeft = (space: Space) => space.index.exp.count(NOW, { iterator: 'LE' });
const liveLeft = (space: Space) => space.index.exp.count(NOW, { iterator: 'GT' });
const ttlExpired = (t: Tuple, now: number) => (t[1] as number) <= now;

/** Runs the next timer until `done()` holds or nothing is scheduled; returns the steps taken. */
function runUntil(done: () => boolean, limit = 5000): number {
  let steps = 0;
  for (; steps < limit && !done() && vi.getTimerCount() > 0; steps++) vi.advanceTimersToNextTimer();
  return steps;
}

afterEach(() => {
  try {
    expirationd.killAll();
  } finally {
    vi.useRealTimers();
  }
});

function fakeTimers(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] });
}

// ---------------------------------------------------------------------------------------------
// The fault matrix.
// ---------------------------------------------------------------------------------------------

interface Shape {
  name: string;
  options: TaskOptions;
  predicate: boolean;
}

const SHAPES: Shape[] = [
  { name: 'indexed (HASH pk + TTL TREE, early break)', options: { rmIndex: 'pk', itIndex: 'exp', field: 2 }, predicate: false },
  { name: 'HASH scan', options: { rmIndex: 'pk', field: 2 }, predicate: false },
  { name: 'unique TREE scan', options: { rmIndex: 'sk', field: 2 }, predicate: false },
  { name: 'indexed with an isExpired predicate', options: { rmIndex: 'pk', itIndex: 'exp', field: 2, isExpired: ttlExpired }, predicate: true },
  { name: 'HASH scan with an isExpired predicate', options: { rmIndex: 'pk', isExpired: ttlExpired }, predicate: true },
];

type Hook = 'now' | 'isExpired' | 'onExpired' | 'onFullScanStart' | 'onFullScanSuccess' | 'onFullScanComplete' |
  'onFullScanError' | 'expired' | 'fullScan' | 'error';
const HOOKS: Hook[] = ['now', 'isExpired', 'onExpired', 'onFullScanStart', 'onFullScanSuccess', 'onFullScanComplete',
  'onFullScanError', 'expired', 'fullScan', 'error'];
type Action = 'kill' | 'drop' | 'throw';

class Thrown extends Error {}

interface Run {
  space: Space;
  task: Task;
  fired: () => boolean;
  chunksAtAction: () => number;
  /** Errors reported through 'error' after the action, and before it. */
  errorsAfter: unknown[];
  errorsBefore: unknown[];
  thrown: Thrown;
}

function startWithFault(shape: Shape, hook: Hook, action: Action, withOnExpired: boolean): Run {
  const space = makeSpace();
  const thrown = new Thrown(`thrown from ${hook}`);
  let task: Task | undefined;
  let fired = false;
  let chunksAtAction = -1;
  const act = () => {
    if (fired) return;
    fired = true;
    chunksAtAction = (task as Task).stats().chunks;
    if (action === 'kill') (task as Task).kill();
    else if (action === 'drop') space.drop();
    else throw thrown;
  };
  const options: TaskOptions = {
    ...shape.options, now: () => NOW, scanSize: 7, iterationDelay: 0.001, fullScanDelay: 0.01,
  };
  if (withOnExpired) options.onExpired = () => {};
  // The error hooks need a failed chunk: the first chunk that expires something fails.
  if (hook === 'onFullScanError' || hook === 'error') {
    let failed = false;
    options.onExpired = () => {
      if (!failed) {
        failed = true;
        throw new Error('the first chunk fails');
      }
    };
  }
  switch (hook) {
    case 'now': options.now = () => (act(), NOW); break;
    case 'isExpired': options.isExpired = (t, now) => (act(), ttlExpired(t, now)); break;
    case 'onExpired': options.onExpired = () => act(); break;
    case 'onFullScanStart': case 'onFullScanSuccess': case 'onFullScanComplete': case 'onFullScanError':
      options[hook] = () => act();
      break;
    default: break;
  }
  task = expirationd.start('faults', space, options);
  const errorsBefore: unknown[] = [];
  const errorsAfter: unknown[] = [];
  // Registered first, so that the error that triggers an 'error' hook counts as before the action.
  task.on('error', (error) => (fired ? errorsAfter : errorsBefore).push(error));
  if (hook === 'expired' || hook === 'fullScan' || hook === 'error') task.on(hook, () => act());
  return { space, task, fired: () => fired, chunksAtAction: () => chunksAtAction, errorsAfter, errorsBefore, thrown };
}

/** The space holds every live tuple, agrees with itself, and the task's count matches what is gone. */
function expectConsistent(run: Run): void {
  const { space, task } = run;
  space.checkIntegrity();
  expect(liveLeft(space)).toBe(LIVE);
  expect(space.len()).toBe(LIVE + expiredLeft(space));
  expect(task.stats().expired).toBe(TOTAL - space.len());
}

/** The task is over: not listed, nothing scheduled, and an hour later nothing has changed. */
function expectOver(run: Run): void {
  const { space, task } = run;
  expect(task.isRunning).toBe(false);
  expect(expirationd.tasks()).not.toContain('faults');
  expect(vi.getTimerCount()).toBe(0);
  // The chunk that was running when the action came may finish; none starts after it.
  expect(task.stats().chunks).toBeLessThanOrEqual(run.chunksAtAction() + 1);
  const stats = task.stats();
  const len = space.dropped ? undefined : space.len();
  vi.advanceTimersByTime(3_600_000);
  expect(task.stats()).toEqual(stats);
  if (!space.dropped) expect(space.len()).toBe(len);
  expect(() => task.kill()).not.toThrow();
}

describe.each(SHAPES)('$name', (shape) => {
  const hooks = HOOKS.filter((h) => h !== 'isExpired' || shape.predicate);
  describe.each([false, true])('onExpired given: %s', (withOnExpired) => {
    test.each(hooks)('kill() inside %s: the task stops there and the space stays consistent', (hook) => {
      fakeTimers();
      const run = startWithFault(shape, hook, 'kill', withOnExpired);
      runUntil(run.fired);
      expect(run.fired()).toBe(true);
      expectOver(run);
      expectConsistent(run);
      expect(run.errorsAfter).toEqual([]);
    });

    test.each(hooks)('space.drop() inside %s: the task ends cleanly and reports no error', (hook) => {
      fakeTimers();
      const run = startWithFault(shape, hook, 'drop', withOnExpired);
      runUntil(run.fired);
      expect(run.fired()).toBe(true);
      expect(run.space.dropped).toBe(true);
      expectOver(run);
      expect(run.errorsAfter).toEqual([]);
      expect(() => run.space.len()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
      expect(() => run.task.restart()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    });

    test.each(hooks)('a throw from %s is reported, and the task goes on to expire everything', (hook) => {
      fakeTimers();
      const run = startWithFault(shape, hook, 'throw', withOnExpired);
      runUntil(() => run.fired() && expiredLeft(run.space) === 0 && run.task.stats().fullScans >= 2);
      expect(run.fired()).toBe(true);
      expect(expiredLeft(run.space)).toBe(0);
      expect(run.task.isRunning).toBe(true);
      expect(expirationd.tasks()).toEqual(['faults']);
      expectConsistent(run);
      if (hook === 'error') {
        // A throwing 'error' listener is swallowed; the chunk's own error stays the last one.
        expect(run.task.lastError).toBeInstanceOf(Error);
        expect(run.task.lastError).not.toBe(run.thrown);
      } else {
        expect(run.errorsBefore.concat(run.errorsAfter)).toContain(run.thrown);
      }
      if (hook === 'now' || hook === 'isExpired' || hook === 'onExpired') {
        expect(run.task.stats().restarts).toBeGreaterThanOrEqual(2);
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Callbacks that re-enter the space.
// ---------------------------------------------------------------------------------------------

describe('callbacks that re-enter the space', () => {
  test('onExpired inserts, replaces, deletes and selects inside the chunk; its changes commit with the chunk', () => {
    fakeTimers();
    const space = makeSpace();
    let calls = 0;
    const seen: Tuple[] = [];
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
      onExpired: (tuples) => {
        calls++;
        seen.push(...tuples);
        // The chunk's deletes are visible inside its transaction.
        for (const t of tuples) expect(space.get(t[0] as number)).toBeUndefined();
        expect(space.index.exp.select(NOW, { iterator: 'LE' }).some((t) => tuples.some((d) => d[0] === t[0]))).toBe(false);
        if (calls === 1) {
          space.insert([1000, NOW + 5000, 'new-live']);
          space.insert([1001, NOW - 5000, 'new-expired']);  // before the cursor: a later pass takes it
          space.replace([3, NOW - 2, 'k-refreshed']);         // a live tuple becomes expired
          space.delete(6);                                    // a live tuple goes away
          expect(space.pairs().next().done).toBe(false);
          space.checkIntegrity();
        }
      },
    });
    runUntil(() => expiredLeft(space) === 0 && task.stats().fullScans >= 2);
    space.checkIntegrity();
    expect(space.get(1000)).toEqual([1000, NOW + 5000, 'new-live']);
    expect(space.get(1001)).toBeUndefined();
    expect(space.get(3)).toBeUndefined();
    expect(space.get(6)).toBeUndefined();
    expect(liveLeft(space)).toBe(LIVE - 2 + 1);
    expect(seen.map((t) => t[0])).toEqual(expect.arrayContaining([1001, 3]));
    expect(task.lastError).toBeUndefined();
  });

  test('when onExpired throws after changing the space, its own changes roll back with the chunk', () => {
    fakeTimers();
    const space = makeSpace();
    let first = true;
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
      onExpired: () => {
        if (!first) return;
        first = false;
        space.insert([2000, NOW + 1, 'rolled-back']);
        space.delete(0);
        space.truncate();
        expect(space.len()).toBe(0);
        throw new Error('after the changes');
      },
    });
    vi.advanceTimersToNextTimer();
    expect(task.stats().chunks).toBe(1);
    // Issue 10: the chunk's 5 expired tuples are then delivered again in halves, and deleted.
    expect(space.len()).toBe(TOTAL - 5);
    expect(space.get(2000)).toBeUndefined();
    expect(space.get(0)).toBeDefined();
    space.checkIntegrity();
    runUntil(() => expiredLeft(space) === 0);
    expect(liveLeft(space)).toBe(LIVE);
    space.checkIntegrity();
  });

  test('onExpired may truncate the space inside the chunk; the scan goes on over the new contents', () => {
    fakeTimers();
    const space = makeSpace();
    let truncated = false;
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
      onExpired: () => {
        if (truncated) return;
        truncated = true;
        space.truncate();
        for (let i = 0; i < 20; i++) space.insert([500 + i, i % 2 ? NOW - 1 : NOW + 1, `t${i}`]);
      },
    });
    runUntil(() => truncated && expiredLeft(space) === 0 && task.stats().fullScans >= 2);
    space.checkIntegrity();
    expect(space.len()).toBe(10);
    expect(space.select().every((t) => (t[1] as number) > NOW)).toBe(true);
    expect(task.lastError).toBeUndefined();
  });

  test.each(SHAPES.filter((s) => s.predicate))('isExpired ($name) may delete, replace and insert tuples of its own batch',
    (shape) => {
      fakeTimers();
      const space = makeSpace();
      const refreshed = new Set<number>();
      const deleted = new Set<number>();
      const remove = (id: number) => {
        if (space.delete(id) !== undefined) deleted.add(id);
      };
      let calls = 0;
      const task = expirationd.start('reenter', space, {
        ...shape.options, scanSize: 6, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
        isExpired: (t, now) => {
          calls++;
          const id = t[0] as number;
          if (calls <= 40) {
            if (calls % 4 === 1) remove(id);                            // the tuple asked about is gone
            if (calls % 4 === 2 && ttlExpired(t, now)) {                // refreshed: must survive
              space.replace([id, NOW + 7777, t[2]]);
              refreshed.add(id);
            }
            if (calls % 4 === 3) remove((id + 1) % TOTAL);              // a neighbour in the batch
            if (calls === 5) space.insert([3000, NOW - 1, 'late']);
          }
          return ttlExpired(t, now);
        },
      });
      runUntil(() => expiredLeft(space) === 0 && task.stats().fullScans >= 2);
      space.checkIntegrity();
      expect(expiredLeft(space)).toBe(0);
      expect(refreshed.size).toBeGreaterThan(0);
      for (const id of refreshed) {
        if (!deleted.has(id)) expect(space.get(id)).toEqual([id, NOW + 7777, expect.any(String)]);
      }
      expect(liveLeft(space)).toBe(LIVE - [...deleted].filter((id) => !isExpiredId(id) && !refreshed.has(id)).length +
        [...refreshed].filter((id) => !deleted.has(id)).length);
      expect(space.get(3000)).toBeUndefined();
      expect(task.lastError).toBeUndefined();
    });

  test('now() may change the space before the chunk reads it', () => {
    fakeTimers();
    const space = makeSpace();
    let calls = 0;
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 4, iterationDelay: 0.001, fullScanDelay: 0.01,
      now: () => {
        calls++;
        if (calls < 10) space.insert([4000 + calls, NOW - 0.5, `from-now-${calls}`]);
        if (calls === 3) space.delete(1);
        return NOW;
      },
    });
    runUntil(() => calls >= 10 && expiredLeft(space) === 0);
    space.checkIntegrity();
    expect(expiredLeft(space)).toBe(0);
    expect(liveLeft(space)).toBe(LIVE);
    expect(task.lastError).toBeUndefined();
  });

  test("'expired' and 'fullScan' listeners may write to the space; re-inserted tuples expire again", () => {
    fakeTimers();
    const space = makeSpace();
    let reinserted = 0;
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
    });
    task.on('expired', (tuples: Tuple[]) => {
      for (const t of tuples) {
        if ((t[0] as number) < 10_000 && reinserted < 10) {
          space.insert([(t[0] as number) + 10_000, NOW - 3, `again-${String(t[2])}`]);
          reinserted++;
        }
      }
    });
    task.on('fullScan', () => {
      if (task.stats().fullScans === 1) space.insert([20_000, NOW + 1, 'from-fullScan']);
    });
    runUntil(() => reinserted === 10 && expiredLeft(space) === 0 && task.stats().fullScans >= 3);
    space.checkIntegrity();
    expect(expiredLeft(space)).toBe(0);
    expect(task.stats().expired).toBe(EXPIRED + 10);
    expect(space.get(20_000)).toBeDefined();
  });

  test('onExpired may restart its own task, start another, or kill a sibling', () => {
    fakeTimers();
    const space = makeSpace();
    const other = makeSpace('other');
    let step = 0;
    const sibling = expirationd.start('sibling', other, { field: 2, rmIndex: 'pk', now: () => NOW, iterationDelay: 0.001 });
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
      onExpired: () => {
        step++;
        if (step === 1) task.restart();
        if (step === 2) expirationd.start('third', other, { field: 2, rmIndex: 'sk', now: () => NOW });
        if (step === 3) sibling.kill();
      },
    });
    runUntil(() => step >= 3 && expiredLeft(space) === 0 && expiredLeft(other) === 0);
    expect(task.stats().restarts).toBe(2);
    expect(sibling.isRunning).toBe(false);
    expect(expirationd.tasks().sort()).toEqual(['reenter', 'third']);
    expect(expiredLeft(space)).toBe(0);
    expect(expiredLeft(other)).toBe(0);
    space.checkIntegrity();
    other.checkIntegrity();
  });

  test('createIndex from onExpired is refused inside the chunk; the chunk rolls back and is retried', () => {
    fakeTimers();
    const space = makeSpace();
    let tries = 0;
    const task = expirationd.start('reenter', space, {
      rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 5, iterationDelay: 0.001, fullScanDelay: 0.01, now: () => NOW,
      onExpired: () => {
        tries++;
        if (tries === 1) space.createIndex('late', { parts: [[3, 'string']] });
      },
    });
    runUntil(() => expiredLeft(space) === 0);
    expect(task.lastError).toBeInstanceOf(CappedError);
    expect((task.lastError as CappedError).code).toBe('ER_TRANSACTION');
    expect(space.index.late).toBeUndefined();
    expect(liveLeft(space)).toBe(LIVE);
    space.checkIntegrity();
  });

  test('a pairs() iterator open over a dropped space throws ER_SPACE_DROPPED instead of reading freed memory', () => {
    const space = makeSpace();
    const it = space.index.exp.pairs();
    expect(it.next().done).toBe(false);
    const hashIt = space.pairs();
    expect(hashIt.next().done).toBe(false);
    space.drop();
    expect(() => it.next()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    expect(() => hashIt.next()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
  });
});

// ---------------------------------------------------------------------------------------------
// Many tasks: nothing left behind (on fake timers; the real-timer cases are in
// test/slow/lifecycle-real-timers.test.ts).
// ---------------------------------------------------------------------------------------------

describe('many tasks started and killed', () => {
  test('unref\'d tasks (the default) killed in a loop leave no fake timer pending', () => {
    fakeTimers();
    const space = makeSpace();
    for (let round = 0; round < 500; round++) {
      const task = expirationd.start(`loop${round % 5}`, space, { rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 2 });
      if (round % 2 === 0) vi.advanceTimersToNextTimer();
      if (round % 3 === 0) task.restart();
      if (round % 5 === 4) expirationd.killAll();
    }
    expirationd.killAll();
    expect(vi.getTimerCount()).toBe(0);
    space.checkIntegrity();
  });
});
