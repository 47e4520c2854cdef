// The shape of latest.json, and the aggregation of the runs into it: medians per contender and
// ratios to the baseline (capped-expirationd, indexed).
import type { MemoryKind } from './contender.js';
import { median } from './measure.js';
import type { BenchOptions } from './options.js';
import type { TrialResult } from './trial.js';
import { LIVE_TTL_SECONDS, NOW_SECONDS, TTL_SPREAD_SECONDS } from './workload.js';

export interface Figures {
  loadMs: number;
  loadNsPerTuple: number;
  memoryBytesPerTuple: number;
  clearWallMs: number;
  clearCpuMs: number;
  cpuNsPerExpired: number;
  checked: number | null;
  maxPauseMs: number;
  p99PauseMs: number;
}

/** Each figure divided by the baseline's; above 1 means more than the baseline. */
export interface Ratios {
  loadNsPerTuple: number;
  memoryBytesPerTuple: number;
  clearWallMs: number;
  cpuNsPerExpired: number;
  maxPauseMs: number;
  p99PauseMs: number;
}

export interface ContenderSummary {
  name: string;
  label: string;
  description: string;
  memoryKind: MemoryKind;
  ours: boolean;
  /** every run finished and passed the correctness check */
  ok: boolean;
  /** runs that finished */
  runs: number;
  errors: string[];
  /** medians over the finished runs; null when none finished */
  median: Figures | null;
  /** null for the baseline itself, or when it or this contender has no figures */
  vsBaseline: Ratios | null;
  raw: TrialResult[];
}

export interface BenchResults {
  schema: 1;
  date: string;
  durationS: number;
  machine: {
    cpuModel: string;
    cores: number;
    memoryBytes: number;
    platform: string;
    node: string;
    v8: string;
  };
  flags: BenchOptions;
  workload: {
    tuples: number;
    expired: number;
    live: number;
    seed: number;
    nowSeconds: number;
    liveTtlSeconds: number;
    ttlSpreadSeconds: number;
  };
  baseline: string | null;
  /** every contender ran every time and passed its correctness check */
  ok: boolean;
  contenders: ContenderSummary[];
  failures: { name: string; run: number; message: string }[];
  notes: string[];
  files?: { json: string; svg: string };
}

export interface AggregateInput {
  options: BenchOptions;
  names: string[];
  runs: Map<string, TrialResult[]>;
  failures: { name: string; run: number; message: string }[];
  baseline: string;
  date: string;
  durationS: number;
  machine: BenchResults['machine'];
}

export const NOTES = [
  "memory: 'native' is what the product reports (space.memory().total); 'heap' is V8 heapUsed growth over the load and 'rss' resident-set growth, each after a full GC, in a fresh process",
  'CPU and wall time of the clear come from a pass without the event-loop sampler; pauses from a second pass on a fresh load with monitorEventLoopDelay({ resolution: 1 }) on for the expiry phase only (an idle loop reads about 1.1 ms)',
  'wall time runs from "backlog exists" to "every expired tuple is gone": for the capped-expirationd and sqlite it starts when expiry starts (time is injected); for the TTL caches when their short TTLs run out, and it includes waiting for their own timer',
  'load time includes building each tuple; capped-expirationd inserts with insertMany in 10k batches, sqlite in 10k-row transactions, the caches with set() in a loop',
];

export function aggregate(input: AggregateInput): BenchResults {
  const { options } = input;
  const summaries = input.names.map((name) => summarize(name, input.runs.get(name) ?? [], input.failures, options.repeat));
  const base = summaries.find((s) => s.name === input.baseline && s.median !== null);
  for (const s of summaries) {
    s.vsBaseline = base && s !== base && s.median ? ratios(s.median, base.median!) : null;
  }
  const expired = Math.round(options.tuples * options.expired);
  return {
    schema: 1,
    date: input.date,
    durationS: input.durationS,
    machine: input.machine,
    flags: options,
    workload: {
      tuples: options.tuples,
      expired,
      live: options.tuples - expired,
      seed: options.seed,
      nowSeconds: NOW_SECONDS,
      liveTtlSeconds: LIVE_TTL_SECONDS,
      ttlSpreadSeconds: TTL_SPREAD_SECONDS,
    },
    baseline: base ? base.name : null,
    ok: summaries.every((s) => s.ok),
    contenders: summaries,
    failures: input.failures,
    notes: NOTES,
  };
}

function summarize(
  name: string,
  runs: TrialResult[],
  failures: AggregateInput['failures'],
  repeat: number,
): ContenderSummary {
  const first = runs[0];
  const errors = [
    ...failures.filter((f) => f.name === name).map((f) => `run ${f.run}: ${f.message}`),
    ...runs.flatMap((r, i) => r.verify.errors.map((e) => `run ${i + 1}: ${e}`)),
  ];
  const loads = runs.flatMap((r) => r.load.ms);
  const checked = runs.map((r) => r.clear.checked).filter((c): c is number => c !== null);
  const tuples = first?.tuples ?? 0;
  return {
    name,
    label: first?.label ?? name,
    description: first?.description ?? '',
    memoryKind: first?.memoryKind ?? 'heap',
    ours: first?.ours ?? false,
    ok: runs.length === repeat && errors.length === 0,
    runs: runs.length,
    errors,
    median: first
      ? {
          loadMs: median(loads),
          loadNsPerTuple: (median(loads) * 1e6) / tuples,
          memoryBytesPerTuple: median(runs.map((r) => r.memory.bytesPerTuple)),
          clearWallMs: median(runs.map((r) => r.clear.wallMs)),
          clearCpuMs: median(runs.map((r) => r.clear.cpuMs)),
          cpuNsPerExpired: median(runs.map((r) => r.clear.cpuNsPerExpired)),
          checked: checked.length ? median(checked) : null,
          maxPauseMs: median(runs.map((r) => r.pauses.maxMs)),
          p99PauseMs: median(runs.map((r) => r.pauses.p99Ms)),
        }
      : null,
    vsBaseline: null,
    raw: runs,
  };
}

function ratios(f: Figures, base: Figures): Ratios {
  const r = (a: number, b: number): number => (b > 0 ? a / b : Number.NaN);
  return {
    loadNsPerTuple: r(f.loadNsPerTuple, base.loadNsPerTuple),
    memoryBytesPerTuple: r(f.memoryBytesPerTuple, base.memoryBytesPerTuple),
    clearWallMs: r(f.clearWallMs, base.clearWallMs),
    cpuNsPerExpired: r(f.cpuNsPerExpired, base.cpuNsPerExpired),
    maxPauseMs: r(f.maxPauseMs, base.maxPauseMs),
    p99PauseMs: r(f.p99PauseMs, base.p99PauseMs),
  };
}
