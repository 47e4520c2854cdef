// `npm run bench:soak` / `npx tsx bench/soak.ts [--cycles 10000000] [--live 200000] [--warmup N]
//   [--sample N] [--batch 512] [--delay 0]`
//
// A soak benchmark, not a test: it pushes --cycles insert/expire cycles through one running
// indexed expiration task and watches memory. The space has a HASH primary key and a TTL TREE
// index (the task walks the TREE with early break and deletes through the HASH). A virtual clock
// (the task's injected `now`) advances with every insert, and each tuple lives for a jittered
// lifetime, so about --live tuples are alive at any time and tuples expire continuously, out of
// insertion order. Scheduling is real: the producer inserts --batch tuples per turn of the event
// loop and the task runs on its own setImmediate / setTimeout (iterationDelay --delay seconds).
//
// Every --sample cycles (default 1M) it prints RSS, the V8 heap, space.memory(), the live count,
// the backlog (tuples already expired but not yet deleted) and the task's counters. The target is
// RSS flat within 10% after the warm-up (default: the first 20% of the cycles, at most 2M), with
// no growth trend; the last line is the verdict with the figures: first sample after warm-up vs
// last, the maximum deviation from that first sample, and the least-squares slope (per 1M cycles
// and as a share of the whole post-warm-up window). The same figures are given for memory().
// Exit status: 0 when the verdict is PASS, 1 otherwise.
import { Space, expirationd, type Tuple } from '../src/index.js';
import { mulberry32 } from './lib/random.js';

interface Options {
  cycles: number;
  live: number;
  warmup: number;
  sample: number;
  batch: number;
  delay: number;
}

const USAGE = `usage: npx tsx bench/soak.ts [--cycles 10000000] [--live 200000] [--warmup N] [--sample N] [--batch 512] [--delay 0]
  --cycles   insert/expire cycles in all (default 10M)
  --live     tuples alive at any time, about (default 200k)
  --warmup   cycles before the memory figures count (default: 20% of --cycles, at most 2M)
  --sample   cycles between samples (default: 1M, or --cycles/10 when smaller)
  --batch    inserts per turn of the event loop (default 512)
  --delay    the task's iterationDelay in seconds (default 0: a chunk per turn of the loop)
`;

function parse(argv: string[]): Options {
  const values = new Map<string, number>();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--help' || flag === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    const m = /^--(cycles|live|warmup|sample|batch|delay)(?:=(.*))?$/.exec(flag);
    if (!m) throw new Error(`unknown argument '${flag}'`);
    const text = m[2] ?? argv[++i];
    const value = Number(String(text).replace(/_/g, ''));
    if (text === undefined || !Number.isFinite(value) || value < 0) throw new Error(`--${m[1]} needs a non-negative number`);
    values.set(m[1], value);
  }
  const cycles = Math.floor(values.get('cycles') ?? 10_000_000);
  if (cycles < 10) throw new Error('--cycles must be at least 10');
  const sample = Math.max(1, Math.floor(values.get('sample') ?? Math.min(1_000_000, Math.floor(cycles / 10))));
  const warmup = Math.floor(values.get('warmup') ?? Math.min(2_000_000, Math.floor(cycles / 5)));
  return {
    cycles,
    live: Math.max(1, Math.floor(values.get('live') ?? 200_000)),
    warmup,
    sample,
    batch: Math.max(1, Math.floor(values.get('batch') ?? 512)),
    delay: values.get('delay') ?? 0,
  };
}

interface Sample {
  cycles: number;
  seconds: number;
  rss: number;
  heapUsed: number;
  tuples: number;
  indexes: number;
  total: number;
  len: number;
  backlog: number;
  expired: number;
  chunks: number;
  fullScans: number;
}

const MB = 1024 * 1024;
const fmtMB = (bytes: number) => (bytes / MB).toFixed(1);
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;

function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

interface Figures {
  first: number;
  last: number;
  change: number;
  maxDeviation: number;
  /** Bytes per million cycles. */
  slope: number;
  /** The slope over the post-warm-up window, as a share of the first value. */
  trend: number;
}

function figures(samples: Sample[], pick: (s: Sample) => number): Figures {
  const ys = samples.map(pick);
  const xs = samples.map((s) => s.cycles / 1e6);
  const first = ys[0];
  const last = ys[ys.length - 1];
  const perMillion = samples.length > 1 ? slope(xs, ys) : 0;
  const span = xs[xs.length - 1] - xs[0];
  return {
    first,
    last,
    change: (last - first) / first,
    maxDeviation: Math.max(...ys.map((y) => Math.abs(y - first) / first)),
    slope: perMillion,
    trend: (perMillion * span) / first,
  };
}


async function main(): Promise<number> {
  let o: Options;
  try {
    o = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`soak: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }

  const space = new Space('soak');
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [[2, 'number']] });

  // Virtual time: every insert advances the clock by `dt`; a tuple lives for `lifetime` on average
  // (uniform in [0.5, 1.5] x lifetime), so about `live` tuples are alive at any time.
  const dt = 0.001;
  const lifetime = o.live * dt;
  let clock = 1_000_000;
  const random = mulberry32(42);
  const payload = 'soak-payload-'.repeat(10);

  const task = expirationd.start('soak', space, {
    rmIndex: 'pk', itIndex: 'exp', field: 2, scanSize: 1024, iterationDelay: o.delay, fullScanDelay: 0,
    now: () => clock,
  });
  let taskError: unknown;
  task.on('error', (error) => {
    taskError ??= error;
  });

  process.stdout.write(`soak: ${o.cycles.toLocaleString('en-US')} insert/expire cycles through a running indexed task ` +
    `(HASH pk + TTL TREE, early break), ~${o.live.toLocaleString('en-US')} live tuples, batch ${o.batch}, ` +
    `iterationDelay ${o.delay} s; warm-up ${o.warmup.toLocaleString('en-US')} cycles, a sample every ${o.sample.toLocaleString('en-US')}\n\n`);
  const header = ['cycles', 'elapsed s', 'cycles/s', 'RSS MB', 'heap MB', 'memory MB', '(tuples', 'indexes)', 'len', 'backlog', 'expired', 'chunks'];
  const widths = [12, 9, 9, 8, 8, 10, 8, 9, 9, 8, 12, 9];
  const row = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join(' ');
  process.stdout.write(`${row(header)}\n`);

  const samples: Sample[] = [];
  const started = process.hrtime.bigint();
  let lastSampleAt = started;
  let lastSampleCycles = 0;
  const takeSample = (cycles: number) => {
    const now = process.hrtime.bigint();
    const mem = space.memory();
    const usage = process.memoryUsage();
    const stats = task.stats();
    const s: Sample = {
      cycles,
      seconds: Number(now - started) / 1e9,
      rss: usage.rss,
      heapUsed: usage.heapUsed,
      tuples: mem.tuples,
      indexes: mem.indexes,
      total: mem.total,
      len: space.len(),
      backlog: space.index.exp.count(clock, { iterator: 'LE' }),
      expired: stats.expired,
      chunks: stats.chunks,
      fullScans: stats.fullScans,
    };
    const rate = (cycles - lastSampleCycles) / (Number(now - lastSampleAt) / 1e9);
    lastSampleAt = now;
    lastSampleCycles = cycles;
    samples.push(s);
    process.stdout.write(`${row([
      cycles.toLocaleString('en-US'), s.seconds.toFixed(1), Math.round(rate).toLocaleString('en-US'),
      fmtMB(s.rss), fmtMB(s.heapUsed), fmtMB(s.total), fmtMB(s.tuples), fmtMB(s.indexes),
      s.len.toLocaleString('en-US'), s.backlog.toLocaleString('en-US'), s.expired.toLocaleString('en-US'),
      s.chunks.toLocaleString('en-US'),
    ])}\n`);
  };

  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  let id = 0;
  let maxBacklog = 0;
  while (id < o.cycles) {
    const end = Math.min(o.cycles, id + o.batch);
    for (; id < end; id++) {
      clock += dt;
      const tuple: Tuple = [id, clock + lifetime * (0.5 + random()), payload.slice(0, 16 + (id * 7919) % 112)];
      space.insert(tuple);
      if ((id + 1) % o.sample === 0) {
        maxBacklog = Math.max(maxBacklog, space.index.exp.count(clock, { iterator: 'LE' }));
        takeSample(id + 1);
      }
    }
    await turn();
  }
  if (o.cycles % o.sample !== 0) takeSample(o.cycles);

  // Drain: everything expires; the task must empty the space.
  clock += 2 * lifetime;
  const drainLimit = Date.now() + 60_000;
  while (space.len() > 0 && Date.now() < drainLimit) await turn();
  const drained = space.len() === 0;
  space.checkIntegrity();
  const finalStats = task.stats();
  task.kill();

  const after = samples.filter((s) => s.cycles > o.warmup);
  process.stdout.write('\n');
  if (after.length < 2) {
    process.stdout.write(`verdict: INCONCLUSIVE: only ${after.length} sample(s) after the warm-up of ${o.warmup} cycles; ` +
      'use more --cycles or a smaller --warmup / --sample\n');
    return 1;
  }
  const rss = figures(after, (s) => s.rss);
  const mem = figures(after, (s) => s.total);
  const flat = rss.maxDeviation <= 0.10;
  const noTrend = rss.trend <= 0.05;
  const memFlat = mem.maxDeviation <= 0.10 && mem.trend <= 0.05;
  const ok = flat && noTrend && memFlat && drained && taskError === undefined;
  const describe = (f: Figures, unit: (x: number) => string) =>
    `first after warm-up ${unit(f.first)} MB, last ${unit(f.last)} MB (${pct(f.change)}), ` +
    `max deviation ${pct(f.maxDeviation).replace('+', '')} (limit 10%), ` +
    `slope ${f.slope >= 0 ? '+' : ''}${(f.slope / MB).toFixed(2)} MB per 1M cycles (${pct(f.trend)} over the window; limit +5%)`;
  process.stdout.write(`RSS:      ${describe(rss, fmtMB)}\n`);
  process.stdout.write(`memory(): ${describe(mem, fmtMB)}\n`);
  process.stdout.write(`task: ${finalStats.expired.toLocaleString('en-US')} expired in ${finalStats.chunks.toLocaleString('en-US')} chunks, ` +
    `${finalStats.fullScans.toLocaleString('en-US')} passes, ${finalStats.restarts - 1} failed chunks; max backlog at a sample ` +
    `${maxBacklog.toLocaleString('en-US')}; drained to 0 after the run: ${drained ? 'yes' : `no (${space.len()} left)`}` +
    `${taskError === undefined ? '' : `; first error: ${String(taskError)}`}\n`);
  const seconds = after[after.length - 1].seconds;
  process.stdout.write(`verdict: ${ok ? 'PASS' : 'FAIL'}: RSS ${flat ? 'flat' : 'NOT flat'} within 10% after warm-up ` +
    `(${fmtMB(rss.first)} -> ${fmtMB(rss.last)} MB, max deviation ${(rss.maxDeviation * 100).toFixed(1)}%), ` +
    `${noTrend ? 'no growth trend' : 'GROWING'} (slope ${rss.slope >= 0 ? '+' : ''}${(rss.slope / MB).toFixed(2)} MB/1M cycles, ` +
    `${pct(rss.trend)} over ${((after[after.length - 1].cycles - after[0].cycles) / 1e6).toFixed(1)}M cycles); ` +
    `memory() ${memFlat ? 'flat' : 'NOT flat'} (${fmtMB(mem.first)} -> ${fmtMB(mem.last)} MB); ` +
    `${o.cycles.toLocaleString('en-US')} cycles in ${seconds.toFixed(0)} s\n`);
  space.drop();
  return ok ? 0 : 1;
}

main().then((code) => {
  process.exitCode = code;
}, (error: unknown) => {
  process.stderr.write(`soak: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
