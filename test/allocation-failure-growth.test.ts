// Allocation failure while the indexes grow (issue 14): the space is filled one insert (or
// replace) at a time from empty, and each statement is first tried with allocation n failing,
// n = 0, 1, ... until it succeeds (native.testing.failAllocationAfter). Growing from empty, some
// statements allocate in a secondary index (a B+tree node, a larger hash table) after the primary
// index already took the tuple: the failure must undo the primary too. After every failure the
// call threw ER_MEMORY_ISSUE, every index holds what it held before, and checkIntegrity() passes.
import { afterEach, describe, expect, test } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { native } from '../src/native/loader.js';

const testing = native.testing;

afterEach(() => {
  testing.failAllocationAfter(-1);
});

/** Every index's tuples (a HASH index's sorted: its walk order is not the contract). */
function snapshot(space: Space): unknown[][] {
  return space.indexes.map((index) => {
    const rows = index.select();
    return index.type === 'HASH' ? rows.map((r) => JSON.stringify(r)).sort() : rows;
  });
}

/** Runs op with allocation n failing, n = 0, 1, ... until it succeeds; returns how many failed. */
function untilItSucceeds(what: string, space: Space, op: () => void): number {
  for (let n = 0; ; n++) {
    if (n > 1000) throw new Error(`${what}: still failing after ${n} allocations`);
    const before = snapshot(space);
    testing.failAllocationAfter(n);
    let error: unknown;
    try {
      op();
    } catch (e) {
      error = e;
    }
    const fired = testing.disarmAllocationFailure();
    if (error === undefined) {
      expect(fired, `${what}: allocation #${n} failed, yet the call succeeded`).toBe(false);
      return n;
    }
    expect(error, `${what}: allocation #${n}`).toBeInstanceOf(CappedError);
    expect((error as CappedError).code, `${what}: allocation #${n}: ${String(error)}`).toBe('ER_MEMORY_ISSUE');
    expect(snapshot(space), `${what}: a failure at allocation #${n} changed the space`).toEqual(before);
    space.checkIntegrity();
  }
}

describe.each(['TREE', 'HASH'] as const)('a %s primary', (pk) => {
  test.each(['TREE', 'HASH'] as const)('with a %s secondary: inserts and replaces that fail in the secondary leave the primary as it was', (sk) => {
    const space = new Space('growth');
    space.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
    space.createIndex('sk', { type: sk, parts: [[2, 'string']] });
    space.createIndex('ttl', { unique: false, parts: [[3, 'number']] });
    let failures = 0;
    for (let id = 0; id < 400; id++) {
      failures += untilItSucceeds(`insert ${id}`, space, () => space.insert([id, `s${(id * 7919) % 1009}`, id % 50]));
      if (id % 3 === 0) {
        failures += untilItSucceeds(`replace ${id}`, space, () => space.replace([id, `r${id}`, 1000 + id]));
      }
    }
    expect(failures).toBeGreaterThan(0);
    expect(space.len()).toBe(400);
    space.checkIntegrity();
    space.drop();
  });
});
