// bench/anchor-memory.ts: memory per tuple, ours against Tarantool's memtx (the anchor), on the
// anchor's workload: the measurement behind "memory per tuple is below Tarantool's".
//
//   npx tsx --no-cache bench/anchor-memory.ts [--tuples 1000000,10000000] [--runs 3] [--no-anchor]
//
// Workload (bench/anchor.ts's load(), /work/shared/anchors/capped_bench.lua's loop): N tuples
// {i, 'user'..i..'@tarantool.io', exp}, i = 1..N; every 10th has exp = now - 10, the others
// now + 3600 (now = floor(time()) in seconds); a unique TREE pk on field 1 (unsigned) and a
// non-unique TREE on field 3 (unsigned); loaded in batches of 10,000: one insertMany each here,
// one transaction of s:insert there. Each load runs in a fresh process: ours in a child forked
// with --expose-gc, Tarantool's as `tarantool bench/anchor-memory.lua N` in a scratch work_dir
// (memtx, no WAL, no checkpoints). Rounds are interleaved (ours, theirs, ours, ...), every N in
// every round; the table gives medians over --runs rounds with min–max, and a ratio is the
// median of per-round ratios, each from one round.
//
// What each side reads, before the space is created and after the load, both after a full
// garbage collection (global.gc() twice here; collectgarbage('collect') twice there), per tuple:
// - ours memory(): space.memory().total / N. It counts the tuple arena's 64 KiB slabs and 2 MiB
//   chunks whole, free space in them included, and each index's node pool whole, free nodes
//   included (the README's section on memory()). Tarantool's like-for-like figure is "slabs":
//   the growth of items_size (the slabs holding tuples, free space included) plus the growth of
//   the index extent pool (the slabs of 16 KiB extents the B+trees take, used or free). Its
//   arena_used (= items_used + box.info.memory().index: tuples at their size class, no free slab
//   space, plus the extents held) counts less than that basis, so memory()/arena_used is stricter
//   on us than like-for-like. items_used alone is Tarantool's tuples (box.info.memory().data);
//   compare it with our memory().tuples (the per-component line below the table).
// - ours RSS: the growth of process.memoryUsage().rss; Tarantool's RSS: the growth of
//   /proc/self/statm's resident pages. The same basis, the whole process: both include what the
//   language's heap kept after the load loop's garbage was collected (V8's for us, LuaJIT's there)
//   and what malloc keeps. Ours: V8's heapTotal growth is shown too, because our loader allocates
//   JavaScript arrays (a batch of 10,000 tuples at a time), and V8 keeps the young generation it
//   grew for them.
// Without tarantool on the PATH (or with --no-anchor) the Tarantool columns print '-' and a line
// says why; ours are still measured.
import { execFile, fork } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from './lib/measure.js';

interface OurResult {
  tuples: number;
  /** space.memory() after the load (bytes). */
  total: number;
  tupleBytes: number;
  indexBytes: number;
  /** Growth from before the space was created to after the load and a full GC (bytes). */
  rss: number;
  heapTotal: number;
  loadMs: number;
}

/** bench/anchor-memory.lua's per-tuple figures (bytes per tuple; see its header). */
interface TheirPerTuple {
  items_used: number;
  items_size: number;
  index: number;
  used: number;
  arena_used: number;
  slabs: number;
  arena_size: number;
  quota_used: number;
  lua: number;
  rss: number;
}

interface TheirResult {
  n: number;
  version: string;
  load_s: number;
  per_tuple: TheirPerTuple;
  after: { class: number; class_count: number; arena_size: number };
}

const HERE = __filename;
const ROOT = path.resolve(path.dirname(HERE), '..');
const LUA = path.join(ROOT, 'bench', 'anchor-memory.lua');
const BATCH = 10_000;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

function tuplesFlag(): number[] {
  const raw = flag('tuples', '1000000,10000000');
  const ns = raw.split(',').map((s) => Number(s.replace(/_/g, '')));
  if (ns.length === 0 || ns.some((n) => !Number.isInteger(n) || n < 10)) {
    throw new Error(`bench/anchor-memory.ts: --tuples must be integers >= 10, comma-separated, got ${raw}`);
  }
  return ns;
}

function runsFlag(): number {
  const raw = flag('runs', '3');
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`bench/anchor-memory.ts: --runs must be an integer >= 1, got ${raw}`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Child: one load of our side.

/** bench/anchor.ts's load() at fraction 0.1: batches of 10,000, one insertMany each. */
function load(space: import('../src/index.js').Space, tuples: number, now: number): void {
  for (let start = 1; start <= tuples; start += BATCH) {
    const batch: unknown[][] = [];
    for (let i = start; i < start + BATCH && i <= tuples; i++) batch.push([i, `user${i}@tarantool.io`, i % 10 === 0 ? now - 10 : now + 3600]);
    space.insertMany(batch);
  }
}

async function runOurs(tuples: number): Promise<OurResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('bench/anchor-memory.ts: the child needs --expose-gc');
  // The addon and our modules are loaded before the first reading: the process, not the space.
  const { Space } = await import('../src/index.js');
  gc();
  gc();
  const before = process.memoryUsage();
  const space = new Space('tester');
  space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  const now = Math.floor(Date.now() / 1000);
  const t0 = performance.now();
  load(space, tuples, now);
  const loadMs = performance.now() - t0;
  gc();
  gc();
  const after = process.memoryUsage();
  const m = space.memory();
  if (space.len() !== tuples) throw new Error(`loaded ${space.len()} tuples, not ${tuples}`);
  return {
    tuples, total: m.total, tupleBytes: m.tuples, indexBytes: m.indexes,
    rss: after.rss - before.rss, heapTotal: after.heapTotal - before.heapTotal, loadMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Parent: the rounds and the table.

function spawnOurs(tuples: number): Promise<OurResult> {
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  return new Promise((resolve, reject) => {
    const child = fork(HERE, ['--child', String(tuples)], {
      cwd: ROOT,
      execArgv: ['--expose-gc', '--import', tsx],
      env: { ...process.env, TSX_DISABLE_CACHE: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: OurResult | undefined;
    let error: string | undefined;
    child.on('message', (m: { result?: OurResult; error?: string }) => {
      result = m.result;
      error = m.error;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (result) resolve(result);
      else reject(new Error(`our load of ${tuples} tuples failed: ${error ?? signal ?? `exit code ${code}`}`));
    });
  });
}

/** true, or why the Tarantool columns are skipped. */
function findTarantool(): true | string {
  if (process.argv.includes('--no-anchor')) return 'Tarantool columns skipped (--no-anchor)';
  const onPath = (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && fs.existsSync(path.join(dir, 'tarantool')));
  if (!onPath) return 'tarantool not found: Tarantool columns skipped (apt-get install tarantool to run them)';
  return true;
}

const LINE = /^anchor-memory (\{.*\})$/m;

/** One load in a fresh tarantool, in a scratch work_dir (box.cfg writes its bootstrap snapshot there). */
async function runTheirs(tuples: number): Promise<TheirResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'anchor-memory-'));
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('tarantool', [LUA, String(tuples)], { cwd: dir, env: { ...process.env, TT_WORKDIR: dir }, maxBuffer: 1 << 20 },
        (error, out, err) => {
          if (error) reject(new Error(`bench/anchor-memory.lua ${tuples} failed: ${(err || out || String(error)).trim().slice(0, 500)}`));
          else resolve(out);
        });
    });
    const m = LINE.exec(stdout);
    if (!m) throw new Error(`bench/anchor-memory.lua printed no result: ${stdout.trim().slice(0, 200)}`);
    return JSON.parse(m[1]) as TheirResult;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}


const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The median, and min–max when the runs differ at this precision. */
function spread(xs: number[], digits = 1): string {
  if (xs.length === 0) return '-';
  const lo = fmt(Math.min(...xs), digits);
  const hi = fmt(Math.max(...xs), digits);
  return lo === hi ? fmt(median(xs), digits) : `${fmt(median(xs), digits)} (${lo}–${hi})`;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(head), `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}

const HEAD = [
  'tuples', 'ours memory()', 'ours RSS', 'ours heapTotal', 'Tarantool items_used', 'Tarantool arena_used',
  'Tarantool slabs', 'Tarantool RSS', 'memory()/slabs', 'memory()/arena_used', 'RSS/RSS',
];

async function main(): Promise<void> {
  const sizes = tuplesFlag();
  const runs = runsFlag();
  const tarantool = findTarantool();
  const ours = new Map<number, OurResult[]>(sizes.map((n) => [n, []]));
  const theirs = new Map<number, TheirResult[]>(sizes.map((n) => [n, []]));
  for (let round = 0; round < runs; round++) {
    for (const n of sizes) {
      ours.get(n)!.push(await spawnOurs(n));
      if (tarantool === true) theirs.get(n)!.push(await runTheirs(n));
    }
  }

  console.log(`Memory per tuple (bytes), the anchor's workload: N tuples {i, 'user'..i..'@tarantool.io', exp}, every 10th expired,`);
  console.log(`TREE pk on field 1 + non-unique TREE on field 3, loaded in batches of 10,000; each load in a fresh process;`);
  console.log(`median of ${runs} interleaved round${runs === 1 ? '' : 's'} (min–max); a ratio is the median of per-round ratios.`);
  console.log(`ours memory(): space.memory().total / N (slabs, chunks and node pools whole). ours RSS, heapTotal: growth over the`);
  console.log(`load, after global.gc(). Tarantool items_used: its tuples at their size class (box.info.memory().data). arena_used:`);
  console.log(`items_used + index extents (box.info.memory().index). slabs: items_size + the index extent pool, free space included:`);
  console.log(`the same basis as our memory(). Tarantool RSS: /proc/self/statm growth after collectgarbage(). All Tarantool figures`);
  console.log(`are growths from just before box.schema.space.create to after the load.`);
  if (tarantool !== true) console.log(tarantool);

  const rows = sizes.map((n) => {
    const o = ours.get(n)!;
    const t = theirs.get(n)!;
    const per = (xs: number[]) => xs.map((x) => x / n);
    const ratio = (a: number[], b: number[]) => (b.length === 0 ? '-' : fmt(median(b.map((x, i) => a[i] / x)), 2));
    const memory = per(o.map((r) => r.total));
    const rss = per(o.map((r) => r.rss));
    const slabs = t.map((r) => r.per_tuple.slabs);
    const arenaUsed = t.map((r) => r.per_tuple.arena_used);
    const theirRss = t.map((r) => r.per_tuple.rss);
    return [
      n.toLocaleString('en-US'),
      spread(memory),
      spread(rss),
      spread(per(o.map((r) => r.heapTotal))),
      spread(t.map((r) => r.per_tuple.items_used)),
      spread(arenaUsed),
      spread(slabs),
      spread(theirRss),
      ratio(memory, slabs),
      ratio(memory, arenaUsed),
      ratio(rss, theirRss),
    ];
  });
  console.log(table(HEAD, rows));

  // Per component and per round, so that a median can be checked.
  for (const n of sizes) {
    const o = ours.get(n)!;
    const t = theirs.get(n)!;
    const b = (x: number) => fmt(x / n);
    console.log(`${n.toLocaleString('en-US')} tuples:`);
    console.log(`- ours: memory() tuples ${spread(o.map((r) => r.tupleBytes / n))} + indexes ${spread(o.map((r) => r.indexBytes / n))}; ` +
      `load ${spread(o.map((r) => r.loadMs / 1000), 2)} s; per round memory()/RSS/heapTotal: ` +
      o.map((r) => `${b(r.total)}/${b(r.rss)}/${b(r.heapTotal)}`).join('; '));
    if (t.length > 0) {
      const p = (k: keyof TheirPerTuple) => spread(t.map((r) => r.per_tuple[k]));
      console.log(`- Tarantool ${t[0].version}: items_used ${p('items_used')} (size class ${t[0].after.class} B holds ` +
        `${t[0].after.class_count.toLocaleString('en-US')} tuples), items_size ${p('items_size')}, index ${p('index')}, ` +
        `arena_size ${p('arena_size')} (box.cfg's 32 MB of touched slabs are reused first), quota_used ${p('quota_used')}, ` +
        `Lua heap ${p('lua')}; arena_size after the load / N ${spread(t.map((r) => r.after.arena_size / n))}; ` +
        `load ${spread(t.map((r) => r.load_s), 2)} s; per round arena_used/slabs/RSS: ` +
        t.map((r) => `${fmt(r.per_tuple.arena_used)}/${fmt(r.per_tuple.slabs)}/${fmt(r.per_tuple.rss)}`).join('; '));
    }
  }
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`${new Date().toISOString()}, ${os.cpus().length} CPUs, load average ${load}, node ${process.version}`);
}

if (process.argv[2] === '--child') {
  runOurs(Number(process.argv[3])).then(
    (result) => {
      if (process.send) process.send({ result }, () => process.exit(0));
      else console.log(JSON.stringify(result));  // run by hand
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.stack ?? error.message : String(error);
      if (process.send) process.send({ error: message }, () => process.exit(1));
      else {
        console.error(message);
        process.exit(1);
      }
    },
  );
} else {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
