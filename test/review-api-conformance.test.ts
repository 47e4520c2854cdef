// Review: conformance of the public surface with /work/shared/API.md (and, where API.md is silent,
// with README.md). Each test names the contract line it checks. What the other suites already pin
// down (the Tarantool iterator tables, the update operator table, option refusals) is not repeated;
// this file goes for the gaps: defaults as a task reports them, the exact shapes of results and
// stats, "every later call throws" after drop(), "a failed call changes nothing" on calls not yet
// covered, numeric keys compared by value across every MessagePack encoding, and what reads give
// back after update operators.
//
// Tests marked `// Fixed:` failed before their fixes: each was a divergence from API.md or a
// README statement that was false.
import { describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, type Task, type TaskStats, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { expectNextChunkAfter, useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const ids = (tuples: Tuple[]) => tuples.map((t) => t[0]);

function plain(name: string, type: 'TREE' | 'HASH' = 'TREE'): Space {
  const s = new Space(name);
  s.createIndex('pk', { type, parts: [[1, 'unsigned']] });
  return s;
}

// ---------------------------------------------------------------------------------------------
describe('Space: defaults and refusals that change nothing (API.md "Space")', () => {
  test('maxTupleSize defaults to 1 MiB: a tuple of exactly 1,048,576 bytes is stored, one byte more is refused', () => {
    const s = plain('max-default');
    // fixarray(2) + positive fixint + str32 (5 bytes of header) + n bytes = n + 7
    const n = 1024 * 1024 - 7;
    expect(s.insert([1, 'x'.repeat(n)])[0]).toBe(1);
    expect(s.bsize()).toBe(1024 * 1024);
    expect(codeOf(() => s.insert([2, 'x'.repeat(n + 1)]))).toBe('ER_TUPLE_TOO_LARGE');
    expect(codeOf(() => s.replace([1, 'x'.repeat(n + 1)]))).toBe('ER_TUPLE_TOO_LARGE');
    expect(s.len()).toBe(1);
    expect(s.bsize()).toBe(1024 * 1024);
    expect((s.get(1) as string[])[1].length).toBe(n);
  });

  test('createIndex: type defaults to TREE and unique to true; parts shorthand reads back as { field, type }', () => {
    const s = new Space('ci-defaults');
    const pk = s.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(pk.type).toBe('TREE');
    expect(pk.unique).toBe(true);
    expect(pk.name).toBe('pk');
    expect(pk.parts).toEqual([{ field: 1, type: 'unsigned' }]);
    const sec = s.createIndex('sec', { parts: [{ field: 2, type: 'string' }] });
    expect(sec.unique).toBe(true);
    s.insert([1, 'a']);
    // unique by default: a second 'a' is a duplicate
    expect(codeOf(() => s.insert([2, 'a']))).toBe('ER_DUPLICATE_KEY');
    expect(s.len()).toBe(1);
  });

  test('a non-unique first index and a non-unique HASH are refused, and leave no index behind', () => {
    const s = new Space('ci-refused');
    expect(codeOf(() => s.createIndex('pk', { unique: false, parts: [[1, 'unsigned']] }))).toBe('ER_ILLEGAL_PARAMS');
    expect(s.indexes.length).toBe(0);
    expect(s.index.pk).toBeUndefined();
    expect(codeOf(() => s.insert([1]))).toBe('ER_NO_PRIMARY_INDEX');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(codeOf(() => s.createIndex('h', { type: 'HASH', unique: false, parts: [[2, 'string']] }))).toBe('ER_ILLEGAL_PARAMS');
    expect(s.indexes.map((i) => i.name)).toEqual(['pk']);
    expect(codeOf(() => s.createIndex('pk', { parts: [[2, 'string']] }))).toBe('ER_INDEX_EXISTS');
  });

  test('an index built over stored tuples that fails (duplicate, missing field, wrong type) changes nothing; its name stays free', () => {
    const s = plain('ci-build');
    s.insertMany([[1, 'a', 5], [2, 'a', 6], [3, 'b', 7]]);
    const before = s.memory();
    expect(codeOf(() => s.createIndex('u', { parts: [[2, 'string']] }))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.createIndex('u', { type: 'HASH', parts: [[2, 'string']] }))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.createIndex('u', { unique: false, parts: [[4, 'string']] }))).toBe('ER_FIELD_MISSING');
    expect(codeOf(() => s.createIndex('u', { unique: false, parts: [[3, 'string']] }))).toBe('ER_FIELD_TYPE');
    expect(s.indexes.map((i) => i.name)).toEqual(['pk']);
    expect(s.index.u).toBeUndefined();
    expect(s.index[1]).toBeUndefined();
    // writes are not checked against a half-built index: a further duplicate 'a' and a tuple
    // without field 4 still go in
    s.insert([4, 'a']);
    expect(s.len()).toBe(4);
    expect(s.memory().indexes).toBeGreaterThanOrEqual(before.indexes);
    s.delete(4);
    s.delete(2);
    const u = s.createIndex('u', { parts: [[2, 'string']] });
    expect(u.get('a')).toEqual([1, 'a', 5]);
    expect(s.index[u.id]).toBe(u);
  });

  test('insertMany: [] returns 0; a later tuple that fails (bad tuple, duplicate inside the batch, wrong type) leaves nothing', () => {
    const s = plain('im');
    s.createIndex('u', { type: 'HASH', parts: [[2, 'string']] });
    expect(s.insertMany([])).toBe(0);
    expect(s.insertMany([[1, 'a'], [2, 'b']])).toBe(2);
    const bsize = s.bsize();
    expect(codeOf(() => s.insertMany([[3, 'c'], 'x' as unknown as unknown[]]))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.insertMany([[3, 'c'], [3, 'd']]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.insertMany([[3, 'c'], [4, 'c']]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.insertMany([[3, 'c'], [4, 4]]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.insertMany('x' as unknown as unknown[][]))).toBe('ER_TUPLE_FORMAT');
    expect(ids(s.select())).toEqual([1, 2]);
    expect(s.bsize()).toBe(bsize);
    expect(s.index.u.get('c')).toBeUndefined();
  });

  test('replace that collides in a secondary unique index (old key or new key) changes nothing', () => {
    const s = plain('replace-dup');
    s.createIndex('u', { type: 'HASH', parts: [[2, 'string']] });
    s.insertMany([[1, 'a'], [2, 'b']]);
    expect(codeOf(() => s.replace([1, 'b']))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.replace([3, 'a']))).toBe('ER_DUPLICATE_KEY');
    expect(s.select()).toEqual([[1, 'a'], [2, 'b']]);
    expect(s.index.u.get('a')).toEqual([1, 'a']);
    // a replace that changes its own secondary key moves it
    expect(s.replace([1, 'aa'])).toEqual([1, 'aa']);
    expect(s.index.u.get('a')).toBeUndefined();
    expect(s.index.u.get('aa')).toEqual([1, 'aa']);
  });

  test('get/delete by a partial or over-long primary key are refused, and delete returns the tuple it removed', () => {
    const s = new Space('mp-delete');
    s.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'unsigned']] });
    s.insertMany([[1, 1], [1, 2]]);
    expect(codeOf(() => s.delete(1))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.delete([1]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.delete([1, 1, 1]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.delete([1, 'x']))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.get([1]))).toBe('ER_KEY_PART_COUNT');
    expect(s.len()).toBe(2);
    expect(s.delete([1, 2])).toEqual([1, 2]);
    expect(s.delete([1, 2])).toBeUndefined();
    expect(s.select(1)).toEqual([[1, 1]]);   // select takes the prefix
  });

  test('memory() is { tuples, indexes, total } with total = tuples + indexes; truncate() keeps every index usable', () => {
    const s = plain('mem');
    s.createIndex('h', { type: 'HASH', parts: [[2, 'string']] });
    s.createIndex('t', { unique: false, parts: [[3, 'unsigned']] });
    s.insertMany([[1, 'a', 1], [2, 'b', 2]]);
    const m = s.memory();
    expect(Object.keys(m).sort()).toEqual(['indexes', 'total', 'tuples']);
    expect(m.total).toBe(m.tuples + m.indexes);
    expect(m.tuples).toBeGreaterThan(0);
    expect(m.indexes).toBeGreaterThan(0);
    expect(s.truncate()).toBeUndefined();
    expect([s.len(), s.index.h.len(), s.index.t.len(), s.bsize()]).toEqual([0, 0, 0, 0]);
    expect(s.indexes.map((i) => i.name)).toEqual(['pk', 'h', 't']);
    s.insert([1, 'a', 9]);
    expect(s.index.h.get('a')).toEqual([1, 'a', 9]);
    expect(s.index.t.select(9)).toEqual([[1, 'a', 9]]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('transaction(fn) and atomic(fn): "every change it made is undone if it throws; returns what fn returns"', () => {
  test('truncate and insertMany inside a transaction that throws are undone, in every index', () => {
    const s = plain('tx-truncate');
    s.createIndex('u', { type: 'HASH', parts: [[2, 'string']] });
    s.insertMany([[1, 'a'], [2, 'b'], [3, 'c']]);
    const boom = new Error('boom');
    expect(() => s.transaction(() => {
      s.truncate();
      s.insertMany([[9, 'z'], [8, 'y']]);
      throw boom;
    })).toThrow(boom);
    expect(s.select()).toEqual([[1, 'a'], [2, 'b'], [3, 'c']]);
    expect(s.index.u.get('a')).toEqual([1, 'a']);
    expect(s.index.u.get('z')).toBeUndefined();
    expect(s.index.u.len()).toBe(3);
  });

  test('the result of fn is returned by transaction() and by atomic(), whatever its type', () => {
    const a = plain('tx-ret-a');
    const obj = { x: 1 };
    expect(a.transaction(() => obj)).toBe(obj);
    expect(atomic(() => undefined)).toBeUndefined();
    expect(atomic(() => 'v')).toBe('v');
    expect(a.transaction(() => { a.insert([1]); return a.len(); })).toBe(1);
  });

  test('a non-function is refused with ER_ILLEGAL_PARAMS, before anything runs', () => {
    const a = plain('tx-nonfn');
    expect(codeOf(() => a.transaction(5 as unknown as () => void))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => atomic(null as unknown as () => void))).toBe('ER_ILLEGAL_PARAMS');
  });
});

// ---------------------------------------------------------------------------------------------
describe('drop(): "frees native memory; every later call throws" (ER_SPACE_DROPPED)', () => {
  function dropped(): { s: Space; it: IterableIterator<Tuple> } {
    const s = new Space('dropped');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    s.createIndex('h', { type: 'HASH', parts: [[2, 'string']] });
    s.insertMany([[1, 'a', 5], [2, 'b', 6]]);
    const it = s.index.exp.pairs();
    expect(it.next().value).toEqual([1, 'a', 5]);
    s.drop();
    return { s, it };
  }

  test('every method of the space, of its indexes and of a live pairs() iterator throws ER_SPACE_DROPPED', async () => {
    const { s, it } = dropped();
    const { pk, exp, h } = s.index;
    const calls: Record<string, () => unknown> = {
      insert: () => s.insert([3, 'c', 1]), replace: () => s.replace([3, 'c', 1]),
      insertMany: () => s.insertMany([[3, 'c', 1]]), insertManyEmpty: () => s.insertMany([]),
      get: () => s.get(1), delete: () => s.delete(1), select: () => s.select(), pairs: () => s.pairs(), count: () => s.count(),
      len: () => s.len(), memory: () => s.memory(), truncate: () => s.truncate(), bsize: () => s.bsize(),
      transaction: () => s.transaction(() => 1), update: () => s.update(1, [['=', 2, 'x']]),
      upsert: () => s.upsert([1, 'a', 1], [['=', 2, 'x']]), createIndex: () => s.createIndex('x', { parts: [[2, 'string']] }),
      'pk.get': () => pk.get(1), 'exp.select': () => exp.select(), 'exp.pairs': () => exp.pairs(), 'exp.min': () => exp.min(),
      'exp.max': () => exp.max(), 'exp.count': () => exp.count(), 'exp.len': () => exp.len(), 'h.get': () => h.get('a'),
      'h.update': () => h.update('a', [['=', 3, 1]]), 'iterator.next': () => it.next(),
      'expirationd.start': () => expirationd.start('on-dropped', s, { field: 3 }),
    };
    const codes = Object.fromEntries(Object.entries(calls).map(([name, fn]) => [name, codeOf(fn)]));
    expect(codes).toEqual(Object.fromEntries(Object.keys(calls).map((name) => [name, 'ER_SPACE_DROPPED'])));
    await expect(s.createIndexAsync('y', { parts: [[2, 'string']] })).rejects.toMatchObject({ code: 'ER_SPACE_DROPPED' });
    expect(s.dropped).toBe(true);
  });

  // Fixed (minor, literal reading): API.md "drop() | frees native memory; every later call throws",
  // README "every later call throws ER_SPACE_DROPPED". A second drop() returns quietly
  // (src/space/space.ts drop(): `if (this.isDropped) return;`). Tarantool's space:drop() on a
  // dropped space raises too. If idempotent drop() is intended, API.md/README should say so.
  test('a second drop() throws ER_SPACE_DROPPED like every other later call', () => {
    const { s } = dropped();
    expect(codeOf(() => s.drop())).toBe('ER_SPACE_DROPPED');
  });
});

// ---------------------------------------------------------------------------------------------
describe('expirationd: defaults as a task reports them (API.md "expirationd")', () => {
  function filled(name: string, n: number, ttl = 1e12): Space {
    const s = plain(name);
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const rows: unknown[][] = [];
    for (let i = 1; i <= n; i++) rows.push([i, 'x', ttl]);
    s.insertMany(rows);
    return s;
  }

  test('scanTime defaults to 3600: scanSize 1 over 7199 tuples waits 1 * 3600 / 7200 = 0.5 s', () => {
    const s = filled('def-scantime', 7199);
    const task = expirationd.start('def-scantime', s, { field: 3, scanSize: 1, iterationDelay: 10, now: () => 0 });
    expect(task.chunkDelay).toBe(0.5);
  });

  test('scanSize defaults to 1024: scanTime 1 over 1023 tuples waits 1024 * 1 / 1024 = 1 s, and 2047 tuples 0.5 s', () => {
    const s = filled('def-scansize', 1023);
    const task = expirationd.start('def-scansize', s, { field: 3, scanTime: 1, iterationDelay: 10, now: () => 0 });
    expect(task.chunkDelay).toBe(1);
    s.insertMany(Array.from({ length: 1024 }, (_, i) => [5000 + i, 'y', 1e12]));
    expect(task.chunkDelay).toBe(0.5);
  });

  test('iterationDelay defaults to 1 (the cap) and the formula uses itIndex.len() + 1', () => {
    const s = filled('def-iterdelay', 0);
    const task = expirationd.start('def-iterdelay', s, { field: 3, now: () => 0 });
    expect(task.chunkDelay).toBe(1);            // 1024 * 3600 / 1, capped at 1
    const t2 = expirationd.start('def-iterdelay-2', s, { field: 3, iterationDelay: 0.25, now: () => 0 });
    expect(t2.chunkDelay).toBe(0.25);
    const t3 = expirationd.start('def-iterdelay-3', s, { field: 3, scanSize: 2, scanTime: 1, iterationDelay: 5, now: () => 0 });
    expect(t3.chunkDelay).toBe(2);              // 2 * 1 / (0 + 1)
  });

  test('fullScanDelay defaults to 0: a full-scan task over a small space starts a pass every chunkDelay (1 s), not later', () => {
    const s = filled('def-fsd', 3);
    const task = expirationd.start('def-fsd', s, { field: 3, now: () => 0 });
    vi.advanceTimersToNextTimer();   // the first chunk, at once
    expect(task.stats().chunks).toBe(1);
    expect(task.stats().fullScans).toBe(1);    // 3 tuples, one chunk: the pass is done
    expectNextChunkAfter(task, 1000);
    expectNextChunkAfter(task, 1000);
    const withDelay = expirationd.start('def-fsd', s, { field: 3, now: () => 0, fullScanDelay: 2 });
    vi.advanceTimersToNextTimer();
    expect(withDelay.stats().chunks).toBe(1);
    expectNextChunkAfter(withDelay, 3000);
  });

  test('unit defaults to seconds and keepAlive to false; a task is not early-break unless itIndex is a TTL TREE other than rmIndex', () => {
    const s = filled('def-misc', 0);
    const full = expirationd.start('def-misc', s, { field: 3 });
    expect(full.earlyBreak).toBe(false);
    expect(full.isRunning).toBe(true);
    expect(full.state).toBe('running');
    const indexed = expirationd.start('def-misc-2', s, { field: 3, itIndex: 'exp' });
    expect(indexed.earlyBreak).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
describe('expirationd: return values, stats shape, events (API.md tables)', () => {
  const STATS_KEYS = ['checked', 'chunks', 'expired', 'fullScans', 'lag', 'restarts', 'skipped', 'wakeups', 'workingTime'];

  function space(name: string): Space {
    const s = plain(name);
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    s.insertMany([[1, 'a', 10], [2, 'b', 20], [3, 'c', 30], [4, 'd', 40]]);
    return s;
  }

  test('task.stats() and expirationd.stats(name) have exactly the documented fields, all numbers; they are copies', () => {
    const s = space('stats-shape');
    const task = expirationd.start('stats-shape', s, { field: 3, now: () => 25 });
    for (const stats of [task.stats(), expirationd.stats('stats-shape'), expirationd.stats()['stats-shape']]) {
      expect(Object.keys(stats).sort()).toEqual(STATS_KEYS);
      for (const key of STATS_KEYS) expect(typeof stats[key as keyof TaskStats]).toBe('number');
      expect(stats).toMatchObject({ restarts: 1, checked: 0, expired: 0, chunks: 0, fullScans: 0, skipped: 0 });
    }
    const copy = task.stats();
    copy.expired = 99;
    expect(task.stats().expired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ checked: 4, expired: 2, chunks: 1, fullScans: 1, restarts: 1 });
    expect(ids(s.select())).toEqual([3, 4]);
  });

  test("'fullScan' is emitted with the stats after the pass (fullScans already counted); 'expired' with the deleted tuples", () => {
    const s = space('events');
    const task = expirationd.start('events', s, { field: 3, itIndex: 'exp', now: () => 25 });
    const scans: TaskStats[] = [];
    const expired: Tuple[][] = [];
    task.on('fullScan', (stats) => scans.push(stats));
    task.on('expired', (tuples) => expired.push(tuples));
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([[[1, 'a', 10], [2, 'b', 20]]]);
    expect(scans).toHaveLength(1);
    expect(Object.keys(scans[0]).sort()).toEqual(STATS_KEYS);
    expect(scans[0]).toMatchObject({ fullScans: 1, expired: 2, checked: 3, restarts: 1 });   // early break: expired + 1
  });

  test("a chunk that fails is rolled back, reported through 'error' and onFullScanError, and the task goes on (restarts + 1)", () => {
    const s = space('failing');
    const errors: unknown[] = [];
    const passErrors: unknown[] = [];
    let fail = true;
    const task = expirationd.start('failing', s, {
      field: 3, itIndex: 'exp', now: () => 25,
      onExpired: () => { if (fail) throw new Error('sink down'); },
      onFullScanError: (_t, err) => passErrors.push(err),
    });
    task.on('error', (err) => errors.push(err));
    vi.advanceTimersByTime(1);
    expect(s.len()).toBe(4 - task.stats().expired);
    expect(errors.length).toBeGreaterThan(0);
    expect(passErrors).toHaveLength(1);
    expect((passErrors[0] as Error).message).toBe('sink down');
    expect(task.stats().restarts).toBeGreaterThan(1);
    fail = false;
    vi.advanceTimersByTime(5000);
    expect(ids(s.select())).toEqual([3, 4]);
    expect(task.isRunning).toBe(true);
  });

  test('return values: expirationd.kill() and task.kill() return undefined; restart/stop/start/wake return the task', () => {
    const s = space('returns');
    const task = expirationd.start('returns', s, { field: 3, now: () => 0 });
    expect(task.restart()).toBe(task);
    expect(task.stats().restarts).toBe(2);
    expect(task.stop()).toBe(task);
    expect(task.state).toBe('stopped');
    expect(expirationd.tasks()).toEqual(['returns']);
    expect(task.start()).toBe(task);
    expect(task.wake()).toBe(task);
    expect(expirationd.kill('returns')).toBeUndefined();
    expect(task.kill()).toBeUndefined();
    expect(expirationd.tasks()).toEqual([]);
    expect(codeOf(() => expirationd.kill('returns'))).toBe('ER_NO_SUCH_TASK');
    expect(codeOf(() => expirationd.stats('returns'))).toBe('ER_NO_SUCH_TASK');
    expect(expirationd.stats()).toEqual({});
  });

  test('dropping the space ends its tasks cleanly: killed, unregistered, no chunk runs after', () => {
    const s = space('drop-ends');
    const task = expirationd.start('drop-ends', s, { field: 3, itIndex: 'exp', now: () => 25 });
    const other = expirationd.start('drop-ends-2', s, { field: 3, now: () => 25 });
    s.drop();
    expect(task.state).toBe('killed');
    expect(other.state).toBe('killed');
    expect(expirationd.tasks()).toEqual([]);
    expect(codeOf(() => expirationd.task('drop-ends'))).toBe('ER_NO_SUCH_TASK');
    vi.advanceTimersByTime(10_000);
    expect(task.stats().chunks).toBe(0);
    expect(codeOf(() => task.start())).toBe('ER_SPACE_DROPPED');
  });

  test('rmIndex defaults to the primary; a unique HASH rmIndex is walked whole when itIndex is left out, deleting from every index', () => {
    const s = plain('rm-hash');
    s.createIndex('tok', { type: 'HASH', parts: [[2, 'string']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    s.insertMany([[1, 'a', 10], [2, 'b', 50], [3, 'c', 20], [4, 'd', 60]]);
    const task = expirationd.start('rm-hash', s, { field: 3, rmIndex: 'tok', now: () => 30 });
    expect(task.earlyBreak).toBe(false);
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ checked: 4, expired: 2, fullScans: 1 });
    expect(ids(s.select())).toEqual([2, 4]);
    expect(s.index.tok.get('a')).toBeUndefined();
    expect(ids(s.index.exp.select())).toEqual([2, 4]);
  });

  test('an itIndex that is the rmIndex itself, a TREE led by the TTL field, is walked whole (no early break)', () => {
    const s = new Space('rm-ttl-tree');
    s.createIndex('pk', { parts: [[3, 'unsigned'], [1, 'unsigned']] });
    s.insertMany([[1, 'a', 10], [2, 'b', 50], [3, 'c', 20], [4, 'd', 60]]);
    const task = expirationd.start('rm-ttl-tree', s, { field: 3, now: () => 30 });
    expect(task.earlyBreak).toBe(false);
    vi.advanceTimersByTime(1);
    expect(task.stats()).toMatchObject({ checked: 4, expired: 2, fullScans: 1 });
    expect(ids(s.select())).toEqual([2, 4]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('update/upsert: return values and what reads give back (API.md additions)', () => {
  test('index.update on a non-unique index is refused; on a unique HASH secondary it returns the new tuple; a partial key is refused', () => {
    const s = new Space('upd-index');
    s.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
    const nu = s.createIndex('nu', { unique: false, parts: [[3, 'unsigned']] });
    const h = s.createIndex('h', { type: 'HASH', parts: [[4, 'string']] });
    s.insertMany([[1, 'a', 10, 'x'], [1, 'b', 10, 'y']]);
    expect(codeOf(() => nu.update(10, [['=', 3, 5]]))).toBe('ER_UNSUPPORTED');
    expect(codeOf(() => s.update(1, [['=', 3, 5]]))).toBe('ER_KEY_PART_COUNT');
    expect(codeOf(() => s.update([1], [['=', 3, 5]]))).toBe('ER_KEY_PART_COUNT');
    expect(s.select()).toEqual([[1, 'a', 10, 'x'], [1, 'b', 10, 'y']]);
    expect(h.update('x', [['=', 3, 5], ['=', 4, 'q']])).toEqual([1, 'a', 5, 'q']);
    expect(h.get('x')).toBeUndefined();
    expect(h.get('q')).toEqual([1, 'a', 5, 'q']);
    expect(h.update('zz', [['=', 3, 5]])).toBeUndefined();
    expect(codeOf(() => h.update('q', [['=', 4, 'y']]))).toBe('ER_DUPLICATE_KEY');
    expect(s.select()).toEqual([[1, 'a', 5, 'q'], [1, 'b', 10, 'y']]);
  });

  test('upsert returns undefined in both branches; a duplicate in a secondary unique index throws and changes nothing', () => {
    const s = plain('upsert-ret');
    s.createIndex('h', { type: 'HASH', parts: [[3, 'string']] });
    expect(s.upsert([1, 0, 'a'], [['+', 2, 1]])).toBeUndefined();
    expect(s.upsert([1, 0, 'a'], [['+', 2, 1]])).toBeUndefined();
    expect(s.get(1)).toEqual([1, 1, 'a']);
    s.insert([2, 0, 'b']);
    expect(codeOf(() => s.upsert([3, 0, 'a'], [['+', 2, 1]]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.upsert([2, 0, 'b'], [['=', 3, 'a']]))).toBe('ER_DUPLICATE_KEY');
    expect(s.select()).toEqual([[1, 1, 'a'], [2, 0, 'b']]);
  });

  test('a splice that would cut a multi-byte UTF-8 character is refused and changes nothing (indexed or not)', () => {
    const s = plain('splice-utf8');
    s.createIndex('si', { unique: false, parts: [[3, 'string']] });
    s.insert([1, 'é', 'é']);
    expect(codeOf(() => s.update(1, [[':', 2, 2, 0, 'x']]))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.update(1, [[':', 3, 2, 0, 'x']]))).toBe('ER_TUPLE_FORMAT');
    expect(s.get(1)).toEqual([1, 'é', 'é']);
    expect(s.update(1, [[':', 2, 3, 0, '!']])).toEqual([1, 'é!', 'é']);   // between characters: fine
  });

  test.each(['TREE', 'HASH'] as const)("'!' and '#' shift later fields: every index over a shifted field is re-keyed (%s primary)", (type) => {
    const s = new Space(`shift-${type}`);
    s.createIndex('pk', { type, parts: [[1, 'unsigned']] });
    const sec = s.createIndex('sec', { parts: [[3, 'string']] });
    const h = s.createIndex('h', { type: 'HASH', parts: [[4, 'string']] });
    s.insert([1, 'a', 'x', 'y', 'z']);
    expect(s.update(1, [['#', 2, 1]])).toEqual([1, 'x', 'y', 'z']);        // field 3 was 'x', is now 'y'
    expect([sec.get('y'), sec.get('x'), h.get('z'), h.get('y')]).toEqual([[1, 'x', 'y', 'z'], undefined, [1, 'x', 'y', 'z'], undefined]);
    expect(s.update(1, [['!', 2, 'n']])).toEqual([1, 'n', 'x', 'y', 'z']);
    expect([sec.get('x'), sec.get('y'), h.get('y'), h.get('z')]).toEqual([[1, 'n', 'x', 'y', 'z'], undefined, [1, 'n', 'x', 'y', 'z'], undefined]);
    expect(s.update(1, [['!', -3, 'q']])).toEqual([1, 'n', 'x', 'q', 'y', 'z']);   // -3 of 6 insert positions: before 'y'
    expect(h.get('q')).toEqual([1, 'n', 'x', 'q', 'y', 'z']);
    // a shift that leaves an indexed field missing is refused and changes nothing
    expect(codeOf(() => s.update(1, [['#', 2, 10]]))).toBe('ER_FIELD_MISSING');
    expect(codeOf(() => h.update('q', [['#', 3, 3]]))).toBe('ER_FIELD_MISSING');
    expect(s.get(1)).toEqual([1, 'n', 'x', 'q', 'y', 'z']);
    expect(h.get('q')).toEqual([1, 'n', 'x', 'q', 'y', 'z']);
    s.checkIntegrity();
  });

  // Fixed: README "What msgpackr reads back is what you get: integers beyond 2^53 come back as
  // BigInt" (and API.md: a tuple is a JavaScript array packed with msgpackr) — but an update or
  // upsert whose integer result lies in [2^32, 2^53) is written natively as a MessagePack
  // uint64/int64 (native/engine/update.cc write_uint()/write_int(): 0xcf / 0xd3 for anything
  // past 32 bits), and msgpackr's default Unpackr (src/native/codec.ts, int64AsType 'bigint')
  // reads every 0xcf/0xd3 as a BigInt. So a counter crosses 2^32 and turns into a BigInt:
  //   s.insert([1, 4294967295]); s.update(1, [['+', 2, 1]])  ->  [1, 4294967296n]
  // while s.insert([1, 4294967296]) reads back the number 4294967296, and Tarantool (luamp:
  // integers below 2^53 are Lua numbers) returns a number. Code that then does `t[1] + 1`
  // throws "Cannot mix BigInt and other types", and JSON.stringify(t) throws. Fix: write integral
  // results below 2^53 in magnitude the way msgpackr writes numbers (uint32/int32, else float64),
  // or unpack with int64AsType 'auto'.
  test('an update or upsert whose integer result is in [2^32, 2^53) reads back as a number, as an inserted one does', () => {
    const s = plain('int-width');
    s.insert([1, 4294967296]);
    expect(typeof s.get(1)![1]).toBe('number');   // msgpackr's own encoding: a number
    s.replace([1, 4294967295, 3, -2147483648]);
    const r = s.update(1, [['+', 2, 1], ['|', 3, 4294967296], ['-', 4, 1]])!;
    expect(r).toEqual([1, 4294967296, 4294967299, -2147483649]);
    expect(s.get(1)).toEqual([1, 4294967296, 4294967299, -2147483649]);
    s.replace([2, 4294967295]);
    s.upsert([2, 0], [['+', 2, 1]]);
    expect(s.get(2)).toEqual([2, 4294967296]);
    // a plain counter, three steps of 2^31
    s.replace([3, 0]);
    for (let i = 0; i < 3; i++) s.update(3, [['+', 2, 2 ** 31]]);
    expect(s.get(3)![1]).toBe(3 * 2 ** 31);
  });
});

// ---------------------------------------------------------------------------------------------
describe('numeric parts compare by value whatever the encoding (API.md "Tuples and keys")', () => {
  test.each(['HASH', 'TREE'] as const)('%s: BigInt and float64 keys are equal exactly when their values are', (type) => {
    const s = new Space(`by-value-${type}`);
    s.createIndex('pk', { type, parts: [[1, 'number']] });
    s.insert([2 ** 60, 'float']);                            // float64 on the wire
    expect(codeOf(() => s.insert([2n ** 60n, 'same']))).toBe('ER_DUPLICATE_KEY');   // uint64, same value
    expect(s.get(2n ** 60n)).toEqual([2 ** 60, 'float']);
    s.insert([2n ** 60n + 1n, 'next']);                      // one more: a different key
    expect(s.get(2n ** 60n + 1n)).toEqual([2n ** 60n + 1n, 'next']);
    s.insert([2n ** 53n + 1n, 'a']);
    s.insert([2 ** 53, 'b']);
    expect(s.get(2 ** 53)).toEqual([2 ** 53, 'b']);
    expect(s.get(2n ** 53n + 1n)).toEqual([2n ** 53n + 1n, 'a']);
    s.insert([-(2n ** 63n), 'min']);
    expect(codeOf(() => s.insert([-(2 ** 63), 'fmin']))).toBe('ER_DUPLICATE_KEY');
    expect(s.len()).toBe(5);
    if (type === 'TREE') {
      expect(s.select().map((t) => t[1])).toEqual(['min', 'b', 'a', 'float', 'next']);
      expect(s.select(2 ** 60, { iterator: 'GT' }).map((t) => t[1])).toEqual(['next']);
    }
  });

  test('a float64 produced by update (1 + 0.5 + 0.5) is found by the integer key 2 in HASH and TREE, and collides with it', () => {
    const s = plain('float-from-update');
    const h = s.createIndex('h', { type: 'HASH', parts: [[2, 'number']] });
    const t = s.createIndex('t', { parts: [[3, 'unsigned']] });
    s.insert([1, 1, 1]);
    expect(s.update(1, [['+', 2, 0.5], ['+', 2, 0.5], ['+', 3, 0.5], ['+', 3, 0.5]])).toEqual([1, 2, 2]);
    expect(h.get(2)).toEqual([1, 2, 2]);
    expect(h.get(2n)).toEqual([1, 2, 2]);
    expect(t.get(2)).toEqual([1, 2, 2]);
    expect(codeOf(() => s.insert([2, 2, 5]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.insert([3, 7, 2n]))).toBe('ER_DUPLICATE_KEY');
    expect(s.len()).toBe(1);
  });

  test("'unsigned'/'integer' keys refuse fractions, negatives (unsigned) and NaN with ER_KEY_TYPE on every read", () => {
    const s = plain('key-types', 'HASH');
    const t = s.createIndex('t', { unique: false, parts: [[2, 'integer']] });
    s.insert([1, -1]);
    expect(codeOf(() => s.get(1.5))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.get(-1))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.get(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.delete(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => t.select(0.5, { iterator: 'GE' }))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => t.count(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => t.min(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => t.pairs(Infinity))).toBe('ER_KEY_TYPE');
    expect(t.select(-1)).toEqual([[1, -1]]);
    expect(s.len()).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
describe('Index reads: option and iterator refusals (API.md "Index")', () => {
  const s = plain('reads', 'HASH');
  const t = s.createIndex('t', { unique: false, parts: [[2, 'unsigned']] });
  s.insertMany([[1, 10], [2, 20], [3, 20]]);

  test('HASH refuses every ordered iterator in select, pairs (at the call, not at the first step) and count', () => {
    for (const it of ['REQ', 'GE', 'GT', 'LE', 'LT'] as const) {
      expect(codeOf(() => s.select(1, { iterator: it }))).toBe('ER_ITERATOR_TYPE');
      expect(codeOf(() => s.pairs(1, { iterator: it }))).toBe('ER_ITERATOR_TYPE');
      expect(codeOf(() => s.count(1, { iterator: it }))).toBe('ER_ITERATOR_TYPE');
      expect(codeOf(() => s.pairs(undefined, { iterator: it }))).toBe('ER_ITERATOR_TYPE');
    }
    expect(codeOf(() => s.index.pk.min())).toBe('ER_UNSUPPORTED');
    expect(codeOf(() => s.index.pk.max(1))).toBe('ER_UNSUPPORTED');
    expect(s.count(1)).toBe(1);
    expect(s.count(9)).toBe(0);
    expect(s.count()).toBe(3);
  });

  test('select/pairs/count options: an unknown name, a limit/offset that is not a non-negative integer, an unknown iterator', () => {
    expect(codeOf(() => t.select(20, { limit: -1 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.select(20, { offset: 0.5 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.select(20, { limit: '1' as unknown as number }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.select(20, { lmit: 1 } as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.pairs(20, { limit: 1 } as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.count(20, { offset: 1 } as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => t.select(20, { iterator: 'NE' as 'EQ' }))).toBe('ER_ITERATOR_TYPE');
    expect(codeOf(() => t.count(20, { iterator: 'BITS_ALL_SET' as 'EQ' }))).toBe('ER_ITERATOR_TYPE');
    expect(codeOf(() => t.select({} as never))).toBe('ER_KEY_TYPE');
    expect(t.select(20, { limit: Infinity }).length).toBe(2);
    expect(t.select(undefined, { offset: Infinity })).toEqual([]);
  });

  test('REQ, LE and LT with limit and offset on a non-unique TREE: equal keys come in descending primary-key order', () => {
    s.insertMany([[4, 20], [5, 30]]);
    expect(ids(t.select(20, { iterator: 'REQ' }))).toEqual([4, 3, 2]);
    expect(ids(t.select(20, { iterator: 'REQ', offset: 1, limit: 1 }))).toEqual([3]);
    expect(ids(t.select(20, { iterator: 'LE', offset: 2 }))).toEqual([2, 1]);
    expect(ids(t.select(30, { iterator: 'LT', limit: 2 }))).toEqual([4, 3]);
    expect(ids([...t.pairs(20, { iterator: 'REQ' })])).toEqual([4, 3, 2]);
    expect(t.count(20, { iterator: 'REQ' })).toBe(3);
    expect(t.count(20, { iterator: 'LT' })).toBe(1);
    expect(t.max(20)).toEqual([4, 20]);
    expect(t.min(20)).toEqual([2, 20]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('expirationd.start: the positional form takes exactly five positional options', () => {
  // Fixed (minor): API.md "Errors: Bad input throws a JavaScript error ... ER_ILLEGAL_PARAMS".
  // The positional form silently drops anything after scanTime
  // (src/expirationd/options.ts optionsOf(): destructures the first five and ignores the rest).
  // So an options object appended to the positional form, e.g.
  //   expirationd.start('x', s, 'primary', 'exp', 3, 1024, 3600, { onExpired: audit, keepAlive: true })
  // starts a task without the callback and without keepAlive, and no error says so; the mirror
  // case (an options object followed by more arguments) is refused (test/expirationd-api.test.ts
  // "an options object followed by more arguments is refused: neither form").
  test('extra arguments after scanTime (such as a trailing options object) are refused with ER_ILLEGAL_PARAMS', () => {
    const s = plain('positional-extra');
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const start = expirationd.start as unknown as (...args: unknown[]) => Task;
    expect(codeOf(() => start('pos-extra', s, 'pk', 'exp', 3, 1024, 3600, { onExpired: () => {}, keepAlive: true })))
      .toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => start('pos-extra-2', s, 'pk', 'exp', 3, 1024, 3600, 'junk'))).toBe('ER_ILLEGAL_PARAMS');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('the seven-argument form itself is accepted and means the options (control for the test above)', () => {
    const s = plain('positional-ok');
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const task = expirationd.start('pos-ok', s, 'pk', 'exp', 3, 2, 1);
    expect(task.earlyBreak).toBe(true);
    expect(task.chunkDelay).toBe(1);   // min(2 * 1 / 1, 1)
  });
});
