// bench/keepup.ts: does expiry keep up? (issue 15)
//
//   npm run bench:keepup [-- --rates 5000,20000,50000,100000 --ttl 2 --duration 10 --jobs 1000 --runs 3 --quick]
//
// A producer inserts R records a second, each with a TTL T seconds ahead, for D seconds, into a
// space with a HASH primary and a TREE on the TTL field, while an expirationd task with DEFAULT
// options (only itIndex and field: an early-break task) deletes them. Every 100 ms it samples the
// stale records (TTL passed, still stored); from the 'expired' events it takes the lateness of
// each deletion (deletion time minus due time: p50, p99, max); it reports the longest event-loop
// pause (perf_hooks monitorEventLoopDelay, 1 ms resolution), the process CPU as a share of one
// core, and the task's time in chunks as a share of the run (stats().workingTime: wall time
// inside chunks, which on a busy machine includes preemption, so at least its CPU share). The
// same producer (one payload string for every store) runs
// against @isaacs/ttlcache (its own purge timer), lru-cache (purgeStale() every second) and
// node-cache (checkperiod: 1) at R = 20k/s. A delayed-jobs row: jobs at --jobs a second, each
// due at a random time 0.1..2 s ahead, handed by an indexed task's onExpired; its lateness is
// measured from the due time to the call.
//
// Every run is a fresh child process (this file under tsx, --child), one after the other, so no
// run measures another's garbage or timers. --runs N rounds (default 3; 1 with --quick), each
// running every store once, interleaved; the table gives medians with the range (min–max). Records not deleted by the end of the run count with
// the lateness they had then (a lower bound), and show in `deleted/due`. --quick: R = 20k/s only,
// D = 3 s, T = 1 s, the caches and the jobs row: about 30 s.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { mulberry32 } from './lib/random.js';
import { median } from './lib/measure.js';

/** Every store gets the same payload string (a fresh one per insert for some would be more work for them). */
const PAYLOAD = 'session:'.padEnd(48, 'x');

type Kind = 'capped' | 'ttlcache' | 'lru-cache' | 'node-cache' | 'jobs';

interface RunConfig {
  kind: Kind;
  rate: number;
  ttl: number;
  duration: number;
}

interface RunResult {
  config: RunConfig;
  due: number;
  deleted: number;
  staleMax: number;
  staleMean: number;
  p50: number;
  p99: number;
  max: number;
  pauseMs: number;
  cpuShare: number;
  expiryShare: number | undefined;
  wakeups: number | undefined;
}

const SAMPLE_MS = 100;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

// ---------------------------------------------------------------------------------------------
// Child: one run.

interface Store {
  /** Stores a record due at `due` (ms since the epoch) with id `id`. */
  put(id: number, due: number): void;
  /** Deleted so far (as the store reports them). */
  deleted(): number;
  stop(): void;
  expiryCpu?: () => number;
  wakeups?: () => number;
}

async function makeStore(config: RunConfig, onDeleted: (due: number, at: number) => void): Promise<Store> {
  const ttlMs = config.ttl * 1000;
  if (config.kind === 'capped' || config.kind === 'jobs') {
    const { Space, expirationd } = await import('../src/index.js');
    const space = new Space('keepup');
    space.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    let deleted = 0;
    const task = config.kind === 'capped'
      ? expirationd.start('keepup', space, { itIndex: 'exp', field: 2 })
      : expirationd.start('jobs', space, {
        itIndex: 'exp', field: 2, onExpired: (tuples) => {
          const at = Date.now();
          for (const t of tuples) onDeleted((t[1] as number) * 1000, at);
          deleted += tuples.length;
        },
      });
    if (config.kind === 'capped') {
      task.on('expired', (tuples: unknown[][]) => {
        const at = Date.now();
        for (const t of tuples) onDeleted((t[1] as number) * 1000, at);
        deleted += tuples.length;
      });
    }
    return {
      put: (id, due) => {
        space.insert([id, due / 1000, PAYLOAD]);
      },
      deleted: () => deleted,
      stop: () => task.kill(),
      expiryCpu: () => task.stats().workingTime,
      wakeups: () => task.stats().wakeups,
    };
  }
  const value = (id: number, due: number) => ({ id, due, payload: PAYLOAD });
  if (config.kind === 'ttlcache') {
    const { TTLCache } = await import('@isaacs/ttlcache');
    let deleted = 0;
    const cache = new TTLCache<number, { due: number }>({
      ttl: ttlMs,
      dispose: (v, _k, reason) => {
        if (reason !== 'stale') return;
        deleted++;
        onDeleted(v.due, Date.now());
      },
    });
    return {
      put: (id, due) => cache.set(id, value(id, due), { ttl: due - Date.now() }),
      deleted: () => deleted,
      stop: () => {
        cache.cancelTimer();
      },
    };
  }
  if (config.kind === 'lru-cache') {
    const { LRUCache } = await import('lru-cache');
    let deleted = 0;
    const cache = new LRUCache<number, { due: number }>({
      max: Math.ceil(config.rate * (config.duration + config.ttl + 2)),
      ttl: ttlMs,
      dispose: (v, _k, reason) => {
        if (reason !== 'expire') return;
        deleted++;
        onDeleted(v.due, Date.now());
      },
    });
    const timer = setInterval(() => cache.purgeStale(), 1000);
    return {
      put: (id, due) => cache.set(id, value(id, due), { ttl: due - Date.now() }),
      deleted: () => deleted,
      stop: () => clearInterval(timer),
    };
  }
  const { default: NodeCache } = await import('node-cache');
  let deleted = 0;
  const cache = new NodeCache({ checkperiod: 1 });
  cache.on('expired', (_k: unknown, v: { due: number }) => {
    deleted++;
    onDeleted(v.due, Date.now());
  });
  return {
    put: (id, due) => {
      cache.set(id, value(id, due), (due - Date.now()) / 1000);
    },
    deleted: () => deleted,
    stop: () => cache.close(),
  };
}

async function runChild(config: RunConfig): Promise<RunResult> {
  const total = Math.ceil(config.rate * config.duration);
  const dues = new Float64Array(total);
  const lateness = new Float64Array(total);
  let late = 0;
  const store = await makeStore(config, (due, at) => {
    if (late < total) lateness[late++] = at - due;
  });
  const random = mulberry32(15);
  const ttlMs = config.ttl * 1000;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const produceUntil = t0 + config.duration * 1000;
  const end = produceUntil + ttlMs + 500;
  let inserted = 0;
  // Records due so far: dues are increasing for the TTL producers; the jobs' are random, so
  // that row counts them through a sorted copy at the end and samples nothing.
  let dueCursor = 0;
  const samples: number[] = [];
  delay.enable();
  await new Promise<void>((resolve) => {
    const produce = (): void => {
      const now = Date.now();
      const target = Math.min(total, Math.floor(config.rate * (Math.min(now, produceUntil) - t0) / 1000));
      while (inserted < target) {
        const due = config.kind === 'jobs' ? now + 100 + random() * 1900 : now + ttlMs;
        dues[inserted] = due;
        store.put(inserted + 1, due);
        inserted++;
      }
      if (now < produceUntil) setTimeout(produce, 1);
    };
    const sample = setInterval(() => {
      if (config.kind === 'jobs') return;
      const now = Date.now();
      while (dueCursor < inserted && dues[dueCursor] <= now) dueCursor++;
      samples.push(Math.max(0, dueCursor - store.deleted()));
    }, SAMPLE_MS);
    setTimeout(produce, 0);
    setTimeout(() => {
      clearInterval(sample);
      resolve();
    }, end - t0);
  });
  delay.disable();
  const wall = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const expiryCpu = store.expiryCpu?.();
  const wakeups = store.wakeups?.();
  store.stop();
  const endAt = Date.now();
  const due = dues.subarray(0, inserted).filter((d) => d <= endAt);
  // Records due but not deleted: their lateness so far (a lower bound).
  const deletedCount = store.deleted();
  const all = Array.from(lateness.subarray(0, late));
  if (deletedCount < due.length) {
    const sortedDue = Float64Array.from(due).sort();
    // The latest-due ones are the likeliest to remain; the undeleted count with the smallest
    // lateness consistent with the count (the most recent dues): a lower bound.
    for (let i = 0; i < due.length - deletedCount; i++) all.push(endAt - sortedDue[i + deletedCount]);
  }
  const sorted = Float64Array.from(all).sort();
  return {
    config,
    due: due.length,
    deleted: deletedCount,
    staleMax: samples.length ? Math.max(...samples) : 0,
    staleMean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : 0,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : 0,
    pauseMs: delay.max / 1e6,
    cpuShare: (cpu.user + cpu.system) / 1e6 / wall,
    expiryShare: expiryCpu === undefined ? undefined : expiryCpu / wall,
    wakeups,
  };
}

// ---------------------------------------------------------------------------------------------
// Parent: the runs, one child each, and the table.

const HERE = __filename;
const ROOT = path.resolve(path.dirname(HERE), '..');

function spawnRun(config: RunConfig): Promise<RunResult> {
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  return new Promise((resolve, reject) => {
    const child = fork(HERE, ['--child', JSON.stringify(config)], {
      cwd: ROOT,
      execArgv: ['--import', tsx],
      // No tsx disk cache: its expiry of old entries would run inside the measured stream
      // (bench/anchor.ts's spawnOurs says why).
      env: { ...process.env, TSX_DISABLE_CACHE: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: RunResult | undefined;
    child.on('message', (m) => {
      result = m as RunResult;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (result) resolve(result);
      else reject(new Error(`the ${config.kind} run at ${config.rate}/s died (${signal ?? `exit code ${code}`})`));
    });
  });
}

const LABEL: Record<Kind, string> = {
  capped: 'capped-expirationd (default options)',
  ttlcache: '@isaacs/ttlcache',
  'lru-cache': 'lru-cache (purgeStale() every 1 s)',
  'node-cache': 'node-cache (checkperiod: 1)',
  jobs: 'delayed jobs (onExpired, default options)',
};

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });


/** One store's runs: the median, and with more than one run its range, e.g. `12.0 (11.1–13.6)`. */
function spread(runs: RunResult[], pick: (r: RunResult) => number, format: (n: number) => string): string {
  const xs = runs.map(pick);
  const m = format(median(xs));
  return xs.length < 2 ? m : `${m} (${format(Math.min(...xs))}–${format(Math.max(...xs))})`;
}

/** `groups`: the runs of each store (one per round), in the table's order. */
function table(groups: RunResult[][]): string {
  const head = ['store', 'R/s', 'stale max (goal)', 'stale mean', 'late p50 ms', 'late p99 ms (goal)', 'late max ms',
    'longest pause ms', 'process CPU', 'in chunks, wall (goal)', 'wake-ups', 'deleted/due'];
  const rows = groups.map((runs) => {
    const r = runs[0];
    const goalStale = r.config.kind === 'jobs' ? '' : ` (≤ ${fmt(r.config.rate / 10)})`;
    const goalP99 = r.config.kind === 'jobs' ? ' (≤ 20)' : ' (≤ 100)';
    const ms = (n: number) => fmt(n, 1);
    const pct = (n: number) => `${fmt(n * 100, 1)}%`;
    return [
      LABEL[r.config.kind], fmt(r.config.rate),
      r.config.kind === 'jobs' ? 'n/a' : `${spread(runs, (x) => x.staleMax, (n) => fmt(n))}${goalStale}`,
      r.config.kind === 'jobs' ? 'n/a' : spread(runs, (x) => x.staleMean, (n) => fmt(n)),
      spread(runs, (x) => x.p50, ms), `${spread(runs, (x) => x.p99, ms)}${goalP99}`, spread(runs, (x) => x.max, ms),
      spread(runs, (x) => x.pauseMs, ms),
      spread(runs, (x) => x.cpuShare, pct),
      r.expiryShare === undefined ? '' : `${spread(runs, (x) => x.expiryShare as number, pct)} (≤ 25%)`,
      r.wakeups === undefined ? '' : spread(runs, (x) => x.wakeups as number, (n) => fmt(n)),
      `${fmt(median(runs.map((x) => x.deleted)))}/${fmt(median(runs.map((x) => x.due)))}`,
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    const result = await runChild(JSON.parse(process.argv[3]) as RunConfig);
    await new Promise<void>((resolve, reject) => {
      (process.send as NonNullable<typeof process.send>)(result, (e: Error | null) => (e ? reject(e) : resolve()));
    });
    process.exit(0);
  }
  const quick = process.argv.includes('--quick');
  const rates = flag('rates', quick ? '20000' : '5000,20000,50000,100000').split(',').map(Number);
  const ttl = Number(flag('ttl', quick ? '1' : '2'));
  const duration = Number(flag('duration', quick ? '3' : '10'));
  const jobs = Number(flag('jobs', '1000'));
  const cacheRate = Number(flag('cache-rate', '20000'));
  for (const [name, v] of [['ttl', ttl], ['duration', duration], ['jobs', jobs], ['cache-rate', cacheRate], ...rates.map((r) => ['rates', r] as const)] as const) {
    if (!Number.isFinite(v) || v <= 0) throw new TypeError(`bench:keepup: --${name} must be a positive number`);
  }
  const rounds = Number(flag('runs', quick ? '1' : '3'));
  if (!Number.isInteger(rounds) || rounds < 1) throw new TypeError('bench:keepup: --runs must be a positive integer');
  const runs: RunConfig[] = [
    ...rates.map((rate) => ({ kind: 'capped' as const, rate, ttl, duration })),
    ...(['ttlcache', 'lru-cache', 'node-cache'] as const).map((kind) => ({ kind, rate: cacheRate, ttl, duration })),
    { kind: 'jobs', rate: jobs, ttl: 2, duration },
  ];
  // Rounds interleaved: round 1 runs every store, then round 2, ...; a drift of the machine over
  // the run then touches every store alike.
  const groups: RunResult[][] = runs.map(() => []);
  for (let round = 1; round <= rounds; round++) {
    for (const [i, config] of runs.entries()) {
      process.stderr.write(`bench:keepup: round ${round}/${rounds}: ${LABEL[config.kind]} at ${fmt(config.rate)}/s, ` +
        `T = ${config.ttl} s, D = ${config.duration} s\n`);
      groups[i].push(await spawnRun(config));
    }
  }
  const each = rounds === 1 ? 'one run each' : `medians of ${rounds} interleaved runs, (min–max)`;
  process.stdout.write(`\nbench:keepup (T = ${ttl} s, D = ${duration} s; ${each}; stale sampled every ${SAMPLE_MS} ms; ` +
    `lateness = deletion time - due time; goals of issue 15 in parentheses)\n\n${table(groups)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:keepup: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
