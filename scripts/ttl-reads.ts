// scripts/ttl-reads.ts: what a read of a TTL-aware space costs over the same read of a plain
// space (issue 15: the goal is within 5% for get).
//
//   npm run build:ts && npx tsx scripts/ttl-reads.ts [--keys 100000] [--ops 20000] [--rounds 100]
//     [--before <dir>] [--control]
//
// Spaces of --keys tuples [id, email, exp] (HASH pk, non-unique TREE on exp, every tuple live
// for a day): TTL in seconds and in ms on the default clock, each with a plain space holding the
// same tuples, and TTL in seconds on an injected clock. Each round times a slice of --ops get() of random ids on each
// space in turn, the order rotating, then --ops/10 of select(GE, limit 10), min() and a 10-step
// pairs() on the TTL index. Figures are process CPU ns per read (CPU time, not wall time, so that
// a slice that waits for a core on a shared machine is not charged for the wait), medians over
// the rounds: many short slices, so that a change in the machine's load hits every variant
// alike. Each TTL row prints its ratio to the plain row of the same build. Each variant's timed
// loop is its own function (new Function), so that no call site sees two builds' classes.
//
// --before <dir>: also load an older build (a directory holding package.json, dist/ and
// build/Release/ of the library, e.g. a copy taken before a change) and time its plain and
// default-clock spaces in the same rounds, so that before and after come from one run.
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { mulberry32 } from '../bench/lib/random.js';

type Lib = typeof import('../src/index.js');
type Space = InstanceType<Lib['Space']>;

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
const beforeAt = process.argv.indexOf('--before');
const beforeDir = beforeAt >= 0 ? path.resolve(process.argv[beforeAt + 1]) : undefined;

const KEYS = flag('keys', 100_000);
const OPS = flag('ops', 20_000);
const ROUNDS = flag('rounds', 100);
// --control: also a second plain space with the same tuples, compared with the first like a TTL
// space: how far apart two identical spaces measure (the noise under the TTL rows' ratios).
const CONTROL = process.argv.includes('--control');
const RANGE_OPS = Math.max(1, Math.floor(OPS / 10));
const NOW_S = Math.floor(Date.now() / 1000);

const require = createRequire(__filename);
const after: Lib = require(path.join(__dirname, '..', 'dist', 'index.js'));
const before: Lib | undefined = beforeDir === undefined ? undefined : require(path.join(beforeDir, 'dist', 'index.js'));

type Variant = { name: string; space: Space; lo: number; base?: Variant };
function make(lib: Lib, name: string, unit: 's' | 'ms', ttl?: { injected?: boolean; plain?: boolean; base: Variant }): Variant {
  const scale = unit === 'ms' ? 1000 : 1;
  const space = new lib.Space(name.replace(/[^a-z0-9]+/gi, '_'), ttl === undefined || ttl.plain ? undefined
    : { ttl: { field: 3, unit, ...(ttl.injected ? { now: () => Date.now() / 1000 } : {}) } });
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [[3, 'number']] });
  const rnd = mulberry32(1);
  const rows: unknown[][] = [];
  for (let i = 0; i < KEYS; i++) rows.push([i, `user${i}@tarantool.io`, (NOW_S + 86_400 + Math.floor(rnd() * 3600)) * scale]);
  space.insertMany(rows);
  return { name, space, lo: (NOW_S + 86_400 + 1800) * scale, base: ttl?.base };
}

// A TTL space and the plain space it is compared with hold the same tuples (TTLs in its unit).
function build(lib: Lib, prefix: string, injected: boolean): Variant[] {
  const plainS = make(lib, `${prefix}plain s`, 's');
  const plainMs = make(lib, `${prefix}plain ms`, 'ms');
  const out = [plainS, make(lib, `${prefix}ttl s`, 's', { base: plainS }), plainMs, make(lib, `${prefix}ttl ms`, 'ms', { base: plainMs })];
  if (injected) out.push(make(lib, `${prefix}ttl s, injected now`, 's', { injected: true, base: plainS }));
  if (CONTROL) out.push(make(lib, `${prefix}plain s, a second space`, 's', { plain: true, base: plainS }));
  return out;
}
const variants = [...(before === undefined ? [] : build(before, 'before: ', false)), ...build(after, '', true)];

const rnd = mulberry32(2);
// Random ids, a new stretch of them for each slice (so that no slice re-reads a cached set).
const keys = Int32Array.from({ length: Math.max(10 * KEYS, 2 * OPS) }, () => Math.floor(rnd() * KEYS));
let next = 0;
function slice(ops: number): Int32Array {
  if (next + ops > keys.length) next = 0;
  next += ops;
  return keys.subarray(next - ops, next);
}

// Each variant's own copy of the timed loops: one build's classes per call site.
type Pass = (space: Space, keys: Int32Array, ops: number, lo: number) => number;
const source = {
  get: 'let found = 0; for (let i = 0; i < ops; i++) if (space.get(keys[i]) !== undefined) found++; return found;',
  'select GE limit 10': "let n = 0; const idx = space.index.exp; for (let i = 0; i < ops; i++) n += idx.select(lo, { iterator: 'GE', limit: 10 }).length; return n;",
  min: 'let n = 0; const idx = space.index.exp; for (let i = 0; i < ops; i++) if (idx.min() !== undefined) n++; return n;',
  'pairs, 10 steps': "let n = 0; const idx = space.index.exp; for (let i = 0; i < ops; i++) { let k = 0; for (const _ of idx.pairs(lo, { iterator: 'GE' })) if (++k === 10) break; n += k; } return n;",
};
const kinds = Object.keys(source) as Array<keyof typeof source>;
const passes = new Map(variants.map((v) => [v, Object.fromEntries(kinds.map((k) =>
  [k, new Function('space', 'keys', 'ops', 'lo', source[k]) as Pass])) as Record<keyof typeof source, Pass>]));

function time(v: Variant, kind: keyof typeof source): number {
  const ops = kind === 'get' ? OPS : RANGE_OPS;
  const ks = slice(ops);
  const t0 = process.cpuUsage();
  const n = passes.get(v)![kind](v.space, ks, ops, v.lo);
  const t = process.cpuUsage(t0);
  if (n < ops) throw new Error(`${v.name}: ${kind} found ${n} in ${ops} reads`);
  return ((t.user + t.system) * 1000) / ops;
}

const samples = new Map<string, number[]>();
const add = (k: string, x: number) => { if (!samples.has(k)) samples.set(k, []); samples.get(k)!.push(x); };
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of kinds) {
    for (let j = 0; j < variants.length; j++) {
      const v = variants[(j + round) % variants.length];
      add(`${kind}|${v.name}`, time(v, kind));
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`TTL-aware reads: ${KEYS.toLocaleString('en-US')} keys, ${OPS.toLocaleString('en-US')} gets a slice, ` +
  `process CPU ns per read, medians of ${ROUNDS} interleaved slices; overhead: the median of the per-round ratios`);
for (const kind of kinds) {
  for (const v of variants) {
    const xs = samples.get(`${kind}|${v.name}`)!;
    let rel = '';
    if (v.base !== undefined) {
      const base = samples.get(`${kind}|${v.base.name}`)!;
      rel = `  ${((median(xs.map((x, i) => x / base[i])) - 1) * 100).toFixed(1).padStart(5)}% over ${v.base.name}`;
    }
    console.log(`  ${kind.padEnd(20)} ${v.name.padEnd(28)} ${median(xs).toFixed(1).padStart(7)}${rel}`);
  }
}
for (const v of variants) v.space.drop();
