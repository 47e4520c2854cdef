// task.stop() and task.start() (issue 11): a pause that keeps the task registered, its cursor and
// its pass; start() resumes the same pass where it stopped. Stopping from inside a callback lets
// the running chunk finish as it would and schedules nothing more. A stopped task holds no timer;
// kill(), restart() and space.drop() work on it.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { CappedError, Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

const NOW = 1000;
const SEED = Number(process.env.STOP_START_SEED ?? 11);

function makeSpace(expired: number, live = 0, name = 'pause'): Space {
  const space = new Space(name);
  space.createIndex('primary', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 1 - id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 100 + id]);
  return space;
}

function start(space: Space, options: TaskOptions = {}, name = 'pause'): Task {
  return expirationd.start(name, space, { field: 3, scanSize: 5, now: () => NOW, ...options });
}

/** Runs timers until `done()` holds (or nothing is left to run). */
function runUntil(done: () => boolean): void {
  for (let i = 0; i < 10_000 && !done() && vi.getTimerCount() > 0; i++) vi.advanceTimersToNextTimer();
}

const ids = (space: Space) => space.select().map((t) => t[0] as number);
const expiredIds = (space: Space) => space.select().filter((t) => (t[2] as number) <= NOW).map((t) => t[0] as number);

/** A stopped task: registered, no timer, and nothing changes however long we wait. */
function expectStopped(task: Task, space: Space): void {
  expect(task.state).toBe('stopped');
  expect(task.isRunning).toBe(false);
  expect(expirationd.tasks()).toContain(task.name);
  expect(expirationd.task(task.name)).toBe(task);
  expect(vi.getTimerCount()).toBe(0);
  const stats = task.stats();
  const before = space.select();
  vi.advanceTimersByTime(3_600_000);
  expect(task.stats()).toEqual(stats);
  expect(space.select()).toEqual(before);
}

describe('stop', () => {
  test('stop between chunks: the pending chunk never runs, the task stays registered and holds no timer', () => {
    const space = makeSpace(20);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    expect(task.stats().chunks).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    expect(task.stop()).toBe(task);
    expectStopped(task, space);
    expect(space.len()).toBe(15);
    expect(expirationd.stats('pause')).toEqual(task.stats());
  });

  test('stop right after start: no chunk and no onFullScanStart until start()', () => {
    const space = makeSpace(10);
    const onFullScanStart = vi.fn();
    const task = start(space, { onFullScanStart });
    task.stop();
    expectStopped(task, space);
    expect(task.stats().chunks).toBe(0);
    expect(onFullScanStart).not.toHaveBeenCalled();
    task.start();
    runUntil(() => space.len() === 0);
    expect(space.len()).toBe(0);
    expect(onFullScanStart).toHaveBeenCalledTimes(1);
  });

  test('stop and start are idempotent: one restart, one timer, one chunk per tick', () => {
    const space = makeSpace(20);
    const task = start(space);
    task.stop();
    task.stop();
    expectStopped(task, space);
    task.start();
    task.start();
    expect(vi.getTimerCount()).toBe(1);
    expect(task.state).toBe('running');
    vi.advanceTimersToNextTimer();
    expect(task.stats()).toMatchObject({ chunks: 1, restarts: 1 });
    expect(space.len()).toBe(15);
  });

  test('wake() on a stopped task does nothing; stats() still answers, with the lag growing', () => {
    let now = NOW;
    const space = makeSpace(10, 2);
    const task = start(space, { itIndex: 'exp', scanSize: 2, now: () => now, maxCpuShare: 1 });
    vi.advanceTimersToNextTimer();
    task.stop();
    expect(task.wake()).toBe(task);
    expect(vi.getTimerCount()).toBe(0);
    const lag = task.stats().lag;
    expect(lag).toBeGreaterThan(0);
    now += 50;
    expect(task.stats().lag).toBe(lag + 50);
  });

  test('an insert with an earlier TTL does not wake a stopped early-break task', () => {
    const space = makeSpace(0, 3);
    const task = start(space, { itIndex: 'exp' });
    runUntil(() => task.stats().fullScans === 1);
    expect(vi.getTimerCount()).toBe(1);
    task.stop();
    space.insert([50, 'soon', NOW - 5]);
    expect(vi.getTimerCount()).toBe(0);
    expectStopped(task, space);
    task.start();
    runUntil(() => space.get(50) === undefined);
    expect(space.get(50)).toBeUndefined();
  });
});

describe('start resumes where it stopped', () => {
  // A seeded model: the walk visits scanSize tuples per chunk in index order. After k chunks the
  // task is stopped, the space changes (deletes, and expired inserts on both sides of the
  // cursor), and start() finishes the same pass: expired tuples ahead of the cursor go, the ones
  // behind it stay until the next pass. A new pass would have taken them all.
  const shapes: Array<[string, TaskOptions, (t: Tuple) => [number, number]]> = [
    ['full scan of the primary TREE', {}, (t) => [t[0] as number, 0]],
    ['early break on the TTL TREE', { itIndex: 'exp', maxCpuShare: 1 }, (t) => [t[2] as number, t[0] as number]],
  ];

  test.each(shapes)('%s, against a model', (_name, shape, order) => {
    for (let round = 0; round < 20; round++) {
      const seed = SEED * 1000 + round;
      const random = mulberry32(seed);
      const rand = (n: number) => Math.floor(random() * n);
      const space = makeSpace(0, 0);
      const n = 40 + rand(80);
      for (let id = 0; id < n; id++) {
        // Early break needs the live tuples after the expired ones; the full scan mixes them.
        const expired = shape.itIndex === undefined ? random() < 0.6 : true;
        space.insert([id, `t${id}`, expired ? NOW - 1 - rand(500) : NOW + 1 + rand(500)]);
      }
      for (let id = n; id < n + 3; id++) space.insert([id, `live${id}`, NOW + 1000 + id]);
      const scanSize = 1 + rand(6);
      const onFullScanStart = vi.fn();
      const task = start(space, { ...shape, scanSize, onFullScanStart });
      const walk = [...space.select()]
        .map((t) => ({ t, k: order(t) }))
        .sort((a, b) => a.k[0] - b.k[0] || a.k[1] - b.k[1]);
      const expiredInWalk = walk.filter(({ t }) => (t[2] as number) <= NOW).length;
      const maxChunks = Math.floor((shape.itIndex === undefined ? walk.length - 1 : expiredInWalk - 1) / scanSize);
      const k = 1 + rand(Math.max(1, maxChunks));
      const context = `seed ${seed} (STOP_START_SEED=${SEED}), n ${n}, scanSize ${scanSize}, k ${k}`;

      runUntil(() => task.stats().chunks === k);
      task.stop();
      expect(task.stats().chunks, context).toBe(k);
      const cursor = walk[k * scanSize - 1].k;
      const behind = (t: Tuple) => {
        const key = order(t);
        return key[0] < cursor[0] || (key[0] === cursor[0] && key[1] <= cursor[1]);
      };
      const model = new Map<number, Tuple>();
      for (const { t } of walk) if (!(behind(t) && (t[2] as number) <= NOW)) model.set(t[0] as number, t);
      expect(ids(space), context).toEqual([...model.keys()].sort((a, b) => a - b));
      expect(task.stats().fullScans, context).toBe(0);

      // While stopped: deletes, and expired inserts (ids below the bound, behind and ahead).
      for (let i = 0; i < 30; i++) {
        const id = rand(n);
        if (model.has(id) && random() < 0.3) {
          space.delete(id);
          model.delete(id);
        } else if (!model.has(id)) {
          const tuple = [id, `new${id}`, NOW - 1 - rand(500)];
          space.insert(tuple);
          model.set(id, tuple);
        }
      }
      expectStopped(task, space);

      task.start();
      runUntil(() => task.stats().fullScans === 1);
      expect(task.stats().fullScans, context).toBe(1);
      expect(onFullScanStart, context).toHaveBeenCalledTimes(1);
      expect(task.stats().restarts, context).toBe(1);
      for (const [id, t] of [...model]) if (!behind(t) && (t[2] as number) <= NOW) model.delete(id);
      expect(ids(space), context).toEqual([...model.keys()].sort((a, b) => a - b));

      // The next pass takes the rest.
      runUntil(() => task.stats().fullScans === 2);
      expect(expiredIds(space), context).toEqual([]);
      const liveInModel = [...model.values()].filter((t) => (t[2] as number) > NOW).map((t) => t[0] as number);
      expect(ids(space), context).toEqual(liveInModel.sort((a, b) => a - b));
      task.kill();
      space.drop();
    }
  });

  test('a resumed pass is one pass: fullScans, onFullScanStart and the pass callbacks count it once', () => {
    const space = makeSpace(30, 2);
    const calls: string[] = [];
    const task = start(space, {
      onFullScanStart: () => calls.push('start'),
      onFullScanSuccess: () => calls.push('success'),
      onFullScanComplete: () => calls.push('complete'),
    });
    vi.advanceTimersToNextTimer();
    vi.advanceTimersToNextTimer();
    task.stop();
    expect(calls).toEqual(['start']);
    task.start();
    runUntil(() => task.stats().fullScans === 1);
    expect(calls).toEqual(['start', 'success', 'complete']);
    expect(task.stats()).toMatchObject({ fullScans: 1, restarts: 1, checked: 32, expired: 30 });
  });

  test('stopped between passes, start() begins the next pass at once', () => {
    const space = makeSpace(3);
    const onFullScanStart = vi.fn();
    const task = start(space, { fullScanDelay: 3600, onFullScanStart });
    runUntil(() => task.stats().fullScans === 1);
    task.stop();
    space.insert([100, 'x', NOW - 1]);
    task.start();
    vi.advanceTimersByTime(0);
    expect(onFullScanStart).toHaveBeenCalledTimes(2);
    expect(space.get(100)).toBeUndefined();
  });
});

describe('stop inside every callback', () => {
  // Each case: 20 expired tuples (ids 0..19) and 2 live ones, a full scan of scanSize 5; the
  // callback calls stop() the first time it runs. The chunk it interrupts finishes as it would,
  // nothing further runs until start(), and start() finishes the job.
  interface Case {
    name: string;
    options: (stop: () => void) => TaskOptions;
    listen?: (task: Task, stop: () => void) => void;
    /** Tuples left after the interrupted chunk finished. */
    left: number;
  }
  const cases: Case[] = [
    { name: 'now()', options: (stop) => ({ now: () => (stop(), NOW) }), left: 17 },
    { name: 'isExpired', options: (stop) => ({ isExpired: (t: Tuple, now: number) => (stop(), (t[2] as number) <= now) }), left: 17 },
    { name: 'onExpired (synchronous)', options: (stop) => ({ onExpired: () => stop() }), left: 17 },
    { name: 'processExpired', options: (stop) => ({ processExpired: (tuples: Tuple[]) => {
      stop();
      for (const t of tuples) expirationd.task('pause').space.delete(t[0] as number);
    } }), left: 17 },
    { name: 'onFullScanStart', options: (stop) => ({ onFullScanStart: () => stop() }), left: 22 },
    { name: "an 'expired' listener", options: () => ({}), listen: (task, stop) => task.on('expired', stop), left: 17 },
    { name: 'onFullScanSuccess', options: (stop) => ({ onFullScanSuccess: () => stop() }), left: 2 },
    { name: 'onFullScanComplete', options: (stop) => ({ onFullScanComplete: () => stop() }), left: 2 },
    { name: "a 'fullScan' listener", options: () => ({}), listen: (task, stop) => task.on('fullScan', stop), left: 2 },
  ];

  test.each(cases)('$name', ({ options, listen, left }) => {
    const space = makeSpace(20, 2);
    let task: Task | undefined;
    let stops = 0;
    const stop = () => {
      if (stops++ === 0) task?.stop();
    };
    let starts = 0;
    const opts = options(stop);
    const userStart = opts.onFullScanStart;
    opts.onFullScanStart = (t: Task) => {
      starts++;
      userStart?.(t);
    };
    task = start(space, opts);
    listen?.(task, stop);
    runUntil(() => task.state === 'stopped');
    expect(task.state).toBe('stopped');
    expect(space.len()).toBe(left);
    expectStopped(task, space);
    const passes = task.stats().fullScans;
    task.start();
    runUntil(() => space.len() === 2 && task.stats().fullScans > passes);
    expect(space.len()).toBe(2);
    expect(task.lastError).toBeUndefined();
    expect(task.stats().restarts).toBe(1);
    // A pass interrupted by stop() was resumed, not started again.
    expect(starts).toBe(task.stats().fullScans);
  });

  test("onFullScanError and an 'error' listener: the failing chunk finishes, its poison tuple skipped", () => {
    for (const where of ['error', 'onFullScanError'] as const) {
      const space = makeSpace(20, 2);
      let task: Task | undefined;
      const stop = () => task?.stop();
      task = start(space, {
        isExpired: (t: Tuple, now: number) => {
          if (t[0] === 3) throw new Error('poison');
          return (t[2] as number) <= now;
        },
        ...(where === 'onFullScanError' ? { onFullScanError: stop } : {}),
      });
      if (where === 'error') task.on('error', stop);
      else task.on('error', () => {});
      runUntil(() => task.state === 'stopped');
      // 'error': stopped in the first chunk, which still deleted its 4 other tuples;
      // onFullScanError: at the end of the pass, which deleted every tuple but the poison one.
      expect(space.len()).toBe(where === 'error' ? 18 : 3);
      expectStopped(task, space);
      task.start();
      runUntil(() => space.len() === 3);
      expect(ids(space)).toEqual([3, 20, 21]);
    }
  });

  test('stop() and start() inside the same callback change nothing: one timer, the task runs on', () => {
    const space = makeSpace(20);
    let task: Task | undefined;
    task = start(space, { onExpired: () => { task?.stop(); task?.start(); } });
    vi.advanceTimersToNextTimer();
    expect(task.state).toBe('running');
    expect(vi.getTimerCount()).toBe(1);
    runUntil(() => space.len() === 0);
    expect(space.len()).toBe(0);
    expect(task.stats().chunks).toBe(4);
  });

  test('an async onExpired pending at stop() still settles: resolved tuples are deleted, and no chunk follows', async () => {
    const space = makeSpace(12, 1);
    const pending: Array<{ tuples: Tuple[]; resolve: () => void }> = [];
    const task = start(space, {
      onExpired: (tuples: Tuple[]) => new Promise<void>((resolve) => pending.push({ tuples, resolve })),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(pending).toHaveLength(1);
    task.stop();
    pending[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    for (const t of pending[0].tuples) expect(space.get(t[0] as number)).toBeUndefined();
    expect(space.len()).toBe(13 - pending[0].tuples.length);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(pending).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
    expect(task.state).toBe('stopped');
  });

  test('start() while an async onExpired of the stopped task is pending runs no second chunk meanwhile', async () => {
    const space = makeSpace(12, 1);
    const pending: Array<{ tuples: Tuple[]; resolve: () => void }> = [];
    const task = start(space, {
      onExpired: (tuples: Tuple[]) => new Promise<void>((resolve) => pending.push({ tuples, resolve })),
    });
    await vi.advanceTimersByTimeAsync(0);
    task.stop();
    task.start();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(pending).toHaveLength(1);
    pending[0].resolve();
    for (let i = 0; i < 50 && space.len() > 1; i++) {
      await vi.advanceTimersByTimeAsync(1000);
      for (const p of pending) p.resolve();
    }
    expect(space.len()).toBe(1);
    expect(task.stats().expired).toBe(12);
  });

  test('a rejected async onExpired after stop() keeps its tuples, which start() offers again', async () => {
    const space = makeSpace(4, 1);
    const pending: Array<{ tuples: Tuple[]; resolve: () => void; reject: (e: unknown) => void }> = [];
    const task = start(space, {
      onExpired: (tuples: Tuple[]) => new Promise<void>((resolve, reject) => pending.push({ tuples, resolve, reject })),
    });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(0);
    task.stop();
    pending[0].reject(new Error('later'));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(space.len()).toBe(5);
    expect(task.state).toBe('stopped');
    task.start();
    for (let i = 0; i < 50 && space.len() > 1; i++) {
      await vi.advanceTimersByTimeAsync(2000);
      for (const p of pending) p.resolve();
    }
    expect(space.len()).toBe(1);
  });
});

describe('stop, then kill, drop, restart or a new start', () => {
  test('kill() of a stopped task ends it; stop() after kill() changes nothing', () => {
    const space = makeSpace(20);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    task.stop();
    task.kill();
    expect(task.state).toBe('killed');
    expect(expirationd.tasks()).not.toContain('pause');
    expect(() => expirationd.task('pause')).toThrow(CappedError);
    task.stop();
    expect(task.state).toBe('killed');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(3_600_000);
    expect(space.len()).toBe(15);
  });

  test('expirationd.kill(name) finds a stopped task', () => {
    const space = makeSpace(5);
    const task = start(space).stop();
    expirationd.kill('pause');
    expect(task.state).toBe('killed');
  });

  test('dropping the space of a stopped task ends it; start() then throws ER_SPACE_DROPPED', () => {
    const space = makeSpace(20);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    task.stop();
    space.drop();
    expect(task.state).toBe('killed');
    expect(expirationd.tasks()).not.toContain('pause');
    expect(() => task.start()).toThrow(expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    expect(vi.getTimerCount()).toBe(0);
  });

  test('restart() of a stopped task starts a fresh pass: behind the cursor is walked again', () => {
    const space = makeSpace(20);
    const onFullScanStart = vi.fn();
    const task = start(space, { onFullScanStart });
    vi.advanceTimersToNextTimer();
    task.stop();
    space.insert([0, 'again', NOW - 1]);  // behind the cursor
    task.restart();
    expect(task.state).toBe('running');
    runUntil(() => task.stats().fullScans === 1);
    expect(space.len()).toBe(0);
    expect(onFullScanStart).toHaveBeenCalledTimes(2);
    expect(task.stats().restarts).toBe(2);
  });

  test('start() of a killed task starts a fresh pass, as restart() does', () => {
    const space = makeSpace(10);
    const task = start(space);
    vi.advanceTimersToNextTimer();
    task.kill();
    task.start();
    expect(task.state).toBe('running');
    expect(expirationd.task('pause')).toBe(task);
    expect(task.stats().restarts).toBe(2);
    runUntil(() => space.len() === 0);
    expect(space.len()).toBe(0);
  });

  test('expirationd.start() of the same name kills the stopped task', () => {
    const space = makeSpace(10);
    const old = start(space).stop();
    const fresh = start(space);
    expect(old.state).toBe('killed');
    expect(expirationd.task('pause')).toBe(fresh);
    old.start();  // takes its name back, as restart() would
    expect(fresh.state).toBe('killed');
    expect(expirationd.task('pause')).toBe(old);
  });
});

describe('keepAlive', () => {
  test('a stopped keepAlive task holds no timer', () => {
    const space = makeSpace(30);
    const task = start(space, { keepAlive: true, fullScanDelay: 60 });
    vi.advanceTimersToNextTimer();
    expect(vi.getTimerCount()).toBe(1);
    task.stop();
    expectStopped(task, space);
  });

  // A real process: a keepAlive task keeps node running; stopped, it lets node exit; resumed, it
  // keeps it running again until it kills itself.
  test('in a real node process', () => {
    vi.useRealTimers();
    const entry = path.resolve(__dirname, '../dist/index.js');
    const script = (resume: boolean) => `
      const { Space, expirationd } = require(${JSON.stringify(entry)});
      const space = new Space('s');
      space.createIndex('pk', { parts: [[1, 'unsigned']] });
      space.insert([1, 1]);
      let passes = 0;
      const task = expirationd.start('t', space, { field: 2, fullScanDelay: 0.005, keepAlive: true });
      task.on('fullScan', () => {
        passes++;
        if (passes === 2) {
          task.stop();
          ${resume ? 'setTimeout(() => task.start(), 20);' : ''}
        }
        if (passes === 4) task.kill();
      });
      process.on('exit', () => process.stdout.write(JSON.stringify({ passes, state: task.state })));
    `;
    const run = (resume: boolean) =>
      JSON.parse(execFileSync(process.execPath, ['-e', script(resume)], { encoding: 'utf8', timeout: 30_000 }));
    expect(run(false)).toEqual({ passes: 2, state: 'stopped' });
    expect(run(true)).toEqual({ passes: 4, state: 'killed' });
  });
});
