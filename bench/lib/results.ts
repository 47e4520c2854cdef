// The shape of latest.json (schema 2), and the aggregation of the runs into it: per workload shape
// (size × expired fraction), per contender, the median, min and max of every figure over the runs,
// and ratios of medians to the baseline (capped-expirationd, indexed, tuned).
//
// latest.json = {
//   schema: 2, date, durationS, machine: { cpuModel, cores, memoryBytes, platform, node, v8, loadAvg },
//   flags: BenchOptions, workload: { seed, nowSeconds, liveTtlSeconds, ttlSpreadSeconds },
//   ok, failures: [{ name, tuples, expired, run, message }], notes: string[],
//   shapes: [{ tuples, fraction, expired, live, baseline,
//     contenders: [{ name, label, description, selfMemory, ours, mayLeaveBacklog, ok, skipped,
//       runs, errors, stats: { <figure>: { median, min, max } | null } | null,
//       vsBaseline: { <figure>: number } | null, raw: TrialResult[] }] }]
// }
import type { SelfMemoryKind } from './contender.js';
import { spread, type Spread } from './measure.js';
import type { BenchOptions } from './options.js';
import type { TrialResult } from './trial.js';
import { LIVE_TTL_SECONDS, NOW_SECONDS, TTL_SPREAD_SECONDS } from './workload.js';

/** Every figure of a contender on one shape, as median, min and max over its runs (null: none). */
export interface Figures {
  loadNsPerTuple: Spread | null;
  /** resident-set growth per record after a full GC (the server's, for Redis) */
  rssBytesPerTuple: Spread | null;
  /** what the product reports per record (see selfMemory) */
  selfBytesPerTuple: Spread | null;
  /** CPU ms per second with expiry running and nothing due */
  idleCpuMsPerS: Spread | null;
  /** due -> first expired record deleted */
  detectMs: Spread | null;
  /** first -> last expired record deleted (runs that cleared everything) */
  clearMs: Spread | null;
  /** due -> last expired record deleted (runs that cleared everything) */
  dueToClearedMs: Spread | null;
  /** CPU from due to cleared, or to the end of the window */
  clearCpuMs: Spread | null;
  cpuNsPerExpired: Spread | null;
  /** expired records still stored at the end of the measurement ÷ expired records */
  leftFraction: Spread | null;
  /** ms the measurement lasted from due */
  measuredMs: Spread | null;
  checked: Spread | null;
  /** the longest event-loop gap in the fixed window */
  maxPauseMs: Spread | null;
  /** time in gaps over 5 ms in the fixed window */
  stalledMs: Spread | null;
}

/** Medians divided by the baseline's; above 1 means more than the baseline. */
export interface Ratios {
  cpuNsPerExpired: number;
  rssBytesPerTuple: number;
  maxPauseMs: number;
  dueToClearedMs: number;
}

export interface ContenderSummary {
  name: string;
  label: string;
  description: string;
  selfMemory: SelfMemoryKind | null;
  ours: boolean;
  mayLeaveBacklog: boolean;
  /** every run finished and passed the correctness check (or the contender was skipped) */
  ok: boolean;
  /** why the contender did not run here (and how to enable it); null when it ran */
  skipped: string | null;
  /** runs that finished */
  runs: number;
  errors: string[];
  stats: Figures | null;
  vsBaseline: Ratios | null;
  raw: TrialResult[];
}

export interface ShapeResults {
  tuples: number;
  fraction: number;
  expired: number;
  live: number;
  baseline: string | null;
  contenders: ContenderSummary[];
}

export interface RunFailure {
  name: string;
  tuples: number;
  expired: number;
  run: number;
  message: string;
}

export interface BenchResults {
  schema: 2;
  date: string;
  durationS: number;
  machine: {
    cpuModel: string;
    cores: number;
    memoryBytes: number;
    platform: string;
    node: string;
    v8: string;
    /** os.loadavg() at the start and at the end: other work on the machine */
    loadAvg: { start: number[]; end: number[] };
  };
  flags: BenchOptions;
  workload: {
    seed: number;
    nowSeconds: number;
    liveTtlSeconds: number;
    ttlSpreadSeconds: number;
  };
  /** every contender that could run ran every time and passed its correctness check */
  ok: boolean;
  shapes: ShapeResults[];
  failures: RunFailure[];
  notes: string[];
  files?: { json: string; svg: string };
}

export const NOTES = [
  'memory: "RSS" is the growth of the resident set over the load after a full GC, each run in a fresh process (for Redis, the server process\'s); "self" is what the product reports: memory() for ours, page_count × page_size for SQLite, V8 heapUsed growth for the JS caches, INFO used_memory for Redis',
  'idle CPU: process CPU per second over the idle window, with expiry running as configured and nothing due (for Redis, the server\'s CPU)',
  'detect: from "due" (the injected clock steps past the expired records, or the caches\' shared deadline passes) to the start of the work that deleted the first expired record; clear: from there to the last deletion; due→gone: both',
  'CPU ns/expired: CPU from due to the last deletion (or the end of the window) ÷ expired records deleted; median (min–max) over the runs',
  'max stall and >5 ms: a 1 ms timer chain over a fixed window from due (a second pass on a fresh load, because the sampler costs CPU): the longest gap, and the time spent in gaps over 5 ms',
  'Redis and ours at its defaults may leave expired records stored by design; they are watched for --window seconds and "left" says how much remained (Redis never returns an expired key to a read)',
  'peers that need a purge period (node-cache checkperiod, lru-cache purgeStale, SQLite DELETE) use --scan-time, the same value as our tuned scanTime',
];

export interface ShapeInput {
  tuples: number;
  fraction: number;
  names: string[];
  runs: Map<string, TrialResult[]>;
  skipped: Map<string, string>;
  failures: RunFailure[];
}

export function aggregateShape(input: ShapeInput, repeat: number, baseline: string): ShapeResults {
  const summaries = input.names.map((name) =>
    summarize(
      name,
      input.runs.get(name) ?? [],
      input.failures.filter((f) => f.name === name && f.tuples === input.tuples && f.expired === input.fraction),
      input.skipped.get(name) ?? null,
      repeat,
    ),
  );
  const base = summaries.find((s) => s.name === baseline && s.stats !== null);
  for (const s of summaries) {
    s.vsBaseline = base && s !== base && s.stats ? ratios(s.stats, base.stats!) : null;
  }
  const expired = Math.round(input.tuples * input.fraction);
  return {
    tuples: input.tuples,
    fraction: input.fraction,
    expired,
    live: input.tuples - expired,
    baseline: base ? base.name : null,
    contenders: summaries,
  };
}

export function assemble(
  options: BenchOptions,
  shapes: ShapeResults[],
  failures: RunFailure[],
  meta: { date: string; durationS: number; machine: BenchResults['machine'] },
): BenchResults {
  return {
    schema: 2,
    ...meta,
    flags: options,
    workload: { seed: options.seed, nowSeconds: NOW_SECONDS, liveTtlSeconds: LIVE_TTL_SECONDS, ttlSpreadSeconds: TTL_SPREAD_SECONDS },
    ok: shapes.every((s) => s.contenders.every((c) => c.ok)),
    shapes,
    failures,
    notes: NOTES,
  };
}

function summarize(
  name: string,
  runs: TrialResult[],
  failures: RunFailure[],
  skipped: string | null,
  repeat: number,
): ContenderSummary {
  const first = runs[0];
  const errors = [
    ...failures.map((f) => `run ${f.run}: ${f.message}`),
    ...runs.flatMap((r, i) => r.verify.errors.map((e) => `run ${i + 1}: ${e}`)),
  ];
  const pick = (f: (r: TrialResult) => number | null): Spread | null => spread(runs.map(f));
  return {
    name,
    label: first?.label ?? name,
    description: first?.description ?? '',
    selfMemory: first?.selfMemory ?? null,
    ours: first?.ours ?? false,
    mayLeaveBacklog: first?.mayLeaveBacklog ?? false,
    ok: skipped !== null ? errors.length === 0 : runs.length === repeat && errors.length === 0,
    skipped,
    runs: runs.length,
    errors,
    stats: first
      ? {
          loadNsPerTuple: pick((r) => r.load.nsPerTuple),
          rssBytesPerTuple: pick((r) => r.memory.rssBytesPerTuple),
          selfBytesPerTuple: pick((r) => r.memory.selfBytesPerTuple),
          idleCpuMsPerS: pick((r) => r.idle.cpuMsPerS),
          detectMs: pick((r) => r.clear.detectMs),
          clearMs: pick((r) => r.clear.clearMs),
          dueToClearedMs: pick((r) => r.clear.dueToClearedMs),
          clearCpuMs: pick((r) => r.clear.cpuMs),
          cpuNsPerExpired: pick((r) => r.clear.cpuNsPerExpired),
          leftFraction: pick((r) => r.clear.left / r.expired),
          measuredMs: pick((r) => r.clear.measuredMs),
          checked: pick((r) => r.clear.checked),
          maxPauseMs: pick((r) => r.pauses.maxMs),
          stalledMs: pick((r) => r.pauses.stalledMs),
        }
      : null,
    vsBaseline: null,
    raw: runs,
  };
}

function ratios(f: Figures, base: Figures): Ratios {
  const r = (a: Spread | null, b: Spread | null): number => (a && b && b.median > 0 ? a.median / b.median : Number.NaN);
  return {
    cpuNsPerExpired: r(f.cpuNsPerExpired, base.cpuNsPerExpired),
    rssBytesPerTuple: r(f.rssBytesPerTuple, base.rssBytesPerTuple),
    maxPauseMs: r(f.maxPauseMs, base.maxPauseMs),
    dueToClearedMs: r(f.dueToClearedMs, base.dueToClearedMs),
  };
}
