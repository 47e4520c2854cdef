// Adversarial review of the raw binding (native/napi/*.cc), as an attacker holding the addon's
// exports: README "The binding cannot crash the process". Every call must succeed or throw a
// JavaScript error (a CappedError with a code, a TypeError for a wrong `this`, or the error a
// user getter threw), conversions must run no user code (except createIndex's array elements),
// and each space must stay consistent (checkIntegrity() === '', select() answers). The tests
// under 'bugs' assert the documented behaviour for what the review found: commit() and
// rollback() accepted any savepoint inside the undo log, so a rollback to one inside the
// transaction undid part of it, ended it and leaked what the rest had deleted (now refused:
// native/engine/space.cc check_savepoint).
//
// Seeded: REVIEW_SEED (default 1), REVIEW_STEPS (default 20000) for the random part. Run it under
// the sanitizers too: bash scripts/test-asan.sh test/review-binding-fuzz.test.ts
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { pack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { native } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';
import { mulberry32 } from '../bench/lib/random.js';

const S = native.space as unknown as Record<string, (...args: unknown[]) => unknown>;
const SEED = Number(process.env.REVIEW_SEED ?? 1);
const STEPS = Number(process.env.REVIEW_STEPS ?? 20000);
const ROOT = path.resolve(__dirname, '..');

// ---------------------------------------------------------------------------------------------
// Seeded randomness.
// ---------------------------------------------------------------------------------------------
let rnd = mulberry32(SEED);
const int = (n: number): number => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

// ---------------------------------------------------------------------------------------------
// What a call may do.
// ---------------------------------------------------------------------------------------------
class UserTrapError extends Error {}

const problems: string[] = [];
const codesSeen = new Map<string, number>();
let trapsFired = 0;

function describeValue(v: unknown): string {
  try {
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'symbol') return v.toString();
    if (typeof v === 'function') return `function ${v.name}`;
    if (v === null || typeof v !== 'object') return Object.is(v, -0) ? '-0' : String(typeof v === 'string' ? JSON.stringify(v.slice(0, 20)) : v);
    if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${v.byteLength}b)`;
    return Object.prototype.toString.call(v);
  } catch {
    return '<?>';
  }
}

/** Checks one thrown value: a CappedError with an ER_ code (not ER_INTERNAL), a TypeError, or a user getter's own error. */
function allowedError(e: unknown, what: string): void {
  if (e instanceof CappedError) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string' || !/^ER_[A-Z_]+$/.test(code) || code === 'ER_INTERNAL') {
      problems.push(`${what}: CappedError with code ${String(code)}: ${e.message}`);
    }
    codesSeen.set(code as string, (codesSeen.get(code as string) ?? 0) + 1);
    return;
  }
  if (e instanceof TypeError) return;
  if (e instanceof UserTrapError) return;
  if (e instanceof RangeError && /call stack/.test(e.message)) return;
  problems.push(`${what}: threw a non-CappedError ${describeValue(e)} ${(e as Error)?.message}`);
}

/** Results are numbers, strings, Buffers, null/undefined, or a cursor handle. */
function allowedResult(r: unknown, what: string): void {
  if (r === undefined || r === null || typeof r === 'number' || typeof r === 'string' || Buffer.isBuffer(r)) return;
  if (r instanceof (native.CursorHandle as unknown as new () => object)) return;
  problems.push(`${what}: returned ${describeValue(r)}`);
}

// ---------------------------------------------------------------------------------------------
// Fixtures: raw spaces made through createSpace, with their transaction depth tracked (so that
// every open transaction can be closed before a space is checked).
// ---------------------------------------------------------------------------------------------
type Kind = 'tree' | 'hash' | 'capped' | 'ttl';
interface Fx {
  h: unknown;
  kind: Kind;
  depth: number;
  dropped: boolean;
  cursors: unknown[];
  serial: number;
}
let serial = 0;
const deadHandles: unknown[] = [];
const byHandle = new Map<unknown, Fx>();
const deadCursors: unknown[] = [];

function tuple(i: number): Buffer {
  return pack([i, i % 17, `payload-${i}`]);
}

function makeFx(kind: Kind): Fx {
  const name = `fz-${kind}-${serial++}`;
  const h = kind === 'capped'
    ? native.createSpace(name, 4096, 1, 40, undefined, true)
    : kind === 'ttl' ? native.createSpace(name, 4096, 1, undefined, undefined, undefined, true)
      : native.createSpace(name, 4096);
  S.createIndex(h, 'pk', kind === 'hash' ? 'HASH' : 'TREE', true, [0], ['unsigned']);
  S.createIndex(h, 'ttl', 'TREE', false, [1], ['number']);
  for (let i = 0; i < 30; i++) S.insert(h, tuple(i), true);
  const fx: Fx = { h, kind, depth: 0, dropped: false, cursors: [], serial };
  byHandle.set(h, fx);
  fx.cursors.push(S.cursor(h, 0, undefined, 2, true), S.cursor(h, 1, undefined, 3, false));
  return fx;
}

const scratchBig = (): Buffer => Buffer.alloc(1 << 16);

/** A space is sound: checkIntegrity() is empty and select() answers with a Buffer or a count. */
function sound(fx: Fx, what: string): void {
  if (fx.dropped) return;
  try {
    const why = S.checkIntegrity(fx.h);
    if (why !== '') problems.push(`${what}: checkIntegrity: ${String(why)}`);
    const r = S.select(fx.h, 0, undefined, 2, 1000, 0, scratchBig());
    if (typeof r !== 'number' && !Buffer.isBuffer(r)) problems.push(`${what}: select returned ${describeValue(r)}`);
    const len = S.len(fx.h) as number;
    const count = S.count(fx.h, 0, undefined, 2, NaN) as number;  // NaN: no TTL check (a wall-clock space hides expired tuples)
    if (len !== count) problems.push(`${what}: len ${len} != count ${count}`);
  } catch (e) {
    problems.push(`${what}: space unusable afterwards: ${(e as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The signatures (native/napi/space_object.cc), as argument kinds for valid values.
// ---------------------------------------------------------------------------------------------
type ArgKind =
  | 'name' | 'itype' | 'bool' | 'fields' | 'types' | 'maxTuples' | 'budget' | 'tuple' | 'tuples' | 'now'
  | 'index' | 'key' | 'scratch' | 'iter' | 'count' | 'out2' | 'out5' | 'savepoint' | 'cursor' | 'fieldno'
  | 'scan' | 'num' | 'mode' | 'positions' | 'ops' | 'start' | 'end' | 'op' | 'field';

const SIG: Record<string, ArgKind[]> = {
  createIndex: ['name', 'itype', 'bool', 'fields', 'types', 'bool'],
  buildIndexBegin: ['name', 'itype', 'bool', 'fields', 'types'],
  buildIndexStep: ['maxTuples', 'budget'],
  insert: ['tuple', 'bool', 'start', 'end', 'now'],
  insertMany: ['tuples', 'now'],
  get: ['index', 'key', 'scratch', 'now'],
  delete: ['key', 'scratch'],
  select: ['index', 'key', 'iter', 'count', 'count', 'scratch', 'now'],
  count: ['index', 'key', 'iter', 'now'],
  minmax: ['index', 'key', 'bool', 'scratch', 'now'],
  len: ['index'],
  memory: ['out2'],
  truncate: [],
  drop: [],
  begin: [],
  commit: ['savepoint'],
  rollback: ['savepoint'],
  cursor: ['index', 'key', 'iter', 'bool'],
  expireChunk: ['cursor', 'fieldno', 'scan', 'num', 'bool', 'mode', 'out5', 'scratch'],
  rollbackChunk: ['cursor', 'savepoint'],
  scanChunk: ['cursor', 'scan', 'out5', 'scratch'],
  deleteVisited: ['cursor', 'positions', 'bool', 'out5', 'scratch'],
  checkIntegrity: [],
  update: ['index', 'key', 'ops', 'start', 'end', 'scratch'],
  updateNumber: ['index', 'key', 'op', 'field', 'num', 'scratch'],
  upsert: ['tuple', 'ops', 'start', 'end', 'bool', 'scratch'],
  bsize: [],
  takeEvicted: ['scratch'],
};
const FUNCTIONS = Object.keys(SIG);

it('the signature table covers every exported space function', () => {
  expect(Object.keys(native.space).sort()).toEqual([...FUNCTIONS].sort());
});

const OPS = [pack([['=', 2, 'z']]), pack([['+', 1, 1]]), pack([['#', 2, 1]]), pack([['!', 3, 'q']]), pack([[':', 2, 1, 1, 'r']]),
  pack([['=', 0, 5]]), pack([]), pack([['-', 1, 1e300]])];

function validArg(kind: ArgKind, fx: Fx, fn: string, args: unknown[]): unknown {
  switch (kind) {
    case 'name': return `ix${int(1000)}`;
    case 'itype': return pick(['TREE', 'HASH']);
    case 'bool': return rnd() < 0.5;
    case 'fields': return [pick([0, 1, 2])];
    case 'types': return [pick(['unsigned', 'number', 'string', 'scalar', 'any', 'integer'])];
    case 'maxTuples': return 1 + int(50);
    case 'budget': return 1 + int(10);
    case 'tuple': return tuple(pick([int(60), 1000 + int(100)]));
    case 'tuples': return pack([[100 + int(50), int(17), 'm'], [200 + int(50), int(17), 'n']]);
    case 'now': return pick([undefined, int(20), NaN]);
    case 'index': return fn === 'get' || fn === 'update' || fn === 'updateNumber' ? 0 : pick([0, 1]);
    case 'key': return pick([undefined, int(40), pack([int(40)])]);
    case 'scratch': return pick([Buffer.alloc(256), Buffer.alloc(0), Buffer.alloc(8)]);
    case 'iter': return fn === 'cursor' || fn === 'select' || fn === 'count' ? pick([0, 2, 3]) : 2;
    case 'count': return pick([0, 1, 5, Infinity]);
    case 'out2': return new Float64Array(2);
    case 'out5': return new Float64Array(5);
    case 'savepoint': return pick([0, 0, 1, 2]);
    case 'cursor': return fx.cursors.length > 0 ? pick(fx.cursors) : undefined;
    case 'fieldno': return 1;
    case 'scan': return 1 + int(20);
    case 'num': return int(20);
    case 'mode': return int(3);
    case 'positions': return Uint32Array.from({ length: int(4) }, () => int(6));
    case 'ops': return pick(OPS);
    case 'start': {
      if (fn === 'insert') return undefined;
      return 0;
    }
    case 'end': {
      if (fn === 'insert') return undefined;
      const ops = args[args.length - 1];
      return Buffer.isBuffer(ops) ? ops.length : 0;
    }
    case 'op': return pick([61, 43, 45, 38, 124, 94, 35, 33]);
    case 'field': return pick([1, 2, -1, 0]);
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile values.
// ---------------------------------------------------------------------------------------------
function detachedBuffer(n: number): Buffer {
  const b = Buffer.from(new ArrayBuffer(n));
  structuredClone(b.buffer, { transfer: [b.buffer] });
  return b;
}
function detachedF64(n: number): Float64Array {
  const f = new Float64Array(n);
  structuredClone(f.buffer, { transfer: [f.buffer] });
  return f;
}
function detachedU32(n: number): Uint32Array {
  const f = Uint32Array.from({ length: n }, (_, i) => i);
  structuredClone(f.buffer, { transfer: [f.buffer] });
  return f;
}
function shared(n: number): SharedArrayBuffer {
  return new SharedArrayBuffer(n);
}
function resizable(n: number): ArrayBuffer | undefined {
  try {
    return new (ArrayBuffer as unknown as new (n: number, o: object) => ArrayBuffer)(n, { maxByteLength: 4096 });
  } catch {
    return undefined;
  }
}

const throwingHandler: ProxyHandler<object> = new Proxy({}, {
  get() {
    return () => {
      trapsFired++;
      throw new UserTrapError('trap');
    };
  },
});

let second: { exports: Record<string, unknown> } | undefined;
function secondInstance(): { h: unknown; cursor: unknown } | undefined {
  if (second === undefined) {
    second = { exports: {} };
    const file = process.env.CAPPED_EXPIRATIOND_ADDON
      ? path.resolve(process.env.CAPPED_EXPIRATIOND_ADDON)
      : path.join(ROOT, 'build', 'Release', 'capped_expirationd.node');
    process.dlopen(second, file);
  }
  const B = second.exports as { createSpace: (...a: unknown[]) => unknown; space: Record<string, (...a: unknown[]) => unknown> };
  const h = B.createSpace(`second-${serial++}`, 1000);
  B.space.createIndex(h, 'pk', 'TREE', true, [0], ['unsigned']);
  B.space.insert(h, pack([1, 1]), false);
  return { h, cursor: B.space.cursor(h, 0, undefined, 2) };
}

function hostileValues(fx: Fx, others: Fx[]): unknown[] {
  const other = others.find((o) => o !== fx && !o.dropped);
  const dropTrap = new Proxy({}, {
    get() {
      trapsFired++;
      S.drop(fx.h);
      fx.dropped = true;
      return undefined;
    },
  });
  const rab = resizable(64);
  const vals: unknown[] = [
    undefined, null, true, false, NaN, Infinity, -Infinity, -0, 0, 1, 2, 3, 5, 6, 7, 0.5, -1, -(2 ** 31), 2 ** 31,
    2 ** 32 - 1, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e308, Number.MIN_VALUE, 65535, 65536,
    0n, 1n, -1n, 2n ** 64n,
    '', 'TREE', 'HASH', 'unsigned', 'x'.repeat(123), 'y'.repeat(200), '\ud800', 'é'.repeat(70),
    Symbol('s'), Symbol.iterator,
    {}, [], [0], ['unsigned'], [0, 1], [1, 'number'], new Array(65).fill(0), new Date(0), /re/, Object(1), Object('TREE'),
    new Map(), Promise.resolve(1),
    () => 1, class K {}, S.len, native.CursorHandle,
    new Proxy({}, throwingHandler), new Proxy([0], throwingHandler), new Proxy(Buffer.alloc(16), throwingHandler),
    new Proxy(new Float64Array(5), throwingHandler), dropTrap,
    (() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; })(),
    Buffer.alloc(0), Buffer.alloc(1), Buffer.alloc(3), Buffer.alloc(7), Buffer.alloc(9), Buffer.alloc(17), Buffer.alloc(41),
    Buffer.from(shared(64)), Buffer.from(shared(3)), new Uint8Array(5), new Int8Array(5), new Uint16Array(3), new Int32Array(5),
    new Float32Array(5), new BigInt64Array(5), new DataView(new ArrayBuffer(40)), new ArrayBuffer(40), shared(40),
    new Float64Array(0), new Float64Array(1), new Float64Array(4), new Float64Array(5), new Float64Array(6),
    new Float64Array(shared(40)), new Float64Array(shared(8)),
    new Uint32Array(0), Uint32Array.of(0, 0, 0), Uint32Array.of(0, 1, 2, 3, 4, 5), Uint32Array.of(4294967295, 2 ** 31),
    Uint32Array.of(1e6), new Uint32Array(shared(12)),
    detachedBuffer(16), detachedF64(5), detachedU32(3),
    pack([1]), pack(1), pack([1, 2, 'x']), pack([[1, 2, 'a']]), pack([-1]), pack(['s']), pack([1.5]), pack([null]),
    pack([[1, 2]]), pack([1, 2, 3, 4, 5, 6]), Buffer.from([0x91]), Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
    Buffer.from([0x93, 0x01, 0x02]), Buffer.from([0xc1]), Buffer.from([0x91, 0xd9, 0x05, 0x61]), Buffer.from([0x90]),
    Buffer.from(Array.from({ length: 40 }, () => 0x91)), Buffer.from([0x91, 0xa2, 0xed, 0xa0]),
    Buffer.from(Array.from({ length: 1 + int(40) }, () => int(256))),
    ...OPS,
    fx.h, fx.cursors[0], new (native.CursorHandle as unknown as new () => object)(), native.space, native,
  ];
  if (rab !== undefined) vals.push(new Float64Array(rab), new Uint32Array(rab), Buffer.from(rab), new Uint8Array(rab, 8));
  if (other !== undefined) vals.push(other.h, other.cursors[0]);
  if (deadHandles.length > 0) vals.push(pick(deadHandles));
  if (deadCursors.length > 0) vals.push(pick(deadCursors));
  return vals;
}

// ---------------------------------------------------------------------------------------------
// One tracked call.
// ---------------------------------------------------------------------------------------------
function callTracked(caller: Fx, fn: string, handle: unknown, args: unknown[], what: string): { ok: boolean; result?: unknown } {
  // Depth is tracked on the space the handle names, whichever fixture the step picked.
  const fx = byHandle.get(handle) ?? caller;
  const trapsBefore = trapsFired;
  try {
    const result = S[fn](handle, ...args);
    allowedResult(result, what);
    if (handle === fx.h) {
      if (fn === 'begin') fx.depth++;
      if (fn === 'commit' || fn === 'rollback' || fn === 'rollbackChunk') fx.depth--;
      if (fn === 'expireChunk' && args[5] === 2) fx.depth++;
      if (fn === 'deleteVisited' && args[2] === true) fx.depth++;
      if (fn === 'drop') fx.dropped = true;
      if (fn === 'cursor') fx.cursors.push(result);
    }
    if (fn !== 'createIndex' && fn !== 'buildIndexBegin' && trapsFired !== trapsBefore) {
      problems.push(`${what}: user code ran during the conversion of the arguments`);
    }
    return { ok: true, result };
  } catch (e) {
    allowedError(e, what);
    if (fn !== 'createIndex' && fn !== 'buildIndexBegin' && trapsFired !== trapsBefore) {
      problems.push(`${what}: user code ran during the conversion of the arguments`);
    }
    return { ok: false };
  }
}

function retire(fx: Fx): void {
  deadHandles.push(fx.h);
  deadCursors.push(...fx.cursors.slice(0, 2));
  if (deadHandles.length > 8) deadHandles.shift();
  if (deadCursors.length > 16) deadCursors.shift();
}

function refresh(fxs: Fx[]): void {
  for (let i = 0; i < fxs.length; i++) {
    const fx = fxs[i];
    if (fx.dropped) {
      retire(fx);
      fxs[i] = makeFx(fx.kind);
    } else if (fx.depth === 0 && (S.len(fx.h) as number) < 5) {
      for (let k = 0; k < 30; k++) {
        try {
          S.insert(fx.h, tuple(k), true);
        } catch {
          // a definition the fuzzer added may refuse it
        }
      }
    }
    if (fx.cursors.length > 12) fx.cursors.splice(2, fx.cursors.length - 6);
  }
}

/** Valid arguments for fn, some replaced by hostile values; the count sometimes wrong. */
function argsFor(fn: string, fx: Fx, fxs: Fx[], hostileRate: number): unknown[] {
  const sig = SIG[fn];
  const args: unknown[] = [];
  for (const k of sig) args.push(validArg(k, fx, fn, args));
  if (rnd() < hostileRate) {
    const vals = hostileValues(fx, fxs);
    const n = 1 + int(2);
    for (let j = 0; j < n && sig.length > 0; j++) args[int(sig.length)] = pick(vals);
  }
  const r = rnd();
  if (r < 0.08) args.length = int(args.length + 1);
  else if (r < 0.14) {
    const vals = hostileValues(fx, fxs);
    for (let j = int(8); j > 0; j--) args.push(pick(vals));
  }
  return args;
}

afterAll(() => {
  native.setErrorClass(CappedError as unknown as new (m: string, c: string) => Error);
});

// ---------------------------------------------------------------------------------------------
// The random part.
// ---------------------------------------------------------------------------------------------
describe('binding fuzz', () => {
  it(`random calls with hostile arguments (seed ${SEED}, ${STEPS} steps) throw only CappedError/TypeError and keep every space sound`, () => {
    rnd = mulberry32(SEED);
    problems.length = 0;
    const fxs: Fx[] = [makeFx('tree'), makeFx('hash'), makeFx('capped'), makeFx('ttl')];
    const log: string[] = [];
    for (let step = 0; step < STEPS && problems.length === 0; step++) {
      const fx = pick(fxs);
      const fn = pick(FUNCTIONS);
      const args = argsFor(fn, fx, fxs, 0.5);
      // The handle: almost always the fixture's; sometimes something else.
      let handle: unknown = fx.h;
      if (rnd() < 0.06) {
        const bad: unknown[] = [undefined, null, 0, {}, fx.cursors[0], native.space, ...deadHandles,
          new (native.CursorHandle as unknown as new () => object)(), Buffer.alloc(8), Symbol('h')];
        const other = fxs.find((o) => o !== fx && !o.dropped);
        if (other) bad.push(other.h);
        handle = pick(bad);
      }
      // drop and truncate are rarer: they end the fixture's useful life.
      if ((fn === 'drop' && rnd() < 0.7) || (fn === 'truncate' && rnd() < 0.5)) continue;
      const what = `step ${step}: ${fn}(${[handle, ...args].map(describeValue).join(', ')})`;
      log.push(what);
      if (log.length > 20) log.shift();
      callTracked(fx, fn, handle, args, what);
      for (const f of fxs) sound(f, what);
      // A cursor of the fixture should still answer (or say why not) after anything.
      for (const c of fx.cursors.slice(-3)) {
        try {
          const vals = rnd() < 0.2 ? hostileValues(fx, fxs) : [Buffer.alloc(64)];
          const m = pick(['next', 'next', 'next', 'reset', 'restore']);
          (c as Record<string, (...a: unknown[]) => unknown>)[m](pick(vals), rnd() < 0.3 ? pick(vals) : undefined);
        } catch (e) {
          allowedError(e, `${what}; then cursor.next()`);
        }
      }
      if (step % 50 === 49) {
        // Close whatever the fuzzer left open, innermost first, so the spaces keep moving.
        for (const f of fxs) {
          while (!f.dropped && f.depth > 0) {
            try {
              S.rollback(f.h, 0);
              f.depth--;
            } catch {
              f.depth = 0;
            }
          }
        }
        refresh(fxs);
      } else if (fxs.some((f) => f.dropped)) {
        refresh(fxs);
      }
    }
    for (const f of fxs) if (!f.dropped) S.drop(f.h);
    if (process.env.REVIEW_VERBOSE) console.log(Object.fromEntries([...codesSeen].sort()));
    if (problems.length > 0) problems.push('last calls:\n  ' + log.join('\n  '));
    expect(problems).toEqual([]);
  });

  it('re-entrant calls from createIndex getters (drop, truncate, begin, other calls) end in a CappedError or success', () => {
    rnd = mulberry32(SEED + 7);
    problems.length = 0;
    for (let round = 0; round < 300; round++) {
      const fx = makeFx(pick(['tree', 'hash'] as const));
      const fxs = [fx];
      const inner = pick(FUNCTIONS);
      const innerArgs = argsFor(inner, fx, fxs, 0.3);
      const fields: unknown[] = [2];
      const types: unknown[] = ['string'];
      const slot = rnd() < 0.5 ? fields : types;
      const value = slot[0];
      Object.defineProperty(slot, 0, {
        get() {
          trapsFired++;
          callTracked(fx, inner, fx.h, innerArgs, `getter: ${inner}`);
          if (rnd() < 0.1) throw new UserTrapError('getter threw');
          return value;
        },
      });
      const outer = rnd() < 0.7 ? 'createIndex' : 'buildIndexBegin';
      const what = `round ${round}: ${outer} with a getter calling ${inner}(${innerArgs.map(describeValue).join(', ')})`;
      const r = callTracked(fx, outer, fx.h, [`g${round}`, 'TREE', false, fields, types, false], what);
      if (r.ok && fx.dropped) problems.push(`${what}: succeeded on a space the getter dropped`);
      if (outer === 'buildIndexBegin' && r.ok && !fx.dropped) {
        for (let k = 0; k < 10; k++) {
          const s = callTracked(fx, 'buildIndexStep', fx.h, [100, 50], `${what}; buildIndexStep`);
          if (!s.ok || s.result !== -1) break;
          if (fx.depth > 0) break;
        }
      }
      sound(fx, what);
      if (!fx.dropped) S.drop(fx.h);
      if (problems.length > 0) break;
    }
    expect(problems).toEqual([]);
  });

  it('an error class whose constructor calls back into the addon (drop, truncate, begin, a cursor) keeps the process sound', () => {
    rnd = mulberry32(SEED + 11);
    problems.length = 0;
    let current: Fx | undefined;
    let depth = 0;
    class Reentrant extends CappedError {
      constructor(message: string, code: string) {
        super(message, code as never);
        if (depth > 2 || current === undefined) return;
        depth++;
        try {
          const fx = current;
          const fn = pick(['drop', 'truncate', 'begin', 'commit', 'rollback', 'insert', 'cursor', 'expireChunk', 'deleteVisited', 'len']);
          callTracked(fx, fn, fx.h, argsFor(fn, fx, [fx], 0.3), `error constructor: ${fn}`);
        } finally {
          depth--;
        }
      }
    }
    native.setErrorClass(Reentrant as unknown as new (m: string, c: string) => Error);
    try {
      for (let round = 0; round < 400; round++) {
        const fx = current === undefined || current.dropped ? makeFx(pick(['tree', 'hash'] as const)) : current;
        current = fx;
        const fn = pick(FUNCTIONS);
        const args = argsFor(fn, fx, [fx], 0.9);
        callTracked(fx, fn, fx.h, args, `round ${round}: ${fn}(${args.map(describeValue).join(', ')})`);
        sound(fx, `round ${round}`);
        if (problems.length > 0) break;
      }
    } finally {
      native.setErrorClass(CappedError as unknown as new (m: string, c: string) => Error);
    }
    if (current && !current.dropped) S.drop(current.h);
    expect(problems).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Systematic matrices.
// ---------------------------------------------------------------------------------------------
describe('binding argument matrix', () => {
  it('every hostile value in every argument position of every function: success or a CappedError, no user code run', () => {
    rnd = mulberry32(SEED + 3);
    problems.length = 0;
    let fx = makeFx('tree');
    for (const fn of FUNCTIONS) {
      if (fn === 'drop' || fn === 'truncate') continue;
      const sig = SIG[fn];
      for (let pos = 0; pos < sig.length; pos++) {
        let vals = hostileValues(fx, [fx]);
        const count = vals.length;
        for (let v = 0; v < count; v++) {
          if (fx.dropped) {
            retire(fx);
            fx = makeFx('tree');
            vals = hostileValues(fx, [fx]);
          }
          const args: unknown[] = [];
          for (const k of sig) args.push(validArg(k, fx, fn, args));
          args[pos] = vals[v];
          const what = `${fn} arg ${pos} = ${describeValue(args[pos])}`;
          callTracked(fx, fn, fx.h, args, what);
          while (!fx.dropped && fx.depth > 0) {
            try { S.rollback(fx.h, 0); } catch { /* counted below */ }
            fx.depth--;
          }
          sound(fx, what);
          if (!fx.dropped && (S.len(fx.h) as number) < 5) refresh([fx]);
        }
      }
    }
    if (!fx.dropped) S.drop(fx.h);
    expect(problems).toEqual([]);
  });

  it('createSpace: every hostile value in every position gives a handle or a CappedError', () => {
    problems.length = 0;
    const fx = makeFx('tree');
    const valid = (): unknown[] => ['cs', 1000, 1, 10, 10000, true, false];
    const vals = hostileValues(fx, [fx]);
    for (let pos = 0; pos < 7; pos++) {
      for (const v of vals) {
        const args = valid();
        args[pos] = v;
        try {
          const h = native.createSpace(...(args as Parameters<typeof native.createSpace>));
          // A handle: usable, then dropped.
          S.createIndex(h, 'pk', 'TREE', true, [0], ['unsigned']);
          S.insert(h, pack([1, 2]), false);
          if (S.checkIntegrity(h) !== '') problems.push(`createSpace arg ${pos} = ${describeValue(v)}: unsound`);
          S.drop(h);
        } catch (e) {
          allowedError(e, `createSpace arg ${pos} = ${describeValue(v)}`);
        }
      }
    }
    for (let n = 0; n <= 12; n++) {
      const args = [...valid(), {}, {}, {}, {}, {}, {}].slice(0, n);
      try {
        const h = native.createSpace(...(args as Parameters<typeof native.createSpace>));
        S.drop(h);
      } catch (e) {
        allowedError(e, `createSpace with ${n} arguments`);
      }
    }
    S.drop(fx.h);
    expect(problems).toEqual([]);
  });

  it('setErrorClass with hostile constructors (arrow function, throwing, Proxy dropping the space, non-functions)', () => {
    problems.length = 0;
    let fx = makeFx('tree');
    const ctors: unknown[] = [
      () => 1,
      function Throwing() { throw new UserTrapError('ctor threw'); },
      new Proxy(CappedError, { construct() { S.drop(fx.h); fx.dropped = true; return new CappedError('proxy', 'ER_INTERNAL'); } }),
      new Proxy(CappedError, { construct() { return 1 as unknown as object; } }),
      CappedError.bind(null),
      class extends CappedError { constructor(m: string, c: string) { super(m, c as never); S.truncate(fx.h); } },
      Symbol, BigInt,
    ];
    try {
      for (const ctor of ctors) {
        native.setErrorClass(ctor as new (m: string, c: string) => Error);
        for (let k = 0; k < 40; k++) {
          if (fx.dropped) fx = makeFx('tree');
          const fn = pick(FUNCTIONS.filter((f) => f !== 'drop'));
          const args = argsFor(fn, fx, [fx], 1);
          try {
            S[fn](fx.h, ...args);
          } catch (e) {
            // Anything the constructor made or threw is what the call throws: any value is fine, a crash is not.
            void e;
          }
          while (!fx.dropped && fx.depth > 0) {
            try { S.rollback(fx.h, 0); } catch { /* ignore */ }
            fx.depth--;
          }
          sound(fx, `setErrorClass(${describeValue(ctor)}) then ${fn}`);
        }
      }
      for (const bad of [undefined, 1, {}, 'x']) {
        expect(() => native.setErrorClass(bad as never)).toThrow(TypeError);
      }
    } finally {
      native.setErrorClass(CappedError as unknown as new (m: string, c: string) => Error);
    }
    if (!fx.dropped) S.drop(fx.h);
    expect(problems).toEqual([]);
  });

  it('every argument count from 0 to 12 (valid prefixes, then junk) on every function', () => {
    problems.length = 0;
    let fx = makeFx('hash');
    for (const fn of FUNCTIONS) {
      if (fn === 'drop') continue;
      for (let n = 0; n <= 12; n++) {
        if (fx.dropped) fx = makeFx('hash');
        const args: unknown[] = [];
        for (const k of SIG[fn]) args.push(validArg(k, fx, fn, args));
        while (args.length < n) args.push(args.length % 2 ? Buffer.alloc(3) : {});
        args.length = n;
        callTracked(fx, fn, fx.h, args, `${fn} with ${n} arguments`);
        while (!fx.dropped && fx.depth > 0) {
          try { S.rollback(fx.h, 0); } catch { /* ignore */ }
          fx.depth--;
        }
        sound(fx, `${fn} with ${n} arguments`);
      }
      // No arguments at all, not even a handle.
      try {
        S[fn]();
        problems.push(`${fn}() without a handle succeeded`);
      } catch (e) {
        allowedError(e, `${fn}()`);
      }
    }
    if (!fx.dropped) S.drop(fx.h);
    expect(problems).toEqual([]);
  });

  it('every function refuses a handle that is not a live space of this addon instance with ER_ILLEGAL_PARAMS (ER_SPACE_DROPPED when dropped)', () => {
    const fx = makeFx('tree');
    const dead = makeFx('tree');
    S.drop(dead.h);
    const other = secondInstance();
    const bad: Array<[string, unknown, string]> = [
      ['undefined', undefined, 'ER_ILLEGAL_PARAMS'],
      ['null', null, 'ER_ILLEGAL_PARAMS'],
      ['a number', 1, 'ER_ILLEGAL_PARAMS'],
      ['a plain object', {}, 'ER_ILLEGAL_PARAMS'],
      ['a cursor handle', fx.cursors[0], 'ER_ILLEGAL_PARAMS'],
      ['an empty CursorHandle', new (native.CursorHandle as unknown as new () => object)(), 'ER_ILLEGAL_PARAMS'],
      ['the space functions object', native.space, 'ER_ILLEGAL_PARAMS'],
      ['a Buffer', Buffer.alloc(8), 'ER_ILLEGAL_PARAMS'],
      ['a dropped space', dead.h, 'ER_SPACE_DROPPED'],
    ];
    if (other) bad.push(['a space of a second instance of the addon', other.h, 'ER_ILLEGAL_PARAMS']);
    for (const fn of FUNCTIONS) {
      for (const [label, h, code] of bad) {
        const args: unknown[] = [];
        for (const k of SIG[fn]) args.push(validArg(k, fx, fn, args));
        let thrown: unknown;
        try {
          S[fn](h, ...args);
        } catch (e) {
          thrown = e;
        }
        // drop() of a dropped space is a no-op by design (space_.reset()).
        if (fn === 'drop' && label === 'a dropped space' && thrown === undefined) continue;
        expect(thrown, `${fn} with ${label}`).toBeInstanceOf(CappedError);
        // A dropped space gives ER_SPACE_DROPPED unless an argument is refused first (cursor args are
        // the dropped space's own cursors only if passed, here they are fx's: ER_ILLEGAL_PARAMS).
        if (code === 'ER_SPACE_DROPPED') {
          expect(['ER_SPACE_DROPPED', 'ER_ILLEGAL_PARAMS'], `${fn} with ${label}`).toContain((thrown as CappedError).code);
        } else {
          expect((thrown as CappedError).code, `${fn} with ${label}`).toBe(code);
        }
      }
    }
    sound(fx, 'handles');
    S.drop(fx.h);
    expect(problems).toEqual([]);
  });

  it('cursor arguments: another space\'s, a dropped space\'s, a second instance\'s, an empty CursorHandle, a plain object: ER_ILLEGAL_PARAMS', () => {
    const fx = makeFx('tree');
    const other = makeFx('hash');
    const dead = makeFx('tree');
    S.drop(dead.h);
    const second = secondInstance();
    const bad: unknown[] = [other.cursors[0], dead.cursors[0], new (native.CursorHandle as unknown as new () => object)(), {}, fx.h,
      Object.create(fx.cursors[0] as object), undefined];
    if (second) bad.push(second.cursor);
    for (const fn of ['expireChunk', 'rollbackChunk', 'scanChunk', 'deleteVisited']) {
      for (const c of bad) {
        const args: unknown[] = [];
        for (const k of SIG[fn]) args.push(validArg(k, fx, fn, args));
        args[0] = c;
        if (fn === 'expireChunk') args[5] = 0;
        let thrown: unknown;
        try {
          S[fn](fx.h, ...args);
        } catch (e) {
          thrown = e;
        }
        expect(thrown, `${fn}(${describeValue(c)})`).toBeInstanceOf(CappedError);
        expect((thrown as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
      }
    }
    // A dropped space's cursor, used through its own (dropped) handle: ER_SPACE_DROPPED.
    expect(() => S.scanChunk(dead.h, dead.cursors[0], 5, new Float64Array(5), Buffer.alloc(64))).toThrow(
      expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    for (const m of ['next', 'reset', 'restore'] as const) {
      expect(() => (dead.cursors[0] as Record<string, (b?: Buffer) => unknown>)[m](Buffer.alloc(8)), m).toThrow(
        expect.objectContaining({ code: 'ER_SPACE_DROPPED' }));
    }
    sound(fx, 'cursor args');
    S.drop(fx.h);
    S.drop(other.h);
  });

  it('cursor methods with a wrong `this` throw a TypeError or ER_ILLEGAL_PARAMS, never crash', () => {
    const fx = makeFx('tree');
    const proto = (native.CursorHandle as unknown as { prototype: Record<string, (...a: unknown[]) => unknown> }).prototype;
    const second = secondInstance();
    const thisValues: unknown[] = [undefined, null, 1, 'x', {}, fx.h, Buffer.alloc(4), new (native.CursorHandle as unknown as new () => object)(),
      Object.create(fx.cursors[0] as object), new Proxy(fx.cursors[0] as object, {}), native.space, () => 1];
    if (second) thisValues.push(second.cursor);
    for (const m of ['next', 'reset', 'restore']) {
      for (const self of thisValues) {
        let thrown: unknown;
        try {
          proto[m].call(self, Buffer.alloc(16));
        } catch (e) {
          thrown = e;
        }
        const ok = thrown instanceof TypeError || (thrown instanceof CappedError && (thrown as CappedError).code === 'ER_ILLEGAL_PARAMS');
        expect(ok, `${m}.call(${describeValue(self)}): ${String(thrown)}`).toBe(true);
      }
    }
    // `new CursorHandle()` with arguments, and called without new.
    expect(() => new (native.CursorHandle as unknown as new (...a: unknown[]) => object)(1, 2, 3)).not.toThrow();
    try {
      (native.CursorHandle as unknown as () => unknown)();
    } catch (e) {
      expect(e).toBeInstanceOf(TypeError);
    }
    sound(fx, 'cursor this');
    S.drop(fx.h);
  });
});

// ---------------------------------------------------------------------------------------------
// Unusual but valid sequences.
// ---------------------------------------------------------------------------------------------
function codeOfCall(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    if (!(e instanceof CappedError)) throw e;
    return (e as CappedError).code;
  }
}

function expiring(kind: 'TREE' | 'HASH', n = 200): unknown {
  const h = native.createSpace(`seq-${serial++}`, 4096);
  S.createIndex(h, 'pk', kind, true, [0], ['unsigned']);
  S.createIndex(h, 'ttl', 'TREE', false, [1], ['number']);
  for (let i = 0; i < n; i++) S.insert(h, pack([i, i, 'v'.repeat(i % 50)]), false);
  return h;
}

function integrity(h: unknown): void {
  expect(S.checkIntegrity(h)).toBe('');
  expect(S.count(h, 0, undefined, 2)).toBe(S.len(h));
  const r = S.select(h, 0, undefined, 2, Infinity, 0, Buffer.alloc(0));
  expect(typeof r === 'number' || Buffer.isBuffer(r)).toBe(true);
}

describe('sequences', () => {
  for (const kind of ['TREE', 'HASH'] as const) {
    it(`${kind}: expireChunk on a cursor after truncate, refill, a new index and a completed async build`, () => {
      const h = expiring(kind);
      const out = new Float64Array(5);
      for (const bounded of [false, true]) {
        const c = S.cursor(h, 0, undefined, 2, bounded);
        S.expireChunk(h, c, 1, 10, 5, false, 0, out, Buffer.alloc(0));
        S.truncate(h);
        S.expireChunk(h, c, 1, 10, 1000, false, 1, out, Buffer.alloc(0));
        for (let i = 0; i < 300; i++) S.insert(h, pack([i, i]), true);
        S.expireChunk(h, c, 1, 50, 100, false, 1, out, Buffer.alloc(0));
        S.createIndex(h, `extra${bounded}`, 'TREE', false, [1], ['number']);
        S.expireChunk(h, c, 1, 50, 150, false, 2, out, Buffer.alloc(0));
        S.commit(h, out[4]);
        S.buildIndexBegin(h, `async${bounded}`, 'HASH', true, [0], ['unsigned']);
        S.expireChunk(h, c, 1, 7, 160, false, 0, out, Buffer.alloc(0));
        let id = -1;
        for (let k = 0; k < 100 && id < 0; k++) {
          id = S.buildIndexStep(h, 3, 10) as number;
          S.expireChunk(h, c, 1, 3, 170 + k, false, 1, out, Buffer.alloc(0));
          S.insert(h, pack([1000 + k, 1000 + k]), true);
        }
        expect(id).toBeGreaterThan(0);
        const c2 = S.cursor(h, id, undefined, 2);
        S.expireChunk(h, c2, 1, 50, 400, false, 1, out, Buffer.alloc(0));
        S.expireChunk(h, c, 1, 1000, 1e9, false, 0, out, Buffer.alloc(0));
        integrity(h);
        S.truncate(h);
        for (let i = 0; i < 100; i++) S.insert(h, pack([i, i]), true);
      }
      S.drop(h);
    });
  }

  it('commit twice, rollback after commit, rollbackChunk without a chunk: ER_TRANSACTION', () => {
    const h = expiring('TREE', 20);
    const sp = S.begin(h);
    S.insert(h, pack([500, 1]), false);
    S.commit(h, sp);
    expect(codeOfCall(() => S.commit(h, sp))).toBe('ER_TRANSACTION');
    expect(codeOfCall(() => S.rollback(h, sp))).toBe('ER_TRANSACTION');
    const c = S.cursor(h, 1, undefined, 2);
    expect(codeOfCall(() => S.rollbackChunk(h, c, 0))).toBe('ER_TRANSACTION');
    const out = new Float64Array(5);
    S.expireChunk(h, c, 1, 5, 100, true, 0, out, Buffer.alloc(0));
    expect(codeOfCall(() => S.rollbackChunk(h, c, out[4]))).toBe('ER_TRANSACTION');
    expect(codeOfCall(() => S.commit(h, 2 ** 53))).toBe('ER_TRANSACTION');
    expect(codeOfCall(() => S.rollback(h, Infinity))).toBe('ER_TRANSACTION');
    integrity(h);
    S.drop(h);
  });

  it('a chunk left open (mode 2), then other calls in between, then commit or rollbackChunk', () => {
    for (const end of ['commit', 'rollbackChunk', 'rollback', 'drop', 'otherCursor'] as const) {
      const h = expiring('HASH', 100);
      const c = S.cursor(h, 0, undefined, 2);
      const c2 = S.cursor(h, 1, undefined, 2, true);
      const out = new Float64Array(5);
      const before = S.len(h) as number;
      const deleted = S.expireChunk(h, c, 1, 30, 50, false, 2, out, Buffer.alloc(0));
      expect(out[1]).toBeGreaterThan(0);
      expect(Buffer.isBuffer(deleted) || typeof deleted === 'number').toBe(true);
      const sp = out[4];
      // In between: reads, writes, another chunk (nested), a scan, index definitions, cursor steps.
      S.insert(h, pack([5000, 1]), false);
      S.delete(h, 70, Buffer.alloc(0));
      S.update(h, 0, 80, pack([['=', 3, 'u']]), 0, pack([['=', 3, 'u']]).length, Buffer.alloc(0));
      S.upsert(h, pack([81, 3]), pack([['+', 1, 1]]), 0, pack([['+', 1, 1]]).length, true, Buffer.alloc(0));
      const out2 = new Float64Array(5);
      S.expireChunk(h, c2, 1, 10, 90, true, 2, out2, Buffer.alloc(0));
      S.scanChunk(h, c, 10, new Float64Array(5), Buffer.alloc(0));
      S.deleteVisited(h, c, Uint32Array.of(0, 1, 1, 0), false, new Float64Array(5), Buffer.alloc(0));
      (c as { next(b: Buffer): unknown }).next(Buffer.alloc(0));
      expect(codeOfCall(() => S.createIndex(h, 'no', 'TREE', false, [1], ['number']))).toBe('ER_TRANSACTION');
      expect(codeOfCall(() => S.buildIndexBegin(h, 'no', 'TREE', false, [1], ['number']))).toBe('ER_TRANSACTION');
      S.truncate(h);
      expect(S.len(h)).toBe(0);
      integrity(h);
      S.rollback(h, out2[4]);  // the inner chunk (and everything after it)
      integrity(h);
      if (end === 'commit') S.commit(h, sp);
      else if (end === 'rollbackChunk') {
        S.rollbackChunk(h, c, sp);
        expect(S.len(h)).toBe(before);
      } else if (end === 'rollback') {
        S.rollback(h, sp);
        expect(S.len(h)).toBe(before);
      } else if (end === 'otherCursor') {
        S.rollbackChunk(h, c2, sp);
        expect(S.len(h)).toBe(before);
      }
      if (end !== 'drop') {
        integrity(h);
        S.expireChunk(h, c, 1, 1000, 1e9, false, 1, out, Buffer.alloc(0));
        integrity(h);
      }
      S.drop(h);
      expect(codeOfCall(() => (c as { next(b: Buffer): unknown }).next(Buffer.alloc(0)))).toBe('ER_SPACE_DROPPED');
    }
  });

  it('deleteVisited: duplicates, out-of-range positions, no scan yet, positions over a SharedArrayBuffer, detached arrays', () => {
    const h = expiring('TREE', 50);
    const c = S.cursor(h, 0, undefined, 2);
    const out = new Float64Array(5);
    expect(codeOfCall(() => S.deleteVisited(h, c, Uint32Array.of(0), false, out, Buffer.alloc(0)))).toBe('ER_ILLEGAL_PARAMS');
    expect(S.deleteVisited(h, c, new Uint32Array(0), false, out, Buffer.alloc(0))).toBe(0);
    S.scanChunk(h, c, 10, out, Buffer.alloc(0));
    expect(out[0]).toBe(10);
    const before = S.len(h) as number;
    for (const bad of [Uint32Array.of(10), Uint32Array.of(0, 4294967295), Uint32Array.of(2 ** 31), Uint32Array.of(3, 3, 11)]) {
      expect(codeOfCall(() => S.deleteVisited(h, c, bad, false, out, Buffer.alloc(0)))).toBe('ER_ILLEGAL_PARAMS');
      expect(S.len(h)).toBe(before);
      integrity(h);
    }
    S.deleteVisited(h, c, Uint32Array.of(1, 1, 1, 2, 2), false, out, Buffer.alloc(0));
    expect(out[1]).toBe(2);
    expect(S.len(h)).toBe(before - 2);
    const sab = new Uint32Array(new SharedArrayBuffer(16));
    sab.set([3, 4, 3, 4]);
    S.deleteVisited(h, c, sab, true, out, Buffer.alloc(0));
    expect(out[1]).toBe(2);
    S.rollbackChunk(h, c, out[4]);
    expect(S.len(h)).toBe(before - 2);
    expect(codeOfCall(() => S.deleteVisited(h, c, detachedU32(4), false, out, Buffer.alloc(0)))).toBeUndefined();
    expect(codeOfCall(() => S.deleteVisited(h, c, Uint32Array.of(5), false, detachedF64(5), Buffer.alloc(0)))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOfCall(() => S.deleteVisited(h, c, Uint32Array.of(5), false, new Float64Array(4), Buffer.alloc(0)))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOfCall(() => S.deleteVisited(h, c, Int32Array.of(5), false, out, Buffer.alloc(0)))).toBe('ER_ILLEGAL_PARAMS');
    // Scratch over a detached buffer / SharedArrayBuffer: a new Buffer or bytes written there.
    expect(Buffer.isBuffer(S.deleteVisited(h, c, Uint32Array.of(5), false, out, detachedBuffer(64)))).toBe(true);
    const shScratch = Buffer.from(new SharedArrayBuffer(4096));
    expect(typeof S.deleteVisited(h, c, Uint32Array.of(6), false, out, shScratch)).toBe('number');
    // After the space changed under the visited copies: nothing wrong is deleted.
    S.truncate(h);
    expect(S.deleteVisited(h, c, Uint32Array.of(7, 8, 9), false, out, Buffer.alloc(0))).toBe(0);
    integrity(h);
    S.drop(h);
  });

  it('expireChunk refuses mode, scanSize and fieldno values out of range with ER_ILLEGAL_PARAMS and changes nothing', () => {
    const h = expiring('TREE', 30);
    const c = S.cursor(h, 1, undefined, 2);
    const out = new Float64Array(5);
    for (const mode of [3, 4, 255, 2 ** 32 - 1, 2 ** 32, -1, 1.5, NaN, Infinity, -0.5, '2', 2n, null, true]) {
      expect(codeOfCall(() => S.expireChunk(h, c, 1, 10, 100, false, mode, out, Buffer.alloc(0))), String(mode)).toBe('ER_ILLEGAL_PARAMS');
    }
    for (const scan of [0, -1, 2 ** 32, NaN, 0.5]) {
      expect(codeOfCall(() => S.expireChunk(h, c, 1, scan, 100, false, 0, out, Buffer.alloc(0))), String(scan)).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(S.len(h)).toBe(30);
    // A TTL field past every tuple's end, early break over a non-TTL index, odd `now`s.
    for (const fieldno of [0, 2, 3, 65535, 2 ** 32 - 1]) {
      for (const now of [NaN, -Infinity, Infinity, -0, 2 ** 64, -(2 ** 63), 1e-300]) {
        for (const early of [false, true]) {
          const code = codeOfCall(() => S.expireChunk(h, c, fieldno, 3, now, early, 1, out, Buffer.alloc(0)));
          expect([undefined, 'ER_ILLEGAL_PARAMS']).toContain(code);
          integrity(h);
        }
      }
    }
    // -0 as mode is 0.
    expect(codeOfCall(() => S.expireChunk(h, c, 1, 1, 0, false, -0, out, Buffer.alloc(0)))).toBeUndefined();
    S.drop(h);
  });

  it('index ids out of range: ER_NO_SUCH_INDEX (in [0, 2^32)) or ER_ILLEGAL_PARAMS (outside), before the other arguments', () => {
    const h = expiring('TREE', 5);
    for (const fn of ['get', 'select', 'count', 'minmax', 'len', 'cursor', 'update', 'updateNumber']) {
      for (const id of [2, 3, 1000, 2 ** 32 - 1]) {
        const args: unknown[] = [];
        const fx = { h, kind: 'tree', depth: 0, dropped: false, cursors: [], serial: 0 } as Fx;
        for (const k of SIG[fn]) args.push(validArg(k, fx, fn, args));
        args[0] = id;
        expect(codeOfCall(() => S[fn](h, ...args)), `${fn}(${id})`).toBe('ER_NO_SUCH_INDEX');
        args[1] = Symbol('bad key');
        expect(codeOfCall(() => S[fn](h, ...args)), `${fn}(${id}, symbol)`).toBe('ER_NO_SUCH_INDEX');
      }
      for (const id of [-1, 2 ** 32, 0.5, NaN, Infinity, '0', 0n]) {
        const args: unknown[] = [];
        const fx = { h, kind: 'tree', depth: 0, dropped: false, cursors: [], serial: 0 } as Fx;
        for (const k of SIG[fn]) args.push(validArg(k, fx, fn, args));
        args[0] = id;
        expect(codeOfCall(() => S[fn](h, ...args)), `${fn}(${String(id)})`).toBe('ER_ILLEGAL_PARAMS');
      }
    }
    integrity(h);
    S.drop(h);
  });

  it('out arrays and scratch buffers of every size, shared, detached and resizable, for memory/expireChunk/scanChunk/get', () => {
    const h = expiring('TREE', 40);
    const c = S.cursor(h, 0, undefined, 2);
    const outs: unknown[] = [new Float64Array(0), new Float64Array(1), new Float64Array(2), new Float64Array(4), new Float64Array(5),
      new Float64Array(new SharedArrayBuffer(40)), detachedF64(5), new Float32Array(5), new Float64Array(new ArrayBuffer(48), 8, 5)];
    const rab = resizable(40);
    if (rab) outs.push(new Float64Array(rab));
    const scratches: unknown[] = [Buffer.alloc(0), Buffer.alloc(1), Buffer.alloc(13), Buffer.alloc(4096), detachedBuffer(64),
      Buffer.from(new SharedArrayBuffer(4096)), new Float64Array(512), new DataView(new ArrayBuffer(4096)), new Uint8Array(4096).subarray(7)];
    if (rab) scratches.push(new Uint8Array(rab));
    for (const out of outs) {
      const n = out instanceof Float64Array ? out.length : -1;
      const mem = codeOfCall(() => S.memory(h, out));
      expect(mem, `memory(${describeValue(out)})`).toBe(n >= 2 ? undefined : 'ER_ILLEGAL_PARAMS');
      for (const scratch of scratches) {
        const e = codeOfCall(() => S.expireChunk(h, c, 1, 3, 5, false, 1, out, scratch));
        expect(e, `expireChunk(out ${describeValue(out)}, scratch ${describeValue(scratch)})`).toBe(n >= 5 ? undefined : 'ER_ILLEGAL_PARAMS');
        const s = codeOfCall(() => S.scanChunk(h, c, 3, out, scratch));
        expect(s).toBe(n >= 5 ? undefined : 'ER_ILLEGAL_PARAMS');
        expect(codeOfCall(() => S.get(h, 0, 30, scratch))).toBeUndefined();
        expect(codeOfCall(() => S.select(h, 0, undefined, 2, 3, 0, scratch))).toBeUndefined();
      }
    }
    // A resizable buffer shrunk to nothing, then used as out and scratch.
    if (rab) {
      const f = new Float64Array(rab);
      const u = new Uint8Array(rab);
      (rab as unknown as { resize(n: number): void }).resize(0);
      expect(codeOfCall(() => S.memory(h, f))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOfCall(() => S.get(h, 0, 31, u))).toBeUndefined();
      const fixed = new Float64Array(rab, 0, 0);
      expect(codeOfCall(() => S.memory(h, fixed))).toBe('ER_ILLEGAL_PARAMS');
    }
    integrity(h);
    S.drop(h);
  });

  it('keys, tuples and ops over SharedArrayBuffers and detached buffers, and start/end ranges at and past the ends', () => {
    const h = expiring('TREE', 20);
    const sh = Buffer.from(new SharedArrayBuffer(64));
    pack([3]).copy(sh);
    expect(codeOfCall(() => S.get(h, 0, sh.subarray(0, 2), Buffer.alloc(64)))).toBeUndefined();
    const t = pack([77, 1, 'x']);
    const shT = Buffer.from(new SharedArrayBuffer(t.length + 10));
    t.copy(shT, 5);
    expect(codeOfCall(() => S.insert(h, shT, false, 5, 5 + t.length))).toBeUndefined();
    for (const [start, end] of [[0, 0], [5, 4], [0, shT.length + 1], [shT.length, shT.length], [2 ** 32 - 1, 2 ** 32 - 1], [-1, 3], [0, 2 ** 32]]) {
      const code = codeOfCall(() => S.insert(h, shT, true, start, end));
      expect(['ER_ILLEGAL_PARAMS', 'ER_TUPLE_FORMAT'], `insert ${start}..${end}`).toContain(code);
    }
    const ops = pack([['=', 2, 'y']]);
    for (const [start, end] of [[0, ops.length + 1], [3, 2], [ops.length, ops.length], [2 ** 32 - 1, 0]]) {
      expect(codeOfCall(() => S.update(h, 0, 3, ops, start, end, Buffer.alloc(0))), `update ${start}..${end}`).toMatch(/^ER_/);
      expect(codeOfCall(() => S.upsert(h, pack([3, 1]), ops, start, end, true, Buffer.alloc(0))), `upsert ${start}..${end}`).toMatch(/^ER_/);
    }
    for (const d of [detachedBuffer(16), Buffer.alloc(0)]) {
      expect(codeOfCall(() => S.get(h, 0, d, Buffer.alloc(0)))).toBe('ER_KEY_TYPE');
      expect(codeOfCall(() => S.insert(h, d, false))).toBe('ER_TUPLE_FORMAT');
      expect(codeOfCall(() => S.insert(h, d, false, 0, 0))).toBe('ER_TUPLE_FORMAT');
      expect(codeOfCall(() => S.insertMany(h, d))).toBe('ER_TUPLE_FORMAT');
      expect(codeOfCall(() => S.update(h, 0, 3, d, 0, 0, Buffer.alloc(0)))).toMatch(/^ER_/);
      expect(codeOfCall(() => S.upsert(h, d, d, 0, 0, true, d))).toMatch(/^ER_/);
      expect(codeOfCall(() => S.cursor(h, 0, d, 0))).toBe('ER_KEY_TYPE');
    }
    integrity(h);
    S.drop(h);
  });

  it('handles of the public Space (handleOf) take the same hostile arguments and the Space stays sound', () => {
    rnd = mulberry32(SEED + 5);
    problems.length = 0;
    const space = new Space('pub-fuzz');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let i = 0; i < 30; i++) space.insert([i, i, 'p']);
    const w = handleOf(space) as unknown as Record<string, (...a: unknown[]) => unknown>;
    const fx: Fx = { h: undefined, kind: 'tree', depth: 0, dropped: false, cursors: [w.cursor(0, undefined, 2)], serial: 0 };
    for (let step = 0; step < 600; step++) {
      const fn = pick(FUNCTIONS.filter((f) => f !== 'drop' && f !== 'truncate' && f !== 'begin' && f !== 'commit' && f !== 'rollback'
        && f !== 'rollbackChunk'));
      const args = argsFor(fn, fx, [fx], 0.7);
      if (fn === 'expireChunk' && args[5] === 2) args[5] = 1;
      if (fn === 'deleteVisited' && args[2] === true) args[2] = false;
      try {
        const r = w[fn](...args);
        if (fn !== 'memory') allowedResult(r, `${fn}`);
      } catch (e) {
        allowedError(e, `public ${fn}(${args.map(describeValue).join(', ')})`);
      }
      try {
        space.checkIntegrity();
        space.select(undefined, { limit: 1 });
      } catch (e) {
        problems.push(`public ${fn}: space unusable: ${(e as Error).message}`);
      }
      if (space.len() < 5) for (let i = 0; i < 30; i++) space.replace([i, i, 'p']);
      if (problems.length > 0) break;
    }
    space.drop();
    expect(problems).toEqual([]);
  });

  it('spaces and cursors collected in any order (child process with --expose-gc) exit cleanly', () => {
    const script = `
      const { native } = require(${JSON.stringify(path.join(ROOT, 'dist/native/loader.js'))});
      const { pack } = require(${JSON.stringify(path.join(ROOT, 'node_modules/msgpackr'))});
      const S = native.space;
      let keep = [];
      for (let round = 0; round < 40; round++) {
        const h = native.createSpace('gc' + round, 1000);
        S.createIndex(h, 'pk', round % 2 ? 'HASH' : 'TREE', true, [0], ['unsigned']);
        for (let i = 0; i < 50; i++) S.insert(h, pack([i, i]), false);
        const cs = [S.cursor(h, 0, undefined, 2), S.cursor(h, 0, undefined, 2)];
        if (round % 3 === 0) S.drop(h);
        if (round % 4 === 0) { try { S.begin(h); } catch (e) { if (e.code !== 'ER_SPACE_DROPPED') throw e; } }
        keep.push(cs[round % 2]);
        if (round % 5 === 0) { global.gc(); }
        for (const c of keep) { try { c.next(Buffer.alloc(16)); } catch (e) { if (!e.code) throw e; } }
        if (keep.length > 6) keep.splice(0, 3);
      }
      keep = [];
      global.gc();
      process.stdout.write('done');
    `;
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('done');
  });
});

// ---------------------------------------------------------------------------------------------
// Bugs: these assert the documented behaviour and fail now.
// ---------------------------------------------------------------------------------------------
describe('bugs', () => {
  it('rollback() with a savepoint that its begin() did not return is refused with ER_TRANSACTION, and leaks no tuple', () => {
    // space.h: "commit/rollback take the one their begin() returned, innermost first
    // (ER_TRANSACTION otherwise)". begin() on a space with no open transaction returns 0; a
    // rollback(5) was accepted instead, undid only the last 5 of 10 deletes, ended the
    // transaction and dropped the undo entries below 5 without freeing their tuples.
    const h = native.createSpace('leak', 1 << 20);
    S.createIndex(h, 'pk', 'TREE', true, [0], ['unsigned']);
    const big = 'x'.repeat(5000);  // > 1 KiB: each tuple is its own malloc block, counted in memory()
    const mem = (): number => {
      const o = new Float64Array(2);
      S.memory(h, o);
      return o[0];
    };
    for (let i = 0; i < 10; i++) S.insert(h, pack([i, big]), false);
    const perTuple = mem() / 10;
    const sp = S.begin(h);
    expect(sp).toBe(0);
    for (let i = 0; i < 10; i++) S.delete(h, i, Buffer.alloc(0));
    const code = codeOfCall(() => S.rollback(h, 5));
    // Whatever happened, once the transaction is over the memory held is that of the stored tuples.
    if (code === undefined) {
      expect(codeOfCall(() => S.rollback(h, 0))).toBe('ER_TRANSACTION');  // the transaction is over
    } else {
      S.rollback(h, 0);
    }
    expect(mem(), 'tuple memory held once the transaction ended').toBe(perTuple * (S.len(h) as number));
    expect(code).toBe('ER_TRANSACTION');
    S.drop(h);
  });

  it('commit() with the outer savepoint while an inner transaction is open is refused with ER_TRANSACTION', () => {
    const h = native.createSpace('nest', 1000);
    S.createIndex(h, 'pk', 'TREE', true, [0], ['unsigned']);
    const outer = S.begin(h) as number;
    S.insert(h, pack([1]), false);
    const inner = S.begin(h) as number;
    S.insert(h, pack([2]), false);
    expect(inner).not.toBe(outer);
    expect(codeOfCall(() => S.commit(h, outer))).toBe('ER_TRANSACTION');
    S.drop(h);
  });
});
