// The HASH index grows in bounded steps (a second table while it migrates, a few slots moved per
// insert). Here a pairs() iterator and an expiry pass stay open while the space grows from 100k
// to over 300k keys, through several migrations: every tuple that lives through the walk is
// returned (some possibly twice), no deleted one is, and the pass ends having removed every
// tuple that was expired all along and no live one.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const SEED = Number(process.env.SEED ?? 12);
const keyOf = (i: number): number => Math.imul(i, 2654435761) >>> 0;

function hashSpace(name: string): Space {
  const space = new Space(name);
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  return space;
}

describe('HASH growth with walks open', () => {
  test('pairs() open while the space grows from 100k to 300k+ keys', () => {
    const rand = mulberry32(SEED);
    const space = hashSpace('growth-pairs');
    const present = new Set<number>();
    const batch: Tuple[] = [];
    for (let i = 0; i < 100_000; i++) {
      batch.push([keyOf(i), i]);
      present.add(keyOf(i));
    }
    space.insertMany(batch);
    const atStart = new Set(present);
    const deleted = new Set<number>();
    const seen = new Set<number>();
    let next = 100_000;
    let steps = 0;
    for (const t of space.pairs()) {
      const id = t[0] as number;
      if (!present.has(id)) expect.fail(`seed ${SEED}: pairs() returned deleted key ${id}`);
      seen.add(id);
      steps++;
      if (steps <= 110_000) {
        for (let k = 0; k < 2; k++) {
          space.insert([keyOf(next), next]);
          present.add(keyOf(next++));
        }
        if (steps % 10 === 0) {
          const victim = keyOf(Math.floor(rand() * next));
          if (present.has(victim)) {
            space.delete(victim);
            present.delete(victim);
            deleted.add(victim);
          }
        }
      }
      if (steps > 2_000_000) expect.fail('the walk does not end');
    }
    expect(space.len()).toBe(present.size);
    expect(space.len()).toBeGreaterThan(300_000);
    let skipped = 0;
    for (const id of atStart) if (!deleted.has(id) && !seen.has(id)) skipped++;
    expect(skipped, `seed ${SEED}: tuples skipped by the walk`).toBe(0);
    space.checkIntegrity();
  });

  test('an expiry pass runs while the space grows through several migrations', () => {
    const NOW = 1000;
    const rand = mulberry32(SEED + 1);
    const space = hashSpace('growth-expiry');
    const ttl = new Map<number, number>();
    const expiredAllAlong = new Set<number>();
    const batch: Tuple[] = [];
    for (let i = 0; i < 100_000; i++) {
      const exp = rand() < 0.5 ? 500 : 5000;
      batch.push([keyOf(i), exp]);
      ttl.set(keyOf(i), exp);
      if (exp <= NOW) expiredAllAlong.add(keyOf(i));
    }
    space.insertMany(batch);
    const task = expirationd.start('growth', space, { field: 2, scanSize: 500, fullScanDelay: 3600, now: () => NOW });
    let deletedLive = 0;
    task.on('expired', (tuples: Tuple[]) => {
      for (const [id, exp] of tuples as Array<[number, number]>) {
        if (exp > NOW) deletedLive++;
        ttl.delete(id);
        expiredAllAlong.delete(id);
      }
    });
    let next = 100_000;
    let chunks = 0;
    while (task.stats().fullScans === 0) {
      vi.advanceTimersToNextTimer();
      if (++chunks > 100_000) expect.fail('the pass does not end');
      for (let k = 0; k < 1500 && next < 400_000; k++) {  // enough to take the table through growths
        const exp = rand() < 0.5 ? 500 : 5000;
        space.insert([keyOf(next), exp]);
        ttl.set(keyOf(next++), exp);
      }
    }
    expect(next).toBeGreaterThan(300_000);
    expect(deletedLive).toBe(0);
    let left = 0;
    for (const id of expiredAllAlong) if (space.get(id) !== undefined) left++;
    expect(left, `seed ${SEED}: tuples expired all along but still stored after the pass`).toBe(0);
    expect(space.len()).toBe(ttl.size);
    space.checkIntegrity();
  });
});
