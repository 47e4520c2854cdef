// The expirationd surface: start/kill/task/tasks/stats/killAll, the positional form, option
// validation (with error codes), unit 'ms' and the default clocks, the isExpired predicate path,
// and keepAlive.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { EventEmitter } from 'node:events';
import { describe, expect, test, vi } from 'vitest';
import { CappedError, Space, Task, expirationd, type TaskOptions } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

function makeSpace(name = 'api'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('by_name', { unique: false, parts: [[2, 'string']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  space.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
  return space;
}

function expectCode(fn: () => unknown, code: string): CappedError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected a throw').toBeInstanceOf(CappedError);
  expect((caught as CappedError).code).toBe(code);
  return caught as CappedError;
}

const ids = (space: Space) => space.select().map((t) => t[0]);

describe('look-ups', () => {
  test('start returns a running Task (an EventEmitter) that the registry finds by name', () => {
    const space = makeSpace();
    const a = expirationd.start('a', space, { field: 3, now: () => 0 });
    const b = expirationd.start('b', space, { field: 3, itIndex: 'exp', now: () => 0 });
    expect(a).toBeInstanceOf(Task);
    expect(a).toBeInstanceOf(EventEmitter);
    expect(a.name).toBe('a');
    expect(a.space).toBe(space);
    expect(a.isRunning).toBe(true);
    expect(expirationd.task('a')).toBe(a);
    expect(expirationd.task('b')).toBe(b);
    expect(expirationd.tasks()).toEqual(['a', 'b']);
  });

  test('restarts is 1 after start and every other counter is 0', () => {
    const task = expirationd.start('fresh', makeSpace(), { field: 3, now: () => 0 });
    // Issue 15 adds lag and wakeups (both 0 before the first chunk).
    expect(task.stats()).toEqual({
      checked: 0, expired: 0, restarts: 1, workingTime: 0, fullScans: 0, chunks: 0, skipped: 0, lag: 0, wakeups: 0,
    });
    expect(task.lastError).toBeUndefined();
  });

  test('stats(name) is the task\'s stats and stats() maps every running task by name', () => {
    const space = makeSpace();
    space.insertMany([[1, 'a', 5], [2, 'b', 50]]);
    const a = expirationd.start('a', space, { field: 3, now: () => 10, fullScanDelay: 60 });
    const b = expirationd.start('b', makeSpace('other'), { field: 3, now: () => 10, fullScanDelay: 60 });
    vi.advanceTimersByTime(0);
    expect(expirationd.stats('a')).toEqual(a.stats());
    expect(a.stats()).toMatchObject({ checked: 2, expired: 1, fullScans: 1, chunks: 1 });
    expect(expirationd.stats()).toEqual({ a: a.stats(), b: b.stats() });
    const copy = a.stats();
    copy.expired = 99;
    expect(a.stats().expired).toBe(1);
  });

  test('unknown names are refused with ER_NO_SUCH_TASK', () => {
    expectCode(() => expirationd.kill('nope'), 'ER_NO_SUCH_TASK');
    expectCode(() => expirationd.task('nope'), 'ER_NO_SUCH_TASK');
    expectCode(() => expirationd.stats('nope'), 'ER_NO_SUCH_TASK');
    const error = expectCode(() => expirationd.kill('nope'), 'ER_NO_SUCH_TASK');
    expect(error.message).toContain('nope');
  });

  test('kill() is idempotent, and a killed task is no longer known by name', () => {
    const task = expirationd.start('k', makeSpace(), { field: 3, now: () => 0 });
    task.kill();
    expect(() => task.kill()).not.toThrow();
    expect(task.isRunning).toBe(false);
    expect(expirationd.tasks()).toEqual([]);
    expectCode(() => expirationd.kill('k'), 'ER_NO_SUCH_TASK');
    expect(vi.getTimerCount()).toBe(0);
  });

  test('killAll() with no tasks is a no-op', () => {
    expect(() => expirationd.killAll()).not.toThrow();
  });
});

describe('the positional form', () => {
  test('start(name, space, rmIndex, itIndex, field, scanSize, scanTime) means the same as the options', () => {
    const space = makeSpace();
    const past = Math.floor(Date.now() / 1000) - 3600;
    const future = Math.floor(Date.now() / 1000) + 365 * 86_400;
    for (let id = 0; id < 30; id++) space.insert([id, `u${id}`, id < 20 ? past - id : future + id]);
    const task = expirationd.start('indexed', space, 'primary', 'exp', 3, 7, 3600);
    expect(task.earlyBreak).toBe(true);
    expect(task.chunkDelay).toBe(Math.min(7 * 3600 / 31, 1));
    vi.advanceTimersByTime(5000);
    expect(ids(space)).toEqual(Array.from({ length: 10 }, (_, i) => 20 + i));
    expect(task.stats().fullScans).toBeGreaterThanOrEqual(1);
  });

  test('trailing positional arguments may be left out', () => {
    const space = makeSpace();
    space.insert([1, 'a', 1]);
    const task = expirationd.start('nonindexed', space, 'primary', 'primary', 3);
    expect(task.earlyBreak).toBe(false);
    expect(task.chunkDelay).toBe(1); // scanSize 1024, scanTime 3600, capped by iterationDelay 1
    vi.advanceTimersByTime(0);
    expect(space.len()).toBe(0);
  });

  test('positional arguments are validated like options', () => {
    const space = makeSpace();
    expectCode(() => expirationd.start('p', space, 'nope', 'exp', 3), 'ER_NO_SUCH_INDEX');
    expectCode(() => expirationd.start('p', space, 'primary', 'nope', 3), 'ER_NO_SUCH_INDEX');
    expectCode(() => expirationd.start('p', space, 'primary', 'by_name', 3), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start('p', space, 'by_name', 'exp', 3), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start('p', space, 'primary'), 'ER_ILLEGAL_PARAMS'); // no field
    expectCode(() => expirationd.start('p', space, 'primary', 'exp', 3, 0), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start('p', space, 'primary', 'exp', 3, 10, -1), 'ER_ILLEGAL_PARAMS');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('an options object followed by more arguments is refused: neither form', () => {
    const space = makeSpace();
    expectCode(() => (expirationd.start as (...a: unknown[]) => unknown)('p', space, { field: 3 }, 'exp'), 'ER_ILLEGAL_PARAMS');
    // The message says what is wrong (not "rmIndex must be an index name").
    expect(() => (expirationd.start as (...a: unknown[]) => unknown)('p', space, { field: 3 }, 'exp')).toThrow(/options object must be the last argument/);
    expect(expirationd.tasks()).toEqual([]);
  });

  test('rmIndex left undefined in the positional form is the primary key', () => {
    const space = makeSpace();
    space.insert([1, 'a', 1]);
    const task = (expirationd.start as (...a: unknown[]) => ReturnType<typeof expirationd.start>)('u', space, undefined, 'exp', 3);
    expect(task.earlyBreak).toBe(true);
    vi.advanceTimersByTime(0);
    expect(space.len()).toBe(0);
  });
});

describe('option validation', () => {
  const fn = () => {};
  const illegal: Array<[string, unknown]> = [
    ['an unknown option', { field: 3, fieldd: 3 }],
    ['a misspelled option', { field: 3, scansize: 10 }],
    ['options that are a number', 42],
    ['options that are null', null],
    ['options that are an array', [3]],
    ['no field and no isExpired', {}],
    ['field 0', { field: 0 }],
    ['field -1', { field: -1 }],
    ['field 1.5', { field: 1.5 }],
    ["field '3'", { field: '3' }],
    ['field 65536', { field: 65536 }],
    ['scanSize 0', { field: 3, scanSize: 0 }],
    ['scanSize -1', { field: 3, scanSize: -1 }],
    ['scanSize 1.5', { field: 3, scanSize: 1.5 }],
    ['scanSize NaN', { field: 3, scanSize: Number.NaN }],
    ['scanSize Infinity', { field: 3, scanSize: Infinity }],
    ['scanTime 0', { field: 3, scanTime: 0 }],
    ['scanTime -1', { field: 3, scanTime: -1 }],
    ['scanTime Infinity', { field: 3, scanTime: Infinity }],
    ["scanTime '60'", { field: 3, scanTime: '60' }],
    ['iterationDelay -1', { field: 3, iterationDelay: -1 }],
    ['iterationDelay NaN', { field: 3, iterationDelay: Number.NaN }],
    ['fullScanDelay -0.5', { field: 3, fullScanDelay: -0.5 }],
    ['fullScanDelay Infinity', { field: 3, fullScanDelay: Infinity }],
    ["unit 'h'", { field: 3, unit: 'h' }],
    ["unit 'MS'", { field: 3, unit: 'MS' }],
    ['now that is a number', { field: 3, now: 5 }],
    ['isExpired that is a string', { isExpired: 'yes' }],
    ['onExpired that is an object', { field: 3, onExpired: {} }],
    ['onFullScanStart that is a string', { field: 3, onFullScanStart: 'x' }],
    ['onFullScanSuccess that is a number', { field: 3, onFullScanSuccess: 1 }],
    ['onFullScanError that is null', { field: 3, onFullScanError: null }],
    ['onFullScanComplete that is true', { field: 3, onFullScanComplete: true }],
    ["keepAlive 'yes'", { field: 3, keepAlive: 'yes' }],
    ['keepAlive 1', { field: 3, keepAlive: 1 }],
    ['rmIndex that is a number', { field: 3, rmIndex: 0 }],
    ['a non-unique rmIndex', { field: 3, rmIndex: 'exp' }],
    ['a non-unique rmIndex with a predicate', { rmIndex: 'by_name', isExpired: fn }],
    ['an itIndex TREE whose first part is not the TTL field', { field: 3, itIndex: 'by_name' }],
    ['a TTL TREE walked by a predicate without a field', { itIndex: 'exp', isExpired: fn }],
    ['a TREE primary walked as itIndex from another rmIndex, on a non-TTL field', { field: 3, rmIndex: 'email', itIndex: 'primary' }],
  ];

  test.each(illegal)('%s is refused with ER_ILLEGAL_PARAMS', (_what, options) => {
    const space = makeSpace();
    const error = expectCode(() => expirationd.start('bad', space, options as TaskOptions), 'ER_ILLEGAL_PARAMS');
    expect(error.message.length).toBeGreaterThan(10);
    expect(expirationd.tasks()).toEqual([]);
  });

  test('an itIndex TREE whose first part is a string TTL field is refused', () => {
    const space = makeSpace();
    expectCode(() => expirationd.start('bad', space, { field: 2, itIndex: 'by_name' }), 'ER_ILLEGAL_PARAMS');
  });

  test('an itIndex TREE whose first part is a boolean TTL field is refused, naming the type', () => {
    const space = new Space('flags');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('by_flag', { unique: false, parts: [[2, 'boolean']] });
    const error = expectCode(() => expirationd.start('bad', space, { field: 2, itIndex: 'by_flag' }), 'ER_ILLEGAL_PARAMS');
    expect(error.message).toContain('must be numeric, not boolean');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('the error names the offending option', () => {
    const space = makeSpace();
    expect(expectCode(() => expirationd.start('bad', space, { field: 3, scansize: 1 } as TaskOptions), 'ER_ILLEGAL_PARAMS').message)
      .toContain('scansize');
    expect(expectCode(() => expirationd.start('bad', space, { field: 3, itIndex: 'by_name' }), 'ER_ILLEGAL_PARAMS').message)
      .toContain('by_name');
  });

  test.each([['rmIndex'], ['itIndex']])('an unknown %s is refused with ER_NO_SUCH_INDEX', (option) => {
    const space = makeSpace();
    const error = expectCode(() => expirationd.start('bad', space, { field: 3, [option]: 'missing' }), 'ER_NO_SUCH_INDEX');
    expect(error.message).toContain('missing');
  });

  test('bad names and spaces are refused', () => {
    const space = makeSpace();
    expectCode(() => expirationd.start('', space, { field: 3 }), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start(42 as unknown as string, space, { field: 3 }), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start('x', {} as Space, { field: 3 }), 'ER_ILLEGAL_PARAMS');
    expectCode(() => expirationd.start('x', new Space('empty'), { field: 3 }), 'ER_NO_PRIMARY_INDEX');
    const dropped = makeSpace('dropped');
    dropped.drop();
    expectCode(() => expirationd.start('x', dropped, { field: 3 }), 'ER_SPACE_DROPPED');
  });

  test('a refused start leaves the running task of that name alone', () => {
    const space = makeSpace();
    const running = expirationd.start('same', space, { field: 3, now: () => 0 });
    expectCode(() => expirationd.start('same', space, { field: 3, scanSize: 0 }), 'ER_ILLEGAL_PARAMS');
    expect(running.isRunning).toBe(true);
    expect(expirationd.task('same')).toBe(running);
  });

  test('accepted edge values: iterationDelay 0, fullScanDelay 0, scanSize 1, a HASH itIndex, a predicate without a field', () => {
    const space = makeSpace();
    expect(() => expirationd.start('e1', space, { field: 3, iterationDelay: 0, fullScanDelay: 0, scanSize: 1 })).not.toThrow();
    expect(() => expirationd.start('e2', space, { field: 3, itIndex: 'email' })).not.toThrow();
    expect(() => expirationd.start('e3', space, { isExpired: () => false })).not.toThrow();
    expect(() => expirationd.start('e4', space, { field: 3, unit: 'ms', keepAlive: false })).not.toThrow();
    expect(expirationd.tasks()).toEqual(['e1', 'e2', 'e3', 'e4']);
  });
});

describe('clocks and units', () => {
  test("unit 'ms' with an injected clock compares TTLs in milliseconds", () => {
    const base = 1_750_000_000_000;
    let clock = base;
    const space = makeSpace();
    space.insertMany([[1, 'a', base - 1], [2, 'b', base + 500], [3, 'c', base + 1000]]);
    expirationd.start('ms', space, { field: 3, unit: 'ms', now: () => clock, fullScanDelay: 1 });
    vi.advanceTimersToNextTimer();
    expect(ids(space)).toEqual([2, 3]);
    clock = base + 500;
    vi.advanceTimersToNextTimer();
    expect(ids(space)).toEqual([3]);
  });

  test("the default clock is Date.now() / 1000 with unit 's' and Date.now() with unit 'ms'", () => {
    const nowMs = Date.now();
    const seconds = makeSpace('seconds');
    // In seconds: an hour ago, an hour ahead, and a millisecond timestamp (far in the future).
    seconds.insertMany([[1, 'past', Math.floor(nowMs / 1000) - 3600], [2, 'ahead', Math.floor(nowMs / 1000) + 3600], [3, 'ms', nowMs]]);
    const millis = makeSpace('millis');
    millis.insertMany([[1, 'past', nowMs - 3_600_000], [2, 'ahead', nowMs + 3_600_000], [3, 's', Math.floor(nowMs / 1000)]]);
    expirationd.start('seconds', seconds, { field: 3, fullScanDelay: 60 });
    expirationd.start('millis', millis, { field: 3, unit: 'ms', fullScanDelay: 60 });
    vi.advanceTimersByTime(0);
    expect(ids(seconds)).toEqual([2, 3]);
    expect(ids(millis)).toEqual([2]);
  });
});

describe('the isExpired predicate path', () => {
  test('the predicate decides, whatever the TTL field says', () => {
    const space = makeSpace();
    space.insertMany([[1, 'keep1', 0], [2, 'drop2', 999_999], [3, 'drop3', 0], [4, 'keep4', 999_999]]);
    const task = expirationd.start('pred', space, {
      field: 3, now: () => 100, fullScanDelay: 60, isExpired: (tuple) => (tuple[1] as string).startsWith('drop'),
    });
    vi.advanceTimersByTime(0);
    expect(ids(space)).toEqual([1, 4]);
    expect(task.stats()).toMatchObject({ checked: 4, expired: 2, fullScans: 1 });
  });

  test('a predicate may look at anything in the tuple, including non-numeric fields', () => {
    const space = new Space('sessions');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'string']] });
    space.insertMany([['s1', { expiresAt: 5 }], ['s2', { expiresAt: 50 }], ['s3', null]]);
    expirationd.start('sessions', space, {
      now: () => 10,
      fullScanDelay: 60,
      isExpired: (tuple, now) => {
        const meta = tuple[1] as { expiresAt: number } | null;
        return meta !== null && meta.expiresAt <= now;
      },
    });
    vi.advanceTimersByTime(0);
    expect(space.select().map((t) => t[0]).sort()).toEqual(['s2', 's3']);
  });

  test('a predicate that changes the space does not make the chunk delete a tuple it did not judge', () => {
    const space = makeSpace();
    space.insertMany([[1, 'a', 0], [2, 'b', 0]]);
    const task = expirationd.start('pred', space, {
      field: 3,
      now: () => 100,
      fullScanDelay: 60,
      isExpired: (tuple) => {
        // Replace the other tuple with a fresh version while it is being judged.
        if (tuple[0] === 1) space.replace([2, 'b', 0, 'fresh']);
        return true;
      },
    });
    vi.advanceTimersByTime(0);
    expect(task.lastError).toBeUndefined();
    expect(space.select()).toEqual([[2, 'b', 0, 'fresh']]);
  });
});

describe('keepAlive', () => {
  /** Starts a task whose first pass takes 3 chunks and returns the ref state of every timer it made. */
  function timerRefs(options: TaskOptions): { immediates: boolean[]; timeouts: boolean[] } {
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    const space = makeSpace();
    for (let id = 0; id < 30; id++) space.insert([id, `u${id}`, 10 ** 9]);
    expirationd.start('alive', space, { field: 3, now: () => 0, scanSize: 10, fullScanDelay: 60, ...options });
    vi.advanceTimersByTime(3000);
    const refOf = (result: { value: unknown }) => (result.value as { hasRef(): boolean }).hasRef();
    return { immediates: immediate.mock.results.map(refOf), timeouts: timeout.mock.results.map(refOf) };
  }

  test("by default a task's timeouts are unref'd (so an idle task never keeps node alive)", () => {
    const { immediates, timeouts } = timerRefs({});
    expect(timeouts).toEqual([false, false, false]); // two chunk waits and the wait after the pass
    expect(immediates).toHaveLength(1); // the first chunk
  });

  test("keepAlive: true keeps the task's timeouts ref'd", () => {
    const { timeouts } = timerRefs({ keepAlive: true });
    expect(timeouts).toEqual([true, true, true]);
  });

  // A real process: with keepAlive the task alone keeps node running (here until its 3rd pass,
  // when it kills itself); without it node exits with the task still running (an immediate
  // already queued may still run once).
  test.each([true, false])('keepAlive %s in a real node process', (keepAlive) => {
    vi.useRealTimers();
    const entry = path.resolve(__dirname, '../dist/index.js');
    const script = `
      const { Space, expirationd } = require(${JSON.stringify(entry)});
      const space = new Space('s');
      space.createIndex('pk', { parts: [[1, 'unsigned']] });
      space.insert([1, 1]);
      let passes = 0;
      const task = expirationd.start('t', space, { field: 2, fullScanDelay: 0.005, keepAlive: ${keepAlive} });
      task.on('fullScan', () => { if (++passes === 3) task.kill(); });
      process.on('exit', () => process.stdout.write(JSON.stringify({ passes, running: task.isRunning })));
    `;
    const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
    const result = JSON.parse(out) as { passes: number; running: boolean };
    if (keepAlive) {
      expect(result).toEqual({ passes: 3, running: false });
    } else {
      expect(result.running).toBe(true);
      expect(result.passes).toBeLessThan(3);
    }
  });
});

describe('a careless second start', () => {
  test('task.start() on a running task changes nothing: no second restart, one timer, one chunk per tick', () => {
    const space = makeSpace();
    const task = expirationd.start('double-start', space, { field: 3, now: () => 0 });
    task.start();
    expect(task.stats().restarts).toBe(1);
    expect(task.isRunning).toBe(true);
    task.kill();
    expect(task.isRunning).toBe(false);
  });
});
