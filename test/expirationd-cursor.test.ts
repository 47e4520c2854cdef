// The scan cursor survives changes between chunks: inserts, deletes, replaces, truncate and HASH
// rehashes. A pass is run chunk by chunk (fake timers) while the space changes in between, and a
// model of the space checks that no live tuple is deleted and that every tuple that was expired
// for the whole pass is gone at its end.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;

type Walk = 'TREE primary' | 'HASH primary' | 'TTL TREE';


function makeSpace(walk: Walk): Space {
  const space = new Space(`cursor-${walk}`);
  space.createIndex('primary', { type: walk === 'HASH primary' ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  if (walk === 'TTL TREE') space.createIndex('exp', { unique: false, parts: [[2, 'unsigned']] });
  return space;
}

function startTask(space: Space, walk: Walk, scanSize: number, predicate: boolean): Task {
  const options: TaskOptions = { field: 2, scanSize, fullScanDelay: 3600, now: () => NOW };
  if (walk === 'TTL TREE') options.itIndex = 'exp';
  if (predicate) options.isExpired = (t, now) => typeof t[1] === 'number' && t[1] <= now;
  return expirationd.start('cursor', space, options);
}

/**
 * Follows a pass while the test changes the space: `model` mirrors the space (id -> ttl),
 * `stable` holds the ids that were expired at the start and untouched since.
 */
class PassModel {
  readonly model = new Map<number, number>();
  readonly stable = new Set<number>();
  readonly deleted: number[] = [];

  constructor(readonly space: Space, readonly task: Task) {
    task.on('expired', (tuples: Tuple[]) => {
      for (const [id, ttl] of tuples as Array<[number, number]>) {
        expect(ttl, `tuple ${id} deleted while live`).toBeLessThanOrEqual(NOW);
        expect(this.model.get(id), `tuple ${id} deleted in a version that is no longer stored`).toBe(ttl);
        this.model.delete(id);
        this.stable.delete(id);
        this.deleted.push(id);
      }
    });
  }

  load(tuples: Array<[number, number]>): void {
    this.space.insertMany(tuples.map(([id, ttl]) => [id, ttl, 'payload']));
    for (const [id, ttl] of tuples) {
      this.model.set(id, ttl);
      if (ttl <= NOW) this.stable.add(id);
    }
  }

  insert(id: number, ttl: number): void {
    this.space.insert([id, ttl, 'new']);
    this.model.set(id, ttl);
  }

  replace(id: number, ttl: number): void {
    this.space.replace([id, ttl, 'replaced']);
    this.model.set(id, ttl);
    this.stable.delete(id);
  }

  delete(id: number): void {
    expect(this.space.delete(id)?.[0]).toBe(id);
    this.model.delete(id);
    this.stable.delete(id);
  }

  truncate(): void {
    this.space.truncate();
    this.model.clear();
    this.stable.clear();
  }

  /** Runs one chunk; returns true when the pass ended. */
  chunk(): boolean {
    const before = this.task.stats().chunks;
    vi.advanceTimersToNextTimer();
    expect(this.task.stats().chunks).toBe(before + 1);
    return this.task.stats().fullScans === 1;
  }

  /** The checks at the end of the pass. */
  verify(): void {
    for (const id of this.stable) expect(this.space.get(id), `tuple ${id} was expired all pass long`).toBeUndefined();
    const stored = new Map(this.space.select().map((t) => [t[0] as number, t[1] as number]));
    expect(stored).toEqual(this.model);
    this.space.checkIntegrity();
    expect(this.task.lastError).toBeUndefined();
  }
}

const ttlFor = (rand: () => number, expiredShare: number) =>
  rand() < expiredShare ? NOW - Math.floor(rand() * 100) : NOW + 1 + Math.floor(rand() * 100);

describe.each<Walk>(['TREE primary', 'HASH primary', 'TTL TREE'])('a %s walk', (walk) => {
  test.each([false, true])('random inserts, deletes, replaces and truncates between chunks lose nothing (isExpired: %s)', (predicate) => {
    for (let seed = 1; seed <= 25; seed++) {
      const rand = mulberry32(seed * 7919 + (predicate ? 1 : 0));
      const n = 20 + Math.floor(rand() * 100);
      const scanSize = 1 + Math.floor(rand() * 9);
      const space = makeSpace(walk);
      const task = startTask(space, walk, scanSize, predicate);
      const pass = new PassModel(space, task);
      const ids = new Set<number>();
      while (ids.size < n) ids.add(Math.floor(rand() * 4 * n));
      pass.load([...ids].map((id) => [id, ttlFor(rand, 0.7)]));

      let ended = false;
      for (let guard = 0; guard < 5000 && !ended; guard++) {
        ended = pass.chunk();
        if (ended) break;
        const changes = Math.floor(rand() * 4);
        for (let c = 0; c < changes; c++) {
          const r = rand();
          const present = [...pass.model.keys()];
          if (r < 0.35) {
            let id = Math.floor(rand() * 4 * n);
            while (pass.model.has(id)) id++;
            pass.insert(id, ttlFor(rand, 0.5));
          } else if (r < 0.6 && present.length > 0) {
            pass.delete(present[Math.floor(rand() * present.length)]);
          } else if (r < 0.9 && present.length > 0) {
            pass.replace(present[Math.floor(rand() * present.length)], ttlFor(rand, 0.5));
          } else if (r < 0.93 && seed % 5 === 0) {
            pass.truncate(); // only in one seed of five, so most passes run long
          }
        }
      }
      expect(ended, `seed ${seed}: the pass ended`).toBe(true);
      pass.verify();
      task.kill();
      space.drop();
    }
  });

  test('deleting the tuple the cursor stopped at and the ones right after it does not skip or stop the walk', () => {
    const space = makeSpace(walk);
    const walked = walk === 'TTL TREE' ? space.index.exp : space.index.primary;
    const task = startTask(space, walk, 3, false);
    const pass = new PassModel(space, task);
    pass.load(Array.from({ length: 30 }, (_, i) => [i * 10, i % 3 === 0 ? NOW + 50 + i : NOW - 50 + i] as [number, number]));
    const order = walked.select().map((t) => t[0] as number);
    expect(pass.chunk()).toBe(false);
    for (const id of order.slice(2, 5)) if (pass.model.has(id)) pass.delete(id);
    pass.replace(order[5], NOW + 1000);
    let ended = false;
    for (let guard = 0; guard < 100 && !ended; guard++) ended = pass.chunk();
    expect(ended).toBe(true);
    pass.verify();
    expect(space.select().every((t) => (t[1] as number) > NOW)).toBe(true);
  });

  test('truncate between chunks, then new tuples: the pass ends cleanly and no live tuple is lost', () => {
    const space = makeSpace(walk);
    const task = startTask(space, walk, 4, false);
    const pass = new PassModel(space, task);
    pass.load(Array.from({ length: 40 }, (_, i) => [i, i % 2 === 0 ? NOW - i : NOW + i] as [number, number]));
    expect(pass.chunk()).toBe(false);
    pass.truncate();
    for (let i = 0; i < 10; i++) pass.insert(100 + i, NOW + 1 + i);
    for (let i = 0; i < 5; i++) pass.insert(5 - i, NOW - i);
    let ended = false;
    for (let guard = 0; guard < 100 && !ended; guard++) ended = pass.chunk();
    expect(ended).toBe(true);
    pass.verify();
    for (let i = 0; i < 10; i++) expect(space.get(100 + i)).toBeDefined();
  });

  test('inserting enough between chunks to force a rehash does not crash and loses nothing', () => {
    const space = makeSpace(walk);
    const task = startTask(space, walk, 4, false);
    const pass = new PassModel(space, task);
    pass.load(Array.from({ length: 32 }, (_, i) => [i, i % 2 === 0 ? NOW - i : NOW + 1 + i] as [number, number]));
    let ended = pass.chunk();
    let next = 1000;
    for (let round = 0; round < 3 && !ended; round++) {
      const batch = Array.from({ length: 600 * (round + 1) }, (_, i) => [next + i, NOW + 1 + i, 'bulk'] as Tuple);
      space.insertMany(batch);
      for (const t of batch) pass.model.set(t[0] as number, t[1] as number);
      next += batch.length;
      ended = pass.chunk();
    }
    for (let guard = 0; guard < 5000 && !ended; guard++) ended = pass.chunk();
    expect(ended).toBe(true);
    pass.verify();
    expect(space.len()).toBeGreaterThanOrEqual(16 + 600);
  });
});

test.each([false, true])('a HASH walk whose own deletions shrink the table mid-pass still removes every expired tuple (isExpired: %s)',
  (predicate) => {
    const space = makeSpace('HASH primary');
    const task = startTask(space, 'HASH primary', 7, predicate);
    const pass = new PassModel(space, task);
    pass.load(Array.from({ length: 3000 }, (_, i) => [i, i % 50 === 0 ? NOW + 1 : NOW - 1] as [number, number]));
    let ended = false;
    for (let guard = 0; guard < 5000 && !ended; guard++) ended = pass.chunk();
    expect(ended).toBe(true);
    pass.verify();
    expect(space.len()).toBe(60);
  });

test.each([false, true])('a HASH rehash inside onExpired, committed or rolled back, loses nothing (isExpired: %s)', (predicate) => {
  const space = makeSpace('HASH primary');
  let round = 0;
  let next = 10_000;
  const options: TaskOptions = {
    field: 2,
    scanSize: 5,
    fullScanDelay: 3600,
    now: () => NOW,
    onExpired: (tuples) => {
      round++;
      const batch = Array.from({ length: 500 }, (_, i) => [next + i, NOW + 1, 'bulk'] as Tuple);
      space.insertMany(batch);
      // Issue 10: a failed chunk is retried in halves and a tuple failing alone is skipped for
      // the pass, so only deliveries of more than one tuple fail here.
      if (round % 2 === 1 && tuples.length > 1) throw new Error('roll the rehash back');
      next += batch.length;
    },
  };
  if (predicate) options.isExpired = (t, now) => (t[1] as number) <= now;
  const task = expirationd.start('cursor', space, options);
  task.on('error', () => {});
  space.insertMany(Array.from({ length: 40 }, (_, i) => [i, i % 4 === 0 ? NOW + 1 : NOW - 1, 'start']));
  for (let guard = 0; guard < 5000 && task.stats().fullScans === 0; guard++) vi.advanceTimersToNextTimer();
  expect(task.stats().fullScans).toBe(1);
  space.checkIntegrity();
  expect(space.select().filter((t) => (t[1] as number) <= NOW)).toEqual([]);
  for (let i = 0; i < 40; i += 4) expect(space.get(i)).toEqual([i, NOW + 1, 'start']);
  expect(space.len()).toBe(10 + (next - 10_000));
  expect(task.stats().expired).toBe(30);
});
