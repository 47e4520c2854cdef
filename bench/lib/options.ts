// Benchmark options: their defaults, validation, and the command-line parser behind `npm run bench`.
import * as path from 'node:path';
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** records loaded into every contender (the shape's size when sizes is null) */
  tuples: number;
  /** fraction of the records that are expired when the backlog comes due, in (0, 1] */
  expired: number;
  /** sizes of the sweep; null: [tuples] */
  sizes: number[] | null;
  /** expired fractions of the sweep; null: [expired] */
  fractions: number[] | null;
  /** true when --sweep chose sizes and fractions */
  sweep: boolean;
  /** records visited per expiration chunk (ours), rows per DELETE batch (sqlite) */
  scanSize: number;
  /** seconds a full scan should take (ours, tuned); the purge period of the peers that need one */
  scanTime: number;
  /** true when --quick chose the record count and the windows */
  quick: boolean;
  /** contender names to run; null for all */
  only: string[] | null;
  /** directory for latest.json and latest.svg; null writes nothing */
  out: string | null;
  /** measured runs per contender and shape (each in a fresh process); medians, min and max are reported */
  repeat: number;
  /** seed of the shuffle that picks the expired ids */
  seed: number;
  /** seconds a contender may take to clear its backlog before the run fails */
  timeout: number;
  /** seconds the contenders that may leave a backlog by design (Redis, ours at its defaults) are watched */
  window: number;
  /** seconds of the idle window (expiry running, nothing due) that gives idle CPU per second */
  idle: number;
  /** seconds of the fixed window, from "due", over which event-loop stalls are summed */
  pauseWindow: number;
  /** progress lines on stderr */
  progress: boolean;
}

export const QUICK = { tuples: 100_000, repeat: 1, window: 2, idle: 1, pauseWindow: 1 } as const;
export const SWEEP = { sizes: [100_000, 1_000_000], fractions: [0.01, 0.1, 0.5, 1] } as const;
export const HUGE = 10_000_000;

export const DEFAULTS: Readonly<BenchOptions> = {
  tuples: 1_000_000,
  expired: 0.1,
  sizes: null,
  fractions: null,
  sweep: false,
  scanSize: 1024,
  scanTime: 1,
  quick: false,
  only: null,
  out: 'bench/results',
  repeat: 3,
  seed: 20240601,
  timeout: 120,
  window: 10,
  idle: 2,
  pauseWindow: 2,
  progress: true,
};

export const USAGE = `Usage: npm run bench -- [options]

Loads the same records [id, 'user<id>@tarantool.io', exp] into every contender, starts each
one's expiry as its users run it, measures its idle CPU with nothing due, then makes a backlog
due at once and measures detection (due -> first deletion), clearing (first -> last deletion),
CPU, event-loop stalls and memory (RSS growth, and what the product reports itself).

  --tuples N        records to load (default ${DEFAULTS.tuples})
  --expired F       fraction of them expired, 0 < F <= 1 (default ${DEFAULTS.expired})
  --sweep           every size of ${SWEEP.sizes.join(', ')} × every fraction of ${SWEEP.fractions.join(', ')}
                    (interleaved, --repeat runs each; about an hour on 2 cores)
  --with-10m        adds ${HUGE.toLocaleString('en-US')} records to the sizes (needs ~16 GB of RAM; hours)
  --sizes a,b       sizes to sweep (instead of --tuples)
  --fractions a,b   expired fractions to sweep (instead of --expired)
  --scan-size N     records per expiration chunk / rows per DELETE batch (default ${DEFAULTS.scanSize})
  --scan-time S     our tuned scanTime, and the purge period of node-cache, lru-cache and sqlite (default ${DEFAULTS.scanTime})
  --quick           ${QUICK.tuples} records, ${QUICK.repeat} run, ${QUICK.idle} s idle, ${QUICK.pauseWindow} s pause window,
                    ${QUICK.window} s window: about a minute without Redis, then the
                    short keep-up table: about 30 s more (explicit flags still win)
  --only a,b        run only these contenders (see the table for names)
  --out DIR         where latest.json and latest.svg go (default ${DEFAULTS.out})
  --repeat N        runs per contender and shape, each in a fresh process; medians, min and max (default ${DEFAULTS.repeat})
  --seed N          seed of the expired-id shuffle (default ${DEFAULTS.seed})
  --timeout S       seconds allowed to clear a backlog (default ${DEFAULTS.timeout})
  --window S        seconds Redis and ours-at-defaults are watched; what is left is reported (default ${DEFAULTS.window})
  --idle S          idle window for idle CPU (default ${DEFAULTS.idle})
  --pause-window S  fixed window for the longest stall and the time in stalls over 5 ms (default ${DEFAULTS.pauseWindow})
  --no-progress     no progress lines on stderr
  --no-keepup       skip the keep-up table that follows (npm run bench:keepup -- --quick; not run with --sweep)
  -h, --help        this text

Redis runs when redis-server is on PATH (apt-get install redis-server); the bench starts a
private instance on a free loopback port and stops it.
`;

/** Fills in defaults and checks ranges; throws a TypeError naming the bad option. */
export function resolveOptions(partial: Partial<BenchOptions> = {}): BenchOptions {
  for (const key of Object.keys(partial)) {
    if (!(key in DEFAULTS)) throw new TypeError(`unknown bench option "${key}"`);
  }
  const quick = partial.quick ?? false;
  const sweep = partial.sweep ?? false;
  const o: BenchOptions = {
    ...DEFAULTS,
    ...stripUndefined(partial),
    quick,
    sweep,
    tuples: partial.tuples ?? (quick ? QUICK.tuples : DEFAULTS.tuples),
    repeat: partial.repeat ?? (quick ? QUICK.repeat : DEFAULTS.repeat),
    window: partial.window ?? (quick ? QUICK.window : DEFAULTS.window),
    idle: partial.idle ?? (quick ? QUICK.idle : DEFAULTS.idle),
    pauseWindow: partial.pauseWindow ?? (quick ? QUICK.pauseWindow : DEFAULTS.pauseWindow),
    sizes: partial.sizes ?? (sweep ? [...SWEEP.sizes] : null),
    fractions: partial.fractions ?? (sweep ? [...SWEEP.fractions] : null),
  };
  positiveInteger('tuples', o.tuples);
  fraction('expired', o.expired);
  if (o.sizes !== null) {
    if (o.sizes.length === 0) throw new TypeError('--sizes needs at least one size');
    for (const n of o.sizes) positiveInteger('sizes', n);
  }
  if (o.fractions !== null) {
    if (o.fractions.length === 0) throw new TypeError('--fractions needs at least one fraction');
    for (const f of o.fractions) fraction('fractions', f);
  }
  positiveInteger('scan-size', o.scanSize);
  positiveSeconds('scan-time', o.scanTime);
  positiveInteger('repeat', o.repeat);
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`--seed must be an integer, got ${o.seed}`);
  positiveSeconds('timeout', o.timeout);
  positiveSeconds('window', o.window);
  if (!(o.idle >= 0 && Number.isFinite(o.idle))) throw new TypeError(`--idle must be a number of seconds >= 0, got ${o.idle}`);
  positiveSeconds('pause-window', o.pauseWindow);
  if (o.only !== null && o.only.length === 0) throw new TypeError('--only needs at least one contender name');
  for (const s of shapesOf(o)) {
    if (Math.round(s.tuples * s.expired) < 1) throw new TypeError(`${s.tuples} records × ${s.expired} expired leaves no expired record`);
  }
  return o;
}

export interface Shape {
  tuples: number;
  expired: number;
}

/** The workload shapes of a run: every size × every fraction, sizes outermost. */
export function shapesOf(o: BenchOptions): Shape[] {
  const sizes = o.sizes ?? [o.tuples];
  const fractions = o.fractions ?? [o.expired];
  return sizes.flatMap((tuples) => fractions.map((expired) => ({ tuples, expired })));
}

/** Parses `process.argv.slice(2)`; returns null when help was asked for. */
export function parseCommandLine(argv: string[]): Partial<BenchOptions> | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      tuples: { type: 'string' },
      expired: { type: 'string' },
      sweep: { type: 'boolean' },
      'with-10m': { type: 'boolean' },
      sizes: { type: 'string' },
      fractions: { type: 'string' },
      'scan-size': { type: 'string' },
      'scan-time': { type: 'string' },
      quick: { type: 'boolean' },
      only: { type: 'string' },
      out: { type: 'string' },
      repeat: { type: 'string' },
      seed: { type: 'string' },
      timeout: { type: 'string' },
      window: { type: 'string' },
      idle: { type: 'string' },
      'pause-window': { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return null;
  const partial: Partial<BenchOptions> = {};
  if (values.tuples !== undefined) partial.tuples = number('--tuples', values.tuples);
  if (values.expired !== undefined) partial.expired = number('--expired', values.expired);
  if (values.sweep) partial.sweep = true;
  if (values.sizes !== undefined) partial.sizes = list('--sizes', values.sizes);
  if (values.fractions !== undefined) partial.fractions = list('--fractions', values.fractions);
  if (values['with-10m']) {
    const sizes = partial.sizes ?? (partial.sweep ? [...SWEEP.sizes] : [partial.tuples ?? DEFAULTS.tuples]);
    partial.sizes = sizes.includes(HUGE) ? sizes : [...sizes, HUGE];
  }
  if (values['scan-size'] !== undefined) partial.scanSize = number('--scan-size', values['scan-size']);
  if (values['scan-time'] !== undefined) partial.scanTime = seconds('--scan-time', values['scan-time']);
  if (values.quick) partial.quick = true;
  if (values.only !== undefined) partial.only = values.only.split(',').map((s) => s.trim()).filter(Boolean);
  if (values.out !== undefined) partial.out = path.resolve(values.out);
  if (values.repeat !== undefined) partial.repeat = number('--repeat', values.repeat);
  if (values.seed !== undefined) partial.seed = number('--seed', values.seed);
  if (values.timeout !== undefined) partial.timeout = seconds('--timeout', values.timeout);
  if (values.window !== undefined) partial.window = seconds('--window', values.window);
  if (values.idle !== undefined) partial.idle = seconds('--idle', values.idle);
  if (values['pause-window'] !== undefined) partial.pauseWindow = seconds('--pause-window', values['pause-window']);
  if (values['no-progress']) partial.progress = false;
  return partial;
}

function number(flag: string, text: string): number {
  const value = Number(text.replace(/_/g, ''));
  if (text.trim() === '' || !Number.isFinite(value)) throw new TypeError(`${flag} expects a number, got "${text}"`);
  return value;
}

function list(flag: string, text: string): number[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => number(flag, s));
}

/** Accepts "1", "1s", "1.5 s" and "250ms". */
function seconds(flag: string, text: string): number {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*(ms|s)?\s*$/.exec(text);
  if (!m) throw new TypeError(`${flag} expects seconds such as 1, 1s or 250ms, got "${text}"`);
  const value = Number(m[1]);
  return m[2] === 'ms' ? value / 1000 : value;
}

function positiveInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`--${name} must be a positive integer, got ${value}`);
}

function positiveSeconds(name: string, value: number): void {
  if (!(value > 0 && Number.isFinite(value))) throw new TypeError(`--${name} must be a positive number of seconds, got ${value}`);
}

function fraction(name: string, value: number): void {
  if (!(value > 0 && value <= 1)) throw new TypeError(`--${name} must be in (0, 1], got ${value}`);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
