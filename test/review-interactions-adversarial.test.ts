// Adversarial review of feature INTERACTIONS: createIndexAsync slices running between the chunks
// of several expirationd tasks on the same space (early break with a synchronous onExpired that
// moves tuples to a second, capped space; a full scan with isExpired; a processExpired that
// re-queues or moves), capped eviction in both spaces (maxTuples and maxBytes, onFull
// 'evictExpiring') whose onEvict writes back into the first space, update/upsert/replace moving
// TTLs across the tasks' cursors, atomic() frames over both spaces with nested transactions that
// throw, truncate(), and pairs() iterators held open across all of it; then drop()/truncate()
// from inside another space's callbacks inside an open chunk transaction, builds over a growing
// evicting HASH primary, due-time wake-ups after each kind of write.
// Every step is checked against a plain JavaScript model (Map of primary key -> tuple), which
// also predicts every eviction (README "Capped spaces": smallest TTL first, ties by primary key,
// never the replaced tuple) and checks each onEvict report against the prediction.
//   REVIEW_SEED=<n> REVIEW_STEPS=<n> npx vitest run test/review-interactions-adversarial.test.ts
// (REVIEW_TRACE=<substring> prints the matching trace lines of a failing run.)
// No bug was found; see the report. The README silences found are in their own describe.
import { isDeepStrictEqual } from 'node:util';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, CappedError, type Tuple, type Key } from '../src/index.js';
import { setBuildSlice } from '../src/space/build.js';
import { pack } from '../src/native/codec.js';
import { mulberry32 } from '../bench/lib/random.js';

let clock = 100;
const TIMERS = ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] as const;
let slice: { tuples: number; ms: number };
beforeEach(() => {
  clock = 100;
  vi.useFakeTimers({ toFake: [...TIMERS] });
  slice = setBuildSlice({ tuples: 8, ms: 50 });
});
afterEach(() => {
  setBuildSlice(slice);
  vi.restoreAllMocks();
  try {
    expirationd.killAll();
  } finally {
    vi.useRealTimers();
  }
});
// ---------------------------------------------------------------------------------------------
// The randomized model run: every feature at once, against Maps of primary key -> tuple
// ---------------------------------------------------------------------------------------------
type Row = [number, string, number, string];  // [id, 's'+id, ttl, tag]
const cmpBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
const byTtl = (a: Tuple, b: Tuple): number => ((a[2] as number) - (b[2] as number)) || ((a[0] as number) - (b[0] as number));
const byId = (a: Tuple, b: Tuple): number => (a[0] as number) - (b[0] as number);

/** Every stored tuple of a TTL space (a clock of -Infinity hides nothing), through `index`. */
function storedVia(s: Space, index = 0): Tuple[] {
  const saved = clock;
  clock = -Infinity;
  try {
    return s.index[index].select();
  } finally {
    clock = saved;
  }
}

interface RunOptions {
  seed: number;
  steps: number;
  pk: 'TREE' | 'HASH';
  capA: boolean;
  /** B capped by bytes (bsize) instead of by count. */
  bytesB?: boolean;
  processTask: boolean;
}

async function modelRun(o: RunOptions): Promise<void> {
  const rnd = mulberry32(o.seed);
  const int = (n: number): number => Math.floor(rnd() * n);
  const where = (step: number, what: string): string => `seed ${o.seed} (${o.pk}, capA ${o.capA}, process ${o.processTask}) step ${step}: ${what}`;
  let step = 0;
  const mA = new Map<number, Tuple>();
  const mB = new Map<number, Tuple>();
  // Evictions the model predicts (README "Capped spaces": the smallest TTL first, ties by
  // primary key, never the replaced tuple nor the new one), not yet reported to onEvict.
  const predicted = new Map<Map<number, Tuple>, Tuple[]>([[mA, []], [mB, []]]);
  const caps = new Map<Map<number, Tuple>, { tuples: number; bytes: number }>([[mB, o.bytesB ? { tuples: Infinity, bytes: 260 } : { tuples: 12, bytes: Infinity }]]);
  if (o.capA) caps.set(mA, { tuples: 40, bytes: Infinity });
  const bytesOf = (m: Map<number, Tuple>): number => { let n = 0; for (const t of m.values()) n += pack(t).length; return n; };
  let nextId = 1;
  const problems: string[] = [];
  const trace: string[] = [];
  const problem = (s: string): void => {
    problems.push(where(step, s));
    if (process.env.REVIEW_TRACE) console.log(trace.filter((l) => l.includes(process.env.REVIEW_TRACE as string)).join('\n'));
  };
  const snapshot = (): (() => void) => {
    const a = new Map(mA);
    const b = new Map(mB);
    const pa = [...(predicted.get(mA) as Tuple[])];
    const pb = [...(predicted.get(mB) as Tuple[])];
    return () => {
      mA.clear();
      for (const [k, v] of a) mA.set(k, v);
      mB.clear();
      for (const [k, v] of b) mB.set(k, v);
      predicted.set(mA, pa);
      predicted.set(mB, pb);
    };
  };
  /** The model of a statement that stores `t` (insert, replace, update, upsert): evicts first. */
  const put = (m: Map<number, Tuple>, t: Tuple): void => {
    const id = t[0] as number;
    const cap = caps.get(m);
    if (cap !== undefined) {
      const old = m.get(id);
      const fits = (): boolean => m.size + (m.has(id) ? 0 : 1) <= cap.tuples &&
        bytesOf(m) - (m.has(id) ? pack(m.get(id)).length : 0) + pack(t).length <= cap.bytes;
      if (pack(t).length > cap.bytes) throw new Error('model: tuple can never fit');
      const victims = [...m.values()].filter((v) => v !== old).sort(byTtl);
      while (!fits()) {
        const v = victims.shift() as Tuple;
        m.delete(v[0] as number);
        (predicted.get(m) as Tuple[]).push(v);
      }
    }
    m.set(id, t);
  };
  /** Runs a statement whose model change `model` made first (onEvict may come before it returns). */
  const stmt = <R>(model: () => void, call: () => R): R => {
    const undo = snapshot();
    model();
    try {
      return call();
    } catch (e) {
      undo();
      throw e;
    }
  };
  const reported = (m: Map<number, Tuple>, tuples: Tuple[], why: string): void => {
    const list = predicted.get(m) as Tuple[];
    for (const t of tuples) {
      const i = list.findIndex((x) => isDeepStrictEqual(x, t));
      if (i < 0) problem(`${why}: ${JSON.stringify(t)} was not predicted (predicted ${JSON.stringify(list)}; model has ${JSON.stringify(m.get(t[0] as number))})`);
      else list.splice(i, 1);
    }
  };
  const removeFrom = (m: Map<number, Tuple>, t: Tuple, why: string): void => {
    const had = m.get(t[0] as number);
    if (had === undefined) problem(`${why}: ${JSON.stringify(t)} was not in the model`);
    else if (!isDeepStrictEqual(had, t)) problem(`${why}: ${JSON.stringify(t)} differs from the model's ${JSON.stringify(had)}`);
    m.delete(t[0] as number);
  };

  let A!: Space;
  const B: Space = new Space(`B${o.seed}`, {
    ttl: { field: 3, now: () => clock }, ...(o.bytesB ? { maxBytes: 260 } : { maxTuples: 12 }), onFull: 'evictExpiring',
    onEvict: (tuples) => {
      trace.push(`B onEvict ${JSON.stringify(tuples)}`);
      reported(mB, tuples, 'B onEvict');
      // write back to A: a live tuple per eviction (fresh ids), sometimes inside atomic()
      if (A.dropped) return;
      for (const t of tuples) {
        if (int(2) === 0) continue;
        const row: Row = [nextId++, '', clock + 5 + int(40), `back${t[0]}`];
        row[1] = `s${row[0]}`;
        stmt(() => put(mA, row), () => A.insert(row));
      }
    },
  });
  B.createIndex('pk', { parts: [[1, 'unsigned']] });
  B.createIndex('exp', { unique: false, parts: [[3, 'number']] });

  A = new Space(`A${o.seed}`, {
    ttl: { field: 3, now: () => clock },
    ...(o.capA ? {
      maxTuples: 40, onFull: 'evictExpiring' as const,
      onEvict: (tuples: Tuple[]) => reported(mA, tuples, 'A onEvict'),
    } : {}),
  });
  A.createIndex('pk', { type: o.pk, parts: [[1, 'unsigned']] });
  A.createIndex('exp', { unique: false, parts: [[3, 'number']] });

  // T1: early break on exp, synchronous onExpired that moves each tuple to B (capped, evicting),
  // throws on a 'poison' tag after writing (rolled back with the chunk).
  const delivered = new Map<string, number>();
  const expiredListener = (name: string) => (tuples: Tuple[]): void => {
    delivered.set(name, (delivered.get(name) ?? 0) + tuples.length);
    for (const t of tuples) {
      if (!((t[2] as number) <= clock)) problem(`${name} deleted a live tuple ${JSON.stringify(t)} at ${clock}`);
      // t1's onExpired took them out of the model already (they were deleted before it ran)
      if (name !== 't1') removeFrom(mA, t, `${name} expired`);
      else if (mA.has(t[0] as number)) problem(`t1 'expired' ${JSON.stringify(t)} still in the model`);
    }
  };
  const t1 = expirationd.start(`t1-${o.seed}`, A, {
    itIndex: 'exp', scanSize: 2 + int(6), iterationDelay: 0.2,
    onExpired: (tuples) => {
      const restore = snapshot();
      trace.push(`t1 onExpired ${JSON.stringify(tuples)}`);
      for (const t of tuples) {
        if (!((t[2] as number) <= clock)) problem(`t1 handed a live tuple ${JSON.stringify(t)} at ${clock}`);
        removeFrom(mA, t, 't1 onExpired');
      }
      for (const t of tuples) {
        const row: Row = [t[0] as number, t[1] as string, clock + 50 + int(50), 'moved'];
        stmt(() => put(mB, row), () => B.replace(row));
      }
      if (tuples.some((t) => t[3] === 'poison')) {
        restore();
        throw new Error('poison');
      }
    },
  });
  t1.on('expired', expiredListener('t1'));
  t1.on('error', () => {});
  // T2: full scan of the primary with isExpired.
  const t2 = expirationd.start(`t2-${o.seed}`, A, {
    scanSize: 3 + int(5), scanTime: 1, iterationDelay: 0.1,
    isExpired: (t, now) => (t[2] as number) <= now,
  });
  t2.on('expired', expiredListener('t2'));
  t2.on('error', () => {});
  // T3: processExpired on exp: re-queue (TTL forward), or move to B and delete.
  let t3: ReturnType<typeof expirationd.start> | undefined;
  let handed3 = 0;
  if (o.processTask) {
    t3 = expirationd.start(`t3-${o.seed}`, A, {
      itIndex: 'exp', scanSize: 2 + int(4), iterationDelay: 0.3,
      processExpired: (tuples) => {
        const restore = snapshot();
        trace.push(`t3 process ${JSON.stringify(tuples)}`);
        for (const t of tuples) {
          if (!((t[2] as number) <= clock)) problem(`t3 handed a live tuple ${JSON.stringify(t)}`);
          const had = mA.get(t[0] as number);
          if (!isDeepStrictEqual(had, t)) problem(`t3 handed ${JSON.stringify(t)}, model has ${JSON.stringify(had)}`);
          if (int(2) === 0) {
            const ttl = clock + 10 + int(30);
            const nt = stmt(() => put(mA, [t[0], t[1], ttl, t[3]]), () => A.update(t[0] as Key, [['=', 3, ttl]]));
            if (!isDeepStrictEqual(nt, mA.get(t[0] as number))) problem(`t3 update returned ${JSON.stringify(nt)}`);
          } else {
            const row: Row = [t[0] as number, t[1] as string, clock + 60, 'p'];
            stmt(() => put(mB, row), () => B.replace(row));
            A.delete(t[0] as Key);
            mA.delete(t[0] as number);
          }
        }
        if (tuples.some((t) => t[3] === 'poison')) {
          restore();
          trace.push('poison throw');
          throw new Error('poison');
        }
      },
    });
    t3.on('expired', (tuples) => {
      handed3 += tuples.length;
    });
    t3.on('error', () => {});
  }

  // Index builds.
  type Build = { name: string; def: 'name' | 'ttl2'; p: Promise<unknown>; result?: { ok: boolean; error?: unknown }; truncated: boolean };
  let building: Build | undefined;
  const built: Array<{ name: string; def: 'name' | 'ttl2' }> = [];
  let buildNo = 0;
  // An open iterator.
  let iter: { it: IterableIterator<Tuple>; index: number; last?: Tuple } | undefined;

  const newRow = (): Row => {
    const id = nextId++;
    return [id, `s${id}`, clock - 10 + int(60), int(25) === 0 ? 'poison' : 't'.padEnd(1 + int(12), 'x')];
  };
  const pick = (m: Map<number, Tuple>): number | undefined => {
    if (m.size === 0) return undefined;
    const keys = [...m.keys()];
    return keys[int(keys.length)];
  };
  const expectCode = (fn: () => unknown, code: string | undefined, what: string): void => {
    let got: string | undefined;
    try {
      fn();
    } catch (e) {
      got = e instanceof CappedError ? e.code : `raw:${String(e)}`;
    }
    if (got !== code) problem(`${what}: expected ${code ?? 'success'}, got ${got ?? 'success'}`);
  };

  // One write to A or B, applied to the model (inside a frame the caller restores on rollback).
  const write = (): void => {
    const toA = int(3) !== 0;
    const s = toA ? A : B;
    const m = toA ? mA : mB;
    const r = int(9);
    trace.push(`write ${toA ? 'A' : 'B'} op ${r} clock ${clock} nextId ${nextId}`);
    if (r <= 2) {
      const row = newRow();
      stmt(() => put(m, row), () => s.insert(row));
    } else if (r === 3) {
      const id = pick(m);
      if (id === undefined) return;
      const had = m.get(id) as Tuple;
      const row: Row = [id, `s${id}`, clock - 5 + int(60), had[3] as string];
      // insert over a stored key: refused while it is live, replaces it once expired
      if ((had[2] as number) > clock) expectCode(() => s.insert(row), 'ER_DUPLICATE_KEY', `insert over live ${id}`);
      else stmt(() => put(m, row), () => s.insert(row));
    } else if (r === 4) {
      const id = pick(m);
      if (id === undefined) return;
      const row: Row = [id, `s${id}`, clock - 5 + int(60), 't'];
      stmt(() => put(m, row), () => s.replace(row));
    } else if (r === 5) {
      const id = pick(m);
      if (id === undefined) return;
      const had = m.get(id) as Tuple;
      const assign = int(2) === 0;
      const v = assign ? clock - 5 + int(60) : int(30) - 10;
      const want: Tuple = [had[0], had[1], assign ? v : (had[2] as number) + v, had[3]];
      const nt = stmt(() => put(m, want), () => s.update(id, [[assign ? '=' : '+', 3, v]]));
      if (!isDeepStrictEqual(nt, want)) problem(`update(${id}) returned ${JSON.stringify(nt)}, model ${JSON.stringify(want)}`);
    } else if (r === 6) {
      const id = int(2) === 0 ? pick(m) ?? nextId++ : nextId++;
      const row: Row = [id, `s${id}`, clock + int(40), 'u'];
      const had = m.get(id);
      stmt(() => put(m, had === undefined ? row : [had[0], had[1], (had[2] as number) + 7, had[3]]), () => s.upsert(row, [['+', 3, 7]]));
    } else if (r === 7) {
      const id = pick(m);
      if (id === undefined) return;
      const got = s.delete(id);
      if (!isDeepStrictEqual(got, m.get(id))) problem(`delete(${id}) returned ${JSON.stringify(got)}, model ${JSON.stringify(m.get(id))}`);
      m.delete(id);
    } else {
      const rows = [newRow(), newRow()];
      // set first: a tuple of the batch may evict one the same call inserted (README), and
      // onEvict, called before insertMany returns, reports it
      stmt(() => { for (const row of rows) put(m, row); }, () => s.insertMany(rows));
    }
  };

  const check = (what: string): void => {
    for (const [m, name] of [[mA, 'A'], [mB, 'B']] as const) {
      const left = predicted.get(m) as Tuple[];
      if (left.length > 0) problem(`${what}: predicted evictions from ${name} never reported: ${JSON.stringify(left)}`);
      predicted.set(m, []);
    }
    for (const [s, m, name] of [[A, mA, 'A'], [B, mB, 'B']] as const) {
      try {
        s.checkIntegrity();
      } catch (e) {
        problem(`${what}: ${name} integrity: ${String(e)}`);
      }
      const want = [...m.values()];
      const got = storedVia(s, 0);
      const sortPk = (x: Tuple[]): Tuple[] => [...x].sort(byId);
      if (!isDeepStrictEqual(sortPk(got), sortPk(want))) {
        const g = new Set(got.map((t) => JSON.stringify(t)));
        const w = new Set(want.map((t) => JSON.stringify(t)));
        problem(`${what}: ${name} contents differ: missing ${JSON.stringify([...w].filter((x) => !g.has(x)))}, extra ${JSON.stringify([...g].filter((x) => !w.has(x)))}`);
      }
      if (s.len() !== m.size) problem(`${what}: ${name}.len() ${s.len()} != model ${m.size}`);
      if (!isDeepStrictEqual(storedVia(s, 1), [...want].sort(byTtl))) problem(`${what}: ${name} exp order differs`);
      const live = want.filter((t) => (t[2] as number) > clock).length;
      if (s.count() !== live) problem(`${what}: ${name}.count() ${s.count()} != live ${live}`);
      if (s.index.exp.count() !== live) problem(`${what}: ${name}.exp.count() != live ${live}`);
      if (s.select().length !== live) problem(`${what}: ${name}.select() has ${s.select().length} visible, model ${live}`);
    }
    for (const b of built) {
      const got = storedVia(A, b.name as unknown as number);
      const want = [...mA.values()].sort(b.def === 'name' ? (x, y) => cmpBytes(x[1] as string, y[1] as string)
        : (x, y) => ((x[2] as number) - (y[2] as number)) || cmpBytes(x[3] as string, y[3] as string) || byId(x, y));
      if (!isDeepStrictEqual(got, want)) problem(`${what}: built index ${b.name} differs from the model`);
    }
    if (t1.state === 'running' && t1.stats().expired !== (delivered.get('t1') ?? 0)) problem(`t1 stats().expired ${t1.stats().expired} != delivered ${delivered.get('t1')}`);
    if (t2.state === 'running' && t2.stats().expired !== (delivered.get('t2') ?? 0)) problem(`t2 stats().expired != delivered`);
    if (t3 !== undefined && t3.state === 'running' && t3.stats().expired !== handed3) problem(`t3 stats().expired != handed`);
  };

  for (step = 0; step < o.steps && problems.length === 0; step++) {
    const r = int(20);
    trace.push(`step ${step} r ${r}`);
    try {
      if (r <= 6) write();
      else if (r === 7) {
        // atomic() over both spaces; rolled back 1 time in 2
        const restore = snapshot();
        const rollback = int(2) === 0;
        try {
          atomic(() => {
            const n = 1 + int(4);
            for (let i = 0; i < n; i++) write();
            if (int(3) === 0) {
              const undo = snapshot();
              try {
                A.transaction(() => {
                  write();
                  throw new Error('inner');
                });
              } catch (e) {
                if ((e as Error).message !== 'inner') throw e;
                undo();
              }
            }
            if (rollback) throw new Error('rollback');
          });
        } catch (e) {
          if ((e as Error).message !== 'rollback') throw e;
          restore();
        }
      } else if (r === 8) {
        clock += int(8);
      } else if (r <= 11) {
        await vi.advanceTimersByTimeAsync(int(400));
      } else if (r === 12) {
        if (building === undefined && int(2) === 0) {
          const def = int(2) === 0 ? 'name' as const : 'ttl2' as const;
          const name = `${def}${buildNo++}`;
          const p = A.createIndexAsync(name, def === 'name'
            ? { parts: [[2, 'string']] }
            : { unique: false, parts: [[3, 'number'], [4, 'string']] });
          const b: Build = { name, def, p, truncated: false };
          building = b;
          p.then(() => { b.result = { ok: true }; }, (error: unknown) => { b.result = { ok: false, error }; });
        }
      } else if (r === 13) {
        if (int(6) === 0) {
          if (int(3) === 0) {
            B.truncate();
            mB.clear();
          } else {
            A.truncate();
            mA.clear();
            if (building) building.truncated = true;
          }
        }
      } else if (r <= 15) {
        // iterator steps
        if (iter === undefined || int(8) === 0) {
          const index = int(2);
          iter = { it: A.index[index].pairs(), index };
        }
        for (let i = 0; i < 3 && iter !== undefined; i++) {
          const n = iter.it.next();
          if (n.done) {
            iter = undefined;
            break;
          }
          const t = n.value;
          const had = mA.get(t[0] as number);
          if (!isDeepStrictEqual(had, t)) problem(`pairs() yielded ${JSON.stringify(t)}, model has ${JSON.stringify(had)}`);
          if (!((t[2] as number) > clock)) problem(`pairs() yielded expired ${JSON.stringify(t)} at ${clock}`);
          if (iter.last !== undefined) {
            const order = iter.index === 1 ? byTtl(iter.last, t) : o.pk === 'TREE' ? byId(iter.last, t) : -1;
            if (order >= 0) problem(`pairs() went back: ${JSON.stringify(iter.last)} then ${JSON.stringify(t)}`);
          }
          iter.last = t;
        }
      } else if (r === 16) {
        // a task is stopped / started / restarted / woken
        const t = [t1, t2, t3][int(3)];
        if (t !== undefined) [() => t.stop(), () => t.start(), () => t.wake(), () => t.restart()][int(4)]();
        if (t === t1 && t1.state === 'running') delivered.set('t1', t1.stats().expired);
        if (t === t2 && t2.state === 'running') delivered.set('t2', t2.stats().expired);
        if (t !== undefined && t === t3) handed3 = t3.stats().expired;
      } else {
        await vi.advanceTimersByTimeAsync(int(50));
        clock += int(3);
      }
    } catch (e) {
      problem(`threw ${e instanceof CappedError ? e.code : ''} ${String(e)}`);
    }
    if (building?.result !== undefined) {
      const b = building;
      building = undefined;
      if (b.result!.ok) {
        built.push({ name: b.name, def: b.def });
      } else {
        const code = b.result!.error instanceof CappedError ? b.result!.error.code : String(b.result!.error);
        if (!(b.truncated && code === 'ER_INDEX_BUILD_ABORTED')) problem(`build ${b.name} failed: ${code} ${String(b.result!.error)}`);
      }
    }
    check(`after step`);
  }
  // let the build finish
  for (let i = 0; i < 50 && building !== undefined && building.result === undefined; i++) await vi.advanceTimersByTimeAsync(10);
  if (process.env.REVIEW_VERBOSE) {
    console.log(o.seed, 'built', built.length, 't1', t1.stats(), 't2', t2.stats().expired, 't3', t3?.stats(),
      'evict-reports', trace.filter((l) => l.startsWith('B onEvict')).length, 'lenA', A.len());
  }
  expirationd.killAll();
  if (!A.dropped) A.drop();
  B.drop();
  expect(problems.slice(0, 5)).toEqual([]);
}

const SEED = Number(process.env.REVIEW_SEED) || 20261201;
const STEPS = Number(process.env.REVIEW_STEPS) || 400;
describe('model run: builds, tasks, caps, atomic frames, iterators together', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    for (const capA of [false, true]) {
      for (const processTask of [false, true]) {
        test(`${pk} primary, A capped ${capA}, processExpired task ${processTask}`, async () => {
          for (let k = 0; k < 4; k++) {
            await modelRun({ seed: SEED + k * 7919 + (pk === 'HASH' ? 1 : 0) + (capA ? 2 : 0) + (processTask ? 4 : 0), steps: STEPS, pk, capA, processTask, bytesB: k % 2 === 1 });
          }
        });
      }
    }
  }
});

describe('drop()/truncate() of the task\'s space from another space\'s onEvict, inside the open chunk transaction', () => {
  async function setup(pk: 'TREE' | 'HASH') {
    const A = new Space('A2', { ttl: { field: 3, now: () => clock } });
    A.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
    A.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 200; i++) A.insert([i, `s${i}`, i < 100 ? 50 + i : 1000 + i, 't']);
    return A;
  }
  for (const pk of ['TREE', 'HASH'] as const) {
    for (const action of ['drop', 'truncate'] as const) {
      test(`${pk}: B onEvict ${action}s A during A's chunk (open chunk transaction), build + iterator open`, async () => {
        const A = await setup(pk);
        const errs: unknown[] = [];
        let did = false;
        const B = new Space('B2', { ttl: { field: 3, now: () => clock }, maxTuples: 2, onFull: 'evictExpiring',
          onEvict: () => { if (!did) { did = true; if (action === 'drop') A.drop(); else A.truncate(); } } });
        B.createIndex('pk', { parts: [[1, 'unsigned']] });
        B.createIndex('exp', { unique: false, parts: [[3, 'number']] });
        B.insert([1000, 'x', 900]); B.insert([1001, 'x', 901]);
        const it = A.index.exp.pairs();
        it.next();
        const build = A.createIndexAsync('name', { parts: [[2, 'string']] });
        build.catch(() => {});
        await vi.advanceTimersByTimeAsync(0);
        const delivered: Tuple[] = [];
        const t = expirationd.start('t', A, { itIndex: 'exp', scanSize: 10, onExpired: (ts) => { for (const x of ts) B.insert([x[0] as number, 'm', 2000]); } });
        t.on('expired', (ts) => delivered.push(...ts));
        t.on('error', (e) => errs.push(e));
        await vi.advanceTimersByTimeAsync(3000);
        const res = await build.then(() => 'ok', (e) => (e as CappedError).code);
        let itRes: string;
        try { const n = it.next(); itRes = n.done ? 'done' : 'value'; } catch (e) { itRes = (e as CappedError).code; }
        // The chunk's 10 tuples had been handed to a synchronous onExpired: they stay deleted.
        expect(delivered.length).toBe(10);
        expect(t.stats().expired).toBe(10);
        expect(errs).toEqual([]);
        expect(B.select().length).toBe(2);
        if (action === 'drop') {
          expect(res).toBe('ER_SPACE_DROPPED');
          expect(itRes).toBe('ER_SPACE_DROPPED');
          expect(t.state).toBe('killed');
        } else {
          expect(res).toBe('ER_INDEX_BUILD_ABORTED');
          expect(itRes).toBe('done');
          expect(t.state).toBe('running');
          expect(A.len()).toBe(0);
          A.checkIntegrity();
        }
      });
    }
  }
});

describe('an index build over a growing, evicting HASH primary with rolled-back frames and a failing task', () => {
  test('HASH growth + eviction + rollbacks + task during a unique build', async () => {
    for (let seed = 1; seed <= 6; seed++) {
      const rnd = mulberry32(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const A = new Space(`G${seed}`, { ttl: { field: 3, now: () => clock }, maxTuples: 6000, onFull: 'evictExpiring', onEvict: () => {} });
      A.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
      A.createIndex('exp', { unique: false, parts: [[3, 'number']] });
      let id = 0;
      for (; id < 3000; id++) A.insert([id, `s${id}`, 100 + int(200), 't']);
      setBuildSlice({ tuples: 64, ms: 50 });
      const t = expirationd.start(`g${seed}`, A, { itIndex: 'exp', scanSize: 50, onExpired: (ts) => { if (int(5) === 0) throw new Error('x'); } });
      t.on('error', () => {});
      const p = A.createIndexAsync(int(2) ? 'u' : 'u2', int(2) ? { parts: [[2, 'string']] } : { type: 'HASH', parts: [[2, 'string']] });
      let res: string | undefined;
      p.then(() => { res = 'ok'; }, (e) => { res = String((e as CappedError).code ?? e); });
      for (let k = 0; k < 400 && res === undefined; k++) {
        const n = int(40);
        try {
          atomic(() => {
            for (let j = 0; j < n; j++) { const i = id++; A.insert([i, `s${i}`, clock + int(300), 't']); }
            if (int(4) === 0) throw new Error('rb');
          });
        } catch (e) { if ((e as Error).message !== 'rb') throw e; }
        if (int(3) === 0) clock += int(5);
        await vi.advanceTimersByTimeAsync(int(30));
      }
      for (let k = 0; k < 1000 && res === undefined; k++) await vi.advanceTimersByTimeAsync(5);
      expect(res, `seed ${seed}`).toBe('ok');
      A.checkIntegrity();
      const idx = A.indexes[2];
      clock = -Infinity;
      const got = idx.select().map((x) => x[0] as number).sort((a, b) => a - b);
      const want = A.select().map((x) => x[0] as number).sort((a, b) => a - b);
      clock = 100;
      expect(got).toEqual(want);
      expirationd.killAll();
      A.drop();
    }
  });
});

describe('due-time wake-ups follow every kind of write (README "Timing")', () => {
  for (const how of ['update', 'index.update', 'upsert', 'insert-over-expired', 'insertMany', 'atomic-insert', 'built-index.update'] as const) {
    test(`due-time wake-up brought forward by ${how}`, async () => {
      const A = new Space('D', { ttl: { field: 3, now: () => clock } });
      A.createIndex('pk', { parts: [[1, 'unsigned']] });
      A.createIndex('exp', { unique: false, parts: [[3, 'number']] });
      A.createIndex('name', { parts: [[2, 'string']] });
      for (let i = 0; i < 20; i++) A.insert([i, `s${i}`, 1000 + i]);
      A.insert([99, 's99', 90]);  // expired at 100
      const expired: Tuple[] = [];
      const t = expirationd.start('d', A, { itIndex: 'exp', iterationDelay: 100000, scanTime: 100000, scanSize: 5 });
      t.on('expired', (ts) => expired.push(...ts));
      await vi.advanceTimersByTimeAsync(10);
      expect(expired.length).toBe(1);
      // the task now sleeps until 1000 (900 s); a write makes a tuple due at 150
      if (how === 'update') A.update(3, [['=', 3, 150]]);
      else if (how === 'index.update') A.index.name.update('s3', [['=', 3, 150]]);
      else if (how === 'upsert') A.upsert([3, 's3', 5000], [['=', 3, 150]]);
      else if (how === 'insert-over-expired') { A.insert([50, 's50', 95]); A.insert([50, 's50', 150]); }
      else if (how === 'insertMany') A.insertMany([[51, 's51', 150]]);
      else if (how === 'atomic-insert') atomic(() => { A.insert([52, 's52', 150]); });
      else if (how === 'built-index.update') {
        const p = A.createIndexAsync('name2', { parts: [[2, 'string'], [1, 'unsigned']] });
        let idx: Awaited<typeof p> | undefined;
        void p.then((x) => { idx = x; });
        for (let i = 0; i < 100 && idx === undefined; i++) await vi.advanceTimersByTimeAsync(1);
        if (idx === undefined) throw new Error('build did not finish');
        idx.update(['s3', 3], [['=', 3, 150]]);
      }
      clock = 151;
      await vi.advanceTimersByTimeAsync(51_000 + 10);
      A.checkIntegrity();
      const ids = expired.map((x) => x[0]);
      expect(ids.length, `${how}: ${JSON.stringify(ids)}`).toBe(2);
    });
  }
});


describe('README silences (behaviour as it is, not promised either way)', () => {
  // insertMany on a TTL space: a tuple of the batch that is already expired is replaced by a later
  // tuple of the same batch with the same key (the TTL insert rule applied inside the batch);
  // the call returns the batch's length (3) though the space grew by 2, and nothing is reported
  // to onEvict. On a plain space the same batch throws ER_DUPLICATE_KEY. The README says
  // "returns the count" without saying of what.
  test('insertMany on a TTL space with an expired and a live tuple of one key in the batch', () => {
    const evicted: Tuple[][] = [];
    const A = new Space('I6', { ttl: { field: 3, now: () => clock }, maxTuples: 3, onFull: 'evictExpiring', onEvict: (t) => evicted.push(t) });
    A.createIndex('pk', { parts: [[1, 'unsigned']] });
    A.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    let r: unknown;
    try { r = A.insertMany([[1, 'a', 50], [1, 'b', 500], [2, 'c', 600]]); } catch (e) { r = (e as CappedError).code; }
    clock = -Infinity;
    expect(r).toBe(3);
    expect(A.select()).toEqual([[1, 'b', 500], [2, 'c', 600]]);
    expect(A.len()).toBe(2);
    expect(evicted).toEqual([]);
  });
});

describe('processExpired over a HASH primary that grows during the pass', () => {
  test('processExpired over a growing HASH primary: each tuple once per pass, passes end', async () => {
    const A = new Space('H7', { ttl: { field: 3, now: () => clock } });
    A.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    for (let i = 0; i < 2000; i++) A.insert([i, `s${i}`, 50]);
    let next = 100000;
    let pass = 0;
    const seen = new Map<number, number>();
    const dups: string[] = [];
    const t = expirationd.start('h7', A, {
      scanSize: 64, scanTime: 1, iterationDelay: 0.001,
      processExpired: (ts) => {
        for (const x of ts) {
          const k = `${x[0]}`;
          const key = x[0] as number;
          if (seen.get(key) === pass) dups.push(`${k}@${pass}`);
          seen.set(key, pass);
          if (key % 3 === 0) A.update(key, [['=', 4, 'touched']]);           // left expired
          else if (key % 3 === 1) { A.delete(key); A.insert([next++, 'moved', 60]); } // re-inserted expired, new key
          // else left as is
        }
        for (let j = 0; j < 20; j++) A.insert([next++, 'grow', 5000]);  // growth: the table resizes
      },
      onFullScanComplete: () => { pass++; },
    });
    t.on('error', (e) => dups.push(String(e)));
    for (let i = 0; i < 200 && pass < 3; i++) await vi.advanceTimersByTimeAsync(50);
    expect(pass).toBeGreaterThanOrEqual(3);
    expect(dups).toEqual([]);
  });
});

describe('drop() from inside processExpired, with a build, an iterator and a capped space writing back', () => {
  test('processExpired drops its own space while a build, an iterator and a capped B with write-back run', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});  // B's onEvict writes to the dropped A
    const A = new Space('P8', { ttl: { field: 3, now: () => clock } });
    A.createIndex('pk', { parts: [[1, 'unsigned']] });
    A.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 100; i++) A.insert([i, `s${i}`, i < 30 ? 50 : 500]);
    const B = new Space('P8b', { ttl: { field: 3, now: () => clock }, maxTuples: 5, onFull: 'evictExpiring',
      onEvict: (ts) => { for (const x of ts) A.insert([1000 + (x[0] as number), `back${x[0]}`, 900]); } });
    B.createIndex('pk', { parts: [[1, 'unsigned']] });
    B.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    const it = A.index.exp.pairs();
    it.next();
    const build = A.createIndexAsync('name', { parts: [[2, 'string']] });
    let buildRes: unknown;
    build.then(() => { buildRes = 'ok'; }, (e) => { buildRes = (e as CappedError).code; });
    await vi.advanceTimersByTimeAsync(1);
    const handed: Tuple[] = [];
    const t = expirationd.start('p8', A, { itIndex: 'exp', scanSize: 10, processExpired: (ts) => {
      handed.push(...ts);
      for (const x of ts) B.replace([x[0] as number, 'moved', 700]);
      if (handed.length >= 20) A.drop();
    } });
    const errors: unknown[] = [];
    t.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(2000);
    let itCode: unknown;
    try { it.next(); } catch (e) { itCode = (e as CappedError).code; }
    clock = -Infinity;
    expect(t.state).toBe('killed');
    expect(buildRes).toBe('ER_SPACE_DROPPED');
    expect(itCode).toBe('ER_SPACE_DROPPED');
    expect(handed.length).toBe(20);
    // the writes to B of the call that dropped A commit (README "processExpired")
    expect(B.select().map((x) => x[0])).toEqual([15, 16, 17, 18, 19]);
    expect((B.lastEvictError as CappedError).code).toBe('ER_SPACE_DROPPED');
    expect(errors).toEqual([]);
    B.checkIntegrity();
  });
  // README: "truncate() during the build (ER_INDEX_BUILD_ABORTED)". A truncate() made in the same
  // tick as createIndexAsync() (before its first slice) does not abort it: the build starts on
  // the truncated space and resolves. The index is right; whether that counts as "during" is
  // not said.
  test('truncate() in the same tick as createIndexAsync()', async () => {
    const A = new Space('T8', {});
    A.createIndex('pk', { parts: [[1, 'unsigned']] });
    for (let i = 0; i < 100; i++) A.insert([i, `s${i}`]);
    const p = A.createIndexAsync('name', { parts: [[2, 'string']] });
    A.truncate();
    A.insert([1, 'x']);
    let res: unknown;
    p.then(() => { res = 'ok'; }, (e) => { res = (e as CappedError).code; });
    for (let i = 0; i < 50 && res === undefined; i++) await vi.advanceTimersByTimeAsync(1);
    expect(res).toBe('ok');
    expect(A.index.name.select()).toEqual([[1, 'x']]);
  });
});
