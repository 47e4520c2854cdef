// Lifecycle faults: space.drop(), task.kill() and a throw from every callback and event of a
// task, for every shape of task (indexed with early break, HASH scan, TREE scan, JavaScript
// predicate, with and without onExpired); callbacks that re-enter the space; many tasks started
// and killed with nothing left behind; and processes that must (or must not) exit by themselves
// while a task runs.
import { createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { CappedError, Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';

const { ensureDist } = createRequire(__filename)('./fixtures/dist.cjs') as { ensureDist: () => string };

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
// Many tasks: nothing left behind.
// ---------------------------------------------------------------------------------------------

function timerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length;
}

/**
 * Tracks the timers and immediates created from src/expirationd while it is enabled: `live()` is
 * how many of them were neither run nor cleared.
 */
function trackTaskTimers() {
  const live = new Set<number>();
  const hook = createHook({
    init(asyncId, type) {
      if ((type === 'Timeout' || type === 'Immediate') && /[\\/]expirationd[\\/]/.test(new Error().stack ?? '')) live.add(asyncId);
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  });
  hook.enable();
  return { live: () => live.size, disable: () => hook.disable() };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('many tasks started and killed', () => {
  test('keepAlive tasks killed in a loop leave no timer or immediate behind (real timers)', async () => {
    await tick();
    const before = timerResources();
    const tracked = trackTaskTimers();
    const space = makeSpace();
    const spaces = [space, makeSpace('second')];
    for (let round = 0; round < 300; round++) {
      const target = spaces[round % 2];
      const task = expirationd.start(`loop${round % 7}`, target, {
        rmIndex: 'pk', itIndex: 'exp', field: 2, keepAlive: true, scanSize: 3,
        iterationDelay: round % 3 === 0 ? 0 : 0.002, fullScanDelay: round % 5 === 0 ? 0 : 0.003,
      });
      if (round % 4 === 1) task.restart();
      if (round % 2 === 0) await tick();          // some are killed after a chunk ran, some before
      if (round % 6 === 0) expirationd.start(`loop${round % 7}`, target, { field: 2, keepAlive: true });
      if (round % 3 === 0) task.kill();
      else if (round % 3 === 1) expirationd.killAll();
      else expirationd.kill(task.name);
    }
    expirationd.killAll();
    expect(expirationd.tasks()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    tracked.disable();
    expect(tracked.live()).toBe(0);
    expect(timerResources()).toBeLessThanOrEqual(before);
    for (const s of spaces) s.checkIntegrity();
  });

  test('tasks ended by dropping their spaces leave no timer behind (real timers)', async () => {
    await tick();
    const before = timerResources();
    const tracked = trackTaskTimers();
    for (let round = 0; round < 100; round++) {
      const space = makeSpace(`drop${round}`);
      expirationd.start(`a${round % 3}`, space, { rmIndex: 'pk', itIndex: 'exp', field: 2, keepAlive: true, scanSize: 4 });
      expirationd.start(`b${round % 3}`, space, { rmIndex: 'pk', field: 2, keepAlive: true, iterationDelay: 0.001 });
      if (round % 2 === 0) await tick();
      space.drop();
    }
    expect(expirationd.tasks()).toEqual([]);
    await tick();
    tracked.disable();
    expect(tracked.live()).toBe(0);
    expect(timerResources()).toBeLessThanOrEqual(before);
  });

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

// ---------------------------------------------------------------------------------------------
// Processes.
// ---------------------------------------------------------------------------------------------

const FIXTURE = path.join(__dirname, 'fixtures', 'idle-task.cjs');
let dist = '';

beforeAll(() => {
  dist = ensureDist();
}, 180_000);

interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  line: { ready: boolean; chunks: number; expired: number; running: boolean; len: number } | undefined;
  stderr: string;
  aliveAfterReady?: boolean;
}

/**
 * Runs the fixture. Without `killAfterMs` it waits for the child to exit (failing after `limitMs`,
 * a safety net rather than a timing assertion); with it, it checks the child is still running that
 * long after its ready line and then kills it.
 */
function runFixture(mode: string, opts: { limitMs?: number; killAfterMs?: number } = {}): Promise<ChildRun> {
  const limitMs = opts.limitMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, dist, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let line: ChildRun['line'];
    let aliveAfterReady: boolean | undefined;
    const limit = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fixture '${mode}' did not exit within ${limitMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, limitMs);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (line === undefined && stdout.includes('\n')) {
        line = JSON.parse(stdout.slice(0, stdout.indexOf('\n')));
        if (opts.killAfterMs !== undefined) {
          setTimeout(() => {
            aliveAfterReady = child.exitCode === null && child.signalCode === null;
            child.kill('SIGKILL');
          }, opts.killAfterMs);
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      resolve({ code, signal, line, stderr, aliveAfterReady });
    });
  });
}

describe('a process with a running task', () => {
  test('exits by itself when it has nothing else to do (keepAlive: false)', async () => {
    const run = await runFixture('unref');
    expect(run.stderr).toBe('');
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500, len: 500 });
    expect(run.line?.chunks).toBeGreaterThanOrEqual(1);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  });

  test('does not exit by itself while a keepAlive: true task runs', async () => {
    const run = await runFixture('keepAlive', { killAfterMs: 1000 });
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500 });
    expect(run.aliveAfterReady).toBe(true);
    expect(run.signal).toBe('SIGKILL');
  });

  test.each(['kill', 'drop'])('exits by itself once its keepAlive task ends by %s', async (mode) => {
    const run = await runFixture(mode);
    expect(run.stderr).toBe('');
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500 });
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  });
});
