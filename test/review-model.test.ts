// Review (adversarial): a seeded model of a task that is stopped and started at random, from the
// test and from inside its own callbacks, on fake timers. Checks, after every step:
// - a stopped task holds no timer, and nothing changes however long the clock runs;
// - nothing is deleted twice, nothing live is deleted, and the space matches the model;
// - nothing is skipped: every tuple stored and expired when a pass started is gone when it ends.
// The seed is REVIEW_SEED (default 2, which also catches a second chunk started beside a pending one); it is printed on failure.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';
import { useTaskTimers } from './support/task-timers.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const SEED = Number(process.env.REVIEW_SEED ?? 2);
const STEPS = 400;

watchUnhandledRejections();

const flush = async () => {
  for (let i = 0; i < 8; i++) await Promise.resolve();
};

type Shape = [name: string, options: TaskOptions, hash: boolean];
const shapes: Shape[] = [
  ['TREE full scan', {}, false],
  ['HASH full scan', {}, true],
  ['early break', { itIndex: 'exp' }, false],
  ['isExpired, full scan', { isExpired: (t: Tuple, now: number) => (t[2] as number) <= now }, true],
  ['isExpired, early break', { itIndex: 'exp', isExpired: (t: Tuple, now: number) => (t[2] as number) <= now }, false],
];
const deliveries = ['delete', 'sync onExpired', 'async onExpired'] as const;

function makeSpace(hash: boolean): Space {
  const space = new Space('model');
  space.createIndex('primary', { type: hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  return space;
}

describe.each(shapes)('%s', (shapeName, shape, hash) => {
  test.each(deliveries)('%s: stop/start at random keeps every promise', async (delivery) => {
    const seed = SEED + shapeName.length * 31 + delivery.length;
    const rnd = mulberry32(seed);
    const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
    const where = `seed ${seed} (REVIEW_SEED=${SEED}), ${shapeName}, ${delivery}`;
    let now = 1000;
    let nextId = 0;
    const space = makeSpace(hash);
    const model = new Map<number, number>();  // id -> ttl
    const deleted = new Set<number>();
    let passSnapshot: number[] = [];
    const problems: string[] = [];
    let task: Task | undefined;
    let inFlight = 0;
    // Inside callbacks, stop() (sometimes followed by start()) at random.
    const maybeStopInside = () => {
      const r = rnd();
      if (r < 0.08) task?.stop();
      else if (r < 0.12) {
        task?.stop();
        task?.start();
      }
    };
    const options: TaskOptions = {
      field: 3,
      scanSize: int(1, 6),
      scanTime: int(1, 30),
      fullScanDelay: int(0, 2),
      now: () => now,
      ...shape,
      onFullScanStart: () => {
        passSnapshot = [...model].filter(([, ttl]) => ttl <= now).map(([id]) => id);
        maybeStopInside();
      },
      onFullScanComplete: () => {
        const left = passSnapshot.filter((id) => space.get(id) !== undefined);
        if (left.length > 0) problems.push(`pass ended with expired tuples left: ${left.join(',')}`);
        maybeStopInside();
      },
    };
    if (delivery === 'sync onExpired') options.onExpired = () => maybeStopInside();
    if (delivery === 'async onExpired') {
      options.onExpired = async () => {
        if (inFlight++ > 0) problems.push('two async deliveries at once: two chunks ran together');
        maybeStopInside();
        // Settles on a microtask, or after one of the fake timers (so that timers run meanwhile).
        if (rnd() < 0.5) await Promise.resolve();
        else await new Promise((resolve) => setTimeout(resolve, int(0, 3)));
        inFlight--;
      };
    }
    task = expirationd.start('model', space, options);
    task.on('expired', (tuples) => {
      for (const t of tuples) {
        const id = t[0] as number;
        if (deleted.has(id)) problems.push(`${id} deleted twice`);
        if ((t[2] as number) > now) problems.push(`${id} deleted while live (ttl ${String(t[2])}, now ${now})`);
        deleted.add(id);
        model.delete(id);
      }
    });
    task.on('error', (e) => problems.push(`error: ${String(e)}`));

    const checkStopped = async () => {
      await flush();
      // An async onExpired pending at stop() settles (its timer is the test's, not the task's).
      for (let i = 0; i < 100 && inFlight > 0; i++) {
        vi.advanceTimersToNextTimer();
        await flush();
      }
      // A pass callback of that settling chunk may have called start() itself.
      if (task!.state === 'running') return;
      expect(task!.state, where).toBe('stopped');
      expect(vi.getTimerCount(), `${where}: a stopped task holds a timer`).toBe(0);
      const stats = task!.stats();
      const before = space.select();
      vi.advanceTimersByTime(3_600_000);
      await flush();
      expect(task!.stats(), where).toEqual(stats);
      expect(space.select(), where).toEqual(before);
    };

    for (let step = 0; step < STEPS; step++) {
      const r = rnd();
      if (r < 0.15) {
        for (let k = int(1, 8); k > 0; k--) {
          const ttl = now + int(-20, 20);
          space.insert([nextId, 'x', ttl]);
          model.set(nextId++, ttl);
        }
      } else if (r < 0.25) {
        now += int(0, 10);
      } else if (r < 0.32) {
        task.stop();
        await checkStopped();
      } else if (r < 0.4) {
        task.start();
      } else {
        vi.advanceTimersToNextTimer();
        await flush();
      }
      if (task.state === 'stopped' && rnd() < 0.5) await checkStopped();
      expect(task.state, where).not.toBe('killed');
      expect(problems, where).toEqual([]);
    }
    // Everything expires; the task, started, deletes it all.
    now += 1000;
    task.start();
    for (let i = 0; i < 5000 && (space.len() > 0 || task.state !== 'running'); i++) {
      if (task.state === 'stopped') task.start();
      vi.advanceTimersToNextTimer();
      await flush();
    }
    expect(space.len(), where).toBe(0);
    expect(model.size, where).toBe(0);
    expect(task.stats().expired, where).toBe(deleted.size);
    expect(task.stats().restarts, where).toBe(1);
    expect(problems, where).toEqual([]);
  });
});
