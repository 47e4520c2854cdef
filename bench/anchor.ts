// bench/anchor.ts: our daemon against Tarantool's capped expirationd module (the anchor), on the
// anchor's own workload and measured the way it measures itself (issue 15).
//
//   npm run bench:anchor [-- --runs 3 --tuples 1000000 --expired 0.1 --scan-size 1024 --scan-time 1
//                            --no-anchor --no-pauses --no-native --snapshot DIR --anchor-script FILE]
//
// The anchor is /work/shared/anchors/capped_bench.lua, run by run-capped.sh (override with
// --anchor-script, or ANCHOR_SCRIPT) against a git directory of sonntex/tarantool-capped-expirationd
// (--snapshot, or CAPPED_SNAPSHOT). What it does, and what our side copies:
// - Workload: N tuples {i, 'user'..i..'@tarantool.io', exp}, i = 1..N; every round(1/fraction)-th
//   tuple has exp = now - 10 (expired), the others now + 3600, with now = floor(time()) in seconds.
//   A unique TREE pk on field 1 and a non-unique TREE on field 3, in both modes. Loaded in batches
//   of 10,000 (one transaction each there, one insertMany here); garbage collected before the clock.
// - Task: indexed walks the TTL TREE (early break at the first live tuple), non-indexed walks the
//   pk (a full scan); scanSize and scanTime as given; the real clock in seconds.
// - Start: the CPU and wall clocks are read just before the task starts. Stop: a loop that checks
//   the TTL index's min() and sleeps 10 ms (fiber.sleep(0.01) there, setTimeout(10) here) until the
//   smallest TTL is past `now`, i.e. every expired tuple is gone. For the non-indexed mode that is
//   one full pass: the last expired tuple is the last in pk order (HASH pk: somewhere in the pass).
// - CPU: the whole process, every thread (os.clock() there, process.cpuUsage() here), from start
//   to stop, polling included. ns/expired divides it by the expired tuples.
// Our side also runs over a HASH pk (the anchor has TREE only; its ratio is against the TREE row).
//
// Rounds are interleaved, each workload in a fresh process (ours, theirs, ours, ...), and the
// table gives medians over --runs rounds; a ratio is the median of the per-round ratios, each
// from one round. Our side also reports timer wake-ups (task.stats().wakeups), chunks and the
// longest chunk (the task's own measure of a chunk's synchronous part, max over rounds). Unless
// --no-pauses, one more run of each of our workloads measures the longest event-loop pause with
// monitorEventLoopDelay (1 ms resolution; its timer costs CPU, so that run is not in the CPU
// figures). Unless --no-native, one more run of each times the native chunk alone (expireChunk
// back to back until the pass ends: no timers, no poll), the floor under our CPU figure, and
// one more measures Node alone: the timed runs' stop loop, timer wake-ups and setImmediate hops
// (their medians), with no chunk and no task in them (nodeAlone below).
// The poll alone: after each timed run, each side runs the same stop loop again on an idle
// space for the run's wall time (ours in the same child once the task is killed; Tarantool's in a
// fresh tarantool running bench/anchor-poll.lua), and the table below the main one gives its CPU
// and the ratio with each side's poll taken off. A Node timer wake-up costs more than a fiber's.
// Below the tables, every round of the TREE rows (ours beside Tarantool's, with both polls).
// Without tarantool on the PATH the anchor columns are skipped, with how to install it.
import { execFile, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

type Mode = 'indexed' | 'nonindexed';
type Pk = 'HASH' | 'TREE';

interface Workload {
  tuples: number;
  fraction: number;
  scanSize: number;
  scanTime: number;
}

interface OurConfig extends Workload {
  mode: Mode;
  pk: Pk;
  /** The pause run: monitorEventLoopDelay on, CPU not reported. */
  pauses: boolean;
  /** The native run: the chunk alone, expireChunk back to back, no timers (the floor). */
  native?: boolean;
  /**
   * The Node-alone run: the timed runs' structure (stop loop for wallMs, `wakeups` timer
   * wake-ups, `chunks` setImmediate hops), with no chunk run and no task.
   */
  nodeAlone?: { wallMs: number; wakeups: number; chunks: number };
}

interface NativeResult {
  config: OurConfig;
  cpuMs: number;
  expired: number;
  chunks: number;
}

interface OurResult {
  config: OurConfig;
  cpuMs: number;
  wallMs: number;
  expired: number;
  remaining: number;
  /** Timer wake-ups and chunks until the stop point (the task keeps going until the poll sees it done). */
  wakeups: number;
  chunks: number;
  /** The same, for the first pass alone (NaN if it had not ended). */
  passWakeups: number;
  passChunks: number;
  fullScans: number;
  longestChunkMs: number;
  p99ChunkMs: number;
  /** The chunks' synchronous parts, summed (wall time, as the task measures them). */
  inChunksMs: number;
  pauseMs: number | undefined;
  /** CPU of the stop loop alone, run again for wallMs with no task (NaN in a pause run). */
  pollMs: number;
}

interface AnchorResult {
  cpuMs: number;
  wallMs: number;
  expired: number;
  /** CPU of the anchor's stop loop alone for wallMs, in an idle tarantool (bench/anchor-poll.lua). */
  pollMs: number;
}

const HERE = __filename;
const ROOT = path.resolve(path.dirname(HERE), '..');
const POLL_MS = 10;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

function numberFlag(name: string, fallback: number, min: number): number {
  const raw = flag(name, String(fallback));
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`bench/anchor.ts: --${name} must be a number >= ${min}, got ${raw}`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Child: one run of our side.

/**
 * The anchor's tuples, in batches of 10,000 (one insertMany each). A function of its own: V8
 * optimizes this loop while it runs, and when the loop sat in runOurs it then compiled runOurs
 * as a whole on a background thread once runOurs resumed in its poll, inside the timed window
 * (`--trace-opt`: 3-5 ms of CPU in every run, 30-50 ns per expired tuple of the indexed rows).
 */
function load(space: import('../src/index.js').Space, config: Workload, now: number): void {
  const step = Math.floor(1 / config.fraction + 0.5);
  for (let start = 1; start <= config.tuples; start += 10_000) {
    const batch: unknown[][] = [];
    for (let i = start; i < start + 10_000 && i <= config.tuples; i++)
      batch.push([i, `user${i}@tarantool.io`, i % step === 0 ? now - 10 : now + 3600]);
    space.insertMany(batch);
  }
}

async function runOurs(config: OurConfig): Promise<OurResult | NativeResult> {
  const { Space, expirationd } = await import('../src/index.js');
  const { chunkObserver } = await import('../src/expirationd/scheduler.js');
  const space = new Space('tester');
  space.createIndex('primary', { type: config.pk, parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  const now = Math.floor(Date.now() / 1000);
  load(space, config, now);
  (globalThis as { gc?: () => void }).gc?.();
  if (config.native) return nativeLoop(config, space, now);
  if (config.nodeAlone) return nodeAlone(config, config.nodeAlone, space, now);

  let longestChunkMs = 0;
  let inChunksMs = 0;
  const durations: number[] = [];
  chunkObserver.onChunk = (ms) => {
    inChunksMs += ms;
    durations.push(ms);
    if (ms > longestChunkMs) longestChunkMs = ms;
  };
  const delay = config.pauses ? monitorEventLoopDelay({ resolution: 1 }) : undefined;
  delay?.enable();
  const exp = space.index.exp;
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  const task = expirationd.start('bench', space, {
    rmIndex: 'primary', itIndex: config.mode === 'indexed' ? 'exp' : 'primary', field: 3,
    scanSize: config.scanSize, scanTime: config.scanTime,
  });
  let failure: unknown;
  task.on('error', (error) => {
    failure ??= error;
  });
  // The first pass: for the non-indexed mode the whole walk, for the indexed one the backlog.
  let pass: { wakeups: number; chunks: number } | undefined;
  task.on('fullScan', (stats: { wakeups: number; chunks: number }) => {
    pass ??= { wakeups: stats.wakeups, chunks: stats.chunks };
  });
  for (;;) {
    const first = exp.min();
    if (first === undefined || (first[2] as number) > now || failure !== undefined) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const cpu = process.cpuUsage(cpu0);
  const wallMs = Number(process.hrtime.bigint() - wall0) / 1e6;
  delay?.disable();
  const stats = task.stats();
  task.kill();
  chunkObserver.onChunk = undefined;
  if (failure !== undefined) throw failure;
  // The stop loop alone, for the same wall time: the same min() and 10 ms sleep, no task.
  let pollMs = NaN;
  if (!config.pauses) {
    const poll0 = process.cpuUsage();
    const pollStart = performance.now();
    while (performance.now() - pollStart < wallMs) {
      const first = exp.min();
      if (first !== undefined && (first[2] as number) <= now) break;  // never: every TTL left is live
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const c = process.cpuUsage(poll0);
    pollMs = (c.user + c.system) / 1000;
  }
  return {
    config,
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs,
    expired: stats.expired,
    remaining: space.len(),
    wakeups: stats.wakeups,
    chunks: stats.chunks,
    passWakeups: pass?.wakeups ?? NaN,
    passChunks: pass?.chunks ?? NaN,
    fullScans: stats.fullScans,
    longestChunkMs,
    p99ChunkMs: durations.sort((a, b) => a - b)[Math.min(durations.length - 1, Math.floor(0.99 * durations.length))] ?? 0,
    inChunksMs,
    pauseMs: delay === undefined ? undefined : delay.max / 1e6,
    pollMs,
  };
}

/** The chunk alone: expireChunk called back to back on the space's handle until its pass ends. */
async function nativeLoop(config: OurConfig, space: import('../src/index.js').Space, now: number): Promise<NativeResult> {
  const { handleOf } = await import('../src/space/space.js');
  const h = handleOf(space);
  const indexed = config.mode === 'indexed';
  const cursor = h.cursor(indexed ? 1 : 0, undefined, 2 /* Iter.ALL */, true);
  const out = new Float64Array(5);
  const scratch = Buffer.alloc(64);
  let expired = 0;
  let chunks = 0;
  const cpu0 = process.cpuUsage();
  do {
    h.expireChunk(cursor, 2, config.scanSize, now, indexed, 0, out, scratch);
    expired += out[1];
    chunks++;
  } while (out[2] !== 1);
  const cpu = process.cpuUsage(cpu0);
  return { config, cpuMs: (cpu.user + cpu.system) / 1000, expired, chunks };
}

/**
 * Node alone: what the event loop costs for the pass's structure, with none of our code in it.
 * The same stop loop as a timed run (exp.min() and a 10 ms sleep) for that run's wall time,
 * beside `wakeups` timer wake-ups evenly spread over it, each running its share of `chunks`
 * setImmediate hops (an empty callback where the task runs a chunk). The task's pass is this
 * plus its chunks and its own JavaScript; its chunks also make each hop dearer (they evict the
 * event loop's code and data from the caches), which this run cannot show.
 */
async function nodeAlone(config: OurConfig, shape: { wallMs: number; wakeups: number; chunks: number },
  space: import('../src/index.js').Space, now: number): Promise<NativeResult> {
  const exp = space.index.exp;
  const wakeups = Math.max(1, Math.round(shape.wakeups));
  const gap = shape.wallMs / wakeups;
  let hops = 0;
  let burstsDone = 0;
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const bursts = new Promise<void>((resolve) => {
    const burst = (): void => {
      burstsDone++;
      // This burst's share: the hops left, spread over the wake-ups left.
      let left = Math.round((shape.chunks - hops) / (wakeups - burstsDone + 1));
      const hop = (): void => {
        hops++;
        if (--left > 0) setImmediate(hop);
        else if (burstsDone < wakeups) setTimeout(burst, Math.max(1, wall0 + burstsDone * gap - performance.now()));
        else resolve();
      };
      setImmediate(hop);
    };
    burst();
  });
  // The stop loop's min() and test, whose answer does not matter here (the expired tuples are
  // stored: no task runs), until the timed run's wall time has passed.
  let polls = 0;
  for (;;) {
    const first = exp.min();
    if (first !== undefined && (first[2] as number) > now) polls++;
    if (performance.now() - wall0 >= shape.wallMs) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  await bursts;
  if (polls !== 0) throw new Error('Node-alone run: the expired tuples are gone, but no task ran');
  const cpu = process.cpuUsage(cpu0);
  return { config, cpuMs: (cpu.user + cpu.system) / 1000, expired: 0, chunks: hops };
}

// ---------------------------------------------------------------------------------------------
// Parent: the rounds and the table.

function spawnOurs(config: OurConfig & { nodeAlone: NonNullable<OurConfig['nodeAlone']> }): Promise<NativeResult>;
function spawnOurs(config: OurConfig & { native?: false }): Promise<OurResult>;
function spawnOurs(config: OurConfig & { native: true }): Promise<NativeResult>;
function spawnOurs(config: OurConfig): Promise<OurResult | NativeResult> {
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  return new Promise((resolve, reject) => {
    const child = fork(HERE, ['--child', JSON.stringify(config)], {
      cwd: ROOT,
      execArgv: ['--expose-gc', '--import', tsx],
      // tsx without its disk cache: a child that writes the cache (a source changed since the
      // last run) also lists the whole cache directory to expire old entries, on an unref'd
      // setImmediate that runs at the event loop's next turn, inside the timed window. With
      // 1,600 entries that was 10-18 ms of the child's CPU (--trace-opt: V8 compiling tsx's
      // expiry code). Without the cache each child transpiles our sources when it loads them,
      // about 130 ms more before the clock starts.
      env: { ...process.env, TSX_DISABLE_CACHE: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: OurResult | NativeResult | undefined;
    let error: string | undefined;
    child.on('message', (m: { result?: OurResult | NativeResult; error?: string }) => {
      result = m.result;
      error = m.error;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (result) resolve(result);
      else reject(new Error(`our ${config.mode} ${config.pk} run failed: ${error ?? signal ?? `exit code ${code}`}`));
    });
  });
}

interface Anchor {
  script: string;
  snapshot: string;
}

/** The anchor, or why it is skipped. */
function findAnchor(): Anchor | string {
  if (process.argv.includes('--no-anchor')) return 'anchor column skipped (--no-anchor)';
  const onPath = (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && fs.existsSync(path.join(dir, 'tarantool')));
  if (!onPath) {
    return 'tarantool not found: anchor column skipped (apt-get install tarantool tarantool-dev libmsgpuck-dev to run it)';
  }
  const script = flag('anchor-script', process.env.ANCHOR_SCRIPT ?? '/work/shared/anchors/run-capped.sh');
  const snapshot = flag('snapshot', process.env.CAPPED_SNAPSHOT ?? '/work/.mirror/sonntex+tarantool-capped-expirationd/repo/.git');
  if (!fs.existsSync(script)) return `anchor script ${script} not found: anchor column skipped (--anchor-script FILE)`;
  if (!fs.existsSync(snapshot)) {
    return `no git directory of sonntex/tarantool-capped-expirationd at ${snapshot}: anchor column skipped (--snapshot DIR)`;
  }
  return { script, snapshot };
}

// capped indexed N=1000000 expired=100000 scan_size=1024 scan_time=1: wall 0.328 s, cpu 0.192 s, ...
const ANCHOR_LINE = /^capped (\w+) N=(\d+) expired=(\d+) scan_size=\d+ scan_time=\d+: wall ([\d.]+) s, cpu ([\d.]+) s/m;

async function runAnchor(anchor: Anchor, w: Workload, mode: Mode): Promise<AnchorResult> {
  const args = [anchor.script, anchor.snapshot, String(w.tuples), String(w.fraction), mode, String(w.scanSize), String(w.scanTime)];
  const run = await new Promise<Omit<AnchorResult, 'pollMs'>>((resolve, reject) => {
    execFile('bash', args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      const m = ANCHOR_LINE.exec(stdout);
      if (error || !m) {
        reject(new Error(`the anchor (${mode}) failed: ${(stderr || stdout || String(error)).trim().slice(0, 500)}`));
        return;
      }
      resolve({ expired: Number(m[3]), wallMs: Number(m[4]) * 1000, cpuMs: Number(m[5]) * 1000 });
    });
  });
  return { ...run, pollMs: await runAnchorPoll(run.wallMs) };
}

// poll wall 1.203 s, cpu 0.0112 s, polls 118
const POLL_LINE = /^poll wall ([\d.]+) s, cpu ([\d.]+) s, polls (\d+)$/m;

/** The anchor's stop loop alone for wallMs, in a fresh tarantool with a scratch work_dir. */
async function runAnchorPoll(wallMs: number): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'anchor-poll-'));
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('tarantool', [path.join(ROOT, 'bench', 'anchor-poll.lua'), String(Math.round(wallMs))],
        { cwd: dir, env: { ...process.env, TT_WORKDIR: dir }, maxBuffer: 1 << 20 }, (error, out, err) => {
          if (error) reject(new Error(`bench/anchor-poll.lua failed: ${(err || out || String(error)).trim().slice(0, 500)}`));
          else resolve(out);
        });
    });
    const m = POLL_LINE.exec(stdout);
    if (!m) throw new Error(`bench/anchor-poll.lua printed no result: ${stdout.trim().slice(0, 200)}`);
    return Number(m[2]) * 1000;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const ROWS: { mode: Mode; pk: Pk; label: string }[] = [
  { mode: 'indexed', pk: 'TREE', label: 'indexed, TREE pk' },
  { mode: 'indexed', pk: 'HASH', label: 'indexed, HASH pk' },
  { mode: 'nonindexed', pk: 'TREE', label: 'non-indexed, TREE pk' },
  { mode: 'nonindexed', pk: 'HASH', label: 'non-indexed, HASH pk' },
];

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(head), `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function main(): Promise<void> {
  const runs = numberFlag('runs', 3, 1);
  const w: Workload = {
    tuples: numberFlag('tuples', 1_000_000, 10),
    fraction: numberFlag('expired', 0.1, 0.0001),
    scanSize: numberFlag('scan-size', 1024, 1),
    scanTime: numberFlag('scan-time', 1, 1),
  };
  if (w.fraction > 1) throw new Error('bench/anchor.ts: --expired is a fraction in (0, 1]');
  const step = Math.floor(1 / w.fraction + 0.5);
  const expectedExpired = Math.floor(w.tuples / step);
  const anchor = findAnchor();
  console.log(`Anchor: ${w.tuples.toLocaleString('en-US')} tuples, every ${step}th expired (${expectedExpired.toLocaleString('en-US')}), ` +
    `scanSize ${w.scanSize}, scanTime ${w.scanTime} s, ${runs} interleaved round(s), medians`);
  if (typeof anchor === 'string') console.log(anchor);

  const ours = new Map<string, OurResult[]>(ROWS.map((r) => [r.label, []]));
  const theirs = new Map<Mode, AnchorResult[]>([['indexed', []], ['nonindexed', []]]);
  for (let round = 1; round <= runs; round++) {
    for (const row of ROWS) {
      process.stderr.write(`round ${round}/${runs}: ours, ${row.label}\n`);
      ours.get(row.label)!.push(await spawnOurs({ ...w, mode: row.mode, pk: row.pk, pauses: false }));
      if (row.pk === 'TREE' && typeof anchor !== 'string') {
        process.stderr.write(`round ${round}/${runs}: Tarantool, ${row.mode}\n`);
        theirs.get(row.mode)!.push(await runAnchor(anchor, w, row.mode));
      }
    }
  }
  const natives = new Map<string, NativeResult>();
  const pauses = new Map<string, number>();
  if (!process.argv.includes('--no-native')) {
    for (const row of ROWS) {
      process.stderr.write(`native run: ours, ${row.label}\n`);
      natives.set(row.label, await spawnOurs({ ...w, mode: row.mode, pk: row.pk, pauses: false, native: true }));
    }
  }
  // Node alone, shaped like the timed runs (their medians): after them, so it can copy them.
  const nodeAlones = new Map<string, NativeResult>();
  if (!process.argv.includes('--no-native')) {
    for (const row of ROWS) {
      const timed = ours.get(row.label)!;
      process.stderr.write(`Node-alone run: ${row.label}\n`);
      nodeAlones.set(row.label, await spawnOurs({
        ...w, mode: row.mode, pk: row.pk, pauses: false,
        nodeAlone: {
          wallMs: median(timed.map((r) => r.wallMs)),
          wakeups: median(timed.map((r) => r.wakeups)),
          chunks: median(timed.map((r) => r.chunks)),
        },
      }));
    }
  }
  if (!process.argv.includes('--no-pauses')) {
    for (const row of ROWS) {
      process.stderr.write(`pause run: ours, ${row.label}\n`);
      const r = await spawnOurs({ ...w, mode: row.mode, pk: row.pk, pauses: true });
      pauses.set(row.label, r.pauseMs!);
      ours.get(row.label)!.push({ ...r, cpuMs: NaN });  // counts for expired/remaining/longest chunk only
    }
  }

  const head = ['workload', 'ours CPU ms', 'ours ns/expired', 'in chunks ms', 'native loop ms', 'Node alone ms', 'ours wall ms', 'wake-ups pass/all', 'chunks pass/all', 'p99 chunk ms', 'longest chunk ms',
    'longest pause ms', 'expired', 'remaining', 'Tarantool CPU ms', 'Tarantool ns/expired', 'Tarantool wall ms', 'ours/Tarantool CPU'];
  const rows: string[][] = [];
  let ok = true;
  for (const row of ROWS) {
    const all = ours.get(row.label)!;
    const timed = all.filter((r) => !Number.isNaN(r.cpuMs));
    for (const r of [...all, ...(natives.has(row.label) ? [{ ...natives.get(row.label)!, remaining: w.tuples - expectedExpired }] : [])]) {
      if (r.expired !== expectedExpired || r.remaining !== w.tuples - expectedExpired) {
        ok = false;
        console.log(`ERROR: ${row.label}: expired ${r.expired}, ${r.remaining} remaining; expected ${expectedExpired} and ${w.tuples - expectedExpired}`);
      }
    }
    const cpu = median(timed.map((r) => r.cpuMs));
    const anchorRuns = theirs.get(row.mode)!;
    const theirCpu = anchorRuns.length ? median(anchorRuns.map((r) => r.cpuMs)) : NaN;
    // Round i of ours against round i of theirs: a ratio from one round, then the median.
    const ratio = anchorRuns.length ? median(timed.map((r, i) => r.cpuMs / anchorRuns[i].cpuMs)) : NaN;
    const anchorExpired = anchorRuns.length ? anchorRuns[0].expired : expectedExpired;
    const dash = '-';
    rows.push([
      row.label,
      fmt(cpu, 1),
      fmt((cpu * 1e6) / expectedExpired),
      fmt(median(timed.map((r) => r.inChunksMs)), 1),
      natives.has(row.label) ? fmt(natives.get(row.label)!.cpuMs, 1) : dash,
      nodeAlones.has(row.label) ? fmt(nodeAlones.get(row.label)!.cpuMs, 1) : dash,
      fmt(median(timed.map((r) => r.wallMs))),
      `${fmt(median(timed.map((r) => r.passWakeups)))}/${fmt(median(timed.map((r) => r.wakeups)))}`,
      `${fmt(median(timed.map((r) => r.passChunks)))}/${fmt(median(timed.map((r) => r.chunks)))}`,
      fmt(median(timed.map((r) => r.p99ChunkMs)), 3),
      fmt(Math.max(...all.map((r) => r.longestChunkMs)), 3),
      pauses.has(row.label) ? fmt(pauses.get(row.label)!, 2) : dash,
      fmt(median(all.map((r) => r.expired))),
      fmt(median(all.map((r) => r.remaining))),
      anchorRuns.length ? `${fmt(theirCpu, 1)}${row.pk === 'HASH' ? ' (TREE pk)' : ''}` : dash,
      anchorRuns.length ? fmt((theirCpu * 1e6) / anchorExpired) : dash,
      anchorRuns.length ? fmt(median(anchorRuns.map((r) => r.wallMs))) : dash,
      anchorRuns.length ? `${fmt(ratio, 2)}${row.pk === 'HASH' ? ' (vs TREE)' : ''}` : dash,
    ]);
  }
  console.log(table(head, rows));
  const pollRows = pollTable(ours, theirs);
  if (pollRows.length > 0) {
    console.log('The stop loop alone (each side\'s poll run again for the run\'s wall time on an idle space; medians), and the');
    console.log('ratio with each side\'s poll taken off its CPU (per round, then the median):');
    console.log(table(['workload', 'ours poll ms', 'Tarantool poll ms', 'ours - poll ms', 'Tarantool - poll ms', 'ratio without the polls'], pollRows));
  }
  console.log('CPU: the whole process (process.cpuUsage(); os.clock() for Tarantool), from the task\'s start until the TTL');
  console.log(`index's min() is live, polled every ${POLL_MS} ms on both sides; ns/expired = CPU / expired tuples. Longest chunk:`);
  console.log('max over all runs (p99: median); both are wall time, so on a loaded machine they include preemption. Native loop: CPU of\n' +
    'the chunks alone, expireChunk back to back in one more run (no timers, no poll). Node alone: CPU of one more run with the\n' +
    'timed runs\' stop loop, timer wake-ups and setImmediate hops (their medians) and nothing in them: no chunk, no task.\n' +
    'Longest pause: a separate run with monitorEventLoopDelay (1 ms resolution).');
  const rounds = roundLines(ours, theirs);
  if (rounds.length > 0) {
    console.log('Each round (CPU ms, poll ms in brackets; ours and Tarantool\'s ran one after the other):');
    for (const line of rounds) console.log(line);
  }
  const goals = goalLines(head, rows);
  for (const g of goals) console.log(g);
  if (!ok) process.exitCode = 1;
}

/** Every round of the TREE pk rows, ours beside Tarantool's, so that a median can be checked. */
function roundLines(ours: Map<string, OurResult[]>, theirs: Map<Mode, AnchorResult[]>): string[] {
  const lines: string[] = [];
  for (const row of ROWS) {
    const anchorRuns = theirs.get(row.mode)!;
    if (row.pk !== 'TREE' || anchorRuns.length === 0) continue;
    const timed = ours.get(row.label)!.filter((r) => !Number.isNaN(r.cpuMs));
    const cells = timed.map((r, i) => {
      const t = anchorRuns[i];
      return `${fmt(r.cpuMs, 1)} (${fmt(r.pollMs, 1)}) vs ${fmt(t.cpuMs, 1)} (${fmt(t.pollMs, 1)}): ${fmt(r.cpuMs / t.cpuMs, 2)}`;
    });
    lines.push(`- ${row.label}: ${cells.join('; ')}`);
  }
  return lines;
}

/** The poll-alone rows: TREE pk rows with an anchor run, one per mode. */
function pollTable(ours: Map<string, OurResult[]>, theirs: Map<Mode, AnchorResult[]>): string[][] {
  const rows: string[][] = [];
  for (const row of ROWS) {
    const anchorRuns = theirs.get(row.mode)!;
    if (row.pk !== 'TREE' || anchorRuns.length === 0) continue;
    const timed = ours.get(row.label)!.filter((r) => !Number.isNaN(r.cpuMs));
    const net = timed.map((r) => r.cpuMs - r.pollMs);
    const theirNet = anchorRuns.map((r) => r.cpuMs - r.pollMs);
    rows.push([
      row.label,
      fmt(median(timed.map((r) => r.pollMs)), 1),
      fmt(median(anchorRuns.map((r) => r.pollMs)), 1),
      fmt(median(net), 1),
      fmt(median(theirNet), 1),
      fmt(median(net.map((n, i) => n / theirNet[i])), 2),
    ]);
  }
  return rows;
}

function goalLines(head: string[], rows: string[][]): string[] {
  const cell = (label: string, column: string) => rows.find((r) => r[0] === label)![head.indexOf(column)];
  const num = (s: string) => Number(s.replace(/,/g, '').split(/[ /]/)[0]);
  const ratio = num(cell('non-indexed, TREE pk', 'ours/Tarantool CPU'));
  const wakeups = (label: string) => cell(label, 'wake-ups pass/all').split('/')[0];
  const floor = num(cell('non-indexed, TREE pk', 'native loop ms'));
  const theirs = num(cell('non-indexed, TREE pk', 'Tarantool CPU ms'));
  const nodeAlone = num(cell('non-indexed, TREE pk', 'Node alone ms'));
  const floorNote = Number.isNaN(floor) || Number.isNaN(theirs) ? '' : ` (the native chunks alone: ${fmt(floor, 1)} ms, ` +
    `${fmt(floor / theirs, 2)} of Tarantool's; Node alone: ${fmt(nodeAlone, 1)} ms, ${fmt(nodeAlone / theirs, 2)})`;
  const hash = num(cell('indexed, HASH pk', 'ours ns/expired'));
  const tree = num(cell('indexed, TREE pk', 'ours ns/expired'));
  return [
    'Goals (issue 15):',
    `- non-indexed pass, ours/Tarantool CPU ≤ 0.25: ${Number.isNaN(ratio) ? 'no anchor' : `${fmt(ratio, 2)} ${ratio <= 0.25 ? 'met' : 'MISSED'}${floorNote}`}; ` +
      `timer wake-ups per pass ≤ 100: TREE ${wakeups('non-indexed, TREE pk')}, HASH ${wakeups('non-indexed, HASH pk')}`,
    `- indexed ns/expired ≤ 350 over HASH: ${fmt(hash)} ${hash <= 350 ? 'met' : 'MISSED'}; ≤ 600 over TREE: ${fmt(tree)} ${tree <= 600 ? 'met' : 'MISSED'}`,
  ];
}

if (process.argv[2] === '--child') {
  runOurs(JSON.parse(process.argv[3]) as OurConfig).then(
    (result) => {
      if (process.send) process.send({ result }, () => process.exit(0));
      else console.log(JSON.stringify(result));  // run by hand (profiling)
    },
    (error: unknown) => process.send!({ error: error instanceof Error ? error.stack ?? error.message : String(error) }, () => process.exit(1)),
  );
} else {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
