// Task lifecycle: kill (during the sleep and from inside every callback), restart, several tasks
// on one space, and dropping the space under a running task.
import { describe, expect, test, vi } from 'vitest';
import { CappedError, Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

function makeSpace(expired: number, live = 0, name = 'life'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  for (let id = 0; id < expired; id++) space.insert([id, `u${id}`, NOW - 1 - id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `u${id}`, NOW + 100 + id]);
  return space;
}

function start(space: Space, options: TaskOptions = {}, name = 'life'): Task {
  return expirationd.start(name, space, { field: 3, scanSize: 5, now: () => NOW, ...options });
}

/** Runs timers until `done()` holds (or nothing is left to run). */
function runUntil(done: () => boolean): void {
  for (let i = 0; i < 10_000 && !done() && vi.getTimerCount() > 0; i++) vi.advanceTimersToNextTimer();
}

/** After a kill: nothing is scheduled and nothing changes however long we wait. */
function expectDead(task: Task, space: Space): void {
  const stats = task.stats();
  const len = space.dropped ? -1 : space.len();
  expect(task.isRunning).toBe(false);
  expect(expirationd.tasks()).not.toContain(task.name);
  expect(vi.getTimerCount()).toBe(0);
  vi.advanceTimersByTime(3_600_000);
  expect(task.stats()).toEqual(stats);
  if (!space.dropped) expect(space.len()).toBe(len);
}

describe('kill', () => {
  test('kill right after start: no chunk ever runs', () => {
    const space = makeSpace(10);
    const onFullScanStart = vi.fn();
    const task = start(space, { onFullScanStart });
    task.kill();
    expectDead(task, space);
    expect(task.stats().chunks).toBe(0);
    expect(onFullScanStart).not.toHaveBeenCalled();
    expect(space.len()).toBe(10);
  });

  test('kill during the sleep between chunks: the pending chunk never runs', () => {
    const space = makeSpace(20);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    expect(task.stats().chunks).toBe(1);
    expect(space.len()).toBe(15);
    expect(vi.getTimerCount()).toBe(1);
    expirationd.kill('life');
    expectDead(task, space);
    expect(space.len()).toBe(15);
  });

  test('kill during the sleep after a pass', () => {
    const space = makeSpace(3);
    const task = start(space, { fullScanDelay: 60 });
    runUntil(() => task.stats().fullScans === 1);
    task.kill();
    expectDead(task, space);
    expect(task.stats().fullScans).toBe(1);
  });

  type Killer = (task: Task) => void;
  const byTask: Killer = (task) => task.kill();
  const byName: Killer = (task) => expirationd.kill(task.name);

  const places: Array<[string, (kill: () => void) => TaskOptions, ((task: Task, kill: () => void) => void)?]> = [
    ['onExpired', (kill) => ({ onExpired: kill })],
    ['isExpired', (kill) => ({ isExpired: (t: Tuple, now: number) => (kill(), (t[2] as number) <= now) })],
    ['onFullScanStart', (kill) => ({ onFullScanStart: kill })],
    ['onFullScanSuccess', (kill) => ({ onFullScanSuccess: kill })],
    ['onFullScanComplete', (kill) => ({ onFullScanComplete: kill })],
    ['onFullScanError', (kill) => ({ onFullScanError: kill, onExpired: () => { throw new Error('boom'); } })],
    ["an 'expired' listener", () => ({}), (task, kill) => task.on('expired', kill)],
    ["a 'fullScan' listener", () => ({}), (task, kill) => task.on('fullScan', kill)],
    ["an 'error' listener", () => ({ onExpired: () => { throw new Error('boom'); } }), (task, kill) => task.on('error', kill)],
  ];

  describe.each([['task.kill()', byTask], ['expirationd.kill(name)', byName]])('%s', (_how, killer) => {
    test.each(places)('inside %s: no chunk runs after kill returns', (_where, options, listen) => {
      const space = makeSpace(12, 3);
      let task: Task | undefined;
      let killed = false;
      const kill = () => {
        if (killed) return;
        killed = true;
        killer(task as Task);
      };
      task = start(space, { ...options(kill), fullScanDelay: 1 });
      listen?.(task, kill);
      runUntil(() => killed);
      expect(killed).toBe(true);
      expectDead(task, space);
      expect(() => task.kill()).not.toThrow();
    });
  });

  test('a tuple set deleted by the chunk whose onExpired killed the task stays deleted', () => {
    const space = makeSpace(12);
    const task = start(space, { onExpired: () => task.kill() });
    vi.advanceTimersByTime(0);
    expect(space.len()).toBe(7);
    expectDead(task, space);
    space.checkIntegrity();
  });
});

describe('restart', () => {
  test('start() with a running name kills the old task; the new one runs and counts its own restarts', () => {
    const space = makeSpace(30);
    const old = start(space);
    vi.advanceTimersToNextTimer();
    const oldStats = old.stats();
    const fresh = start(space, { scanSize: 10 });
    expect(old.isRunning).toBe(false);
    expect(fresh.isRunning).toBe(true);
    expect(expirationd.tasks()).toEqual(['life']);
    expect(expirationd.task('life')).toBe(fresh);
    expect(fresh.stats()).toMatchObject({ restarts: 1, chunks: 0 });
    runUntil(() => fresh.stats().fullScans === 1);
    expect(old.stats()).toEqual(oldStats);
    expect(fresh.stats()).toMatchObject({ expired: 25, checked: 25 });
    expect(space.len()).toBe(0);
  });

  test('task.restart() starts a new pass and adds one to restarts', () => {
    const space = makeSpace(10, 10);
    const starts = vi.fn();
    const task = start(space, { onFullScanStart: starts });
    vi.advanceTimersToNextTimer();
    expect(starts).toHaveBeenCalledTimes(1);
    expect(task.restart()).toBe(task);
    expect(task.stats().restarts).toBe(2);
    expect(task.isRunning).toBe(true);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersToNextTimer();
    expect(starts).toHaveBeenCalledTimes(2);
    expect(task.stats()).toMatchObject({ fullScans: 0, chunks: 2 });
  });

  test.each([
    ['onExpired', (restart: () => void) => ({ onExpired: restart })],
    ['onFullScanComplete', (restart: () => void) => ({ onFullScanComplete: restart })],
  ])('restart() inside %s leaves exactly one pending chunk and the task carries on', (_where, options) => {
    const space = makeSpace(12, 3);
    let task: Task | undefined;
    let restarted = 0;
    const restart = () => {
      if (restarted++ === 0) (task as Task).restart();
    };
    task = start(space, { ...options(restart), fullScanDelay: 1 });
    runUntil(() => restarted > 0);
    expect(vi.getTimerCount()).toBe(1);
    expect(task.stats().restarts).toBe(2);
    runUntil(() => space.len() === 3);
    expect(space.len()).toBe(3);
    expect(task.isRunning).toBe(true);
    expect(task.lastError).toBeUndefined();
  });

  test('restart() brings a killed task back under its name', () => {
    const space = makeSpace(10);
    const task = start(space);
    task.kill();
    task.restart();
    expect(task.isRunning).toBe(true);
    expect(expirationd.task('life')).toBe(task);
    runUntil(() => space.len() === 0);
    expect(space.len()).toBe(0);
    expect(task.stats().restarts).toBe(2);
  });

  test('restart() of a replaced task kills the task that took its name', () => {
    const space = makeSpace(10);
    const first = start(space);
    const second = start(space);
    first.restart();
    expect(second.isRunning).toBe(false);
    expect(expirationd.task('life')).toBe(first);
    expect(expirationd.tasks()).toEqual(['life']);
  });
});

describe('several tasks on one space', () => {
  test('an indexed and a non-indexed task on the same TTL field share the work without errors', () => {
    const space = makeSpace(200, 50);
    const indexed = start(space, { itIndex: 'exp', fullScanDelay: 1 }, 'indexed');
    const full = start(space, { fullScanDelay: 1 }, 'full');
    expect(expirationd.tasks().sort()).toEqual(['full', 'indexed']);
    runUntil(() => space.len() === 50);
    vi.advanceTimersByTime(10_000);
    expect(space.len()).toBe(50);
    expect(indexed.stats().expired + full.stats().expired).toBe(200);
    expect(indexed.stats().expired).toBeGreaterThan(0);
    expect(full.stats().expired).toBeGreaterThan(0);
    expect(indexed.lastError).toBeUndefined();
    expect(full.lastError).toBeUndefined();
    space.checkIntegrity();
  });

  test('tasks on different TTL fields each expire by their own field', () => {
    let clock = 100;
    const space = new Space('two-ttls');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('soft', { unique: false, parts: [[2, 'unsigned']] });
    for (let id = 0; id < 40; id++) space.insert([id, id % 4 < 2 ? 110 + (id % 4) * 10 : 1000, 200 + id]);
    expirationd.start('soft', space, { itIndex: 'soft', field: 2, scanSize: 3, fullScanDelay: 1, now: () => clock });
    expirationd.start('hard', space, { field: 3, scanSize: 7, fullScanDelay: 1, now: () => clock });
    clock = 125; // soft TTLs 110 and 120 pass
    vi.advanceTimersByTime(60_000);
    expect(space.select().map((t) => t[1])).toEqual(Array(20).fill(1000));
    clock = 215; // hard TTLs 200..215 pass
    vi.advanceTimersByTime(60_000);
    expect(space.select().every((t) => (t[2] as number) > 215)).toBe(true);
    expect(space.len()).toBe(12);
    space.checkIntegrity();
  });

  test('killing one task leaves the other running', () => {
    const space = makeSpace(100);
    const a = start(space, { itIndex: 'exp', scanSize: 2 }, 'a');
    const b = start(space, { scanSize: 2 }, 'b');
    vi.advanceTimersByTime(0);
    a.kill();
    expect(b.isRunning).toBe(true);
    runUntil(() => space.len() === 0);
    expect(space.len()).toBe(0);
    expect(expirationd.tasks()).toEqual(['b']);
  });
});

describe('dropping the space', () => {
  test('between chunks: the task ends cleanly and is no longer listed', () => {
    const space = makeSpace(20);
    const other = makeSpace(20, 0, 'other');
    const task = start(space);
    const survivor = start(other, { fullScanDelay: 60 }, 'survivor');
    const errors: unknown[] = [];
    task.on('error', (err) => errors.push(err));
    vi.advanceTimersByTime(0);
    space.drop();
    expect(task.isRunning).toBe(false);
    expect(expirationd.tasks()).toEqual(['survivor']);
    expect(() => expirationd.task('life')).toThrow(CappedError);
    runUntil(() => other.len() === 0);
    vi.advanceTimersByTime(3_600_000);
    expect(errors).toEqual([]);
    expect(task.lastError).toBeUndefined();
    expect(survivor.isRunning).toBe(true);
    expect(other.len()).toBe(0);
  });

  const dropPlaces: Array<[string, (drop: () => void) => TaskOptions, ((task: Task, drop: () => void) => void)?]> = [
    ['onExpired', (drop) => ({ onExpired: drop })],
    ['isExpired', (drop) => ({ isExpired: (t: Tuple, now: number) => (drop(), (t[2] as number) <= now) })],
    ['onFullScanStart', (drop) => ({ onFullScanStart: drop })],
    ['onFullScanComplete', (drop) => ({ onFullScanComplete: drop })],
    ["an 'expired' listener", () => ({}), (task, drop) => task.on('expired', drop)],
    ["a 'fullScan' listener", () => ({}), (task, drop) => task.on('fullScan', drop)],
  ];

  test.each(dropPlaces)('inside %s: the task ends cleanly, no error is reported later', (_where, options, listen) => {
    const space = makeSpace(12, 3);
    const drop = () => space.drop();
    const task = start(space, { ...options(drop), fullScanDelay: 1 });
    const errors: unknown[] = [];
    task.on('error', (err) => errors.push(err));
    listen?.(task, drop);
    expect(() => runUntil(() => space.dropped)).not.toThrow();
    expect(space.dropped).toBe(true);
    expectDead(task, space);
    expect(errors).toEqual([]);
    expect(task.lastError).toBeUndefined();
    expect(expirationd.tasks()).toEqual([]);
  });

  test('restart() and start() on a dropped space are refused with ER_SPACE_DROPPED', () => {
    const space = makeSpace(5);
    const task = start(space);
    space.drop();
    expect(() => task.restart()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    expect(() => start(space)).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    expect(expirationd.tasks()).toEqual([]);
  });

  test('killAll stops every task', () => {
    const a = start(makeSpace(10, 0, 'a'), {}, 'a');
    const b = start(makeSpace(10, 0, 'b'), {}, 'b');
    expirationd.killAll();
    expect(a.isRunning || b.isRunning).toBe(false);
    expect(expirationd.tasks()).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
