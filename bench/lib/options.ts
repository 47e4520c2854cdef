// Benchmark options: their defaults, validation, and the command-line parser behind `npm run bench`.
import * as path from 'node:path';
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** tuples loaded into every contender */
  tuples: number;
  /** fraction of the tuples that are expired when the clear starts, in (0, 1] */
  expired: number;
  /** tuples visited per expiration chunk (ours), rows per DELETE (sqlite) */
  scanSize: number;
  /** seconds a full scan should take (ours), check period (node-cache) */
  scanTime: number;
  /** true when --quick chose the tuple count */
  quick: boolean;
  /** contender names to run; null for all */
  only: string[] | null;
  /** directory for latest.json and latest.svg; null writes nothing */
  out: string | null;
  /** measured runs per contender (each in a fresh process); the report gives medians */
  repeat: number;
  /** seed of the shuffle that picks the expired ids */
  seed: number;
  /** seconds a contender may take to clear its backlog before the run fails */
  timeout: number;
  /** progress lines on stderr */
  progress: boolean;
}

export const QUICK_TUPLES = 100_000;
export const QUICK_REPEAT = 2;

export const DEFAULTS: Readonly<BenchOptions> = {
  tuples: 1_000_000,
  expired: 0.1,
  scanSize: 1024,
  scanTime: 1,
  quick: false,
  only: null,
  out: 'bench/results',
  repeat: 3,
  seed: 20240601,
  timeout: 120,
  progress: true,
};

export const USAGE = `Usage: npm run bench -- [options]

Loads the same tuples [id, 'user<id>@tarantool.io', exp] into every contender, then
measures how each one clears the same expired backlog.

  --tuples N        tuples to load (default ${DEFAULTS.tuples})
  --expired F       fraction of them already expired, 0 < F <= 1 (default ${DEFAULTS.expired})
  --scan-size N     tuples per expiration chunk / rows per DELETE (default ${DEFAULTS.scanSize})
  --scan-time S     seconds a full scan should take; node-cache's check period (default ${DEFAULTS.scanTime})
  --quick           ${QUICK_TUPLES} tuples and ${QUICK_REPEAT} runs, for CI and the impatient (--tuples, --repeat still win)
  --only a,b        run only these contenders (see the table for names)
  --out DIR         where latest.json and latest.svg go (default ${DEFAULTS.out})
  --repeat N        runs per contender, each in a fresh process; medians are reported (default ${DEFAULTS.repeat})
  --seed N          seed of the expired-id shuffle (default ${DEFAULTS.seed})
  --timeout S       seconds allowed to clear a backlog (default ${DEFAULTS.timeout})
  --no-progress     no progress lines on stderr
  -h, --help        this text
`;

/** Fills in defaults and checks ranges; throws a TypeError naming the bad option. */
export function resolveOptions(partial: Partial<BenchOptions> = {}): BenchOptions {
  for (const key of Object.keys(partial)) {
    if (!(key in DEFAULTS)) throw new TypeError(`unknown bench option "${key}"`);
  }
  const quick = partial.quick ?? false;
  const o: BenchOptions = {
    ...DEFAULTS,
    ...stripUndefined(partial),
    quick,
    tuples: partial.tuples ?? (quick ? QUICK_TUPLES : DEFAULTS.tuples),
    repeat: partial.repeat ?? (quick ? QUICK_REPEAT : DEFAULTS.repeat),
  };
  positiveInteger('tuples', o.tuples);
  if (!(o.expired > 0 && o.expired <= 1)) throw new TypeError(`--expired must be in (0, 1], got ${o.expired}`);
  positiveInteger('scan-size', o.scanSize);
  if (!(o.scanTime > 0 && Number.isFinite(o.scanTime))) throw new TypeError(`--scan-time must be a positive number of seconds, got ${o.scanTime}`);
  positiveInteger('repeat', o.repeat);
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`--seed must be an integer, got ${o.seed}`);
  if (!(o.timeout > 0)) throw new TypeError(`--timeout must be positive, got ${o.timeout}`);
  if (o.only !== null && o.only.length === 0) throw new TypeError('--only needs at least one contender name');
  if (Math.round(o.tuples * o.expired) < 1) throw new TypeError('--tuples × --expired leaves no expired tuple');
  return o;
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
      'scan-size': { type: 'string' },
      'scan-time': { type: 'string' },
      quick: { type: 'boolean' },
      only: { type: 'string' },
      out: { type: 'string' },
      repeat: { type: 'string' },
      seed: { type: 'string' },
      timeout: { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return null;
  const partial: Partial<BenchOptions> = {};
  if (values.tuples !== undefined) partial.tuples = number('--tuples', values.tuples);
  if (values.expired !== undefined) partial.expired = number('--expired', values.expired);
  if (values['scan-size'] !== undefined) partial.scanSize = number('--scan-size', values['scan-size']);
  if (values['scan-time'] !== undefined) partial.scanTime = seconds('--scan-time', values['scan-time']);
  if (values.quick) partial.quick = true;
  if (values.only !== undefined) partial.only = values.only.split(',').map((s) => s.trim()).filter(Boolean);
  if (values.out !== undefined) partial.out = path.resolve(values.out);
  if (values.repeat !== undefined) partial.repeat = number('--repeat', values.repeat);
  if (values.seed !== undefined) partial.seed = number('--seed', values.seed);
  if (values.timeout !== undefined) partial.timeout = seconds('--timeout', values.timeout);
  if (values['no-progress']) partial.progress = false;
  return partial;
}

function number(flag: string, text: string): number {
  const value = Number(text.replace(/_/g, ''));
  if (text.trim() === '' || !Number.isFinite(value)) throw new TypeError(`${flag} expects a number, got "${text}"`);
  return value;
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

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
