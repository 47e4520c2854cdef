// Review probes at the process level and against transaction misuse (README "Space",
// "update, upsert and atomic", "Failures, callbacks and delivery", "Errors", and the
// introduction: "each thread has its own spaces"). The tests under 'bugs' assert the documented
// behaviour for what the review found broken; the rest are attacks that were handled, kept where
// they add coverage beyond test/packaging.test.ts, test/workers.test.ts,
// test/worker-termination.test.ts, test/atomic.test.ts and test/transactions.test.ts.
//
// Child processes and worker scripts are written to os.tmpdir() at test time; every child runs
// the built package (dist/), and a crash shows up as its exit status or signal.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, CappedError, type TaskOptions, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

const { ensureDist } = createRequire(__filename)('./fixtures/dist.cjs') as { ensureDist: () => string };
const ROOT = path.resolve(__dirname, '..');
const JIT = path.join(__dirname, 'support', 'no-concurrent-jit.cjs');

let dist = '';
let dir = '';

beforeAll(() => {
  dist = ensureDist();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-process-review-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'capped-expirationd'), 'dir');
  fs.writeFileSync(path.join(dir, 'worker.cjs'), WORKER_SOURCE);
}, 180_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Child {
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  last: unknown;
}

/** Writes `source` to the temp dir as `file` and runs it with node; the last stdout line parsed as JSON. */
function runChild(file: string, source: string, args: string[] = [], timeout = 60_000): Child {
  fs.writeFileSync(path.join(dir, file), source);
  const r = spawnSync(process.execPath, [file, ...args], { cwd: dir, encoding: 'utf8', timeout });
  const stdout = r.stdout ?? '';
  const lines = stdout.trim().split('\n');
  let last: unknown;
  try {
    last = JSON.parse(lines[lines.length - 1]);
  } catch {
    last = lines[lines.length - 1];
  }
  return { status: r.status, signal: r.signal, stdout, stderr: r.stderr ?? '', last };
}

const summary = (c: Child): string => `status ${c.status}, signal ${c.signal}\nstdout:\n${c.stdout.slice(-3000)}\nstderr:\n${c.stderr.slice(0, 3000)}`;

// A worker_threads script; workerData { dist, mode }. See the modes below.
const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { Space, expirationd, atomic } = require(workerData.dist);
const { mode } = workerData;
const post = (m) => parentPort.postMessage(m);
function mk(name, opts) {
  const s = new Space(name, opts);
  s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  return s;
}
function fill(s, n, ttl) {
  for (let i = 0; i < n; i += 10000) {
    const b = [];
    for (let j = i; j < Math.min(n, i + 10000); j++) b.push([j, ttl(j), 'payload-'.repeat(12) + j]);
    s.insertMany(b);
  }
}
const task = (s, extra) => expirationd.start('t', s, { rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 100, now: () => 100, keepAlive: true, ...extra });
if (mode === 'hold-and-exit') {
  // fills a few MB and ends by itself
  fill(mk('hold'), 60000, (i) => 1e12 + i);
} else if (mode === 'build' || mode === 'exit-in-build') {
  // createIndexAsync over 200k tuples, with writes between its slices
  const s = mk('b');
  fill(s, 200000, (i) => i);
  let turns = 0;
  const p = s.createIndexAsync('by3', { unique: false, parts: [[3, 'string']] });
  const tick = () => {
    turns++;
    s.insert([1e7 + turns, 0, 'w']);
    if (turns === 3) {
      if (mode === 'exit-in-build') process.exit(5);
      post({ building: s.index.by3 === undefined });
    }
    setImmediate(tick);
  };
  setImmediate(tick);
  p.then(() => post({ built: true }), (e) => post({ buildError: e.code }));
} else if (mode === 'async-pending') {
  const s = mk('a');
  fill(s, 5000, (i) => (i % 2 ? 1 : 1e12));
  task(s, { onExpired: (ts) => { post({ handed: ts.length }); return new Promise(() => {}); } });
} else if (mode === 'async-slow') {
  const s = mk('a');
  fill(s, 5000, (i) => (i % 2 ? 1 : 1e12));
  task(s, { onExpired: (ts) => { post({ handed: ts.length }); return new Promise((r) => setTimeout(r, 2)); } });
} else if (mode === 'atomic-spin') {
  // nested atomic() frames over a plain and a capped space, with evictions waiting for the commit
  const a = mk('a');
  const c = new Space('c', { ttl: { field: 2, now: () => 100 }, maxTuples: 10, onFull: 'evictExpiring', onEvict: () => {} });
  c.createIndex('pk', { parts: [[1, 'unsigned']] });
  c.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  fill(a, 20000, (i) => i);
  for (let i = 0; i < 10; i++) c.insert([i, 50]);
  const it = a.index.exp.pairs();
  it.next();
  atomic(() => {
    for (let i = 0; i < 500; i++) a.delete(i);
    for (let i = 0; i < 20; i++) c.insert([100 + i, 1000]);
    atomic(() => { a.insert([1e7, 1, 'inner']); post({ inside: true }); for (;;) {} });
  });
} else if (mode === 'exit-in-atomic') {
  const a = mk('a');
  fill(a, 20000, (i) => i);
  atomic(() => { for (let i = 0; i < 500; i++) a.delete(i); process.exit(3); });
} else if (mode === 'exit-in-onExpired') {
  const s = mk('a');
  fill(s, 5000, (i) => (i % 2 ? 1 : 1e12));
  task(s, { onExpired: () => { s.insert([1e7, 1e12, 'z']); process.exit(4); } });
} else if (mode === 'exit-in-processExpired') {
  const s = mk('a');
  const q = mk('q');
  fill(s, 5000, (i) => (i % 2 ? 1 : 1e12));
  task(s, { processExpired: (ts) => { for (const t of ts) { q.insert(t); s.delete(t[0]); } process.exit(6); } });
} else if (mode === 'unref' || mode === 'ref') {
  const s = mk('i');
  fill(s, 1000, (i) => (i % 2 ? 1 : 1e12));
  const t = task(s, { keepAlive: mode === 'ref', fullScanDelay: 0.02 });
  setTimeout(() => post({ ready: true, len: s.len(), running: t.isRunning }), 30);
} else if (mode === 'work') {
  const s = mk('w');
  fill(s, 2000, (i) => (i % 2 ? 1 : 1e12));
  const t = task(s, { iterationDelay: 0.001 });
  const check = () => {
    if (s.len() !== 1000) return void setTimeout(check, 2);
    t.kill();
    s.checkIntegrity();
    post({ done: true, len: s.len(), tasks: expirationd.tasks() });
  };
  check();
} else {
  throw new Error('unknown mode ' + mode);
}
`;

/**
 * A driver (the child's main thread): runs the worker modes one after another; `preload` makes
 * the main thread load the addon too. Prints [{ mode, code, msgs, timedOut }].
 */
// Without preload the main thread never loads our addon, but it does load msgpackr (and with it
// msgpackr-extract's addon): unloaded with the last worker, that third-party addon leaves
// LeakSanitizer one 32-byte allocation of its init per load, which fails the sanitizer run.
const MSGPACKR = createRequire(path.join(ROOT, 'package.json')).resolve('msgpackr');
const driver = (preload: boolean, plan: Array<[mode: string, terminateOn?: string, waitMs?: number]>): string => `'use strict';
require(${JSON.stringify(JIT)});
const { Worker } = require('node:worker_threads');
${preload ? `require(${JSON.stringify(dist)});` : `require(${JSON.stringify(MSGPACKR)});`}
const plan = ${JSON.stringify(plan)};
function run([mode, terminateOn, waitMs = 20000]) {
  return new Promise((resolve) => {
    const w = new Worker(${JSON.stringify(path.join(dir, 'worker.cjs'))}, { workerData: { dist: ${JSON.stringify(dist)}, mode } });
    const msgs = [];
    let timedOut = false;
    w.on('message', (m) => { msgs.push(m); if (terminateOn && m[terminateOn]) void w.terminate(); });
    w.on('error', (e) => msgs.push({ error: String(e) }));
    const timer = setTimeout(() => { timedOut = true; void w.terminate(); }, waitMs);
    w.on('exit', (code) => { clearTimeout(timer); console.log('exited ' + mode + ' ' + code); resolve({ mode, code, msgs: msgs.slice(0, 2), timedOut }); });
  });
}
(async () => {
  const out = [];
  for (const step of plan) out.push(await run(step));
  // the main thread goes on after the workers are gone
  await new Promise((r) => setTimeout(r, 300));
  console.log(JSON.stringify(out));
})();
`;

describe('bugs', () => {
  test('a process in which only worker threads load the addon survives a worker that held a few MB and exited', () => {
    // README: "each thread has its own spaces"; "It never crashes the process". Node unloads
    // (dlcloses) an addon when the last environment that loaded it is torn down; here that is
    // the worker, while the addon's detached background threads (alloc/background.h) still run
    // code from it: the whole process dies of SIGSEGV (6 to 8 runs in 8 here).
    const child = runChild('workers-only.cjs', driver(false, [
      ['hold-and-exit'], ['hold-and-exit'], ['hold-and-exit'], ['work'],
    ]), [], 120_000);
    expect({ status: child.status, signal: child.signal }, summary(child)).toEqual({ status: 0, signal: null });
    expect(child.last, summary(child)).toEqual([
      { mode: 'hold-and-exit', code: 0, msgs: [], timedOut: false },
      { mode: 'hold-and-exit', code: 0, msgs: [], timedOut: false },
      { mode: 'hold-and-exit', code: 0, msgs: [], timedOut: false },
      { mode: 'work', code: 0, msgs: [{ done: true, len: 1000, tasks: [] }], timedOut: false },
    ]);
  }, 150_000);

  test('atomic(async fn) whose promise rejects: refused with ER_TRANSACTION, and the process does not die of that rejection', () => {
    // README: "A fn that returns a promise is undone and refused (ER_TRANSACTION)". The caller
    // never gets the promise, so cannot handle its rejection: an insert that throws inside an
    // async fn (a duplicate key here) kills the process with an unhandled rejection.
    const child = runChild('atomic-reject.cjs', `
      const { Space, atomic, CappedError } = require('capped-expirationd');
      const a = new Space('a');
      a.createIndex('pk', { parts: [[1, 'unsigned']] });
      a.insert([1]);
      const out = {};
      try { atomic(async () => { a.insert([2]); a.insert([1]); }); } catch (e) { out.code = e.code; out.capped = e instanceof CappedError; }
      try { a.transaction(async () => { throw new Error('boom'); }); } catch (e) { out.code2 = e.code; }
      // A plain function that returns a rejected promise: refused after it ran, undone, and its
      // rejection handled (the caller never gets the promise).
      try { atomic(() => { a.insert([3]); return Promise.reject(new Error('late')); }); } catch (e) { out.code3 = e.code; }
      setTimeout(() => { out.rows = a.select(); console.log(JSON.stringify(out)); }, 50);
    `);
    expect({ status: child.status, signal: child.signal, last: child.last }, summary(child)).toEqual({
      status: 0, signal: null, last: { code: 'ER_TRANSACTION', capped: true, code2: 'ER_TRANSACTION', code3: 'ER_TRANSACTION', rows: [[1]] },
    });
  });

  test('atomic(async fn) and transaction(async fn) are refused, and nothing fn does after an await is committed', async () => {
    // README: "atomic(fn), space.transaction(fn): ... fn must be synchronous"; "A fn that returns
    // a promise is undone and refused". Its part before the first await is undone, but the part
    // after it runs later, outside any transaction, and stays: half of fn is applied.
    const a = new Space('a');
    a.createIndex('pk', { parts: [[1, 'unsigned']] });
    const b = new Space('b');
    b.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(codeOf(() => atomic(async () => {
      a.insert([1]);
      await null;
      b.insert([1]);
    }))).toBe('ER_TRANSACTION');
    expect(codeOf(() => a.transaction(async () => {
      a.insert([2]);
      await null;
      b.insert([2]);
    }))).toBe('ER_TRANSACTION');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect({ a: a.select(), b: b.select() }).toEqual({ a: [], b: [] });
  });

  test('atomic(async function*) is refused with ER_TRANSACTION: an async generator is not synchronous', async () => {
    // README: "fn must be synchronous". An async generator function returns an AsyncGenerator
    // (not a thenable), so atomic() commits an empty frame and returns it; its body then runs
    // outside any transaction when the caller iterates it.
    const a = new Space('a');
    a.createIndex('pk', { parts: [[1, 'unsigned']] });
    let result: unknown;
    let code: string | undefined;
    try {
      result = atomic((async function* () {
        a.insert([1]);
        yield 1;
      }) as unknown as () => unknown);
    } catch (error) {
      code = (error as CappedError).code;
    }
    if (result !== undefined) await (result as AsyncGenerator).next();
    expect({ code, rows: a.select() }).toEqual({ code: 'ER_TRANSACTION', rows: [] });
  });

  test('atomic(function*) and transaction(function*) are refused before they run: a generator\'s body is deferred', () => {
    const a = new Space('a');
    a.createIndex('pk', { parts: [[1, 'unsigned']] });
    let ran = false;
    const gen = function* () {
      ran = true;
      a.insert([1]);
      yield 1;
    } as unknown as () => unknown;
    for (const call of [() => atomic(gen), () => a.transaction(gen)]) {
      let error: unknown;
      try {
        const result = call() as Generator;
        result.next();  // what a caller would do with what came back
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CappedError);
      expect((error as CappedError).code).toBe('ER_TRANSACTION');
      expect((error as CappedError).message).toMatch(/a generator function/);
    }
    expect({ ran, rows: a.select() }).toEqual({ ran: false, rows: [] });
  });

  describe('a callback that throws a value that cannot be turned into a string', () => {
    useTaskTimers();
    // README "Failures, callbacks and delivery": "A failing chunk is bisected: the failing tuple
    // is skipped and reported, the rest is deleted, and every pass ends". The skip builds its
    // message with String(error) (task.ts messageOf), which throws for these values; the chunk
    // then fails as a whole, the pass ends there, and every expired tuple after the poison one
    // stays forever (isExpired: every tuple), with TypeErrors reported instead of ER_TUPLE_SKIPPED.
    const hostile: Array<[string, () => unknown]> = [
      ['Object.create(null)', () => Object.create(null)],
      ['a revoked Proxy', () => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; }],
      ['an Error whose message getter throws', () => {
        const e = new Error('x');
        Object.defineProperty(e, 'message', { get() { throw new Error('no message'); } });
        return e;
      }],
    ];
    const makers: Array<[string, (s: Space, poison: () => unknown) => TaskOptions]> = [
      ['onExpired', (_s, poison) => ({ onExpired: (ts: Tuple[]) => { if (ts.some((t) => t[0] === 5)) throw poison(); } })],
      ['processExpired', (s, poison) => ({
        processExpired: (ts: Tuple[]) => {
          if (ts.some((t) => t[0] === 5)) throw poison();
          for (const t of ts) s.delete(t[0] as number);
        },
      })],
      ['isExpired', (_s, poison) => ({ isExpired: (t: Tuple) => { if (t[0] === 5) throw poison(); return (t[1] as number) <= 100; } })],
    ];
    for (const [where, options] of makers) {
      for (const [what, poison] of hostile) {
        test(`${where} throwing ${what} on one tuple: that tuple is skipped (ER_TUPLE_SKIPPED), every other expired tuple goes`, () => {
          const s = new Space('hostile');
          s.createIndex('pk', { parts: [[1, 'unsigned']] });
          s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
          for (let i = 1; i <= 20; i++) s.insert([i, i <= 15 ? i : 1e12]);
          const codes: unknown[] = [];
          const task = expirationd.start('hostile', s, {
            itIndex: 'exp', field: 2, scanSize: 100, now: () => 100, ...options(s, poison),
          });
          // README: 'error' carries "a CappedError for the task's own failures, else what a
          // callback threw": the hostile value itself may come through, a TypeError of ours may not.
          task.on('error', (e: unknown) => {
            try {
              codes.push(e instanceof CappedError ? e.code : e instanceof TypeError ? 'a TypeError' : 'the thrown value');
            } catch {
              codes.push('the thrown value');  // instanceof throws for a revoked Proxy
            }
          });
          vi.advanceTimersByTime(3000);
          task.kill();
          expect(s.select().map((t) => t[0])).toEqual([5, 16, 17, 18, 19, 20]);
          expect(codes).toContain('ER_TUPLE_SKIPPED');
          expect(codes).not.toContain('a TypeError');
        });
      }
    }
  });

  describe('two copies of the package in one thread', () => {
    // README: two copies (two versions in node_modules, a cleared require cache) are two
    // independent libraries, "while instanceof CappedError holds for the errors of both". The
    // addon is loaded once per thread while its .node file stays in require's cache, and throws
    // the class of the copy that registered last: errors from the first copy's spaces were the
    // second copy's class, not instanceof the first's (now CappedError's Symbol.hasInstance
    // asks for a mark that every copy's errors carry). With the .node file cleared from the
    // cache too, Node loads the addon again into a Node-API environment of its own: each copy
    // has its own addon state and throws its own class.
    const script = (clear: string): string => `
      const A = require('capped-expirationd');
      for (const k of Object.keys(require.cache)) if (${clear}) delete require.cache[k];
      const B = require('capped-expirationd');
      const out = { distinct: A.Space !== B.Space, twoAddons: A.CappedError !== B.CappedError };
      const sa = new A.Space('a'); sa.createIndex('pk', { parts: [[1, 'unsigned']] });
      const sb = new B.Space('b'); sb.createIndex('pk', { parts: [[1, 'unsigned']] });
      const own = (e, X) => [e.code, e instanceof A.CappedError, e instanceof B.CappedError, Object.getPrototypeOf(e) === X.CappedError.prototype];
      // A duplicate key: an error only the addon finds (a wrong field type is found in JavaScript).
      sa.insert([0]); sb.insert([0]);
      try { sa.insert([0]); } catch (e) { out.a = own(e, A); }
      try { sb.insert([0]); } catch (e) { out.b = own(e, B); }
      try { A.atomic(() => { sa.insert([1]); sb.insert([1]); throw new Error('undo'); }); } catch {}
      out.atomic = { a: sa.select(), b: sb.select() };
      console.log(JSON.stringify(out));
    `;
    const dist = JSON.stringify(path.join(ROOT, 'dist'));
    const build = JSON.stringify(path.join(ROOT, 'build'));

    test('the JavaScript cleared from require\'s cache (one addon): each copy\'s errors are instanceof both copies\' CappedError', () => {
      const child = runChild('two-copies.cjs', script(`k.includes(${dist})`));
      expect(child.status, summary(child)).toBe(0);
      const either = expect.any(Boolean);  // which copy's prototype: the last to register
      expect(child.last).toMatchObject({ distinct: true, a: ['ER_DUPLICATE_KEY', true, true, either], b: ['ER_DUPLICATE_KEY', true, true, either] });
      // The documented limit: A's frame does not reach B's space.
      expect(child.last).toMatchObject({ atomic: { a: [[0]], b: [[0], [1]] } });
    });

    test('the .node file cleared too (init runs again): each copy throws its own class', () => {
      const child = runChild('two-addons.cjs', script(`k.includes(${dist}) || k.includes(${build})`));
      expect(child.status, summary(child)).toBe(0);
      expect(child.last).toMatchObject({
        distinct: true, a: ['ER_DUPLICATE_KEY', true, true, true], b: ['ER_DUPLICATE_KEY', true, true, true],
      });
    });
  });
});

describe('handled: packaging', () => {
  test('a program that imports the ESM entry and requires the CJS one: one frame stack, one registry, one error class', () => {
    const child = runChild('dual.mjs', `
      import { createRequire } from 'node:module';
      import { Space, atomic, expirationd, CappedError } from 'capped-expirationd';
      const cjs = createRequire(import.meta.url)('capped-expirationd');
      const mk = (S, n) => { const s = new S(n); s.createIndex('pk', { parts: [[1, 'unsigned']] }); s.createIndex('exp', { unique: false, parts: [[2, 'number']] }); return s; };
      const esmSpace = mk(Space, 'esm');
      const cjsSpace = mk(cjs.Space, 'cjs');
      const out = {};
      // atomic() of the ESM entry undoes writes made to a space of the CJS entry, nested in a CJS frame
      try {
        atomic(() => {
          esmSpace.insert([1, 1]);
          cjs.atomic(() => cjsSpace.insert([1, 1]));
          throw new Error('undo');
        });
      } catch (e) { out.undo = e.message; }
      out.afterUndo = [esmSpace.len(), cjsSpace.len()];
      // a task started through one entry is replaced by a start of the same name through the other
      const first = cjs.expirationd.start('dual', cjsSpace, { itIndex: 'exp', field: 2 });
      const second = expirationd.start('dual', esmSpace, { itIndex: 'exp', field: 2 });
      out.replaced = [first.state, second.state, cjs.expirationd.tasks()];
      // an error from a task callback, through either entry's class
      cjsSpace.insert([5, 1]);
      const third = cjs.expirationd.start('dual', cjsSpace, { itIndex: 'exp', field: 2, now: () => 10, keepAlive: true,
        onExpired: () => { esmSpace.insert([1, 'not a number']); } });
      third.on('error', (e) => {
        out.error = [e.code, e instanceof CappedError, e instanceof cjs.CappedError];
        out.secondState = second.state;
        third.kill();
        try { expirationd.kill('dual'); } catch (k) { out.kill = [k.code, k instanceof cjs.CappedError]; }
        out.rows = [esmSpace.select(), cjsSpace.select()];
        console.log(JSON.stringify(out));
      });
    `);
    expect(child.status, summary(child)).toBe(0);
    expect(child.last).toEqual({
      undo: 'undo', afterUndo: [0, 0],
      replaced: ['killed', 'running', ['dual']],
      error: ['ER_FIELD_TYPE', true, true],
      secondState: 'killed',
      kill: ['ER_NO_SUCH_TASK', true],
      rows: [[], [[5, 1]]],
    });
  });
});

describe('handled: worker threads (the main thread loads the addon too)', () => {
  test('terminated mid-createIndexAsync, with an async onExpired pending, inside nested atomic(); process.exit() inside atomic, onExpired, processExpired, createIndexAsync; then a new worker works', () => {
    const child = runChild('workers-preloaded.cjs', driver(true, [
      ['build', 'building'], ['exit-in-build'], ['async-pending', 'handed'], ['async-slow', 'handed'],
      ['atomic-spin', 'inside'], ['exit-in-atomic'], ['exit-in-onExpired'], ['exit-in-processExpired'],
      ['build', 'building'], ['work'],
    ]), [], 120_000);
    expect({ status: child.status, signal: child.signal }, summary(child)).toEqual({ status: 0, signal: null });
    const out = child.last as Array<{ mode: string; code: number; msgs: unknown[]; timedOut: boolean }>;
    expect(out.map((o) => [o.mode, o.code, o.timedOut])).toEqual([
      ['build', 1, false], ['exit-in-build', 5, false], ['async-pending', 1, false], ['async-slow', 1, false],
      ['atomic-spin', 1, false], ['exit-in-atomic', 3, false], ['exit-in-onExpired', 4, false],
      ['exit-in-processExpired', 6, false], ['build', 1, false], ['work', 0, false],
    ]);
    expect(out[0].msgs).toEqual([{ building: true }]);  // invisible until built
    expect(out[9].msgs).toEqual([{ done: true, len: 1000, tasks: [] }]);
  }, 150_000);

  test('keepAlive in a worker: false lets the worker end by itself with its task running; true keeps it until terminated', () => {
    const child = runChild('workers-keepalive.cjs', driver(true, [['unref', undefined, 5000], ['ref', undefined, 600]]), [], 60_000);
    expect({ status: child.status, signal: child.signal }, summary(child)).toEqual({ status: 0, signal: null });
    expect(child.last).toEqual([
      { mode: 'unref', code: 0, msgs: [{ ready: true, len: 500, running: true }], timedOut: false },
      { mode: 'ref', code: 1, msgs: [{ ready: true, len: 500, running: true }], timedOut: true },
    ]);
  });

  test('a process whose task waits for an async onExpired that never settles exits by itself (keepAlive false)', () => {
    const child = runChild('pending-exit.cjs', `
      const { Space, expirationd } = require('capped-expirationd');
      const s = new Space('p');
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
      for (let i = 0; i < 100; i++) s.insert([i, i % 2 ? 1 : 1e12]);
      let handed = 0;
      expirationd.start('p', s, { itIndex: 'exp', field: 2, now: () => 10, onExpired: (ts) => { handed += ts.length; return new Promise(() => {}); } });
      process.on('exit', (code) => console.log(JSON.stringify({ code, handed, len: s.len() })));
      setTimeout(() => {}, 50);
    `, [], 20_000);
    expect({ status: child.status, signal: child.signal, last: child.last }, summary(child)).toEqual({
      status: 0, signal: null, last: { code: 0, handed: 50, len: 100 },
    });
  });
});

describe('handled: atomic() misuse', () => {
  const mk = (name: string, rows: Tuple[] = []): Space => {
    const s = new Space(name);
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    for (const r of rows) s.insert(r);
    return s;
  };

  test('fn throwing undefined, a trapping Proxy, a revoked Proxy, an object whose getters throw: that value comes out, all is undone', () => {
    const a = mk('a', [[1, 1]]);
    const b = mk('b');
    const trap = new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('proto'); } });
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const getters = { get message(): string { throw new Error('m'); }, get code(): string { throw new Error('c'); } };
    for (const value of [undefined, null, 0, trap, revocable.proxy, getters]) {
      let caught: unknown = 'nothing';
      try {
        atomic(() => {
          a.delete(1);
          b.insert([2, 2]);
          a.transaction(() => b.insert([3, 3]));
          throw value;
        });
      } catch (error) {
        caught = error;
      }
      expect(caught === value).toBe(true);
      expect([a.select(), b.select()]).toEqual([[[1, 1]], []]);
    }
    // No frame was left open: a write outside atomic() commits at once, and a later frame's throw undoes only its own.
    b.insert([9, 9]);
    expect(() => atomic(() => { throw new Error('x'); })).toThrow('x');
    expect(b.select()).toEqual([[9, 9]]);
  });

  test('a thenable that is not a Promise, and a Proxy whose `then` is a function, are refused and undone', () => {
    const a = mk('a');
    let thenCalled = false;
    const thenable = { then: () => { thenCalled = true; } };
    expect(codeOf(() => atomic(() => { a.insert([1, 1]); return thenable; }))).toBe('ER_TRANSACTION');
    expect(codeOf(() => a.transaction(() => { a.insert([2, 2]); return new Proxy({}, { get: () => () => {} }); }))).toBe('ER_TRANSACTION');
    // a `then` getter that writes runs inside the frame, so its write is undone with it
    expect(codeOf(() => atomic(() => ({ get then() { a.insert([3, 3]); return () => {}; } })))).toBe('ER_TRANSACTION');
    expect(a.len()).toBe(0);
    expect(thenCalled).toBe(false);
  });

  test('atomic() from a getter inside a tuple being inserted: the nested frame nests in the outer one', () => {
    const a = mk('a');
    const b = mk('b', [[1, 1], [2, 2]]);
    const tuple = [10, 5, { get x() { atomic(() => { b.delete(1); }); return 1; } }];
    expect(() => atomic(() => { a.insert(tuple); b.insert([3, 3]); throw new Error('outer'); })).toThrow('outer');
    expect([a.select(), b.select()]).toEqual([[], [[1, 1], [2, 2]]]);
    // a nested insert while packing is refused (ER_ILLEGAL_PARAMS) and leaves nothing behind
    const codes: string[] = [];
    const t2 = [11, 5, { get x() { try { atomic(() => b.insert([9, 9])); } catch (e) { codes.push((e as CappedError).code); } return 1; } }];
    a.insert(t2);
    expect(new Set(codes)).toEqual(new Set(['ER_ILLEGAL_PARAMS']));
    // a nested frame that returns a promise from the getter: refused, the outer insert fails, nothing changes
    const t3 = [12, 5, { get x() { return atomic(() => { b.delete(2); return Promise.resolve(1); }); } }];
    expect(() => a.insert(t3)).toThrow();
    // insertMany enlists before it packs: getters that write and open frames are undone with the outer frame
    expect(() => atomic(() => {
      a.insertMany([[20, 1, { get x() { a.delete(11); atomic(() => b.delete(1)); return 2; } }]]);
      throw new Error('o');
    })).toThrow('o');
    expect([a.select().map((t) => t[0]), b.select()]).toEqual([[11], [[1, 1], [2, 2]]]);
    a.checkIntegrity();
    b.checkIntegrity();
  });

  describe('nested atomic() inside a running task\'s callbacks', () => {
    useTaskTimers();
    const rows: Tuple[] = Array.from({ length: 10 }, (_, i) => [i + 1, i < 6 ? 1 : 1e12]);
    const base = { itIndex: 'exp', field: 2, scanSize: 100, now: () => 100 };
    const ids = (s: Space): number[] => s.select().map((t) => t[0] as number);

    test('onExpired: a nested frame that throws undoes only its writes (also to the task\'s space); the chunk commits', () => {
      const s = mk('s', rows);
      const log = mk('log');
      expirationd.start('n1', s, {
        ...base,
        onExpired: (ts) => {
          log.insert([100, 0]);
          try {
            atomic(() => { for (const t of ts) log.insert([t[0], 0]); s.delete(7); throw new Error('in'); });
          } catch { /* ignored */ }
        },
      });
      vi.advanceTimersByTime(50);
      expect([ids(s), ids(log)]).toEqual([[7, 8, 9, 10], [100]]);
    });

    test('processExpired: kill() inside a nested frame commits what was written, nothing more is processed', () => {
      const s = mk('s', rows);
      const q = mk('q');
      let calls = 0;
      const task = expirationd.start('n2', s, {
        ...base, scanSize: 2,
        processExpired: (ts, t) => {
          calls++;
          for (const x of ts) { q.insert([x[0] as number, 0]); s.delete(x[0] as number); }
          atomic(() => { (t as { kill(): void }).kill(); q.insert([50 + calls, 0]); });
        },
      });
      vi.advanceTimersByTime(50);
      expect([ids(s), ids(q), calls, task.state, task.stats().expired]).toEqual([[3, 4, 5, 6, 7, 8, 9, 10], [1, 2, 51], 1, 'killed', 2]);
    });

    test('processExpired: a nested frame that drops the task\'s space and throws; the other writes commit', () => {
      const s = mk('s', rows);
      const q = mk('q');
      const task = expirationd.start('n3', s, {
        ...base,
        processExpired: () => {
          q.insert([1000, 0]);
          try { atomic(() => { q.insert([2000, 0]); s.drop(); throw new Error('x'); }); } catch { /* ignored */ }
          q.insert([3000, 0]);
        },
      });
      vi.advanceTimersByTime(50);
      expect([s.dropped, ids(q), task.state]).toEqual([true, [1000, 3000], 'killed']);
    });

    test('isExpired and onExpired: a nested frame that returns a promise is refused (ER_TRANSACTION) and undone; poison bisection still works', () => {
      const s = mk('s', rows);
      const o = mk('o');
      let n = 0;
      const errors: string[] = [];
      const task = expirationd.start('n4', s, {
        ...base,
        isExpired: (t) => {
          try { atomic(() => { o.replace([500 + (t[0] as number), 0]); s.delete(10); throw 1; }); } catch { /* ignored */ }
          return (t[1] as number) <= 100;
        },
        onExpired: (ts) => {
          n++;
          try { atomic(() => { o.insert([n, 0]); return Promise.resolve(); }); } catch (e) { errors.push((e as CappedError).code); }
          atomic(() => { o.replace([100 + (ts[0][0] as number), 0]); });
          if (ts.some((x) => x[0] === 3)) throw new Error('poison');
        },
      });
      task.on('error', (e: unknown) => errors.push(e instanceof CappedError ? e.code : 'user'));
      vi.advanceTimersByTime(20);
      task.kill();
      expect([ids(s), ids(o)]).toEqual([[3, 7, 8, 9, 10], [101, 102, 104]]);
      expect(errors).toContain('ER_TRANSACTION');
      expect(errors).toContain('ER_TUPLE_SKIPPED');
    });

    test('onEvict: reported only when the outermost frame commits; its own atomic() frames work', () => {
      const o = mk('o');
      const c = new Space('c', {
        ttl: { field: 2, now: () => 100 }, maxTuples: 3, onFull: 'evictExpiring',
        onEvict: (ts) => {
          try { atomic(() => { o.insert([ts[0][0] as number, 0]); throw new Error('e'); }); } catch { /* ignored */ }
          atomic(() => { o.insert([(ts[0][0] as number) + 100, 0]); });
        },
      });
      c.createIndex('pk', { parts: [[1, 'unsigned']] });
      c.createIndex('exp', { unique: false, parts: [[2, 'number']] });
      for (let i = 1; i <= 3; i++) c.insert([i, 200 + i]);
      expect(() => atomic(() => { c.insert([4, 300]); c.insert([5, 300]); throw new Error('rb'); })).toThrow('rb');
      expect([ids(c), ids(o)]).toEqual([[1, 2, 3], []]);
      atomic(() => { c.insert([4, 300]); atomic(() => c.insert([5, 300])); });
      expect([ids(c), ids(o), c.lastEvictError]).toEqual([[3, 4, 5], [101, 102], undefined]);
    });
  });
});
