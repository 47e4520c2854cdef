// Review: every ```ts block of the README, run with the smallest harness the surrounding prose
// describes (spaces declared with the layout it gives, clocks injected), each comment beside a
// line checked. Tests marked "fixed:" pinned a snippet or claim that did not do what the README
// said; the README now has the corrected line, which they check.
// (Type-only findings are in the review report: this file must itself type-check.)
import { describe, expect, test, vi } from 'vitest';
import { Space, CappedError, atomic, expirationd, type Task } from '../src/index.js';
import { burstSize, chunkDelay } from '../src/expirationd/scheduler.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return e instanceof CappedError ? e.code : String(e);
  }
}

function runUntil(done: () => boolean): void {
  for (let i = 0; i < 10_000 && !done() && vi.getTimerCount() > 0; i++) vi.advanceTimersToNextTimer();
}

function pass(task: Task<any>): void {
  const before = task.stats().fullScans;
  task.wake();
  runUntil(() => task.stats().fullScans > before);
}

/** The space of the "Space" section: HASH primary on field 1, TREE 'exp' on field 3. */
function testerSpace(name = 'tester'): Space {
  const space = new Space(name, { maxTupleSize: 64 * 1024 });
  space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [[3, 'unsigned']] });
  return space;
}

describe('README "Tuples, keys and types"', () => {
  test('"[1, \'a\', Date.now()] indexes and expires correctly in an \'unsigned\' field"', () => {
    const space = new Space('dn');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const d = 1_764_000_000_123;  // above 2^32: msgpackr writes it as float64
    space.insert([1, 'a', d]);
    space.insert([2, 'a', d + 1]);
    expect(space.index.exp.select(d, { iterator: 'LE' })).toEqual([[1, 'a', d]]);
    const task = expirationd.start('dn', space, { itIndex: 'exp', field: 3, unit: 'ms', now: () => d });
    pass(task);
    expect(space.select()).toEqual([[2, 'a', d + 1]]);
  });

  test('part types: \'number\' takes ±Infinity, NaN is refused, lone surrogates, -0 and BigInt read back', () => {
    const n = new Space('num');
    n.createIndex('primary', { parts: [[1, 'number']] });
    expect(codeOf(() => n.insert([Infinity]))).toBeUndefined();
    expect(codeOf(() => n.insert([-Infinity]))).toBeUndefined();
    expect(codeOf(() => n.insert([NaN]))).toBe('ER_FIELD_TYPE');
    const s = new Space('str');
    s.createIndex('primary', { parts: [[1, 'string']] });
    s.insert(['é']);
    s.insert(['z']);
    s.insert(['Z']);
    expect(s.select()).toEqual([['Z'], ['z'], ['é']]);  // bytewise
    expect(codeOf(() => s.insert(['\ud800']))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.get('\ud800'))).toBe('ER_KEY_TYPE');
    s.insert(['b', 2n ** 60n, -0]);
    const back = s.get('b')!;
    expect(back[1]).toBe(2n ** 60n);
    expect(Object.is(back[2], 0)).toBe(true);
  });
});

describe('README "Typed tuples" (line 143)', () => {
  test('the snippet runs: get gives the user, onExpired and \'expired\' see Session tuples, stats(name) is TaskStats', () => {
    let clock = 1_700_000_000;
    const audited: string[][] = [];
    const audit = (users: string[]): void => {
      audited.push(users);
    };
    type Session = [token: string, user: string, exp: number];
    // The snippet's space uses the wall clock; the clock is injected here (same layout).
    const s = new Space<Session>('sessions', { ttl: { field: 3, now: () => clock } });
    const token = s.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    s.insert(['tok', 'ada', clock + 1800]);
    const user = s.get('tok')?.[1];
    expect(user).toBe('ada');
    expect(token.get('tok')).toEqual(['tok', 'ada', clock + 1800]);
    const task = expirationd.start('sessions', s, {
      itIndex: 'exp',
      onExpired: (tuples) => audit(tuples.map(([, user]) => user)),
    });
    const events: Session[][] = [];
    task.on('expired', (tuples) => {
      events.push(tuples);
    });
    expect(expirationd.stats('sessions').expired).toBe(0);
    clock += 1800;
    pass(task);
    expect(audited).toEqual([['ada']]);
    expect(events).toEqual([[['tok', 'ada', clock]]]);
    expect(expirationd.stats('sessions').expired).toBe(1);
    expect(Object.keys(expirationd.stats())).toEqual(['sessions']);
  });
});

describe('README "Space" (line 198)', () => {
  test('every comment of the snippet', () => {
    const space = testerSpace();
    expect(space.insert([1, 'ada@example.com', 1700000000])).toEqual([1, 'ada@example.com', 1700000000]);
    expect(space.replace([1, 'ada@example.com', 1700000600])).toEqual([1, 'ada@example.com', 1700000600]);
    expect(space.insertMany([[2, 'b', 5], [3, 'c', 6]])).toBe(2);
    expect(space.get(1)).toEqual([1, 'ada@example.com', 1700000600]);
    expect(space.delete(3)).toEqual([3, 'c', 6]);
    expect(space.delete(3)).toBeUndefined();
    expect(space.select()).toHaveLength(2);
    expect(space.len()).toBe(2);
    const m = space.memory();
    expect(m.total).toBe(m.tuples + m.indexes);
    expect(space.transaction(() => {
      space.delete(1);
      space.insert([4, 'd', 7]);
      return 'result';
    })).toBe('result');
    expect(space.get(1)).toBeUndefined();
    expect(() => space.transaction(() => {
      space.delete(2);
      throw new Error('undo');
    })).toThrow('undo');
    expect(space.get(2)).toEqual([2, 'b', 5]);
    space.truncate();
    expect([space.len(), space.indexes.map((i) => i.name)]).toEqual([0, ['primary', 'exp']]);
    space.drop();
    expect(codeOf(() => space.len())).toBe('ER_SPACE_DROPPED');
    expect(space.dropped).toBe(true);
  });

  test('insertMany is all or nothing; a duplicate in the second unique index leaves the first untouched', () => {
    const space = new Space('atomic-stmt');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('email', { parts: [[2, 'string']] });
    space.insert([1, 'x']);
    expect(codeOf(() => space.insertMany([[2, 'y'], [3, 'x']]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insert([2, 'x']))).toBe('ER_DUPLICATE_KEY');
    expect(space.select()).toEqual([[1, 'x']]);
  });

  test('createIndex inside a frame: refused on an older space, allowed on one created in the frame before it writes', () => {
    const old = new Space('old');
    old.createIndex('primary', { parts: [[1, 'unsigned']] });
    expect(codeOf(() => old.transaction(() => old.createIndex('x', { parts: [[1, 'unsigned']] })))).toBe('ER_TRANSACTION');
    expect(codeOf(() => atomic(() => {
      const fresh = new Space('fresh');
      fresh.createIndex('primary', { parts: [[1, 'unsigned']] });
      fresh.createIndex('second', { parts: [[1, 'unsigned']] });
      fresh.insert([1]);
    }))).toBeUndefined();
  });
});

describe('README "update, upsert and atomic" (line 245)', () => {
  const now = 1_700_000_000;

  test('sessions.update returns the new tuple, or undefined', () => {
    const sessions = new Space('sessions');
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    sessions.insert(['tok', 'ada', now]);
    expect(sessions.update('tok', [['=', 3, now + 1800]])).toEqual(['tok', 'ada', now + 1800]);
    expect(sessions.update('nope', [['=', 3, now + 1800]])).toBeUndefined();
  });

  test('fixed: counters.update([\'ip\', 7], [[\'+\', 3, 1], ...]) counts in field 3 of [ip, window, count, flags]', () => {
    // A two-part key ['ip', 7] is fields 1 and 2 (as in the Recipes: [client, window, ..., count]
    // keyed by [client, window]). The snippet's old '+' on field 2 changed the primary key.
    const counters = new Space('counters');
    counters.createIndex('primary', { parts: [[1, 'string'], [2, 'unsigned']] });
    counters.insert(['ip', 7, 0, 0b01]);
    expect(codeOf(() => counters.update(['ip', 7], [['+', 2, 1], ['|', 4, 0b10]]))).toBe('ER_CANT_UPDATE_PRIMARY_KEY');
    // The corrected line, [['+', 3, 1], ['|', 4, 0b10]], does what the snippet means:
    expect(counters.update(['ip', 7], [['+', 3, 1], ['|', 4, 0b10]])).toEqual(['ip', 7, 1, 0b11]);
  });

  test('users.index.email.update applies !, #, : in order through a secondary unique index', () => {
    const users = new Space('users');
    users.createIndex('primary', { parts: [[1, 'unsigned']] });
    users.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    users.insert([1, 'a@x', 'Ada', 'Hello']);
    expect(users.index.email.update('a@x', [['!', -1, 'tag'], ['#', 2, 1], [':', 3, 1, 2, 'Hi']]))
      .toEqual([1, 'Ada', 'Hillo', 'tag']);
  });

  test('hits.upsert inserts, then applies ops; returns nothing', () => {
    const hits = new Space('hits');
    hits.createIndex('primary', { type: 'HASH', parts: [[1, 'string']] });
    expect(hits.upsert(['hits:ip', 0, now + 60], [['+', 2, 1]])).toBeUndefined();
    expect(hits.get('hits:ip')).toEqual(['hits:ip', 0, now + 60]);
    hits.upsert(['hits:ip', 0, now + 999], [['+', 2, 1]]);
    expect(hits.get('hits:ip')).toEqual(['hits:ip', 1, now + 60]);
  });

  test('atomic() moves a job between spaces, and is undone in every space if it throws', () => {
    const delayed = new Space('delayed');
    delayed.createIndex('primary', { parts: [[1, 'unsigned']] });
    const queue = new Space('queue');
    queue.createIndex('primary', { parts: [[1, 'unsigned']] });
    delayed.insert([5, 'job', now]);
    delayed.insert([6, 'job6', now]);
    const id = 5;
    const job = 'job';
    atomic(() => { delayed.delete(id); queue.insert([id, job]); });
    expect([delayed.get(5), queue.get(5)]).toEqual([undefined, [5, 'job']]);
    expect(() => atomic(() => {
      delayed.delete(6);
      queue.insert([6, 'job6']);
      throw new Error('boom');
    })).toThrow('boom');
    expect([delayed.get(6), queue.get(6)]).toEqual([[6, 'job6', now], undefined]);
  });

  test('prose: two ops on one field apply in order; 5n + 1 reads back as 6; a counter crossing 2^32 stays a number', () => {
    const p = new Space('ops');
    p.createIndex('primary', { parts: [[1, 'unsigned']] });
    p.insert([1, 5]);
    expect(p.update(1, [['+', 2, 1], ['+', 2, 1]])).toEqual([1, 7]);
    p.insert([2, 5n]);
    expect(p.update(2, [['+', 2, 1]])).toEqual([2, 6]);
    p.insert([3, 2 ** 32 - 1]);
    expect(p.update(3, [['+', 2, 1]])).toEqual([3, 2 ** 32]);
    expect(codeOf(() => p.update(99, [['?' as '=', 2, 1]]))).toBe('ER_UPDATE_OP');  // refused even when absent
  });
});

describe('README "Index builds that do not block" (line 346)', () => {
  test('createIndexAsync builds over the stored tuples and follows a write made during the build', async () => {
    vi.useRealTimers();
    const space = testerSpace('async-build');
    for (let i = 0; i < 40_000; i++) space.insert([i, `u${i}@example.com`, i]);
    const building = space.createIndexAsync('email', { type: 'HASH', parts: [[2, 'string']] });
    space.insert([40_000, 'new@example.com', 0]);
    expect(space.index.email).toBeUndefined();
    const byEmail = await building;
    expect(byEmail.get('new@example.com')).toEqual([40_000, 'new@example.com', 0]);
    expect(byEmail.len()).toBe(40_001);
    expect(space.index.email).toBe(byEmail);
  });
});

describe('README "Index" (line 388)', () => {
  test('LE select is newest first, limited; the pairs loop deletes up to the bound and survives the deletions', () => {
    const space = testerSpace('index-snippet');
    for (let i = 0; i < 300; i++) space.insert([i, `u${i}`, 1699999900 + i * 20]);  // 1699999900 .. 1700005880
    const exp = space.index.exp;
    const le = exp.select(1700000000, { iterator: 'LE', limit: 100 });
    expect(le.map((t) => t[2])).toEqual([1700000000, 1699999980, 1699999960, 1699999940, 1699999920, 1699999900]);
    expect(exp.select(1700005880, { iterator: 'LE', limit: 100 })).toHaveLength(100);
    for (const tuple of exp.pairs(1700000000, { iterator: 'GT' })) {
      // The snippet's `tuple[2] > 1700003600` and `space.delete(tuple[0])` do not compile on
      // this untyped space (tuple is unknown[]): see the report.
      if ((tuple[2] as number) > 1700003600) break;
      space.delete(tuple[0] as number);
    }
    const left = space.select().map((t) => t[2] as number);
    expect(left.filter((e) => e > 1700000000 && e <= 1700003600)).toEqual([]);
    expect(space.len()).toBe(300 - 180);
  });
});

describe('README "TTL-aware spaces" (line 407)', () => {
  test('get gives the tuple until its TTL comes, then undefined; the task takes field, unit and now from the space', () => {
    let clock = 1_700_000_000.25;
    const sessions = new Space('sessions', { ttl: { field: 3, now: () => clock } });
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    sessions.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    sessions.insert(['tok', 'ada', clock + 1800]);
    expect(sessions.get('tok')?.[1]).toBe('ada');
    clock += 1799.9;
    expect(sessions.get('tok')?.[1]).toBe('ada');
    clock += 0.1;
    expect(sessions.get('tok')).toBeUndefined();
    expect(sessions.len()).toBe(1);  // stored is not visible
    const task = expirationd.start('sessions', sessions, { itIndex: 'exp' });
    expect(task.earlyBreak).toBe(true);
    pass(task);
    expect(sessions.len()).toBe(0);
    expect(sessions.ttl?.unit).toBe('s');
    expect(Object.isFrozen(sessions.ttl)).toBe(true);
  });

  test('prose: insertMany [[1,\'a\',50],[1,\'b\',500]] at now 100 returns 2 and stores one; an upsert keeps counting into the expired window', () => {
    let clock = 100;
    const m = new Space('batch', { ttl: { field: 3, now: () => clock } });
    m.createIndex('primary', { parts: [[1, 'unsigned']] });
    expect(m.insertMany([[1, 'a', 50], [1, 'b', 500]])).toBe(2);
    expect([m.len(), m.get(1)]).toEqual([1, [1, 'b', 500]]);
    const hits = new Space('hits', { ttl: { field: 3, now: () => clock } });
    hits.createIndex('primary', { type: 'HASH', parts: [[1, 'string']] });
    hits.upsert(['hits:ip', 0, clock + 60], [['+', 2, 1]]);
    clock += 61;
    hits.upsert(['hits:ip', 0, clock + 60], [['+', 2, 1]]);
    expect(hits.get('hits:ip')).toBeUndefined();
    expect(hits.len()).toBe(1);
  });
});

describe('README "Capped spaces" (line 481)', () => {
  test('full: the replace evicts the soonest-to-expire entry and reports it; the new one is kept even with the smallest TTL', () => {
    const clock = 1_700_000_000;
    let evicted = 0;
    const metrics = { evicted: { inc: (n: number): void => { evicted += n; } } };
    const cache = new Space<[key: string, value: string, exp: number]>('cache', {
      ttl: { field: 3, now: () => clock },
      maxTuples: 1_000,  // the snippet's 100_000, smaller
      maxBytes: 64 * 1024 * 1024,
      onFull: 'evictExpiring',
      onEvict: (tuples) => metrics.evicted.inc(tuples.length),
    });
    cache.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    cache.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 1_000; i++) cache.insert([`k${i}`, 'v', clock + 100 + i]);
    cache.replace(['k', 'v', clock + 60]);
    expect([cache.len(), evicted, cache.get('k0'), cache.get('k')]).toEqual([1_000, 1, undefined, ['k', 'v', clock + 60]]);
    expect([cache.maxTuples, cache.maxBytes, cache.onFull]).toEqual([1_000, 64 * 1024 * 1024, 'evictExpiring']);
    expect(cache.bsize()).toBeGreaterThan(0);
  });

  test('prose: evictExpiring needs a ttl; without the TTL TREE writes throw ER_ILLEGAL_PARAMS; \'refuse\' is the default', () => {
    expect(codeOf(() => new Space('x', { maxTuples: 1, onFull: 'evictExpiring' }))).toBe('ER_ILLEGAL_PARAMS');
    const noTree = new Space('no-tree', { ttl: { field: 3 }, maxTuples: 1, onFull: 'evictExpiring' });
    noTree.createIndex('primary', { parts: [[1, 'string']] });
    expect(codeOf(() => noTree.insert(['a', 'b', 1]))).toBe('ER_ILLEGAL_PARAMS');
    expect(noTree.update('absent', [['=', 2, 'x']])).toBeUndefined();
    const r = new Space('refuse', { maxTuples: 1 });
    r.createIndex('primary', { parts: [[1, 'unsigned']] });
    r.insert([1]);
    expect([r.onFull, codeOf(() => r.insert([2])), r.len()]).toEqual(['refuse', 'ER_SPACE_FULL', 1]);
  });
});

describe('README "expirationd" (lines 549, 611)', () => {
  test('the options form and the positional form; the second start of the name kills the first', () => {
    const space = testerSpace('expd');
    const task = expirationd.start('indexed', space, {
      rmIndex: 'primary', itIndex: 'exp', field: 3, scanSize: 1024, scanTime: 3600,
    });
    expect(task.earlyBreak).toBe(true);
    const positional = expirationd.start('indexed', space, 'primary', 'exp', 3, 1024, 3600);
    expect([task.state, positional.state, positional.earlyBreak]).toEqual(['killed', 'running', true]);
    expect(expirationd.task('indexed')).toBe(positional);
    // "anything after scanTime, such as an options object, is refused with ER_ILLEGAL_PARAMS"
    const extra = [3600, { keepAlive: true }] as unknown as [number];
    expect(codeOf(() => expirationd.start('indexed', space, 'primary', 'exp', 3, 1024, ...extra))).toBe('ER_ILLEGAL_PARAMS');
    expect(expirationd.task('indexed')).toBe(positional);  // a start that fails leaves it running
    expect(positional.stats()).toEqual({
      checked: 0, expired: 0, restarts: 1, workingTime: 0, fullScans: 0, chunks: 0, skipped: 0, lag: 0, wakeups: 0,
    });
  });

  test('the listeners: \'expired\' counts what was deleted, \'error\' gets the callback error and ER_TUPLE_SKIPPED', () => {
    const space = testerSpace('events');
    for (let i = 0; i < 5; i++) space.insert([i, 'x', 990]);
    const task = expirationd.start('indexed', space, {
      itIndex: 'exp', field: 3, now: () => 1000,
      onExpired: (t) => {
        if (t.some((x) => x[0] === 3)) throw new Error('poison');
      },
    });
    let count = 0;
    const warned: unknown[] = [];
    const metrics = { expired: { inc: (n: number): void => { count += n; } } };
    const log = { warn: (o: { err: unknown }, _msg: string): void => { warned.push(o.err); } };
    task.on('expired', (tuples) => metrics.expired.inc(tuples.length));
    task.on('error', (err) => log.warn({ err }, 'expiry chunk rolled back'));
    pass(task);
    expect(count).toBe(4);
    expect(warned.map((e) => (e instanceof CappedError ? e.code : (e as Error).message))).toEqual(['poison', 'ER_TUPLE_SKIPPED']);
    expect(space.select()).toEqual([[3, 'x', 990]]);
    expect(task.stats().skipped).toBe(1);
  });
});

describe('README "Failures, callbacks and delivery"', () => {
  test('an isExpired promise rolls the chunk back as ER_ILLEGAL_PARAMS; a verdict of 1 skips the tuple as ER_TUPLE_SKIPPED', () => {
    const space = testerSpace('fail');
    space.insert([1, 'a', 1]);
    const errors: unknown[] = [];
    const promised = expirationd.start('fail', space, {
      field: 3, now: () => 10, isExpired: (() => Promise.resolve(true)) as unknown as () => boolean,
    });
    promised.on('error', (e) => errors.push(e));
    pass(promised);
    expect(space.len()).toBe(1);
    expect((errors[0] as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
    errors.length = 0;
    const verdict = expirationd.start('fail', space, { field: 3, now: () => 10, isExpired: (() => 1) as unknown as () => boolean });
    verdict.on('error', (e) => errors.push(e));
    pass(verdict);
    expect(space.len()).toBe(1);
    expect(errors.map((e) => (e as CappedError).code)).toContain('ER_TUPLE_SKIPPED');
    expect(verdict.stats().skipped).toBe(1);
  });
});

describe('README "Pause and resume" (line 665)', () => {
  test('stop() keeps it registered and runs nothing; start() finishes the same pass', () => {
    const clock = 1_700_000_000;
    const sessions = new Space('sessions', { ttl: { field: 3, now: () => clock } });
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    sessions.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 30; i++) sessions.insert([`t${i}`, 'u', clock - 100 + i]);
    const task = expirationd.start('sessions', sessions, { itIndex: 'exp' });
    task.stop();
    expect(expirationd.task('sessions') === task).toBe(true);
    expect([task.state, vi.getTimerCount()]).toEqual(['stopped', 0]);
    task.wake();  // does nothing while stopped
    vi.advanceTimersByTime(10_000);
    expect(sessions.len()).toBe(30);
    task.start();
    runUntil(() => task.stats().fullScans === 1);
    expect(sessions.len()).toBe(0);
    expect(task.stats().restarts).toBe(1);
    sessions.drop();
    expect(codeOf(() => task.start())).toBe('ER_SPACE_DROPPED');
  });
});

describe('README "processExpired" (line 696)', () => {
  const clock = 1_700_000_000_000;

  test('delayed jobs: each due job moves to the queue, atomically; later jobs stay', () => {
    type Job = [id: number, payload: string, runAt: number];
    const delayed = new Space<Job>('delayed');
    delayed.createIndex('primary', { parts: [[1, 'unsigned']] });
    delayed.createIndex('runAt', { unique: false, parts: [[3, 'number']] });
    const queue = new Space<[id: number, payload: string, state: string]>('queue');
    queue.createIndex('primary', { parts: [[1, 'unsigned']] });
    for (let i = 0; i < 10; i++) delayed.insert([i, `job${i}`, clock + (i < 6 ? -10 : 1000)]);
    const task = expirationd.start('delayed-jobs', delayed, {
      itIndex: 'runAt', field: 3, unit: 'ms', now: () => clock,
      processExpired: (jobs) => {
        for (const [id, payload] of jobs) {
          queue.insert([id, payload, 'ready']);
          delayed.delete(id);
        }
      },
    });
    pass(task);
    expect([queue.len(), delayed.len(), queue.get(0), task.stats().expired]).toEqual([6, 4, [0, 'job0', 'ready'], 6]);
  });

  function jobs(name: string, base = 0): Space<[id: number, body: string, exp: number, status?: string]> {
    const space = new Space<[id: number, body: string, exp: number, status?: string]>(name);
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 5; i++) space.insert([base + i, 'b', clock - 10 + i]);
    return space;
  }

  test('soft delete, re-queue, archive and trim', () => {
    const farFuture = 9e15;
    const soft = jobs('soft');
    pass(expirationd.start('soft', soft, {
      itIndex: 'exp', field: 3, unit: 'ms', now: () => clock,
      processExpired: (tuples) => { for (const t of tuples) soft.update(t[0], [['=', 4, 'expired'], ['=', 3, farFuture]]); },
    }));
    expect(soft.select().every((t) => t[2] === farFuture && t[3] === 'expired')).toBe(true);

    const requeue = jobs('requeue');
    pass(expirationd.start('requeue', requeue, {
      itIndex: 'exp', field: 3, unit: 'ms', now: () => clock,
      processExpired: (tuples) => { for (const t of tuples) requeue.update(t[0], [['+', 3, 60]]); },
    }));
    expect(requeue.select().map((t) => t[2])).toEqual([clock + 50, clock + 51, clock + 52, clock + 53, clock + 54]);

    const space = jobs('archived', 20_000);  // archived after the older entries: primary order is age
    const archive = new Space<[id: number, body: string, exp: number, status?: string]>('archive');
    archive.createIndex('primary', { parts: [[1, 'unsigned']] });
    for (let i = 100; i < 10_100; i++) archive.insert([i, 'old', 0]);
    pass(expirationd.start('archive', space, {
      itIndex: 'exp', field: 3, unit: 'ms', now: () => clock,
      processExpired: (tuples) => {
        for (const t of tuples) { archive.insert(t); space.delete(t[0]); }
        while (archive.len() > 10_000) archive.delete(archive.index.primary.min()![0]);
      },
    }));
    expect([space.len(), archive.len(), archive.index.primary.min()![0], archive.get(20_004)?.[0]]).toEqual([0, 10_000, 105, 20_004]);
  });

  test('prose: an async processExpired, or one combined with onExpired, is refused (ER_ILLEGAL_PARAMS)', () => {
    const space = jobs('refused');
    expect(codeOf(() => expirationd.start('x', space, { field: 3, processExpired: async () => {} }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => expirationd.start('x', space, { field: 3, processExpired: () => {}, onExpired: () => {} }))).toBe('ER_ILLEGAL_PARAMS');
  });
});

describe('README "Timing" (worked example)', () => {
  const config = (scanTime: number, len: number, iterationDelay = 1): Parameters<typeof burstSize>[0] =>
    ({ scanSize: 1024, scanTime, iterationDelay, itLen: () => len }) as unknown as Parameters<typeof burstSize>[0];

  test('1M tuples: 3.69 s capped to 1 s and bursts of 10; scanTime 60: 61 ms; scanTime 1: 1.02 ms and bursts of 196; iterationDelay 4: about an hour', () => {
    expect(1024 * 3600 / 1_000_001).toBeCloseTo(3.69, 2);
    expect(chunkDelay(config(3600, 1_000_000))).toBe(1);
    expect(Math.ceil(1_000_001 / 1024)).toBe(977);
    expect(burstSize(config(3600, 1_000_000))).toBe(10);
    expect(chunkDelay(config(60, 1_000_000))).toBeCloseTo(0.0614, 4);
    expect(burstSize(config(60, 1_000_000))).toBe(10);
    expect(chunkDelay(config(1, 1_000_000)) * 1000).toBeCloseTo(1.02, 2);
    expect(burstSize(config(1, 1_000_000))).toBe(196);
    expect(Math.ceil(977 / 196)).toBe(5);
    expect(977 * chunkDelay(config(3600, 1_000_000, 4)) / 60).toBeCloseTo(60, 0);
  });

  test('task.chunkDelay follows the formula', () => {
    const space = new Space('formula');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    const tuples: unknown[][] = [];
    for (let i = 0; i < 9_999; i++) tuples.push([i, 1e12]);
    space.insertMany(tuples);
    expect(expirationd.start('formula', space, { field: 2, scanSize: 10, scanTime: 1 }).chunkDelay).toBe(0.001);
    expect(expirationd.start('formula', space, { field: 2 }).chunkDelay).toBe(1);
  });
});

describe('README "Errors" (line 872)', () => {
  test('the snippet catches ER_DUPLICATE_KEY through instanceof CappedError', () => {
    const space = testerSpace('errors');
    space.insert([1, 'ada', 0]);
    let caught = false;
    try {
      space.insert([1, 'dup', 0]);
    } catch (err) {
      if (err instanceof CappedError && err.code === 'ER_DUPLICATE_KEY') caught = true;
    }
    expect(caught).toBe(true);
  });

  test('fixed: the ER_KEY_* row says which case gives which code (ER_KEY_TOO_LARGE: a key over maxTupleSize)', () => {
    const space = new Space('keys', { maxTupleSize: 256 });
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'string'], [2, 'unsigned']] });
    const codes = [
      codeOf(() => space.get([1, 1])),            // wrong part type
      codeOf(() => space.get(['a', 1, 1])),       // too many parts
      codeOf(() => space.get(['a'])),             // a partial key where a full one is needed
    ];
    expect(codes).toEqual(['ER_KEY_TYPE', 'ER_KEY_PART_COUNT', 'ER_KEY_PART_COUNT']);
    // What ER_KEY_TOO_LARGE is: a key larger than maxTupleSize, which the row does not mention.
    expect(codeOf(() => space.get(['x'.repeat(500), 1]))).toBe('ER_KEY_TOO_LARGE');
  });
});

describe('README "Recipes" (lines 893-974), with the examples\' layouts', () => {
  test('lock: ER_DUPLICATE_KEY while held, insert over an expired one, release only if ours, a lease ending now is stored expired', () => {
    let now = 1_700_000_000_000;
    const timeoutMs = 1000;
    const name = 'L';
    const locks = new Space<[name: string, owner: string, expiresAt: number]>('locks', { ttl: { field: 3, unit: 'ms', now: () => now } });
    locks.createIndex('name', { type: 'HASH', parts: [[1, 'string']] });
    const release = (owner: string): boolean => locks.transaction(() => {
      if (locks.get(name)?.[1] !== owner) return false;
      locks.delete(name);
      return true;
    });
    locks.insert([name, 'a', now + timeoutMs]);
    expect(codeOf(() => locks.insert([name, 'b', now + timeoutMs]))).toBe('ER_DUPLICATE_KEY');
    expect(release('b')).toBe(false);
    now += timeoutMs;
    expect(codeOf(() => locks.insert([name, 'b', now + timeoutMs]))).toBeUndefined();
    expect([release('a'), release('b')]).toEqual([false, true]);
    locks.insert([name, 'c', now]);
    expect(codeOf(() => locks.insert([name, 'd', now]))).toBeUndefined();
  });

  test('semaphore: count sees live holders only; update refreshes', () => {
    let now = 1_700_000_000;
    const timeout = 10;
    const limit = 2;
    const semaphore = 'S';
    const holders = new Space<[semaphore: string, owner: string, expiresAt: number]>('holders', { ttl: { field: 3, now: () => now } });
    holders.createIndex('primary', { parts: [[1, 'string'], [2, 'string']] });
    const acquire = (owner: string): boolean => holders.transaction(() => {
      if (holders.count(semaphore) >= limit) return false;
      holders.replace([semaphore, owner, now + timeout]);
      return true;
    });
    expect([acquire('a'), acquire('b'), acquire('c')]).toEqual([true, true, false]);
    now += 5;
    expect(holders.update([semaphore, 'a'], [['=', 3, now + timeout]])).toEqual(['S', 'a', now + timeout]);
    now += 6;
    expect([acquire('c'), acquire('d')]).toEqual([true, false]);
  });

  test('fixed and sliding windows: update returns the new tuple, else insert; counts as the examples assert', () => {
    let now = 1_700_000_000_000;
    type Hits = [client: string, window: number, until: number, count: number];
    const hits = new Space<Hits>('hits', { ttl: { field: 3, unit: 'ms', now: () => now } });
    const counters = hits.createIndex('primary', { parts: [[1, 'string'], [2, 'unsigned']] });
    const fixed = (client: string, WINDOW_MS = 1000, LIMIT = 3): boolean => {
      const window = Math.floor(now / WINDOW_MS);
      const counted = counters.update([client, window], [['+', 4, 1]]) ?? hits.insert([client, window, (window + 1) * WINDOW_MS, 1]);
      return counted[3] <= LIMIT;
    };
    expect([fixed('a'), fixed('a'), fixed('a'), fixed('a')]).toEqual([true, true, true, false]);
    now += 1000;
    expect(fixed('a')).toBe(true);

    const WINDOW_MS = 60_000;
    const LIMIT = 10;
    const sliding = (client: string): boolean => {
      const window = Math.floor(now / WINDOW_MS);
      const elapsed = now % WINDOW_MS;
      const previous = window > 0 ? counters.get([client, window - 1])?.[3] ?? 0 : 0;
      const current = counters.get([client, window])?.[3] ?? 0;
      if (previous * (1 - elapsed / WINDOW_MS) + current + 1 > LIMIT) return false;
      counters.update([client, window], [['+', 4, 1]]) ?? hits.insert([client, window, (window + 2) * WINDOW_MS, 1]);
      return true;
    };
    const allowed = (n: number): number => Array.from({ length: n }, () => sliding('s')).filter(Boolean).length;
    now = Math.ceil(now / WINDOW_MS) * WINDOW_MS + 50_000;
    expect(allowed(12)).toBe(10);
    now += 15_000;
    expect(allowed(12)).toBe(0);
    now += 30_000;
    expect(allowed(12)).toBe(5);
  });

  test('sliding sessions, event log, visitor counter', () => {
    let now = 1_700_000_000;
    const IDLE = 100;
    const MAX_AGE = 250;
    const sessions = new Space<[token: string, user: string, exp: number, started: number], string>('sessions', { ttl: { field: 3, now: () => now } });
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    const touch = (token: string): unknown => {
      const session = sessions.get(token);
      if (session === undefined) return undefined;
      sessions.update(token, [['=', 3, Math.min(now + IDLE, session[3] + MAX_AGE)]]);
      return sessions.get(token)?.[2];
    };
    const started = now;
    sessions.insert(['t', 'ada', now + IDLE, now]);
    now += 90;
    expect(touch('t')).toBe(now + IDLE);
    now += 90;
    expect(touch('t')).toBe(started + MAX_AGE);
    now += 70;
    expect(touch('t')).toBeUndefined();

    const KEEP = 60;
    let seq = 0;
    const log = new Space<[seq: number, at: number, until: number, kind: string, text: string], number>('events', { ttl: { field: 3, now: () => now } });
    log.createIndex('seq', { parts: [[1, 'unsigned']] });
    log.createIndex('until', { unique: false, parts: [[3, 'number']] });
    log.insert([++seq, now, now + KEEP, 'k', 'one']);
    log.insert([++seq, now, now + KEEP, 'k', 'two']);
    expect(log.select(1, { iterator: 'GT' }).map((e) => e[4])).toEqual(['two']);
    const trim = expirationd.start('events', log, { itIndex: 'until' });
    expect(trim.earlyBreak).toBe(true);
    now += KEEP;
    pass(trim);
    expect(log.len()).toBe(0);

    const WINDOW = 300;
    const seen = new Space<[page: string, visitor: string, until: number]>('seen', { ttl: { field: 3, now: () => now } });
    const shadow = seen.createIndex('primary', { parts: [[1, 'string'], [2, 'string']] });
    seen.createIndex('until', { unique: false, parts: [[3, 'number']] });
    const visitors = new Space<[page: string, count: number], string>('visitors');
    visitors.createIndex('page', { type: 'HASH', parts: [[1, 'string']] });
    const visit = (page: string, visitor: string): void => atomic(() => {
      if (shadow.update([page, visitor], [['=', 3, now + WINDOW]]) !== undefined) return;
      seen.insert([page, visitor, now + WINDOW]);
      visitors.upsert([page, 1], [['+', 2, 1]]);
    });
    const task = expirationd.start('seen', seen, {
      itIndex: 'until',
      onExpired: (gone) => { for (const [page] of gone) visitors.update(page, [['-', 2, 1]]); },
    });
    for (const v of ['ada', 'grace', 'ada', 'linus', 'ada']) visit('/home', v);
    expect(visitors.get('/home')?.[1]).toBe(3);
    now += WINDOW;
    pass(task);
    expect(visitors.get('/home')?.[1]).toBe(0);
  });
});
