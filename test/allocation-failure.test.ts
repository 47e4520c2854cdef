// Allocation failure at every allocation in turn, through the public API and the raw handle, in
// the normal addon: native.testing.failAllocationAfter(n) makes the (n + 1)th allocation the
// engine makes throw (native/engine/alloc/fault.h). For insert, replace, delete, insertMany,
// createIndex (TREE and HASH, unique and not, on a populated space), expiry chunks (committed,
// returning the deleted tuples, left open for onExpired and then committed or rolled back), the
// predicate path's deleteVisited, and a transaction's statements and commit, each n from 0 up to
// the first success: the call fails with ER_MEMORY_ISSUE, every index holds exactly what it held
// before (select() of each compared with a snapshot) and checkIntegrity() passes. A rollback of a
// transaction that inserted, replaced and deleted many tuples across four indexes makes no
// allocation at all (allocationsSince() is 0 with the very first allocation armed to fail),
// succeeds, and restores every index.
import { afterEach, describe, expect, it } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { native } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';

const testing = native.testing;
const ALL = 2;
const NOW = 1000;

type Row = [number, number, string];

afterEach(() => {
  testing.failAllocationAfter(-1);
});

function nameOf(id: number): string {
  return `n${(id * 7919) % 100003}`;
}

/** pk (pkType) on id, and unless bare: ttl (TREE, non-unique), name (TREE unique), nameH (HASH). */
function populated(pkType: 'TREE' | 'HASH', n: number, bare = false): Space {
  const space = new Space('alloc');
  space.createIndex('pk', { type: pkType, parts: [[1, 'unsigned']] });
  for (let id = 0; id < n; id++) space.insert([id * 2, id % 3 === 0 ? NOW - 1 : NOW + id, nameOf(id)]);
  if (!bare) {
    space.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    space.createIndex('name', { parts: [[3, 'string']] });
    space.createIndex('nameH', { type: 'HASH', parts: [[3, 'string']] });
  }
  return space;
}

/** Every index's tuples (a HASH index's sorted: its walk order is not the contract). */
function snapshot(space: Space): unknown[][] {
  return space.indexes.map((index) => {
    const rows = index.select();
    return index.type === 'HASH' ? rows.map((r) => JSON.stringify(r)).sort() : rows;
  });
}

interface Attempt {
  space: Space;
  /** Runs after each attempt's checks, before the space is dropped. */
  after?: () => void;
}

/** Runs op with allocation n failing, n = 0, 1, ... until it succeeds. Returns that n. */
function everyFailure(what: string, setup: () => Attempt, op: (space: Space) => void): number {
  for (let n = 0; ; n++) {
    if (n > 20000) throw new Error(`${what}: still failing after ${n} allocations`);
    const { space, after } = setup();
    const before = snapshot(space);
    testing.failAllocationAfter(n);
    let error: unknown;
    try {
      op(space);
    } catch (e) {
      error = e;
    }
    const fired = testing.disarmAllocationFailure();
    if (error === undefined) {
      expect(fired, `${what}: allocation #${n} failed, yet the call succeeded`).toBe(false);
      space.checkIntegrity();
      after?.();
      space.drop();
      return n;
    }
    expect(error, `${what}: allocation #${n}`).toBeInstanceOf(CappedError);
    expect((error as CappedError).code, `${what}: allocation #${n}: ${String(error)}`).toBe('ER_MEMORY_ISSUE');
    expect(fired, `${what}: failed at #${n} without an injected failure`).toBe(true);
    expect(snapshot(space), `${what}: a failure at allocation #${n} changed the space`).toEqual(before);
    space.checkIntegrity();
    after?.();
    space.drop();
  }
}

describe.each(['TREE', 'HASH'] as const)('allocation failure with a %s primary', (pk) => {
  const base = (): Attempt => ({ space: populated(pk, 300) });
  const bare = (): Attempt => ({ space: populated(pk, 300, true) });

  it('the hook counts and fails engine allocations', () => {
    const space = populated(pk, 10);
    testing.failAllocationAfter(1_000_000);
    space.insertMany(Array.from({ length: 100 }, (_, i): Row => [1001 + i * 2, 5, `m${i}`]));
    expect(testing.allocationsSince()).toBeGreaterThan(0);
    expect(testing.disarmAllocationFailure()).toBe(false);
    // A tuple over 1 KiB is an allocation of its own in every build (tuple_arena.h).
    const big: Row = [2001, 1, 'x'.repeat(2000)];
    testing.failAllocationAfter(0);
    expect(() => space.insert(big)).toThrow(expect.objectContaining({ code: 'ER_MEMORY_ISSUE' }));
    expect(testing.allocationsSince()).toBe(1);
    expect(testing.disarmAllocationFailure()).toBe(true);
    expect(space.get(2001)).toBeUndefined();
    space.insert(big);  // disarmed again
    expect(space.get(2001)).toEqual(big);
    space.drop();
  });

  it('insert, replace and delete', () => {
    expect(everyFailure('insert', base, (s) => s.insert([1001, 5, 'fresh']))).toBeGreaterThan(0);
    expect(everyFailure('replace, every key changed', base, (s) => s.replace([10, 99999, 'renamed']))).toBeGreaterThan(0);
    everyFailure('replace, same keys', base, (s) => s.replace([10, NOW + 5, nameOf(5)]));
    everyFailure('replace of an absent key', base, (s) => s.replace([1003, 7, 'brand new']));
    everyFailure('delete', base, (s) => {
      expect(s.delete(40)).toBeDefined();
    });
  });

  it('insertMany', () => {
    // Every 4th tuple is over 1 KiB: an allocation of its own in every build.
    const batch = Array.from({ length: 80 }, (_, i): Row => [2001 + i * 2, i, i % 4 === 0 ? `m${i}`.padEnd(1500, '.') : `m${i}`]);
    expect(everyFailure('insertMany', base, (s) => s.insertMany(batch))).toBeGreaterThanOrEqual(20);
  });

  it.each([
    ['TREE unique', { parts: [[3, 'string']] }],
    ['TREE non-unique', { unique: false, parts: [[2, 'number']] }],
    ['HASH', { type: 'HASH', parts: [[3, 'string']] }],
  ] as const)('createIndex %s on a populated space', (_, options) => {
    expect(everyFailure('createIndex', bare, (s) => {
      s.createIndex('extra', options as unknown as Parameters<Space['createIndex']>[1]);
    })).toBeGreaterThan(0);
  });

  it.each([0, 1, 2] as const)('an expiry chunk (expireChunk mode %i) through the raw handle', (mode) => {
    for (const [index, earlyBreak] of [[1, true], [0, false]] as const) {
      everyFailure(`expireChunk mode ${mode} over index ${index}`, base, (s) => {
        const h = handleOf(s);
        const cursor = h.cursor(index, undefined, ALL, true);
        const out = new Float64Array(5);
        h.expireChunk(cursor, 1, 150, NOW, earlyBreak, mode, out, Buffer.alloc(64 * 1024));
        expect(out[1]).toBeGreaterThan(0);
        if (mode === 2) h.commit(out[4]);
      });
    }
  });

  it('the predicate path: deleteVisited, committed or left open', () => {
    for (const keepOpen of [false, true]) {
      let cursor: ReturnType<ReturnType<typeof handleOf>['cursor']>;
      const scanned = (): Attempt => {
        const space = populated(pk, 300);
        cursor = handleOf(space).cursor(0, undefined, ALL, true);
        handleOf(space).scanChunk(cursor, 120, new Float64Array(5), Buffer.alloc(64 * 1024));
        return { space };
      };
      const positions = new Uint32Array(Array.from({ length: 60 }, (_, i) => i * 2));
      everyFailure(`deleteVisited keepOpen=${keepOpen}`, scanned, (s) => {
        const out = new Float64Array(5);
        handleOf(s).deleteVisited(cursor, positions, keepOpen, out, Buffer.alloc(64 * 1024));
        expect(out[1]).toBe(60);
        if (keepOpen) handleOf(s).commit(out[4]);
      });
    }
  });

  it('statements and commit inside an open transaction; the transaction then rolls back without allocating', () => {
    const inTxn = (): Attempt => {
      const space = populated(pk, 300);
      const start = snapshot(space);
      const h = handleOf(space);
      const sp = h.begin();
      for (let id = 0; id < 300; id += 7) space.delete(id * 2);
      for (let id = 1; id < 300; id += 11) space.replace([id * 2, 12345 + id, `t${id}`]);
      for (let id = 0; id < 20; id++) space.insert([5001 + id * 2, id, `i${id}`]);
      return {
        space,
        after: () => {
          testing.failAllocationAfter(0);
          h.rollback(sp);
          expect(testing.allocationsSince(), 'the rollback allocated').toBe(0);
          expect(testing.disarmAllocationFailure()).toBe(false);
          expect(snapshot(space)).toEqual(start);
          space.checkIntegrity();
        },
      };
    };
    everyFailure('insert in a transaction', inTxn, (s) => s.insert([7001, 5, 'fresh']));
    everyFailure('replace in a transaction', inTxn, (s) => s.replace([4, 54321, 'moved']));
    everyFailure('delete in a transaction', inTxn, (s) => s.delete(6));
    everyFailure('a nested transaction and its commit', inTxn, (s) => s.transaction(() => s.insert([9001, 1, 'c'])));
    everyFailure('a transaction and its commit', base, (s) => {
      s.transaction(() => {
        s.delete(2);
        s.replace([4, 3, 'z']);
        s.insert([9003, 1, 'd']);
      });
    });
  });

  it('a rollback across four indexes cannot fail: with every allocation failing it allocates nothing and restores all', () => {
    for (const n of [0, 1, 30, 700, 3000]) {
      const space = populated(pk, n);
      const before = snapshot(space);
      const h = handleOf(space);
      const sp = h.begin();
      for (let id = 0; id < n; id += 3) space.delete(id * 2);
      for (let id = 1; id < n; id += 5) space.replace([id * 2, 77777 - id, `r${id}`]);
      for (let id = 0; id < 300; id++) space.insert([id * 2 + 1, id % 17, `x${id}`]);
      space.truncate();  // inside the transaction: statement by statement, every tree emptied
      expect(space.len()).toBe(0);
      testing.failAllocationAfter(0);
      h.rollback(sp);
      expect(testing.allocationsSince(), `rollback of ${n}`).toBe(0);
      expect(testing.disarmAllocationFailure()).toBe(false);
      expect(snapshot(space)).toEqual(before);
      space.checkIntegrity();
      space.drop();
    }
  });

  it('an expiry chunk left open (onExpired) is rolled back without allocating', () => {
    const space = populated(pk, 900);
    const before = snapshot(space);
    const h = handleOf(space);
    const cursor = h.cursor(1, undefined, ALL, true);
    const out = new Float64Array(5);
    h.expireChunk(cursor, 1, 10000, NOW, true, 2, out, Buffer.alloc(16));
    expect(out[1]).toBe(300);
    testing.failAllocationAfter(0);
    h.rollbackChunk(cursor, out[4]);
    expect(testing.allocationsSince()).toBe(0);
    expect(testing.disarmAllocationFailure()).toBe(false);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
    space.drop();
  });
});
