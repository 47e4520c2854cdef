// Review (adversarial): the daemon's DELIVERY guarantees under careless users and attackers.
// The first describe holds the bugs it found (fixed: async onExpired hand-offs read their tuples
// back), each asserting the documented behaviour. The rest are attacks that were handled:
// seeded random sequences of user writes, callback throws, stop/start/wake/restart/kill+start and
// expirationd.start of the same name from inside onExpired, on TREE, HASH and early-break tasks,
// one or several tasks per space, scanSize 1 to 100, checked against a plain model; truncate()
// inside an onExpired that then throws; a thenable whose `then` getter throws; an index built
// asynchronously while chunks roll back.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { mulberry32 } from '../bench/lib/random.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const NOW = 1000;
watchUnhandledRejections();

function makeSpace(expired: number, live = 0, hash = false): Space {
  const space = new Space('d');
  space.createIndex('primary', { type: hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  for (let id = 0; id < expired; id++) space.insert([id, `e${id}`, NOW - 100 + id]);
  for (let id = expired; id < expired + live; id++) space.insert([id, `l${id}`, NOW + 3600 + id]);
  return space;
}
const ids = (tuples: Tuple[]) => tuples.map((t) => t[0] as number);
const byId = (a: number, b: number) => a - b;

describe('bugs', () => {
  test('a plain onExpired that returns a promise and takes its batch (tuples.splice(0)) gets each tuple once, not twice', async () => {
    // README: a tuple may be delivered more than once "after a rejection, a kill, a restart";
    // here there is none of those, yet every tuple of the first chunk is handed twice.
    const space = makeSpace(4, 2);
    const handed = new Map<number, number>();
    const onExpired = (tuples: Tuple[]) => {
      const batch = tuples.splice(0);  // a queue consumer taking ownership of the batch
      for (const id of ids(batch)) handed.set(id, (handed.get(id) ?? 0) + 1);
      return Promise.resolve();
    };
    const task = expirationd.start('d', space, { field: 3, scanSize: 8, now: () => NOW, onExpired });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(10);
    expect(space.select().map((t) => t[0])).toEqual([4, 5]);
    expect(task.stats().expired).toBe(4);
    expect([...handed]).toEqual([[0, 1], [1, 1], [2, 1], [3, 1]]);
  });

  test('after a rejection, an async onExpired is not handed tuples deleted or refreshed (made live) meanwhile', async () => {
    // README: "A function that returns a promise is handed tuples that are still stored."
    const space = makeSpace(4, 2);
    const calls: { tuples: Tuple[]; stored: Array<Tuple | undefined>; reject: (e: unknown) => void }[] = [];
    const onExpired = async (tuples: Tuple[]) => {
      const stored = tuples.map((t) => space.get(t[0] as number));
      await new Promise<void>((_resolve, reject) => calls.push({ tuples: tuples.map((t) => [...t]), stored, reject }));
    };
    const task = expirationd.start('d', space, { field: 3, scanSize: 8, now: () => NOW, onExpired });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((c) => ids(c.tuples))).toEqual([[0, 1, 2, 3]]);
    space.delete(0);                           // the user logs session 0 out
    space.replace([1, 'refreshed', NOW + 50]); // session 1 is active again
    calls[0].reject(new Error('transient'));   // the first delivery fails
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls.slice(1)) {
      for (let i = 0; i < call.tuples.length; i++) {
        expect(call.stored[i], `tuple ${String(call.tuples[i][0])} handed but stored as ${JSON.stringify(call.stored[i])}`)
          .toEqual(call.tuples[i]);
        expect(call.tuples[i][2] as number).toBeLessThanOrEqual(NOW);
      }
    }
    expect(space.get(1)).toEqual([1, 'refreshed', NOW + 50]);
  });

  test('a retry hands the stored tuples, not the arrays an earlier call edited; the skipped key is the real one', async () => {
    // processExpired is protected against this (a pristine decode); an async onExpired is not.
    const space = makeSpace(4, 2);
    const handed: Tuple[][] = [];
    const task = expirationd.start('t1', space, {
      field: 3, scanSize: 8, now: () => NOW,
      onExpired: async (tuples) => {
        handed.push(tuples.map((t) => [...t]));
        const poison = tuples.some((t) => t[1] === 'e2');
        for (const t of tuples) t[0] = `job-${String(t[0])}`;  // reformats the batch in place for a consumer
        if (poison) throw new Error('bad job');
      },
    });
    const errors: any[] = [];
    task.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(0);
    for (const call of handed) for (const t of call) expect(typeof t[0], JSON.stringify(t)).toBe('number');
    const skipped = errors.filter((e) => e?.code === 'ER_TUPLE_SKIPPED');
    expect(skipped.map((e) => e.key)).toEqual([2]);
    expect(space.select().map((t) => t[0])).toEqual([2, 4, 5]);
  });
});


type Shape = 'tree' | 'hash' | 'early';

/**
 * A model run's space ([id, version, ttl], a TTL TREE) and its model (id -> the version and TTL
 * last written), with 40 tuples written around now = 1000 from `r`.
 */
function modelSpace(r: () => number, shape: Shape) {
  const space = new Space('m');
  space.createIndex('primary', { type: shape === 'hash' ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  const model = new Map<number, { v: string; ttl: number }>();
  let ver = 0;
  const write = (id: number, ttl: number) => {
    const v = `v${ver++}`;
    space.replace([id, v, ttl]);
    model.set(id, { v, ttl });
  };
  for (let i = 0; i < 40; i++) write(i, 1000 + Math.floor(r() * 40) - 20);
  return { space, model, write };
}
async function syncModel(seed: number, shape: Shape, nTasks: number, scanSize: number, actions: boolean) {
  const r = mulberry32(seed);
  const { space, model, write } = modelSpace(r, shape);
  let clock = 1000;
  const problems: string[] = [];
  const delivered = new Map<string, number>();
  const deletedByTask = new Map<string, number>();
  let throwRate = 0.15;
  const tasks: Task[] = [];
  const mk = (k: number): Task => {
    const name = `t${k}`;
    const options: TaskOptions = {
      field: 3, scanSize, now: () => clock, iterationDelay: 0.01, fullScanDelay: 0.01,
      ...(shape === 'early' ? { itIndex: 'exp' } : {}),
      onExpired: (tuples) => {
        const self = expirationd.tasks().includes(name) ? expirationd.task(name) : undefined;
        for (const t of tuples) {
          if ((t[2] as number) > clock) problems.push(`live ${t[0]}:${t[1]} handed at ${clock}`);
        }
        if (r() < throwRate) throw new Error('boom');
        for (const t of tuples) {
          const key = `${t[0]}:${t[1]}`;
          delivered.set(key, (delivered.get(key) ?? 0) + 1);
          if (delivered.get(key)! > 1) problems.push(`${key} delivered twice`);
          const m = model.get(t[0] as number);
          if (m && m.v === t[1]) model.delete(t[0] as number);
          else problems.push(`${key} delivered but model has ${m?.v}`);
        }
        if (actions && self && throwRate > 0) {
          const x = r();
          if (!misuse(x, self, () => mk(Number(name.slice(1)))) && x < 0.25) {
            write(100 + Math.floor(r() * 50), clock + Math.floor(r() * 20) - 10);
          }
        }
        return undefined;
      },
    };
    const t = expirationd.start(name, space, options);
    t.on('error', () => {});
    t.on('expired', (tuples) => {
      for (const x of tuples) {
        const key = `${x[0]}:${x[1]}`;
        deletedByTask.set(key, (deletedByTask.get(key) ?? 0) + 1);
        if ((x[2] as number) > clock) problems.push(`live ${key} deleted`);
      }
    });
    tasks.push(t);
    return t;
  };
  for (let k = 0; k < nTasks; k++) mk(k);
  await drive(r, space, model, write, () => clock, () => { clock += 1; }, actions);
  throwRate = 0;
  for (const name of expirationd.tasks()) { const t = expirationd.task(name); if (t.state !== 'running') t.start(); }
  await vi.advanceTimersByTimeAsync(20_000);
  // compare
  for (const [key, n] of deletedByTask) if (!delivered.has(key)) problems.push(`${key} deleted (x${n}) never delivered`);
  for (const [key] of delivered) if (!deletedByTask.has(key)) problems.push(`${key} delivered never deleted (per events)`);
  const total = compareEnd(space, model, clock, tasks, deletedByTask, problems);
  return { problems, total, deleted: [...deletedByTask.values()].reduce((a, b) => a + b, 0) };
}


/** From inside a callback, by x in [0, 1): stop, stop+start, wake, restart, kill+start, or a new task of the same name (x < 0.22); false when x chose none. */
function misuse(x: number, self: Task, startAgain: () => void): boolean {
  if (x < 0.05) self.stop();
  else if (x < 0.1) { self.stop(); self.start(); }
  else if (x < 0.15) self.wake();
  else if (x < 0.18) self.restart();
  else if (x < 0.2) { self.kill(); self.start(); }
  else if (x < 0.22) startAgain();
  else return false;
  return true;
}

/** 200 seeded steps: user writes and deletes, restarts of stopped tasks, clock ticks, timer advances. */
async function drive(r: () => number, space: Space, model: Map<number, unknown>, write: (id: number, ttl: number) => void,
  now: () => number, tick: () => void, actions: boolean): Promise<void> {
  for (let step = 0; step < 200; step++) {
    const x = r();
    if (x < 0.3) write(Math.floor(r() * 60), now() + Math.floor(r() * 30) - 10);
    else if (x < 0.4) { const id = Math.floor(r() * 60); space.delete(id); model.delete(id); }
    else if (x < 0.45 && actions) { const t = expirationd.tasks(); if (t.length) { const tk = expirationd.task(t[Math.floor(r() * t.length)]); if (tk.state === 'stopped') tk.start(); } }
    if (r() < 0.3) tick();
    await vi.advanceTimersByTimeAsync(Math.floor(r() * 30));
  }
}

/** The end of a model run: what is stored against the model, the indexes, and stats against the events. */
function compareEnd(space: Space, model: Map<number, { v: string; ttl: number }>, clock: number, tasks: Task[],
  deletedByTask: Map<string, number>, problems: string[]): number {
  const stored = new Map(space.select().map((t) => [t[0] as number, t]));
  for (const [id, m] of model) {
    const s = stored.get(id);
    if (!s || s[1] !== m.v) problems.push(`model ${id}:${m.v} ttl ${m.ttl} but stored ${s?.[1]}`);
    else if (m.ttl <= clock) problems.push(`expired ${id}:${m.v} still stored at end`);
  }
  for (const [id, s] of stored) if (!model.has(id)) problems.push(`stored ${id}:${s[1]} not in model`);
  space.checkIntegrity();
  const total = tasks.reduce((a, t) => a + t.stats().expired, 0);
  if (total !== [...deletedByTask.values()].reduce((a, b) => a + b, 0)) problems.push(`stats.expired ${total} vs events`);
  return total;
}

async function asyncModel(seed: number, shape: Shape, nTasks: number, scanSize: number, actions: boolean, plain: boolean) {
  const r = mulberry32(seed);
  const { space, model, write } = modelSpace(r, shape);
  let clock = 1000;
  const problems: string[] = [];
  // Hand-offs of tuples no longer stored as handed: possible across several tasks (another task
  // deletes between this one's read-back and its call); asserted absent for one task.
  const notes: string[] = [];
  const resolved = new Set<string>();
  const deletedByTask = new Map<string, number>();
  let calm = false;
  const tasks: Task[] = [];
  const mk = (k: number): Task => {
    const name = `t${k}`;
    const body = (tuples: Tuple[]) => {
      const self = expirationd.tasks().includes(name) ? expirationd.task(name) : undefined;
      const keys = tuples.map((t) => `${t[0]}:${t[1]}`);
      for (const t of tuples) {
        if ((t[2] as number) > clock) problems.push(`live ${t[0]}:${t[1]} handed`);
        const m = model.get(t[0] as number);
        if (!m || m.v !== t[1]) notes.push(`${t[0]}:${t[1]} handed, stored is ${m?.v}`);
      }
      if (actions && self && !calm) {
        misuse(r(), self, () => mk(k));
      }
      const fail = !calm && r() < 0.2;
      const delay = Math.floor(r() * 20);
      return new Promise<void>((resolve, reject) => setTimeout(() => {
        if (fail) reject(new Error('nope'));
        else { for (const k2 of keys) resolved.add(k2); resolve(); }
      }, delay));
    };
    const options: TaskOptions = {
      field: 3, scanSize, now: () => clock, iterationDelay: 0.01, fullScanDelay: 0.01,
      ...(shape === 'early' ? { itIndex: 'exp' } : {}),
      onExpired: plain ? body : async (tuples) => body(tuples),
    };
    const t = expirationd.start(name, space, options);
    t.on('error', () => {});
    t.on('expired', (tuples) => {
      for (const x of tuples) {
        const key = `${x[0]}:${x[1]}`;
        deletedByTask.set(key, (deletedByTask.get(key) ?? 0) + 1);
        if ((deletedByTask.get(key) ?? 0) > 1) problems.push(`${key} deleted twice`);
        if ((x[2] as number) > clock) problems.push(`live ${key} deleted`);
        if (!resolved.has(key)) problems.push(`${key} deleted before a delivery resolved`);
        const m = model.get(x[0] as number);
        if (m && m.v === x[1]) model.delete(x[0] as number);
        else problems.push(`${key} deleted but model has ${m?.v}`);
      }
    });
    tasks.push(t);
    return t;
  };
  for (let k = 0; k < nTasks; k++) mk(k);
  await drive(r, space, model, write, () => clock, () => { clock += 1; }, actions);
  calm = true;
  for (const name of expirationd.tasks()) { const t = expirationd.task(name); if (t.state !== 'running') t.start(); }
  await vi.advanceTimersByTimeAsync(20_000);
  compareEnd(space, model, clock, tasks, deletedByTask, problems);
  return { problems, notes };
}


describe('random sequences against a model (handled)', () => {
  const seeds = Number(process.env.SEEDS ?? 2);
  for (const shape of ['tree', 'hash', 'early'] as Shape[]) {
    for (const [nTasks, scanSize] of [[1, 1], [1, 100], [3, 2]] as const) {
      test(`sync onExpired: ${shape}, ${nTasks} task(s), scanSize ${scanSize}`, async () => {
        for (let seed = 1; seed <= seeds; seed++) {
          const res = await syncModel(seed * 7919 + nTasks * 31 + scanSize, shape, nTasks, scanSize, true);
          expect(res.problems.slice(0, 10), `seed ${seed}`).toEqual([]);
        }
      });
      test(`async onExpired: ${shape}, ${nTasks} task(s), scanSize ${scanSize}`, async () => {
        for (let seed = 1; seed <= seeds; seed++) {
          for (const plain of [false, true]) {
            const res = await asyncModel(seed * 104729 + nTasks * 31 + scanSize, shape, nTasks, scanSize, true, plain);
            expect(res.problems.slice(0, 10), `seed ${seed} plain ${plain}`).toEqual([]);
            if (nTasks === 1) expect(res.notes.slice(0, 10), `seed ${seed} plain ${plain}: stale hand-offs`).toEqual([]);
          }
        }
      });
    }
  }
});

describe('single attacks (handled)', () => {
  for (const shape of ['tree', 'hash', 'early'] as Shape[]) {
    test(`${shape}: truncate() and an insert inside a sync onExpired that then throws are undone with the chunk`, async () => {
      const space = makeSpace(6, 3, shape === 'hash');
      let n = 0;
      const got: number[] = [];
      const task = expirationd.start('q', space, {
        field: 3, scanSize: 4, now: () => NOW, ...(shape === 'early' ? { itIndex: 'exp' } : {}),
        onExpired: (tuples) => {
          if (n++ === 0) { space.truncate(); space.insert([99, 'x', NOW - 1]); throw new Error('boom'); }
          got.push(...ids(tuples));
        },
      });
      task.on('error', () => {});
      await vi.advanceTimersByTimeAsync(10_000);
      space.checkIntegrity();
      expect(space.select().map((t) => t[0] as number).sort(byId)).toEqual([6, 7, 8]);
      expect(got.sort(byId)).toEqual([0, 1, 2, 3, 4, 5]);
    });
    test(`${shape}: createIndexAsync while chunks commit and roll back`, async () => {
      const space = new Space('q3');
      space.createIndex('primary', { type: shape === 'hash' ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
      space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
      for (let i = 0; i < 9000; i++) space.insert([i, 's', i % 3 === 0 ? NOW - 1 : NOW + 10]);
      let n = 0;
      const task = expirationd.start('q', space, {
        field: 3, scanSize: 200, now: () => NOW, iterationDelay: 0.001, ...(shape === 'early' ? { itIndex: 'exp' } : {}),
        onExpired: () => { if (n++ % 2 === 0) throw new Error('boom'); },
      });
      task.on('error', () => {});
      const built = space.createIndexAsync('second', { unique: false, parts: [[2, 'string']] });
      for (let i = 0; i < 200; i++) await vi.advanceTimersByTimeAsync(5);
      await built;
      await vi.advanceTimersByTimeAsync(20_000);
      space.checkIntegrity();
      expect(space.len()).toBe(6000);
      expect(space.index.second.count('s')).toBe(6000);
    });
  }
  test('a sync onExpired returning a thenable whose then getter throws: a plain value, the chunk commits once', async () => {
    const space = makeSpace(6, 3);
    const got: number[] = [];
    const task = expirationd.start('q', space, {
      field: 3, scanSize: 4, now: () => NOW,
      onExpired: (tuples) => { got.push(...ids(tuples)); return { get then() { throw new Error('getter'); } }; },
    });
    const errors: unknown[] = [];
    task.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(space.select().map((t) => t[0])).toEqual([6, 7, 8]);
    expect(got.sort(byId)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(errors).toEqual([]);
    expect(task.stats()).toMatchObject({ expired: 6, skipped: 0, restarts: 1 });
  });
});
