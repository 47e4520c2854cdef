// Review (adversarial): a seeded state-machine fuzzer of running expirationd tasks.
//
// Each episode builds a space ([id, version, ttl]; TREE or HASH primary, a TTL TREE 'exp'; plain
// or TTL-aware with an injected clock), one or two task names, and runs random steps: user writes
// (insert, replace, update of the TTL or of the version, upsert, delete, insertMany, truncate),
// clock ticks, fake-timer advances, lifecycle calls from outside and from inside callbacks
// (stop, start, wake, kill, restart, kill+start, expirationd.start/kill of the same name, drop),
// async deliveries resolved or rejected in any order, with tasks of every kind: plain delete,
// sync onExpired (throwing on poison tuples, writing to the space), async onExpired (`async`, or a
// plain function returning a promise; writing to the space), processExpired (archive, leave in
// place, re-queue, re-insert under another key, return a promise), isExpired (TTL, a subset,
// throwing, non-boolean, a promise, writing to the space), now() throwing or NaN, throwing pass
// callbacks and 'expired' listeners, bursts of inserts that grow a HASH under the cursor; early
// break or full scan, per task; scanSize 1..50.
//
// A plain model (id -> tuple) follows every write; after each step it is compared with what is
// stored (read past a TTL space's filter). Checked along the way:
// - every tuple a task deletes ('expired' event) is the stored version and expired at the clock;
// - every tuple handed to a callback is the stored version and expired (onExpired: "handed tuples
//   that are still stored"; processExpired: "still stored unchanged");
// - sync onExpired / processExpired: what a call that returned was handed is deleted (reported)
//   exactly once, and nothing else is;
// - async onExpired: a tuple is deleted only after a delivery of it resolved, in the task's
//   current life (not after kill/restart/drop);
// - a plain task deletes nothing after it was killed from isExpired; no callback is called for a
//   task killed (or restarted) since its chunk began;
// - stats().expired equals the tuples reported through 'expired'; a stopped or killed task runs
//   no chunk; the only errors are the injected ones (or ER_TUPLE_SKIPPED of them);
// - an async task never has two deliveries of one life pending; wake() of an idle running task
//   runs a chunk on the next turn; no timer is pending when no task runs;
// - no unhandled rejection, no throw out of a timer;
// - after the chaos (calm callbacks, every slot running, processExpired archiving) every running
//   task completes a pass and no expired tuple remains (unless a subset isExpired runs); after
//   killing everything a plain task leaves none.
//
// REVIEW_SEED=n runs that seed only; REVIEW_STEPS=n sets the steps per episode; REVIEW_EPISODES=n
// how many episodes the default test runs, from seed REVIEW_FROM (step 7). REVIEW_VERBOSE=1 prints
// a tally of what ran; REVIEW_DEBUG=1 traces one seed; REVIEW_GO_ON=1 keeps going after a problem.
// No bug was found (see the report); the 'bugs' block is therefore absent.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { cpuClock } from '../src/expirationd/scheduler.js';
import { useKeepupTimers } from './support/keepup.js';
import { mulberry32 } from '../bench/lib/random.js';
import { watchUnhandledRejections } from './support/rejections.js';

useKeepupTimers();

watchUnhandledRejections();

type Kind = 'plain' | 'sync' | 'async' | 'asyncPlain' | 'process';
type Pred = 'none' | 'ttl' | 'subset' | 'throwing';
type Proc = 'archive' | 'leave' | 'requeue' | 'rekey';
type T3 = [number, string, number];

interface Rec {
  uid: number;
  name: string;
  task: Task;
  kind: Kind;
  pred: Pred;
  proc: Proc;
  /** Test-side life counter: bumped whenever the task is killed or restarted. */
  epoch: number;
  /** The epoch when the task last read its clock (a chunk's start); undefined when the clock is the space's. */
  nowEpoch: number | undefined;
  ownNow: boolean;
  /** Tuples reported through 'expired'. */
  events: number;
  /** sync / process: keys handed to a call that returned, not yet reported. */
  awaiting: Map<string, number>;
  /** async: `${epoch}|${key}` of the deliveries resolved since the last hand-off. */
  resolved: Set<string>;
  handedOnce: boolean;
  lifeOps: number;
  frozen: { lifeOps: number; chunks: number; state: string } | undefined;
  /** No 'expired' listener (a plain task of a one-slot episode): its deletions are found by comparing. */
  silent?: boolean;
}

interface Pending {
  rec: Rec;
  epoch: number;
  keys: string[];
  ids: number[];
  resolve: () => void;
  reject: (e: unknown) => void;
}

const DEBUG = process.env.REVIEW_DEBUG !== undefined;
const keyOf = (t: readonly unknown[]) => `${String(t[0])}|${String(t[1])}|${String(t[2])}`;
const isOurs = (e: any): boolean => (e instanceof Error && /^fz-/.test(e.message)) ||
  // injected contract breaches: a NaN now(), a promise from isExpired or processExpired, a non-boolean verdict
  (e?.code === 'ER_ILLEGAL_PARAMS' && /now\(\) must|isExpired must|processExpired must/.test(String(e?.message)));

export interface EpisodeResult { tally: Record<string, number>; problems: string[]; config: string; deleted: number; steps: number }

export async function episode(seed: number, steps: number): Promise<EpisodeResult> {
  const r = mulberry32(seed);
  // A deterministic chunk cost (0.1 ms a chunk) for backlog mode and bursts, the same whatever ran before.
  let cpu = 0;
  cpuClock.now = () => (cpu += 0.05);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <X>(xs: readonly X[]): X => xs[int(xs.length)];
  const problems: string[] = [];
  const problem = (s: string) => { if (problems.length < 50) problems.push(s); };
  const tally: Record<string, number> = {};
  const count = (k: string) => { tally[k] = (tally[k] ?? 0) + 1; };

  const cfg = {
    hash: r() < 0.4,
    ttlSpace: r() < 0.35,
    early: r() < 0.5,
    slots: r() < 0.7 ? ['a'] : ['a', 'b'],
    allowDrop: r() < 0.15,
    poison: r() < 0.5,
    silent: false,
  };
  cfg.silent = cfg.slots.length === 1 && r() < 0.3;
  let clock = 1000;
  let peek = false;
  let chaos = true;
  let inCheck = false;
  const space = new Space(`fz${seed}`, cfg.ttlSpace ? { ttl: { field: 3, now: () => (peek ? -Infinity : clock) } } : undefined);
  space.createIndex('primary', { type: cfg.hash ? 'HASH' : 'TREE', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  const archive = new Space(`fza${seed}`);
  archive.createIndex('primary', { parts: [[1, 'unsigned'], [2, 'string']] });

  const model = new Map<number, T3>();
  const archived = new Map<string, T3>();
  let ver = 0;
  const recs: Rec[] = [];
  const pending: Pending[] = [];
  let uid = 0;
  let totalDeleted = 0;

  type Undo = Array<() => void>;
  const mset = (t: T3, undo?: Undo) => {
    const prev = model.get(t[0]);
    undo?.push(() => { if (prev) model.set(t[0], prev); else model.delete(t[0]); });
    model.set(t[0], t);
  };
  const mdel = (id: number, undo?: Undo) => {
    const prev = model.get(id);
    undo?.push(() => { if (prev) model.set(id, prev); });
    model.delete(id);
  };
  const undoAll = (undo: Undo) => { for (let i = undo.length - 1; i >= 0; i--) undo[i](); undo.length = 0; };
  const ttlAround = () => clock + int(40) - 20 + (r() < 0.15 ? 0.5 : 0);
  const blocked = (id: number) => {
    const m = model.get(id);
    return m !== undefined && !(cfg.ttlSpace && m[2] <= clock);
  };

  /** One random write; `undo` when inside a transaction (sync callback), `prefer`: ids to aim at. */
  const randomWrite = (where: string, undo?: Undo, prefer?: number[], allowTruncate = false) => {
    const op = r();
    const id = prefer && prefer.length > 0 && r() < 0.6 ? pick(prefer) : int(60);
    dbg(() => ['write', where, op.toFixed(2), id]);
    const code = (e: any) => String(e?.code ?? e?.message ?? e);
    try {
      if (op < 0.2) {
        const t: T3 = [id, `v${ver++}`, ttlAround()];
        const b = blocked(id);
        try {
          space.insert(t);
          if (b) problem(`${where}: insert over a live ${keyOf(model.get(id)!)} succeeded`);
          else mset(t, undo);
        } catch (e) {
          if (!b || code(e) !== 'ER_DUPLICATE_KEY') problem(`${where}: insert ${keyOf(t)} threw ${code(e)}`);
        }
      } else if (op < 0.35) {
        const t: T3 = [id, `v${ver++}`, ttlAround()];
        space.replace(t);
        mset(t, undo);
      } else if (op < 0.6) {
        const m = model.get(id);
        const ttl = ttlAround();
        const got = space.update(id, [['=', 3, ttl]]);
        if (m === undefined) { if (got !== undefined) problem(`${where}: update of absent ${id} returned ${JSON.stringify(got)}`); }
        else {
          const t: T3 = [id, m[1], ttl];
          if (got === undefined || keyOf(got) !== keyOf(t)) problem(`${where}: update ${id} returned ${JSON.stringify(got)}`);
          mset(t, undo);
        }
      } else if (op < 0.67) {
        const m = model.get(id);
        const v = `v${ver++}`;
        const got = space.update(id, [['=', 2, v]]);
        if (m === undefined) { if (got !== undefined) problem(`${where}: update of absent ${id} returned a tuple`); }
        else mset([id, v, m[2]], undo);
      } else if (op < 0.74) {
        const m = model.get(id);
        const t: T3 = [id, `v${ver++}`, ttlAround()];
        const ttl2 = ttlAround();
        space.upsert(t, [['=', 3, ttl2]]);
        mset(m === undefined ? t : [id, m[1], ttl2], undo);
      } else if (op < 0.9) {
        const m = model.get(id);
        const got = space.delete(id);
        if ((got === undefined ? undefined : keyOf(got)) !== (m === undefined ? undefined : keyOf(m))) {
          problem(`${where}: delete ${id} returned ${JSON.stringify(got)}, model ${m && keyOf(m)}`);
        }
        mdel(id, undo);
      } else if (op < 0.97 || !allowTruncate) {
        const a = int(60);
        const b = (a + 1 + int(59)) % 60;
        const ts: T3[] = [[a, `v${ver++}`, ttlAround()], [b, `v${ver++}`, ttlAround()]];
        const willBlock = blocked(a) || blocked(b);
        try {
          const n = space.insertMany(ts);
          if (willBlock) problem(`${where}: insertMany over a live tuple succeeded`);
          if (n !== 2) problem(`${where}: insertMany returned ${n}`);
          for (const t of ts) mset(t, undo);
        } catch (e) {
          if (!willBlock || code(e) !== 'ER_DUPLICATE_KEY') problem(`${where}: insertMany threw ${code(e)}`);
        }
      } else {
        const snapshot = new Map(model);
        undo?.push(() => { model.clear(); for (const [k, v] of snapshot) model.set(k, v); });
        space.truncate();
        model.clear();
      }
    } catch (e) {
      if (space.dropped) return;
      problem(`${where}: write threw ${code(e)}`);
    }
  };

  // Lifecycle calls, with the test-side epochs kept in step.
  const dbg = (f: () => unknown[]) => {
    if (!DEBUG) return;
    inCheck = true;
    try { console.log(`[${clock}]`, ...f()); } finally { inCheck = false; }
  };
  const life = (rec: Rec | undefined, op: string, fn: () => void) => {
    dbg(() => ['life', op, rec && `${rec.name}#${rec.uid}`, rec?.task.stats()]);
    const before = recs.map((x) => x.task.state);
    count(`life ${op}`);
    if (rec) rec.lifeOps++;
    try {
      fn();
    } catch (e: any) {
      if (!(space.dropped && e?.code === 'ER_SPACE_DROPPED')) problem(`${op} threw ${e?.code ?? e}`);
    }
    recs.forEach((x, i) => {
      if (i < before.length && before[i] !== 'killed' && x.task.state === 'killed') { x.epoch++; x.lifeOps++; }
    });
    if (rec && (op === 'restart' || op === 'kill+start' || (op === 'start' && before[recs.indexOf(rec)] === 'killed'))) rec.epoch++;
  };
  const latest = (name: string) => [...recs].reverse().find((x) => x.name === name) as Rec;
  const lifecycle = (rec: Rec, x: number, where: string) => {
    if (x < 0.2) life(rec, 'stop', () => rec.task.stop());
    else if (x < 0.3) life(rec, 'stop+start', () => { rec.task.stop(); rec.task.start(); });
    else if (x < 0.45) life(rec, 'start', () => rec.task.start());
    else if (x < 0.6) life(rec, 'wake', () => rec.task.wake());
    else if (x < 0.7) life(rec, 'restart', () => rec.task.restart());
    else if (x < 0.78) life(rec, 'kill', () => rec.task.kill());
    else if (x < 0.84) life(rec, 'kill+start', () => { rec.task.kill(); rec.task.start(); });
    else if (x < 0.92) life(undefined, 'start same name', () => { mkRec(rec.name); });
    else if (x < 0.96) life(undefined, 'expirationd.kill', () => { if (expirationd.tasks().includes(rec.name)) expirationd.kill(rec.name); });
    else if (cfg.allowDrop) life(undefined, `drop (${where})`, () => space.drop());
  };
  const maybeChaos = (rec: Rec, p: number, where: string) => {
    if (!chaos || space.dropped || r() >= p) return;
    lifecycle(rec, r(), where);
  };

  const entryCheck = (rec: Rec, where: string) => {
    if (rec.task.state === 'killed') problem(`${where} of ${rec.name}#${rec.uid} called while killed`);
    if (rec.nowEpoch !== undefined && rec.nowEpoch !== rec.epoch) {
      problem(`${where} of ${rec.name}#${rec.uid} called after a kill/restart since its chunk began`);
    }
  };
  const predHolds = (rec: Rec, t: readonly unknown[]) => {
    if ((t[2] as number) > clock) return false;
    if (rec.pred === 'subset') return (t[0] as number) % 5 !== 0;
    return true;
  };
  const checkHanded = (rec: Rec, tuples: readonly Tuple[], where: string) => {
    const seen = new Set<number>();
    for (const t of tuples) {
      const m = model.get(t[0] as number);
      if (seen.has(t[0] as number)) problem(`${where}: ${keyOf(t)} handed twice in one call`);
      seen.add(t[0] as number);
      if (m === undefined || keyOf(m) !== keyOf(t)) problem(`${where} of ${rec.name}#${rec.uid} handed ${keyOf(t)}, stored is ${m && keyOf(m)} (clock ${clock})`);
      if (!predHolds(rec, t)) problem(`${where} of ${rec.name}#${rec.uid} handed live ${keyOf(t)} at ${clock}`);
    }
  };

  function mkRec(name: string): Rec {
    const kind = cfg.silent && r() < 0.5 ? 'plain' : pick(['plain', 'sync', 'sync', 'async', 'async', 'asyncPlain', 'process', 'process'] as const);
    const pred = pick(['none', 'none', 'ttl', 'subset', 'throwing'] as const);
    const proc = pick(['archive', 'archive', 'leave', 'requeue', 'rekey'] as const);
    const ownNow = !cfg.ttlSpace || r() < 0.5;
    const early = r() < 0.5 ? cfg.early : r() < 0.5;
    const silent = cfg.silent && kind === 'plain';
    const rec: Rec = {
      uid: uid++, name, task: undefined as unknown as Task, kind, pred, proc, epoch: 0, nowEpoch: undefined, ownNow,
      events: 0, awaiting: new Map(), resolved: new Set(), handedOnce: false, lifeOps: 0, frozen: undefined,
    };
    const scanSize = r() < 0.5 ? 1 + int(4) : 1 + int(50);
    dbg(() => ['mkRec', name, kind, pred, proc, early, scanSize]);
    const options: TaskOptions = {
      scanSize,
      iterationDelay: pick([0.001, 0.01, 0.05, 1]),
      fullScanDelay: pick([0, 0, 0.01, 0.5]),
      ...(early ? { itIndex: 'exp' } : {}),
      ...(cfg.ttlSpace && pred === 'none' && r() < 0.5 ? {} : { field: 3 }),
      ...(ownNow ? {
        now: () => {
          const e = rec.epoch;
          if (!inCheck) maybeChaos(rec, 0.005, 'now');
          rec.nowEpoch = e;
          if (chaos && !inCheck && r() < 0.01) { count('now throws'); throw new Error('fz-now'); }
          if (chaos && !inCheck && r() < 0.005) { count('now NaN'); return NaN; }
          return clock;
        },
      } : {}),
      onFullScanStart: () => {
        maybeChaos(rec, 0.02, 'onFullScanStart');
        if (chaos && r() < 0.05) throw new Error('fz-pass');
      },
      onFullScanComplete: () => maybeChaos(rec, 0.02, 'onFullScanComplete'),
    };
    if (pred !== 'none') {
      options.isExpired = (t, now) => {
        entryCheck(rec, 'isExpired');
        if (now !== clock) problem(`isExpired got now ${now}, clock ${clock}`);
        maybeChaos(rec, 0.01, 'isExpired');
        if (pred === 'throwing' && chaos && (t[0] as number) % 7 === 3 && r() < 0.5) throw new Error('fz-isExpired');
        if (pred === 'throwing' && chaos && r() < 0.01) { count('isExpired yes'); return 'yes' as unknown as boolean; }
        if (pred === 'throwing' && chaos && r() < 0.005) { count('isExpired promise'); return Promise.resolve(true) as unknown as boolean; }
        // Writes from inside isExpired (outside any transaction: decide runs before the chunk deletes).
        if (chaos && !silent && r() < 0.01) { count('isExpired writes'); randomWrite('isExpired', undefined, [t[0] as number]); }
        if (pred === 'subset') return (t[2] as number) <= now && (t[0] as number) % 5 !== 0;
        return (t[2] as number) <= now;
      };
    }
    const poisonous = (tuples: readonly Tuple[]) => chaos && cfg.poison && tuples.some((t) => (t[0] as number) % 7 === 3);
    const award = (tuples: readonly Tuple[]) => {
      for (const t of tuples) rec.awaiting.set(keyOf(t), (rec.awaiting.get(keyOf(t)) ?? 0) + 1);
    };
    if (kind === 'sync') {
      options.onExpired = (tuples) => {
        entryCheck(rec, 'sync onExpired');
        count('sync handoff');
        checkHanded(rec, tuples, 'sync onExpired');
        const undo: Undo = [];
        for (const t of tuples) mdel(t[0] as number, undo);  // already deleted, in the chunk's transaction
        if (r() < 0.2 && tuples.length > 0) {
          const got = space.get(tuples[0][0] as number);
          if (got !== undefined) problem(`sync onExpired: get(${String(tuples[0][0])}) found ${keyOf(got)}, deleted in this chunk`);
          if (r() < 0.3) expirationd.stats();
        }
        if (chaos && r() < 0.15) randomWrite('sync onExpired', undo, tuples.map((t) => t[0] as number), true);
        if (poisonous(tuples) || (chaos && r() < 0.08)) {
          undoAll(undo);
          count('sync throw');
          throw new Error('fz-sync');
        }
        maybeChaos(rec, 0.05, 'sync onExpired');
        award(tuples);
        return undefined;
      };
    } else if (kind === 'async' || kind === 'asyncPlain') {
      const body = (tuples: Tuple[]): Promise<void> => {
        entryCheck(rec, 'async onExpired');
        count(`${kind} handoff`);
        dbg(() => ['handoff', tuples.map(keyOf), rec.task.stats()]);
        checkHanded(rec, tuples, 'async onExpired');
        if (pending.some((p) => p.rec === rec && p.epoch === rec.epoch)) {
          problem(`async ${rec.name}#${rec.uid}: a second delivery while one of the same life is pending`);
        }
        rec.resolved.clear();
        const keys = tuples.map(keyOf);
        const ids = tuples.map((t) => t[0] as number);
        const epoch = rec.epoch;
        const first = !rec.handedOnce;
        rec.handedOnce = true;
        // A plain function's first call runs inside the chunk's transaction and is undone: no writes there.
        if (chaos && (kind === 'async' || !first) && r() < 0.25) randomWrite('async onExpired', undefined, ids, true);
        if (chaos && kind === 'asyncPlain' && !first && r() < 0.05) { count('asyncPlain throws'); throw new Error('fz-throw'); }
        if (chaos && r() < 0.3) tuples.splice(0);  // a consumer takes the batch
        maybeChaos(rec, 0.05, 'async onExpired');
        if (!chaos) {
          for (const k of keys) rec.resolved.add(`${epoch}|${k}`);
          return Promise.resolve();
        }
        return new Promise<void>((resolve, reject) => pending.push({ rec, epoch, keys, ids, resolve, reject }));
      };
      options.onExpired = kind === 'async' ? async (tuples) => body(tuples) : body;
    } else if (kind === 'process') {
      options.processExpired = (tuples, task) => {
        entryCheck(rec, 'processExpired');
        count(`process ${proc} handoff`);
        if (task !== rec.task) problem('processExpired got another task');
        checkHanded(rec, tuples, 'processExpired');
        if (r() < 0.2 && tuples.length > 0) {
          const got = space.get(tuples[0][0] as number);
          if (cfg.ttlSpace && got !== undefined && rec.ownNow) problem(`processExpired: TTL space get(${String(tuples[0][0])}) found handed ${keyOf(got)}`);
          if (!cfg.ttlSpace && (got === undefined || keyOf(got) !== keyOf(tuples[0]))) problem(`processExpired: get(${String(tuples[0][0])}) found ${got && keyOf(got)}`);
          if (r() < 0.3) expirationd.stats();
        }
        const undo: Undo = [];
        for (const t of tuples) {
          const id = t[0] as number;
          // Calm: every processExpired archives (so that the run can end with nothing expired).
          const mode = chaos ? proc : 'archive';
          if (mode === 'archive' || (mode === 'leave' && id % 2 === 1)) {
            if (mode === 'archive') {
              const a: T3 = [id, t[1] as string, t[2] as number];
              try {
                archive.insert(a);
                const k = `${id}|${a[1]}`;
                archived.set(k, a);
                undo.push(() => archived.delete(k));
              } catch (e: any) {
                problem(`processExpired: archive.insert ${keyOf(a)} threw ${e?.code}: handed twice`);
              }
            }
            space.delete(id);
            mdel(id, undo);
          } else if (mode === 'rekey') {
            // Re-inserted under another key, still expired: held until the next pass.
            const nid = 60 + ((id * 7 + 3) % 40);
            const nt: T3 = [nid, t[1] as string, t[2] as number];
            space.delete(id);
            mdel(id, undo);
            space.replace(nt);
            mset(nt, undo);
          } else if (mode === 'requeue') {
            const ttl = r() < 0.6 ? clock + 1 + int(20) : clock - int(3);
            space.update(id, [['=', 3, ttl]]);
            mset([id, t[1] as string, ttl], undo);
          }
        }
        if (chaos && r() < 0.1) randomWrite('processExpired', undo, tuples.map((t) => t[0] as number), true);
        if (poisonous(tuples) || (chaos && r() < 0.05)) {
          undoAll(undo);
          throw new Error('fz-process');
        }
        if (chaos && r() < 0.01) {
          // A promise: this call is rolled back and the chunk fails as a whole.
          undoAll(undo);
          count('process promise');
          return Promise.resolve() as unknown as void;
        }
        maybeChaos(rec, 0.05, 'processExpired');
        award(tuples);
      };
    }
    const task = expirationd.start(name, space, options);
    rec.task = task;
    recs.push(rec);
    if (r() < 0.85) {
      task.on('error', (e: any) => {
        if (isOurs(e) || (e?.code === 'ER_TUPLE_SKIPPED' && isOurs(e.cause))) return;
        problem(`${rec.name}#${rec.uid} error: ${e?.code} ${e?.message}`);
      });
    }
    rec.silent = silent;
    if (!silent) task.on('expired', (tuples) => {
      rec.events += tuples.length;
      count(`${kind} expired event`);
      dbg(() => ['expired', tuples.map(keyOf), rec.task.stats()]);
      for (const t of tuples) {
        const k = keyOf(t);
        if (kind === 'sync' || kind === 'process') {
          const n = rec.awaiting.get(k) ?? 0;
          if (n === 0) problem(`${kind} ${rec.name}#${rec.uid}: ${k} reported expired but not handed to a call that returned`);
          else if (n === 1) rec.awaiting.delete(k);
          else rec.awaiting.set(k, n - 1);
          if (kind === 'sync') totalDeleted++;
          continue;
        }
        totalDeleted++;
        const m = model.get(t[0] as number);
        if (m === undefined || keyOf(m) !== k) problem(`${kind} ${rec.name}#${rec.uid} deleted ${k}, but stored was ${m && keyOf(m)}`);
        if (!predHolds(rec, t)) problem(`${kind} ${rec.name}#${rec.uid} deleted live ${k} at ${clock}`);
        if (kind === 'plain' && rec.nowEpoch !== undefined && rec.nowEpoch !== rec.epoch) {
          problem(`plain ${rec.name}#${rec.uid} deleted ${k} after a kill/restart during its chunk`);
        }
        if ((kind === 'async' || kind === 'asyncPlain') && !rec.resolved.has(`${rec.epoch}|${k}`)) {
          problem(`async ${rec.name}#${rec.uid} deleted ${k} without a resolved delivery of it in its current life`);
        }
        model.delete(t[0] as number);
      }
      maybeChaos(rec, 0.02, "'expired' listener");
    });
    // A second listener that throws now and then (after the checking one: a throw ends emit()).
    if (r() < 0.2) task.on('expired', () => { if (chaos && r() < 0.1) throw new Error('fz-listener'); });
    return rec;
  }

  const stored = (s: Space) => {
    peek = true;
    try {
      return s.select() as Tuple[];
    } finally {
      peek = false;
    }
  };
  const check = (when: string) => {
    if (space.dropped) return;
    inCheck = true;
    try {
      checkInner(when);
    } finally {
      inCheck = false;
    }
  };
  const checkInner = (when: string) => {
    if (recs.every((q) => q.task.state !== 'running') && vi.getTimerCount() !== 0) {
      problem(`${when}: no task is running, yet ${vi.getTimerCount()} timer(s) are pending`);
    }
    const seen = new Set<number>();
    for (const t of stored(space)) {
      const m = model.get(t[0] as number);
      if (m === undefined || keyOf(m) !== keyOf(t)) problem(`${when}: stored ${keyOf(t)}, model has ${m && keyOf(m)}`);
      seen.add(t[0] as number);
    }
    const silent = recs.filter((q) => q.silent);
    let silentGone = 0;
    for (const [id, m] of model) {
      if (seen.has(id)) continue;
      if (silent.length > 0 && m[2] <= clock) {
        silentGone++;
        totalDeleted++;
        model.delete(id);
        continue;
      }
      problem(`${when}: ${keyOf(m)} (ttl ${m[2]} ${m[2] > clock ? 'live' : 'expired'} at ${clock}) is gone from the space`);
    }
    if (silent.length > 0) {
      const sum = silent.reduce((a, q) => a + q.task.stats().expired - q.events, 0);
      if (sum !== silentGone) problem(`${when}: silent tasks count ${sum} deletions, ${silentGone} tuples went`);
      for (const q of silent) q.events = q.task.stats().expired;
    }
    space.checkIntegrity();
    const arch = archive.select() as Tuple[];
    if (arch.length !== archived.size) problem(`${when}: archive holds ${arch.length}, model ${archived.size}`);
    for (const t of arch) if (!archived.has(`${String(t[0])}|${String(t[1])}`)) problem(`${when}: archive holds ${keyOf(t)} not in model`);
    for (const rec of recs) {
      const st = rec.task.stats();
      if (st.expired !== rec.events) problem(`${when}: ${rec.name}#${rec.uid} stats().expired ${st.expired}, reported ${rec.events}`);
      if (rec.awaiting.size > 0) problem(`${when}: ${rec.name}#${rec.uid} (${rec.kind}) handed ${[...rec.awaiting.keys()].slice(0, 3).join(',')} to a call that returned, never reported`);
      const state = rec.task.state;
      if (state === 'running') rec.frozen = undefined;
      else if (rec.frozen && rec.frozen.lifeOps === rec.lifeOps && rec.frozen.state === state) {
        if (st.chunks !== rec.frozen.chunks) problem(`${when}: ${state} ${rec.name}#${rec.uid} ran ${st.chunks - rec.frozen.chunks} chunk(s)`);
      } else rec.frozen = { lifeOps: rec.lifeOps, chunks: st.chunks, state };
    }
  };

  const settleOne = (i: number, ok: boolean) => {
    const [p] = pending.splice(i, 1);
    count(ok ? 'resolve' : 'reject');
    dbg(() => [ok ? 'resolve' : 'reject', p.keys, p.rec.task.stats()]);
    if (ok) {
      for (const k of p.keys) p.rec.resolved.add(`${p.epoch}|${k}`);
      p.resolve();
    } else p.reject(new Error('fz-reject'));
  };

  for (let i = 0; i < 40; i++) {
    const t: T3 = [i, `v${ver++}`, ttlAround()];
    space.replace(t);
    mset(t);
  }
  for (const name of cfg.slots) mkRec(name);
  let step = 0;
  for (; step < steps && !space.dropped; step++) {
    const x = r();
    if (x < 0.3) {
      const prefer = pending.flatMap((p) => p.ids);
      for (let n = 1 + int(3); n > 0; n--) randomWrite('user', undefined, prefer, true);
    } else if (x < 0.42) {
      const live = recs.filter((q) => q.task.state !== 'killed');
      const rec = live.length > 0 && r() < 0.85 ? pick(live) : pick(recs);
      const y = r();
      const waiting = pending.some((p) => p.rec === rec && p.epoch === rec.epoch);
      const chunks = rec.task.stats().chunks;
      const idle = rec.task.state === 'running' && !waiting;
      lifecycle(rec, y, 'outside');
      if (idle && y >= 0.45 && y < 0.6) {
        // wake(): "runs a pass on the next turn of the event loop (inside a pass: its next chunk)".
        const ops = rec.lifeOps;
        // (An immediate made while fake timers run is due 1 fake ms later.)
        await vi.advanceTimersByTimeAsync(1);
        if (rec.lifeOps === ops && rec.task.state === 'running' && rec.task.stats().chunks === chunks) {
          dbg(() => ['wake failed', rec.task.stats(), vi.getTimerCount()]);
          problem(`wake() of idle ${rec.name}#${rec.uid} ran no chunk on the next turn`);
        }
      }
    } else if (x < 0.6) {
      if (pending.length > 0) settleOne(int(pending.length), r() < 0.75);
    } else if (x < 0.61) {
      life(undefined, 'start same name', () => { mkRec(pick(cfg.slots)); });
    } else if (x < 0.63) {
      // A burst of inserts far from the usual keys (grows a HASH under the cursor), or a purge of them.
      if (r() < 0.6) {
        const ts: T3[] = [];
        for (let i = 0, n = 20 + int(200); i < n; i++) {
          const id = 100 + int(3000);
          if (!model.has(id) && !ts.some((t) => t[0] === id)) ts.push([id, `v${ver++}`, ttlAround()]);
        }
        space.insertMany(ts);
        for (const t of ts) mset(t);
        count('burst');
      } else {
        for (const id of [...model.keys()].filter((k) => k >= 100 && r() < 0.8)) {
          if (space.delete(id) === undefined) problem(`purge: ${id} was not stored`);
          model.delete(id);
        }
        count('purge');
      }
    }
    if (r() < 0.35) clock += 1 + int(4);
    await vi.advanceTimersByTimeAsync(pick([0, 0, 1, 3, 10, 50, 200, 1000]));
    for (let i = 0; i < 30; i++) await Promise.resolve();  // let settled deliveries run to their chunk's end
    check(`step ${step}`);
    dbg(() => ['step', step, recs.map((q) => `${q.name}#${q.uid} ${q.task.state} checked ${q.task.stats().checked} expired ${q.task.stats().expired} pending ${pending.length}`)]);
    if (problems.length > 0 && !process.env.REVIEW_GO_ON) break;
  }
  const config = JSON.stringify({ seed, ...cfg, recs: recs.map((q) => `${q.name}#${q.uid}:${q.kind}/${q.pred}/${q.proc}${q.ownNow ? '' : '/spaceClock'}`) });

  if (space.dropped) {
    for (const rec of recs) {
      if (rec.task.state !== 'killed') problem(`after drop: ${rec.name}#${rec.uid} is ${rec.task.state}`);
      try {
        rec.task.start();
        problem(`after drop: start() of ${rec.name}#${rec.uid} did not throw`);
      } catch (e: any) {
        if (e?.code !== 'ER_SPACE_DROPPED') problem(`after drop: start() threw ${e?.code}`);
      }
    }
    const events = recs.map((q) => q.events);
    while (pending.length > 0) settleOne(0, r() < 0.5);
    await vi.advanceTimersByTimeAsync(5000);
    recs.forEach((q, i) => { if (q.events !== events[i] && q.kind !== 'process' && q.kind !== 'sync') problem(`after drop: ${q.name}#${q.uid} deleted`); });
    archive.drop();
    return { tally, problems, config, deleted: totalDeleted, steps: step };
  }

  // Calm: callbacks behave; every slot has a running task; deliveries resolve.
  chaos = false;
  const scansAtCalm = new Map<Rec, number>();
  for (let round = 0; round < 400 && problems.length === 0 && !space.dropped; round++) {
    if (round === 0 || round === 200) {
      for (const name of cfg.slots) {
        const rec = latest(name);
        if (rec.task.state !== 'running') life(rec, 'start', () => rec.task.start());
        if (round === 200) scansAtCalm.set(rec, rec.task.stats().fullScans);
      }
    }
    while (pending.length > 0) settleOne(0, true);
    await vi.advanceTimersByTimeAsync(500);
    if (round % 50 === 0) check(`calm ${round}`);
  }
  check('calm end');
  const deleters = cfg.slots.map(latest).filter((q) => q.task.state === 'running' && q.pred !== 'subset');
  for (const q of cfg.slots.map(latest)) {
    const scans = q.task.stats().fullScans;
    if (q.task.state === 'running' && scansAtCalm.has(q) && scans <= (scansAtCalm.get(q) as number)) {
      problem(`calm: ${q.name}#${q.uid} (${q.kind}/${q.pred}/${q.proc}) completed no pass in 200 s (fullScans ${scans})`);
    }
  }
  if (problems.length === 0 && deleters.length > 0) {
    for (const t of stored(space)) {
      if ((t[2] as number) <= clock) problem(`calm: expired ${keyOf(t)} still stored at ${clock} with ${deleters.map((q) => `${q.name}#${q.uid}`).join(',')} running`);
    }
  }

  // Final: kill everything, a plain task leaves nothing expired.
  for (const rec of recs) life(rec, 'kill', () => rec.task.kill());
  while (pending.length > 0) settleOne(0, true);
  await vi.advanceTimersByTimeAsync(0);
  check('after kill');
  const fin: Rec = {
    uid: uid++, name: 'final', task: undefined as unknown as Task, kind: 'plain', pred: 'none', proc: 'archive', epoch: 0,
    nowEpoch: undefined, ownNow: true, events: 0, awaiting: new Map(), resolved: new Set(), handedOnce: false, lifeOps: 0, frozen: undefined,
  };
  fin.task = expirationd.start('final', space, {
    field: 3, scanSize: 1 + int(50), iterationDelay: 0.01, ...(cfg.early ? { itIndex: 'exp' } : {}),
    now: () => { fin.nowEpoch = fin.epoch; return clock; },
  });
  fin.task.on('error', (e: any) => problem(`final task error ${e?.code} ${e?.message}`));
  fin.task.on('expired', (tuples) => {
    fin.events += tuples.length;
    for (const t of tuples) {
      const m = model.get(t[0] as number);
      if (m === undefined || keyOf(m) !== keyOf(t)) problem(`final deleted ${keyOf(t)}, stored ${m && keyOf(m)}`);
      if ((t[2] as number) > clock) problem(`final deleted live ${keyOf(t)}`);
      model.delete(t[0] as number);
    }
  });
  recs.push(fin);
  await vi.advanceTimersByTimeAsync(60_000);
  check('final');
  for (const t of stored(space)) if ((t[2] as number) <= clock) problem(`final: expired ${keyOf(t)} still stored at ${clock}`);
  fin.task.kill();
  space.drop();
  archive.drop();
  return { tally, problems, config, deleted: totalDeleted, steps: step };
}

describe('seeded random interleavings against a model', () => {
  const only = process.env.REVIEW_SEED === undefined ? undefined : Number(process.env.REVIEW_SEED);
  const steps = Number(process.env.REVIEW_STEPS ?? 150);
  const episodes = Number(process.env.REVIEW_EPISODES ?? 40);
  test(`${only === undefined ? episodes : 1} episode(s) of ${steps} steps`, async () => {
    const from = Number(process.env.REVIEW_FROM ?? 1);
    const seeds = only === undefined ? Array.from({ length: episodes }, (_, i) => from + i * 7) : [only];
    let deleted = 0;
    const tally: Record<string, number> = {};
    for (const seed of seeds) {
      const res = await episode(seed, steps);
      deleted += res.deleted;
      for (const [k, v] of Object.entries(res.tally)) tally[k] = (tally[k] ?? 0) + v;
      if (process.env.REVIEW_VERBOSE && res.problems.length > 0) console.log(seed, res.steps, res.deleted, res.problems.length, res.problems[0] ?? '');
      expect(res.problems.slice(0, 8), res.config).toEqual([]);
      expirationd.killAll();
    }
    if (process.env.REVIEW_VERBOSE) console.log(JSON.stringify(tally, null, 1));
    expect(deleted).toBeGreaterThan(0);
  }, 3_600_000);
});

describe('directed attacks (handled)', () => {
  test('a plain onExpired returning a promise: what its first call wrote is undone, its tuples go once it resolves', async () => {
    const space = new Space('dir1');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let i = 0; i < 4; i++) space.insert([i, 'x', 900 + i]);
    space.insert([9, 'live', 2000]);
    const calls: Array<{ ids: number[]; resolve: () => void }> = [];
    const task = expirationd.start('dir1', space, {
      field: 3, scanSize: 10, now: () => 1000, itIndex: 'exp',
      onExpired: (tuples) => {
        if (calls.length === 0) { space.insert([50, 'first-call', 3000]); space.delete(9); }
        return new Promise<void>((resolve) => calls.push({ ids: tuples.map((t) => t[0] as number), resolve }));
      },
    });
    task.on('error', () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((c) => c.ids.sort())).toEqual([[0, 1, 2, 3]]);
    expect(space.select().map((t) => t[0]).sort()).toEqual([0, 1, 2, 3, 9]);  // the insert and the delete undone
    calls[0].resolve();
    await vi.advanceTimersByTimeAsync(10);
    expect(space.select().map((t) => t[0])).toEqual([9]);
    expect(task.stats().expired).toBe(4);
  });
});
