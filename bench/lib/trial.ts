// One measured run of one contender, inside its own process. Two passes, each on a fresh load:
//   1. CPU pass: load time, memory, then CPU and wall time to clear the backlog with nothing else
//      scheduled (a 1 ms event-loop sampler costs tens of ms of CPU per second here, which would
//      swamp a cheap expiry), and finally the correctness check;
//   2. pause pass: the same load and clear with monitorEventLoopDelay({ resolution: 1 }) enabled
//      for the expiry phase only, for the longest pause and the p99; checked again.
import type { Contender, ContenderDefinition, ContenderSettings, LoadOutcome, MemoryKind } from './contender.js';
import {
  cpuMsSince,
  fullGc,
  median,
  memoryDelta,
  memorySnapshot,
  now,
  PauseMonitor,
  sleep,
  type MemorySnapshot,
  type PauseStats,
} from './measure.js';
import type { Progress } from './progress.js';
import { DeadlineMissedError, makeWorkload, type Workload } from './workload.js';

export interface TrialConfig {
  name: string;
  tuples: number;
  expired: number;
  seed: number;
  scanSize: number;
  scanTime: number;
  /** seconds */
  timeout: number;
  /** e.g. "run 2/3", for progress lines */
  tag: string;
}

export interface TrialResult {
  name: string;
  label: string;
  description: string;
  memoryKind: MemoryKind;
  ours: boolean;
  tuples: number;
  expired: number;
  live: number;
  load: {
    /** the two loads (CPU pass, pause pass) */
    ms: number[];
    nsPerTuple: number;
  };
  memory: {
    kind: MemoryKind;
    /** the figure of `kind`, in bytes */
    bytes: number;
    bytesPerTuple: number;
    /** what the product reports, when it does */
    nativeBytes: number | null;
    /** process memory growth over the load, after a full GC */
    delta: MemorySnapshot;
  };
  clear: {
    /** from "backlog exists" to "every expired tuple is gone" */
    wallMs: number;
    cpuMs: number;
    cpuNsPerExpired: number;
    checked: number | null;
  };
  pauses: PauseStats & {
    /** wall and CPU of the pause pass's clear, with the sampler running */
    wallMs: number;
    cpuMs: number;
  };
  verify: { ok: boolean; errors: string[] };
  /** times the wall-clock deadline was missed and the trial redone with a larger margin */
  retries: number;
}

const MAX_RETRIES = 2;

export async function runTrial(def: ContenderDefinition, cfg: TrialConfig, progress: Progress): Promise<TrialResult> {
  const workload = makeWorkload({ tuples: cfg.tuples, expiredFraction: cfg.expired, seed: cfg.seed });
  for (let retries = 0, marginFactor = 1; ; retries++, marginFactor *= 3) {
    try {
      const settings: ContenderSettings = { workload, scanSize: cfg.scanSize, scanTime: cfg.scanTime, marginFactor };
      return { ...(await twoPasses(def, cfg, settings, progress)), retries };
    } catch (err) {
      if (!(err instanceof DeadlineMissedError) || retries >= MAX_RETRIES) throw err;
      progress.line(`  ${cfg.name} ${cfg.tag}: ${err.message}`);
    }
  }
}

async function twoPasses(
  def: ContenderDefinition,
  cfg: TrialConfig,
  settings: ContenderSettings,
  progress: Progress,
): Promise<Omit<TrialResult, 'retries'>> {
  const w = settings.workload;
  const errors: string[] = [];
  const where = `${cfg.name} ${cfg.tag}`;

  // Pass 1: load, memory, CPU and wall time of the clear, correctness.
  fullGc();
  const before = memorySnapshot();
  const first = def.create(settings);
  let cpuPass: { loadMs: number; clear: ClearFigures; nativeBytes: number | null; delta: MemorySnapshot; checked: number | null };
  try {
    const load = timedLoad(first, w, `${where} loading`, progress);
    fullGc();
    const delta = memoryDelta(before, memorySnapshot());
    const nativeBytes = first.nativeBytes ? first.nativeBytes() : null;
    const clear = await timedClear(first, load.outcome, w, cfg, false, where, progress);
    const checked = first.checked ? first.checked() : null;
    errors.push(...first.verify().map((e) => `after the CPU pass: ${e}`));
    cpuPass = { loadMs: load.ms, clear, nativeBytes, delta, checked };
  } finally {
    first.stop();
    first.close();
  }

  // Pass 2: the same on a fresh load, with the event-loop delay monitor on during the clear.
  fullGc();
  const second = def.create(settings);
  let pausePass: { loadMs: number; clear: ClearFigures };
  try {
    const load = timedLoad(second, w, `${where} loading again`, progress);
    fullGc();
    const clear = await timedClear(second, load.outcome, w, cfg, true, where, progress);
    errors.push(...second.verify().map((e) => `after the pause pass: ${e}`));
    pausePass = { loadMs: load.ms, clear };
  } finally {
    second.stop();
    second.close();
  }

  const memoryBytes = memoryFigure(def.memoryKind, cpuPass.nativeBytes, cpuPass.delta);
  const loads = [cpuPass.loadMs, pausePass.loadMs];
  const pauses = pausePass.clear.pauses!;
  return {
    name: cfg.name,
    label: def.label,
    description: def.description,
    memoryKind: def.memoryKind,
    ours: def.ours ?? false,
    tuples: w.tuples,
    expired: w.expiredCount,
    live: w.liveCount,
    load: { ms: loads, nsPerTuple: (median(loads) * 1e6) / w.tuples },
    memory: {
      kind: def.memoryKind,
      bytes: memoryBytes,
      bytesPerTuple: memoryBytes / w.tuples,
      nativeBytes: cpuPass.nativeBytes,
      delta: cpuPass.delta,
    },
    clear: {
      wallMs: cpuPass.clear.wallMs,
      cpuMs: cpuPass.clear.cpuMs,
      cpuNsPerExpired: (cpuPass.clear.cpuMs * 1e6) / w.expiredCount,
      checked: cpuPass.checked,
    },
    pauses: { ...pauses, wallMs: pausePass.clear.wallMs, cpuMs: pausePass.clear.cpuMs },
    verify: { ok: errors.length === 0, errors },
  };
}

function memoryFigure(kind: MemoryKind, nativeBytes: number | null, delta: MemorySnapshot): number {
  switch (kind) {
    case 'native':
      if (nativeBytes === null) throw new Error('a contender of memory kind "native" must implement nativeBytes()');
      return nativeBytes;
    case 'heap':
      return delta.heapUsed;
    case 'rss':
      return delta.rss;
  }
}

function timedLoad(c: Contender, w: Workload, label: string, progress: Progress): { ms: number; outcome: LoadOutcome } {
  const phase = progress.phase(label, w.tuples, 'tuples');
  const t0 = now();
  const outcome = c.load((loaded) => phase.update(loaded));
  const ms = now() - t0;
  phase.end(w.tuples);
  return { ms, outcome };
}

interface ClearFigures {
  wallMs: number;
  cpuMs: number;
  pauses: PauseStats | null;
}

/** Lead over a wall-clock deadline: the pause monitor primes for 12 ms, and then some slack. */
const LEAD_MS = { cpu: 10, pauses: 40 };

async function timedClear(
  c: Contender,
  outcome: LoadOutcome,
  w: Workload,
  cfg: TrialConfig,
  withPauses: boolean,
  where: string,
  progress: Progress,
): Promise<ClearFigures> {
  const backlogAt = outcome.backlogAt;
  if (backlogAt !== undefined) {
    const startAt = backlogAt - (withPauses ? LEAD_MS.pauses : LEAD_MS.cpu);
    if (now() > startAt) throw new DeadlineMissedError('the short TTLs ran out before the measurement could start; retrying with a larger margin');
    const waiting = progress.phase(`${where} waiting for the short TTLs`);
    for (let left = startAt - now(); left > 0; left = startAt - now()) {
      await sleep(Math.min(250, left));
      waiting.update(0);
    }
    waiting.end();
  }
  const monitor = withPauses ? new PauseMonitor() : null;
  if (monitor) await monitor.start();
  if (backlogAt !== undefined && now() >= backlogAt - 1) {
    throw new DeadlineMissedError('the short TTLs ran out while the pause monitor was priming; retrying with a larger margin');
  }

  const label = `${where} expiring${withPauses ? ' (sampling pauses)' : ''}`;
  const phase = progress.phase(label, w.expiredCount, 'expired tuples removed');
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await untilCleared(c, w, cfg.timeout * 1000, phase);
  const t1 = now();
  const cpuMs = cpuMsSince(cpu0);
  c.stop();
  const pauses = monitor ? await monitor.stop() : null;
  phase.end(w.expiredCount - c.remainingExpired());
  const from = backlogAt !== undefined ? Math.max(t0, backlogAt) : t0;
  return { wallMs: t1 - from, cpuMs, pauses };
}

/** Waits for clear(); only a timeout timer and, after a second, a 4 Hz progress ticker are scheduled. */
function untilCleared(c: Contender, w: Workload, timeoutMs: number, phase: { update(n: number): void }): Promise<void> {
  return new Promise((resolve, reject) => {
    let ticker: NodeJS.Timeout | undefined;
    const startTicker = setTimeout(() => {
      ticker = setInterval(() => phase.update(w.expiredCount - c.remainingExpired()), 250);
    }, 1000);
    const timeout = setTimeout(() => {
      finish();
      const left = c.remainingExpired();
      reject(new Error(`did not clear the backlog within ${timeoutMs / 1000} s: ${left} of ${w.expiredCount} expired tuples remain`));
    }, timeoutMs);
    const finish = (): void => {
      clearTimeout(startTicker);
      clearTimeout(timeout);
      if (ticker) clearInterval(ticker);
    };
    c.clear().then(
      () => {
        finish();
        resolve();
      },
      (err: unknown) => {
        finish();
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
