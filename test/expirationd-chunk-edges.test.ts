// Chunk edges (issue 14): the daemon's native walk fetches tuples in prefetch batches of 16
// (native/engine/expiry/ttl_walk.h) and deletes as it goes, so the cursor resumes after a deleted
// tuple through the B+tree's erase successor. A successor off by one skips the tuple after the
// deleted one; it shows only when the deleted tuple is the last of its batch (the cursor then
// resumes from it), and only some leaf boundaries take the rebalance path. So every position is
// tried: the only expired tuple at each position of a 100-tuple walk (last of a batch: 15, 31...;
// first: 16, 32...; every leaf boundary on the way), two adjacent expired tuples at each position,
// and the same in chunks of 16 and 7 (a chunk boundary inside and on a batch boundary).
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskStats } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;
const N = 100;

function makeSpace(expired: (position: number) => boolean, primary: 'TREE' | 'HASH' = 'TREE'): Space {
  const space = new Space('edges');
  space.createIndex('primary', { type: primary, parts: [[1, 'unsigned']] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [[2, 'unsigned']] });
  // The primary walk visits ids in order; the TTL walk visits TTLs in order (ties by id).
  for (let id = 0; id < N; id++) space.insert([id, expired(id) ? NOW - 1 : NOW + 1 + id]);
  return space;
}

/** Runs the task until its first pass ends; the stats at that moment. */
function firstPass(task: Task): TaskStats {
  let stats: TaskStats | undefined;
  task.once('fullScan', (s: TaskStats) => {
    stats = { ...s };
  });
  for (let i = 0; i < 10_000 && stats === undefined; i++) vi.advanceTimersToNextTimer();
  if (stats === undefined) throw new Error('the first pass did not end');
  return stats;
}

const survivors = (space: Space): number[] => space.select().map((t) => t[0] as number);

describe('the only expired tuple at every position of the walk', () => {
  for (const scanSize of [1024, 16, 7]) {
    test(`full scan of a TREE primary, scanSize ${scanSize}: every other tuple is checked and kept`, () => {
      for (let p = 0; p < N; p++) {
        const space = makeSpace((id) => id === p);
        const task = expirationd.start('edges', space, { field: 2, scanSize, fullScanDelay: 3600, now: () => NOW });
        const stats = firstPass(task);
        expect({ p, checked: stats.checked, expired: stats.expired }).toEqual({ p, checked: N, expired: 1 });
        expect(survivors(space)).toEqual(Array.from({ length: N }, (_, id) => id).filter((id) => id !== p));
        space.checkIntegrity();
        expirationd.killAll();
      }
    });
  }

  test('full scan: two adjacent expired tuples at every position are both deleted', () => {
    for (const scanSize of [1024, 16]) {
      for (let p = 0; p + 1 < N; p++) {
        const space = makeSpace((id) => id === p || id === p + 1);
        const task = expirationd.start('edges', space, { field: 2, scanSize, fullScanDelay: 3600, now: () => NOW });
        const stats = firstPass(task);
        expect({ p, scanSize, checked: stats.checked, expired: stats.expired, len: space.len() })
          .toEqual({ p, scanSize, checked: N, expired: 2, len: N - 2 });
        expirationd.killAll();
      }
    }
  });

  test('full scan: every other tuple expired (a deletion at every batch and leaf edge)', () => {
    for (const scanSize of [1024, 16, 7]) {
      const space = makeSpace((id) => id % 2 === 1);
      const task = expirationd.start('edges', space, { field: 2, scanSize, fullScanDelay: 3600, now: () => NOW });
      expect(firstPass(task)).toMatchObject({ checked: N, expired: N / 2 });
      expect(survivors(space)).toEqual(Array.from({ length: N / 2 }, (_, i) => 2 * i));
      expirationd.killAll();
    }
  });
});

describe('early break over the TTL index: the first k tuples expired, for every k', () => {
  for (const scanSize of [1024, 16]) {
    test(`scanSize ${scanSize}: exactly k are deleted, and the walk stops at the first live one`, () => {
      for (let k = 1; k < N; k++) {
        const space = makeSpace((id) => id < k);
        const task = expirationd.start('edges', space, { itIndex: 'exp', field: 2, scanSize, fullScanDelay: 3600, now: () => NOW });
        const stats = firstPass(task);
        // Early break checks the expired ones and the first live one, then stops.
        expect({ k, checked: stats.checked, expired: stats.expired }).toEqual({ k, checked: k + 1, expired: k });
        expect(survivors(space)).toEqual(Array.from({ length: N - k }, (_, i) => k + i));
        expirationd.killAll();
      }
    });
  }
});

describe('a HASH primary', () => {
  test('the only expired tuple at every position of the slot walk is the only one deleted', () => {
    for (let p = 0; p < N; p += 3) {
      const space = makeSpace((id) => id === p, 'HASH');
      const task = expirationd.start('edges', space, { field: 2, scanSize: 16, fullScanDelay: 3600, now: () => NOW });
      expect(firstPass(task)).toMatchObject({ checked: N, expired: 1 });
      expect(space.get(p)).toBeUndefined();
      expect(space.len()).toBe(N - 1);
      expirationd.killAll();
    }
  });
});
