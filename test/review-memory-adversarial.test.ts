// Review probes: allocation failure (native.testing.failAllocationAfter) on the newer surfaces:
// update() and index.update() (every operator, the one-number fast path and the general path),
// upsert() (both paths), capped spaces that evict, TTL-aware inserts over an expired key and
// reads, atomic() over several spaces, createIndexAsync slices and writes during a build, and
// expirationd chunks (plain, onExpired, processExpired). For each n = 0, 1, ... up to the first
// success: the call fails with ER_MEMORY_ISSUE (or succeeds), every index holds what it held
// before, len()/bsize()/memory() agree, onEvict hears only of evictions that happened, and the
// space works afterwards. The tests under 'bugs' assert the documented behaviour for what the
// review found: truncate() inside atomic()/transaction() that failed for memory part-way left the
// tuples it had already removed removed (Space::truncate deleted tuple by tuple with no
// savepoint of its own; now it rolls back to one).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CappedError, Space, atomic, expirationd, type Tuple } from '../src/index.js';
import { native } from '../src/native/loader.js';
import { setBuildSlice } from '../src/space/build.js';
import { useTaskTimers } from './support/task-timers.js';

const testing = native.testing;

afterEach(() => {
  testing.failAllocationAfter(-1);
});

/** Runs fn with the (n + 1)th allocation armed to fail: what it threw, and whether the failure fired. */
function failingAt(n: number, fn: () => void): { error: unknown; fired: boolean } {
  testing.failAllocationAfter(n);
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  return { error, fired: testing.disarmAllocationFailure() };
}

/** failingAt for an async fn: armed until its promise settles. */
async function failingAtAsync(n: number, fn: () => Promise<unknown>): Promise<{ error: unknown; fired: boolean }> {
  testing.failAllocationAfter(n);
  let error: unknown;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  return { error, fired: testing.disarmAllocationFailure() };
}

const NOW = 1000;
/** The clock of every TTL space here; snapshots read with it far in the past to see every stored tuple. */
let clock = NOW;

function everything<X>(fn: () => X): X {
  const saved = clock;
  clock = -1e300;
  try {
    return fn();
  } finally {
    clock = saved;
  }
}

/** Every index's stored tuples (a HASH index's sorted), expired ones included. */
function snapshot(space: Space): unknown[] {
  return everything(() => [
    ...space.indexes.map((index) => {
      const rows = index.select();
      return index.type === 'HASH' ? rows.map((r) => JSON.stringify(r)).sort() : rows;
    }),
    space.len(),
    space.bsize(),
    space.indexes.map((i) => i.name),
  ]);
}

function consistent(space: Space): void {
  space.checkIntegrity();
  const m = space.memory();
  expect(m.total).toBe(m.tuples + m.indexes);
  for (const index of space.indexes) expect(index.len()).toBe(space.len());
  everything(() => expect(space.select().length).toBe(space.len()));
}

function expectMemoryError(error: unknown, what: string): void {
  expect(error, what).toBeInstanceOf(CappedError);
  expect((error as CappedError).code, `${what}: ${String(error)}`).toBe('ER_MEMORY_ISSUE');
}

interface Attempt {
  spaces: Space[];
  /** Checks after the attempt; failed: whether the op failed. */
  check?: (failed: boolean) => void;
}

/** Runs op with allocation n failing, n = 0, 1, ... until it succeeds; returns that n. */
function everyFailure(what: string, setup: () => Attempt, op: (spaces: Space[]) => void, limit = 5000): number {
  for (let n = 0; ; n++) {
    if (n > limit) throw new Error(`${what}: still failing after ${n} allocations`);
    const { spaces, check } = setup();
    const before = spaces.map(snapshot);
    const { error, fired } = failingAt(n, () => op(spaces));
    if (error === undefined) {
      expect(fired, `${what}: allocation #${n} failed, yet the call succeeded`).toBe(false);
      for (const s of spaces) consistent(s);
      check?.(false);
      for (const s of spaces) s.drop();
      return n;
    }
    expectMemoryError(error, `${what}: allocation #${n}`);
    expect(fired, `${what}: failed at #${n} without an injected failure`).toBe(true);
    expect(spaces.map(snapshot), `${what}: a failure at allocation #${n} changed a space`).toEqual(before);
    for (const s of spaces) consistent(s);
    check?.(true);
    for (const s of spaces) s.drop();
  }
}

const big = (s: string, n = 1500): string => s.padEnd(n, '.');

/**
 * A task's space: a primary and a TTL index 'exp' on field 3, ids 0..count-1 as [id, `v${id}`,
 * ttl, payload]; every third id is expired (ttl NOW - 1 - id), the others live; every
 * bigEvery-th payload is large. Returns the space and the expired and live ids.
 */
function expiringSpace(name: string, pk: 'TREE' | 'HASH', count: number, bigEvery: number): { s: Space; expired: number[]; live: number[] } {
  const s = new Space(name);
  s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < count; id++) s.insert([id, `v${id}`, id % 3 === 0 ? NOW - 1 - id : NOW + id, id % bigEvery === 0 ? big('e') : 'e']);
  const ids = Array.from({ length: count }, (_, id) => id);
  return { s, expired: ids.filter((id) => id % 3 === 0), live: ids.filter((id) => id % 3 !== 0) };
}
function nameOf(id: number): string {
  return `n${(id * 7919) % 100003}`;
}

/** [id, ttl, name, payload, extra]: pk on id, ttl TREE non-unique, name TREE unique, nameH HASH unique. */
function populated(pk: 'TREE' | 'HASH', n = 200, ttlAware = false): Space {
  const space = new Space('mem', ttlAware ? { ttl: { field: 2, now: () => clock } } : {});
  space.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  space.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
  space.createIndex('name', { parts: [[3, 'string']] });
  space.createIndex('nameH', { type: 'HASH', parts: [[3, 'string']] });
  for (let id = 0; id < n; id++) {
    space.insert([id, id % 3 === 0 ? NOW - 1 - id : NOW + id, nameOf(id), id % 10 === 0 ? big(`p${id}`) : `p${id}`, id]);
  }
  return space;
}

// ---------------------------------------------------------------------------------------------
describe.each(['TREE', 'HASH'] as const)('update and upsert with a %s primary', (pk) => {
  const base = (): Attempt => ({ spaces: [populated(pk)] });

  const updates: Array<[string, unknown, unknown[]]> = [
    ['= on the TTL field (moves in a non-unique TREE; one-number path)', 5, [['=', 2, 99999]]],
    ['+ integer (one-number path)', 6, [['+', 2, 7]]],
    ['- float', 7, [['-', 2, 1.5]]],
    ['& | ^', 8, [['&', 2, 0xff], ['|', 2, 0x100], ['^', 2, 3]]],
    ['splice of an indexed string (moves in TREE and HASH unique)', 11, [[':', 3, 2, 3, 'SPLICED-LONG-TEXT']]],
    ['splice that makes a small tuple large', 12, [[':', 4, 1, 0, big('grow', 3000)]]],
    ['# delete that shrinks a large tuple to a small one', 20, [['#', 4, 2]]],
    ['# delete at the end of a tuple', 13, [['#', -1, 1]]],
    ['! insert and = append', 14, [['!', 4, 'ins'], ['=', 7, 'app']]],
    ['several ops moving every secondary', 15, [['=', 3, 'brand-new-name'], ['+', 2, 100000], ['=', 4, big('x', 2000)]]],
    ['an update whose result equals the stored tuple', 16, [['=', 2, NOW + 16]]],
  ];
  it.each(updates)('update: %s', (_, key, ops) => {
    const failures = everyFailure(`update ${String(key)}`, base, ([s]) => {
      expect(s.update(key as number, ops as never)).toBeDefined();
    });
    expect(failures).toBeGreaterThan(0);
  });

  it('index.update through the secondary TREE unique and the HASH unique index', () => {
    for (const index of ['name', 'nameH']) {
      everyFailure(`${index}.update`, base, ([s]) => {
        expect(s.index[index].update(nameOf(21), [['=', 2, -5], ['=', 4, big('q', 1200)]])).toBeDefined();
      });
      everyFailure(`${index}.update one number`, base, ([s]) => {
        expect(s.index[index].update(nameOf(22), [['+', 2, 123456]])).toEqual([22, NOW + 22 + 123456, nameOf(22), 'p22', 22]);
      });
    }
  });

  it('upsert: the insert path and the update path (skipped ops too)', () => {
    expect(everyFailure('upsert insert', base, ([s]) => s.upsert([5000, 1, 'u-new', big('u'), 0], [['+', 2, 1]]))).toBeGreaterThan(0);
    everyFailure('upsert update', base, ([s]) => s.upsert([30, 1, 'ignored', 'x', 0], [['+', 2, 1], [':', 3, 1, 1, 'Z'], ['=', 4, big('w')]]));
    everyFailure('upsert update with a failing op skipped', base, ([s]) => s.upsert([31, 1, 'ignored', 'x', 0], [['+', 3, 1], ['=', 2, 4]]));
    const s = populated(pk);
    s.upsert([30, 1, 'ignored', 'x', 0], [['+', 2, 1]]);
    expect(s.get(30)![1]).toBe(NOW - 31 + 1);
    s.drop();
  });

  it('after a failed update the space still updates and the scratch is not stale', () => {
    const s = populated(pk);
    for (let n = 0; n < 40; n++) {
      testing.failAllocationAfter(n);
      try {
        s.update(40, [[':', 4, 1, 0, big('huge', 5000)]]);
      } catch (e) {
        expectMemoryError(e, `#${n}`);
      }
      testing.failAllocationAfter(-1);
      s.update(40, [['=', 4, 'p40']]);
      expect(s.update(41, [['+', 2, 1]])).toEqual([41, NOW + 41 + 1 + n, nameOf(41), 'p41', 41]);
    }
    consistent(s);
    s.drop();
  });
});

// ---------------------------------------------------------------------------------------------
// Capped spaces
function evicting(pk: 'TREE' | 'HASH', opts: { maxTuples?: number; maxBytes?: number }, reports: Tuple[][]): Space {
  const s = new Space('cap', { ttl: { field: 3, now: () => clock }, onFull: 'evictExpiring', onEvict: (t) => reports.push(t), ...opts });
  s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  s.createIndex('name', { type: 'HASH', parts: [[2, 'string']] });
  s.createIndex('byName', { parts: [[2, 'string']] });
  return s;
}

describe.each(['TREE', 'HASH'] as const)('capped evicting space with a %s primary', (pk) => {
  const ids = (s: Space): number[] => everything(() => s.select().map((t) => t[0] as number).sort((a, b) => a - b));

  function run(what: string, opts: { maxTuples?: number; maxBytes?: number }, fill: (s: Space) => void,
    op: (s: Space) => void, added: number[] = []): void {
    let reports: Tuple[][] = [];
    let stored: number[] = [];
    const failures = everyFailure(what, () => {
      reports = [];
      const s = evicting(pk, opts, reports);
      fill(s);
      reports.length = 0;
      stored = ids(s);
      return {
        spaces: [s],
        check: (failed) => {
          if (failed) {
            expect(reports, `${what}: onEvict called for a failed statement`).toEqual([]);
            return;
          }
          const now = ids(s);
          const evicted = [...stored, ...added].filter((id) => !now.includes(id)).sort((a, b) => a - b);
          expect(evicted.length, `${what}: the successful statement evicted nothing`).toBeGreaterThan(0);
          expect(reports.length).toBe(1);
          expect(reports[0].map((t) => t[0] as number).sort((a, b) => a - b)).toEqual(evicted);
          if (opts.maxTuples !== undefined) expect(s.len()).toBeLessThanOrEqual(opts.maxTuples);
          if (opts.maxBytes !== undefined) expect(s.bsize()).toBeLessThanOrEqual(opts.maxBytes);
        },
      };
    }, ([s]) => op(s));
    expect(failures).toBeGreaterThan(0);
  }

  const fill = (n: number, payload = (id: number) => `v${id}`) => (s: Space): void => {
    for (let id = 0; id < n; id++) s.insert([id, `k${id}`, id % 2 === 0 ? NOW - 100 + id : NOW + 100 + id, payload(id)]);
  };

  it('insert that evicts one (maxTuples)', () => {
    run('insert evicting one', { maxTuples: 60 }, fill(60), (s) => s.insert([1000, 'new', NOW + 5000, 'z']));
  });
  it('insert of a large tuple that evicts many (maxBytes)', () => {
    run('insert evicting many', { maxBytes: 2000 }, fill(60, (id) => `v${id}`.padEnd(20, '-')),
      (s) => s.insert([1000, 'new', NOW + 5000, big('z', 900)]));
  });
  it('replace, update and upsert that grow a tuple and evict', () => {
    const f = fill(60, (id) => `v${id}`.padEnd(20, '-'));
    run('replace growing', { maxBytes: 2000 }, f, (s) => s.replace([1, 'k1', NOW + 101, big('r', 600)]));
    run('update growing', { maxBytes: 2000 }, f, (s) => {
      s.update(1, [['=', 4, big('u', 600)]]);
    });
    run('index.update growing', { maxBytes: 2000 }, f, (s) => {
      s.index.name.update('k3', [['=', 4, big('u', 600)], ['=', 3, NOW + 9999]]);
    });
    run('upsert update growing', { maxBytes: 2000 }, f, (s) => s.upsert([5, 'x', 1, 'x'], [['=', 4, big('u', 600)]]));
    run('upsert insert', { maxTuples: 60 }, f, (s) => s.upsert([500, 'fresh', NOW + 1, 'x'], [['=', 4, 'y']]));
  });
  it('insertMany that evicts its own and stored tuples', () => {
    run('insertMany evicting', { maxTuples: 30 }, fill(30),
      (s) => s.insertMany(Array.from({ length: 40 }, (_, i) => [2000 + i, `b${i}`, NOW + 50 - i, i % 5 === 0 ? big('b') : 'b'])),
      Array.from({ length: 40 }, (_, i) => 2000 + i));
  });
  it('a TTL insert over an expired tuple with the same key on a full space', () => {
    run('insert over expired on a full space', { maxTuples: 40 }, fill(40, (id) => (id === 10 ? big('x') : 'x')),
      (s) => s.transaction(() => {
        s.insert([10, 'k10', NOW + 7000, big('new', 3000)]);
        s.insert([1001, 'k1001', NOW + 7000, 'y']);
      }));
  });

  /** A capped space filled to its cap of 20 (its onEvict reports kept) and a plain space of 50. */
  const fullAndPlain = (): { reports: Tuple[][]; s: Space; plain: Space } => {
    const reports: Tuple[][] = [];
    const s = evicting(pk, { maxTuples: 20 }, reports);
    fill(20)(s);
    return { reports, s, plain: populated(pk, 50) };
  };

  it.each(['the evicting insert', 'the plain update'])('inside atomic(): %s failing for memory is undone alone, the frame commits the rest, onEvict hears only of committed evictions', (which) => {
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(2000);
      const { reports, s, plain } = fullAndPlain();
      let failed = false;
      atomic(() => {
        s.insert([100, 'a', NOW + 1000, 'a']);  // evicts id 0
        plain.update(4, [['=', 3, 'moved-4']]);
        const mid = [snapshot(s), snapshot(plain)];
        testing.failAllocationAfter(n);
        try {
          if (which === 'the evicting insert') s.insert([101, 'b', NOW + 1001, big('b', 2000)]);  // evicts id 2
          else plain.update(5, [['=', 4, big('moved', 3000)], ['=', 3, 'moved-5']]);
        } catch (e) {
          failed = true;
          expectMemoryError(e, `#${n}`);
          expect(testing.disarmAllocationFailure()).toBe(true);
          // The statement that failed is undone; the frame's earlier statements stay.
          expect([snapshot(s), snapshot(plain)]).toEqual(mid);
        }
        testing.failAllocationAfter(-1);
        expect(reports).toEqual([]);  // nothing before the outermost frame commits
        s.update(100, [['=', 4, 'after']]);  // the frame goes on
      });
      consistent(s);
      consistent(plain);
      expect(plain.get(4)![2]).toBe('moved-4');
      expect(s.get(100)).toEqual([100, 'a', NOW + 1000, 'after']);
      const evictedIds = reports.map((r) => r.map((t) => t[0]));
      if (failed || which !== 'the evicting insert') {
        expect(evictedIds).toEqual([[0]]);
        if (failed) expect(everything(() => s.get(2))).toBeDefined();
      } else {
        expect(evictedIds).toEqual([[0], [2]]);
      }
      if (failed && which === 'the plain update') expect(plain.get(5)![2]).toBe(nameOf(5));
      s.drop();
      plain.drop();
      if (!failed) break;
    }
  });

  it('inside atomic(): a rollback after a memory failure restores every space and reports nothing', () => {
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(2000);
      const { reports, s, plain } = fullAndPlain();
      const before = [snapshot(s), snapshot(plain)];
      let fired = false;
      let thrown: unknown;
      try { atomic(() => {
        s.insert([100, 'a', NOW + 1000, 'a']);
        plain.update(4, [['=', 3, 'moved-4']]);
        plain.delete(6);
        testing.failAllocationAfter(n);
        try {
          s.insertMany([[101, 'b', NOW + 1001, big('b', 2000)], [102, 'c', NOW + 1002, 'c']]);
          plain.upsert([7, 0, '', '', 0], [['=', 4, big('moved', 3000)]]);
          s.update(100, [['=', 4, big('q', 4000)]]);
        } finally {
          fired = testing.disarmAllocationFailure();
        }
        throw new Error('roll back');
      }); } catch (e) { thrown = e; }
      if (fired) expectMemoryError(thrown, `#${n}`);
      else expect(String(thrown)).toContain('roll back');
      expect([snapshot(s), snapshot(plain)]).toEqual(before);
      expect(reports).toEqual([]);
      consistent(s);
      consistent(plain);
      s.drop();
      plain.drop();
      if (!fired) break;
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe.each(['TREE', 'HASH'] as const)('TTL-aware space with a %s primary', (pk) => {
  const ttlBase = (): Attempt => ({ spaces: [populated(pk, 200, true)] });

  it('insert over an expired tuple with the same primary key replaces it, or changes nothing', () => {
    // id 3: TTL NOW - 4, expired; id 30: a large expired tuple.
    expect(everyFailure('insert over expired', ttlBase, ([s]) => s.insert([3, NOW + 50, 'fresh-3', 'x', 0]))).toBeGreaterThan(0);
    everyFailure('insert over expired, large to small', ttlBase, ([s]) => s.insert([30, NOW + 50, nameOf(30), 'x', 0]));
    everyFailure('insert over expired, small to large', ttlBase, ([s]) => s.insert([33, NOW + 50, 'other', big('y', 4000), 0]));
    everyFailure('insertMany over expired keys', ttlBase, ([s]) => {
      s.insertMany([[3, NOW + 50, 'm3', 'x', 0], [6, NOW + 51, 'm6', big('m'), 0], [9999, NOW, 'm9999', 'x', 0]]);
    });
  });

  it('reads succeed or fail with ER_MEMORY_ISSUE and change nothing, whichever allocation fails', () => {
    const s = populated(pk, 300, true);
    const before = snapshot(s);
    const reads: Array<[string, () => unknown]> = [
      ['get', () => s.get(4)],
      ['get expired', () => s.get(3)],
      ['select', () => s.select()],
      ['ttl select', () => s.index.ttl.select(NOW, { iterator: 'GE', limit: 30 })],
      ['name select', () => s.index.name.select('n', { iterator: 'GE', limit: 30, offset: 5 })],
      ['count', () => s.count()],
      ['min', () => s.index.ttl.min()],
      ['max', () => s.index.name.max()],
      ['pairs', () => [...s.index.ttl.pairs()].length],
    ];
    const expected = reads.map(([, f]) => f());
    reads.forEach(([what, f], i) => {
      for (let n = 0; n < 5; n++) {
        testing.failAllocationAfter(n);
        let result: unknown;
        let error: unknown;
        try {
          result = f();
        } catch (e) {
          error = e;
        }
        testing.failAllocationAfter(-1);
        if (error !== undefined) expectMemoryError(error, `${what} #${n}`);
        else expect(result, what).toEqual(expected[i]);
      }
    });
    expect(snapshot(s)).toEqual(before);
    consistent(s);
    s.drop();
  });
});

// ---------------------------------------------------------------------------------------------
describe('createIndexAsync under allocation failure', () => {
  afterEach(() => {
    setBuildSlice({ tuples: 16384, ms: 1 });
  });

  const defs = [
    ['TREE unique', { parts: [[3, 'string']] }],
    ['TREE non-unique', { unique: false, parts: [[2, 'number']] }],
    ['HASH', { type: 'HASH', parts: [[3, 'string']] }],
  ] as const;

  it.each(defs)('a %s build failing in any slice rejects with ER_MEMORY_ISSUE and leaves the space as it was', async (_, def) => {
    setBuildSlice({ tuples: 40 });
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(3000);
      const s = new Space('async');
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      for (let id = 0; id < 400; id++) s.insert([id, id % 7, nameOf(id)]);
      const before = snapshot(s);
      const { error, fired } = await failingAtAsync(n, () => s.createIndexAsync('extra', def as never));
      if (error === undefined) {
        expect(fired).toBe(false);
        expect(s.indexes.map((i) => i.name)).toEqual(['pk', 'extra']);
        consistent(s);
        s.drop();
        break;
      }
      expectMemoryError(error, `build #${n}`);
      expect(snapshot(s)).toEqual(before);
      expect(s.index.extra).toBeUndefined();
      consistent(s);
      // usable: writes, and the same build again
      s.insert([9999, 1, 'after']);
      await s.createIndexAsync('extra', def as never);
      consistent(s);
      s.drop();
    }
  });

  it.each(defs)('a write during a %s build that meets a memory failure: the write fails alone, or succeeds and the build fails or completes', async (_, def) => {
    setBuildSlice({ tuples: 40 });
    const writes: Array<[string, (s: Space) => void]> = [
      ['insert', (s) => s.insert([5000, 3, 'w-new'])],
      ['replace', (s) => s.replace([300, 9, 'w-300'])],
      ['update', (s) => s.update(10, [['=', 3, 'w-10'], ['=', 2, 99]])],
      ['delete', (s) => s.delete(20)],
      ['transaction', (s) => s.transaction(() => {
        s.delete(1);
        s.insert([5001, 1, 'w-5001']);
        s.replace([399, 1, 'w-399']);
      })],
    ];
    for (const [what, write] of writes) {
      for (let n = 0; ; n++) {
        expect(n).toBeLessThan(3000);
        const s = new Space('async');
        s.createIndex('pk', { parts: [[1, 'unsigned']] });
        for (let id = 0; id < 400; id++) s.insert([id, id % 7, nameOf(id)]);
        const build = s.createIndexAsync('extra', def as never);
        build.catch(() => undefined);
        await new Promise((r) => setImmediate(r));
        await new Promise((r) => setImmediate(r));
        const before = snapshot(s);
        const { error, fired } = failingAt(n, () => write(s));
        if (error !== undefined) {
          expectMemoryError(error, `${what} during a build #${n}`);
          expect(snapshot(s), `${what} #${n}`).toEqual(before);
        }
        let buildError: unknown;
        try {
          await build;
        } catch (e) {
          buildError = e;
        }
        if (buildError !== undefined) {
          expectMemoryError(buildError, `the build after ${what} #${n}`);
          expect(s.index.extra).toBeUndefined();
        } else {
          expect(s.index.extra.len()).toBe(s.len());
        }
        consistent(s);
        s.drop();
        if (!fired) break;
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('expirationd chunks under allocation failure', () => {
  useTaskTimers();

  function chunkSpace(pk: 'TREE' | 'HASH', withName: boolean): Space {
    const s = new Space('exp');
    s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    if (withName) s.createIndex('name', { type: 'HASH', parts: [[2, 'string']] });
    for (let id = 0; id < 300; id++) s.insert([id, nameOf(id), id % 3 === 0 ? NOW - 1 - (id % 50) : NOW + id, id % 10 === 0 ? big('e') : 'e']);
    return s;
  }
  const expiredIds = Array.from({ length: 300 }, (_, id) => id).filter((id) => id % 3 === 0);
  const liveIds = Array.from({ length: 300 }, (_, id) => id).filter((id) => id % 3 !== 0);

  type Mode = 'plain' | 'onExpired' | 'processExpired';
  const cases: Array<[string, 'TREE' | 'HASH', boolean, Mode]> = [
    ['early break, TREE pk', 'TREE', true, 'plain'],
    ['full scan, HASH pk', 'HASH', false, 'plain'],
    ['early break with a sync onExpired writing to another space', 'HASH', true, 'onExpired'],
    ['full scan with processExpired moving tuples to an archive', 'TREE', false, 'processExpired'],
  ];

  it.each(cases)('%s: a failed chunk rolls back, reports a code, and the task then deletes exactly the expired tuples', (_, pk, early, mode) => {
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(3000);
      const s = chunkSpace(pk, true);
      const log = new Space('log');
      log.createIndex('pk', { parts: [[1, 'unsigned']] });
      const before = snapshot(s);
      const expiredEvents: number[] = [];
      const errors: unknown[] = [];
      const task = expirationd.start('mem', s, {
        field: 3, scanSize: 1000, now: () => NOW, fullScanDelay: 3600,
        ...(early ? { itIndex: 'exp' } : {}),
        ...(mode === 'onExpired' ? { onExpired: (ts: Tuple[]) => { for (const t of ts) log.insert([t[0] as number, 'gone']); } } : {}),
        ...(mode === 'processExpired' ? {
          processExpired: (ts: Tuple[]) => {
            for (const t of ts) {
              log.insert([t[0] as number, big('archived')]);
              s.delete(t[0] as number);
            }
          },
        } : {}),
      });
      task.on('expired', (ts: Tuple[]) => expiredEvents.push(...ts.map((t) => t[0] as number)));
      task.on('error', (e: unknown) => errors.push(e));
      testing.failAllocationAfter(n);
      vi.advanceTimersToNextTimer();  // the first chunk
      const fired = testing.disarmAllocationFailure();
      const firstChunkErrors = [...errors];
      if (fired) {
        expect(firstChunkErrors.length, `#${n}: no 'error' for a failed chunk`).toBeGreaterThan(0);
        for (const e of firstChunkErrors) {
          expect(e).toBeInstanceOf(CappedError);
          const code = (e as CappedError).code;
          const cause = (e as CappedError & { cause?: unknown }).cause;
          // A failure inside a callback's own write is that callback's throw (poison isolation).
          if (code !== 'ER_MEMORY_ISSUE') {
            expect(code, `#${n}: ${String(e)}`).toBe('ER_TUPLE_SKIPPED');
            expectMemoryError(cause, `#${n}: cause`);
          }
        }
        // Whatever the chunk did not commit is still there; nothing live was touched.
        const stored = everything(() => s.select().map((t) => t[0] as number));
        for (const id of liveIds) expect(stored).toContain(id);
        for (const id of expiredIds) {
          if (!expiredEvents.includes(id)) expect(stored, `#${n}: expired ${id} lost without a committed delivery`).toContain(id);
        }
        if (firstChunkErrors.every((e) => (e as CappedError).code === 'ER_MEMORY_ISSUE') && expiredEvents.length === 0) {
          expect(snapshot(s), `#${n}: a failed chunk changed the space`).toEqual(before);
          expect(log.len()).toBe(0);
        }
      }
      consistent(s);
      consistent(log);
      // Disarmed: the task deletes everything expired within a few passes.
      for (let i = 0; i < 50 && s.len() > liveIds.length; i++) vi.advanceTimersToNextTimer();
      expect(everything(() => s.select().map((t) => t[0] as number)).sort((a, b) => a - b)).toEqual(liveIds);
      // Each expired tuple delivered exactly once by a committed chunk.
      expect([...expiredEvents].sort((a, b) => a - b)).toEqual(expiredIds);
      if (mode !== 'plain') {
        expect(log.select().map((t) => t[0])).toEqual(expiredIds);
      }
      consistent(s);
      task.kill();
      s.drop();
      log.drop();
      if (!fired) break;
    }
  });
});

describe('expirationd: an asynchronous onExpired whose deletion after it resolves fails for memory', () => {
  useTaskTimers();

  it.each([['TREE', 'the chunk'], ['HASH', 'the chunk'], ['TREE', 'the resolve'], ['HASH', 'the resolve']] as const)('%s pk, armed before %s: nothing is lost, an error with a code is reported, and every expired tuple is deleted once, after a resolved delivery', async (pk, when) => {
    let firstFired = -1;
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(500);
      const { s, expired, live } = expiringSpace('async-exp', pk, 120, 10);
      const resolvers: Array<() => void> = [];
      let auto = false;
      const resolvedIds = new Set<number>();
      const events: number[] = [];
      const errors: unknown[] = [];
      const task = expirationd.start('async-mem', s, {
        field: 3, scanSize: 1000, now: () => NOW, fullScanDelay: 10, itIndex: 'exp',
        onExpired: (ts: Tuple[]) => {
          const ids = ts.map((t) => t[0] as number);
          if (auto) {
            for (const id of ids) resolvedIds.add(id);
            return Promise.resolve();
          }
          return new Promise<void>((r) => resolvers.push(() => {
            for (const id of ids) resolvedIds.add(id);
            r();
          }));
        },
      });
      task.on('expired', (ts: Tuple[]) => events.push(...ts.map((t) => t[0] as number)));
      task.on('error', (e: unknown) => errors.push(e));
      if (when === 'the chunk') testing.failAllocationAfter(n);
      await vi.advanceTimersToNextTimerAsync();
      expect(s.len()).toBe(120);  // handed while still stored, or the chunk failed
      if (when === 'the resolve') testing.failAllocationAfter(n);
      resolvers.shift()?.();
      for (let i = 0; i < 20; i++) await Promise.resolve();
      const fired = testing.disarmAllocationFailure();
      if (fired) {
        if (firstFired < 0) firstFired = n;
        expect(errors.length, `#${n}: no 'error' reported`).toBeGreaterThan(0);
        for (const e of errors) expectMemoryError(e, `#${n}`);
        const stored = everything(() => s.select().map((t) => t[0] as number));
        for (const id of live) expect(stored).toContain(id);
        for (const id of expired) if (!events.includes(id)) expect(stored, `#${n}: ${id} lost`).toContain(id);
      }
      consistent(s);
      auto = true;
      while (resolvers.length > 0) resolvers.shift()!();
      for (let i = 0; i < 40 && s.len() > live.length; i++) await vi.advanceTimersToNextTimerAsync();
      expect(everything(() => s.select().map((t) => t[0] as number)).sort((a, b) => a - b)).toEqual(live);
      expect([...events].sort((a, b) => a - b)).toEqual(expired);
      for (const id of events) expect(resolvedIds.has(id), `${id} deleted before a delivery of it resolved`).toBe(true);
      consistent(s);
      task.kill();
      s.drop();
      if (!fired) break;
    }
    if (when === 'the chunk') expect(firstFired).toBe(0);
  });
});

describe('bugs', () => {
  // README "Errors": a failed call changes nothing; "transaction(fn)": only a throwing fn undoes.
  it.each(['TREE', 'HASH'] as const)('truncate() inside atomic() failing for memory changes nothing (%s primary)', (pk) => {
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(3000);
      const s = populated(pk, 300);
      const before = snapshot(s);
      let fired = false;
      atomic(() => {
        testing.failAllocationAfter(n);
        try {
          s.truncate();
        } catch (e) {
          expectMemoryError(e, `#${n}`);
          expect(snapshot(s), `truncate failed at #${n}, yet changed the space`).toEqual(before);
        } finally {
          fired = testing.disarmAllocationFailure();
        }
      });
      consistent(s);
      expect(s.len()).toBe(fired ? 300 : 0);
      s.drop();
      if (!fired) break;
    }
  });
});

describe('expirationd: processExpired archiving into a capped evicting space, chunks failing for memory', () => {
  useTaskTimers();

  it.each(['TREE', 'HASH'] as const)('%s pk: onEvict hears only of committed evictions, each archived tuple is either stored or evicted once', (pk) => {
    for (let n = 0; ; n++) {
      expect(n).toBeLessThan(3000);
      const { s, expired } = expiringSpace('src', pk, 90, 9);
      const reports: Tuple[][] = [];
      const archive = evicting(pk, { maxTuples: 8 }, reports);
      const errors: unknown[] = [];
      const task = expirationd.start('arch', s, {
        field: 3, scanSize: 1000, now: () => NOW, fullScanDelay: 10, itIndex: 'exp',
        processExpired: (ts: Tuple[]) => {
          for (const t of ts) {
            archive.insert([t[0] as number, `a${t[0]}`, NOW + 10000 + (t[0] as number), t[3]]);
            s.delete(t[0] as number);
          }
        },
      });
      task.on('error', (e: unknown) => errors.push(e));
      testing.failAllocationAfter(n);
      vi.advanceTimersToNextTimer();
      const fired = testing.disarmAllocationFailure();
      for (let i = 0; i < 40 && s.len() > 60; i++) vi.advanceTimersToNextTimer();
      expect(s.len()).toBe(60);
      const inArchive = archive.select().map((t) => t[0] as number);
      const reported = reports.flat().map((t) => t[0] as number);
      expect(new Set(reported).size, `#${n}: a tuple reported evicted twice`).toBe(reported.length);
      for (const id of reported) expect(inArchive, `#${n}: ${id} reported evicted, yet stored`).not.toContain(id);
      expect([...inArchive, ...reported].sort((a, b) => a - b), `#${n}`).toEqual(expired);
      consistent(archive);
      consistent(s);
      task.kill();
      s.drop();
      archive.drop();
      if (!fired) break;
    }
  });
});
