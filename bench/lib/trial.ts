// One run of one contender, in its own process (child.ts), in two passes on two fresh loads:
//   1. the measured pass: load; memory after a full GC (the process's resident-set growth, or the
//      server's for Redis, and what the product reports itself); expiry started the way its users
//      run it; an idle window with nothing due (idle CPU per second at these settings); then the
//      backlog becomes due and the pass records when the first and the last expired record were
//      deleted and the CPU spent from "due" to "cleared"; nothing else is scheduled meanwhile but
//      a timeout and, after a second, a 4 Hz progress ticker; finally the correctness check;
//   2. the pause pass: the same load, and a 1 ms timer chain over a fixed window from "due"
//      (StallSampler), for the longest event-loop gap and the time spent in gaps over 5 ms; the
//      sampler costs CPU itself, which is why it has its own pass; checked again.
import {
  DeletionTracker,
  type Contender,
  type ContenderDefinition,
  type ContenderSettings,
  type LoadOutcome,
  type SelfMemoryKind,
} from './contender.js';
import { cpuMsSince, median, now, processRssBytes, settledGc, sleep, StallSampler, type StallStats } from './measure.js';
import type { Progress } from './progress.js';
import { DeadlineMissedError, makeWorkload, StepClock, type Workload } from './workload.js';

export interface TrialConfig {
  name: string;
  tuples: number;
  expired: number;
  seed: number;
  scanSize: number;
  scanTime: number;
  /** seconds a contender may take to clear its backlog before the run fails */
  timeout: number;
  /** seconds the contenders that may leave a backlog by design are watched */
  window: number;
  /** ms of the idle window (nothing due) */
  idleMs: number;
  /** ms of the fixed window of the stall sampler */
  pauseWindowMs: number;
  /** in [0, 1): where "due" falls in the purge period, for the contenders with an injected clock */
  phase: number;
  /** e.g. "run 2/3", for progress lines */
  tag: string;
}

export interface TrialResult {
  name: string;
  label: string;
  description: string;
  selfMemory: SelfMemoryKind;
  ours: boolean;
  mayLeaveBacklog: boolean;
  tuples: number;
  expired: number;
  live: number;
  load: {
    /** the two loads (measured pass, pause pass) */
    ms: number[];
    nsPerTuple: number;
  };
  memory: {
    /** resident-set growth over the load after a full GC: this process, or the server's (Redis) */
    rssBytes: number;
    rssBytesPerTuple: number;
    rssOf: 'process' | 'server';
    /** what the product reports (see selfMemory) */
    selfBytes: number;
    selfBytesPerTuple: number;
    /** V8 heapUsed growth of this process over the load */
    heapUsedBytes: number;
    /** V8 heapTotal growth (committed heap, garbage included until V8 gives pages back) */
    heapTotalBytes: number;
    /** growth of what V8 counts as external (ArrayBuffers, adjustExternalMemory) */
    externalBytes: number;
  };
  idle: {
    ms: number;
    cpuMs: number;
    cpuMsPerS: number;
  };
  clear: {
    /** due -> first expired record deleted (start of the work that deleted it, where known) */
    detectMs: number | null;
    /** first -> last expired record deleted; null when some were left at the end of the window */
    clearMs: number | null;
    /** due -> last expired record deleted; null when some were left */
    dueToClearedMs: number | null;
    /** CPU from due to cleared (or to the end of the window): this process, or the server's (Redis) */
    cpuMs: number;
    /** cpuMs ÷ expired records deleted */
    cpuNsPerExpired: number;
    deleted: number;
    /** expired records still stored when the measurement ended */
    left: number;
    /** ms the measurement lasted, from due */
    measuredMs: number;
    checked: number | null;
  };
  pauses: StallStats;
  verify: { ok: boolean; errors: string[] };
  /** times the wall-clock deadline was missed and the trial redone with a larger margin */
  retries: number;
}

const MAX_RETRIES = 2;
/** How long before a wall-clock deadline the CPU reading (and the stall window) starts. */
const LEAD_MS = 10;
/** Wait after the post-load GC before anything is measured. */
const SETTLE_MS = 150;

export async function runTrial(def: ContenderDefinition, cfg: TrialConfig, progress: Progress): Promise<TrialResult> {
  const workload = makeWorkload({ tuples: cfg.tuples, expiredFraction: cfg.expired, seed: cfg.seed });
  for (let retries = 0, marginFactor = 1; ; retries++, marginFactor *= 3) {
    try {
      // quietMs: what the trial does between the load and "due" (GC, settling, the idle window).
      const settings = (withIdle: boolean): ContenderSettings => ({
        workload,
        scanSize: cfg.scanSize,
        scanTime: cfg.scanTime,
        marginFactor,
        quietMs: (withIdle ? cfg.idleMs : 0) + SETTLE_MS + 200 + cfg.tuples / 1000,
        clock: new StepClock(workload.nowSeconds),
      });
      return { ...(await twoPasses(def, cfg, settings, progress)), retries };
    } catch (err) {
      if (!(err instanceof DeadlineMissedError) || retries >= MAX_RETRIES) throw err;
      progress.line(`  ${cfg.name} ${cfg.tag}: ${err.message}`);
    }
  }
}

interface PassFigures {
  loadMs: number;
  clear: TrialResult['clear'];
  idle: TrialResult['idle'] | null;
  memory: TrialResult['memory'] | null;
  pauses: StallStats | null;
}

async function twoPasses(
  def: ContenderDefinition,
  cfg: TrialConfig,
  settings: (withIdle: boolean) => ContenderSettings,
  progress: Progress,
): Promise<Omit<TrialResult, 'retries'>> {
  const errors: string[] = [];
  const first = await pass(def, cfg, settings(true), progress, 'measured', errors);
  const second = await pass(def, cfg, settings(false), progress, 'pauses', errors);
  const w = first.workload;
  const loads = [first.figures.loadMs, second.figures.loadMs];
  return {
    name: cfg.name,
    label: def.label,
    description: def.description,
    selfMemory: def.selfMemory,
    ours: def.ours ?? false,
    mayLeaveBacklog: def.mayLeaveBacklog ?? false,
    tuples: w.tuples,
    expired: w.expiredCount,
    live: w.liveCount,
    load: { ms: loads, nsPerTuple: (median(loads) * 1e6) / w.tuples },
    memory: first.figures.memory!,
    idle: first.figures.idle!,
    clear: first.figures.clear,
    pauses: second.figures.pauses!,
    verify: { ok: errors.length === 0, errors },
  };
}

async function pass(
  def: ContenderDefinition,
  cfg: TrialConfig,
  settings: ContenderSettings,
  progress: Progress,
  kind: 'measured' | 'pauses',
  errors: string[],
): Promise<{ figures: PassFigures; workload: Workload }> {
  const w = settings.workload;
  const where = `${cfg.name} ${cfg.tag}${kind === 'pauses' ? ' (pause pass)' : ''}`;
  const measured = kind === 'measured';
  await settledGc();
  const m0 = process.memoryUsage();
  const before = { rss: processRssBytes('self'), heap: m0.heapUsed, heapTotal: m0.heapTotal, external: m0.external };
  const c = def.create(settings);
  let closed = false;
  try {
    if (c.open) await c.open();
    const serverRss0 = c.serverRssBytes ? c.serverRssBytes() : Number.NaN;
    const self0 = c.selfBytes ? await c.selfBytes() : 0;
    const load = await timedLoad(c, w, `${where} loading`, progress);
    let memory: TrialResult['memory'] | null = null;
    if (measured) {
      await settledGc();
      const rssOf = c.serverRssBytes ? 'server' : 'process';
      const rssBytes = c.serverRssBytes ? c.serverRssBytes() - serverRss0 : processRssBytes('self') - before.rss;
      const m1 = process.memoryUsage();
      const heapUsedBytes = m1.heapUsed - before.heap;
      const selfBytes = c.selfBytes ? (await c.selfBytes()) - self0 : heapUsedBytes;
      memory = {
        rssBytes,
        rssBytesPerTuple: rssBytes / w.tuples,
        rssOf,
        selfBytes,
        selfBytesPerTuple: selfBytes / w.tuples,
        heapUsedBytes,
        heapTotalBytes: m1.heapTotal - before.heapTotal,
        externalBytes: m1.external - before.external,
      };
    } else {
      await settledGc();
    }
    // A forced GC leaves V8 tens of ms of background work for the next ~100 ms (sweeping, the
    // memory reducer); let it pass so that neither the idle window nor the clear pays for it.
    await sleep(SETTLE_MS);

    const cpuNow = (): number => (c.serverCpuMs ? c.serverCpuMs() : cpuMsSince({ user: 0, system: 0 }));
    const tracker = new DeletionTracker(w.expiredCount);
    c.start(tracker);

    // Idle window: expiry runs, nothing is due.
    let idle: TrialResult['idle'] | null = null;
    if (measured) {
      const t0 = now();
      const cpu0 = cpuNow();
      await sleep(cfg.idleMs);
      const cpuMs = cpuNow() - cpu0;
      const ms = now() - t0;
      idle = { ms, cpuMs, cpuMsPerS: (cpuMs * 1000) / ms };
      beforeDue(tracker, load.outcome, (load.outcome.backlogAt ?? Number.POSITIVE_INFINITY) - LEAD_MS);
    }
    // Where "due" falls in the period of the peers that purge on a timer (and of our task's
    // wake-ups): at a seeded random phase, the same for every contender in a repeat, rather than
    // always just after a tick (the idle window is a whole number of periods).
    if (load.outcome.backlogAt === undefined) await sleep(cfg.phase * cfg.scanTime * 1000);

    // The backlog becomes due.
    const backlogAt = load.outcome.backlogAt;
    if (backlogAt !== undefined) {
      const startAt = backlogAt - LEAD_MS;
      if (now() > startAt) {
        throw new DeadlineMissedError('the short TTLs ran out before the measurement could start; retrying with a larger margin');
      }
      for (let left = startAt - now(); left > 0; left = startAt - now()) await sleep(Math.min(250, left));
    }
    const sampler = measured ? null : new StallSampler();
    const stalls = sampler?.start(cfg.pauseWindowMs);
    const cpu0 = cpuNow();
    beforeDue(tracker, load.outcome);
    const dueAt = backlogAt ?? settings.clock.release();

    const limitS = def.mayLeaveBacklog ? (measured ? cfg.window : Math.min(cfg.window, cfg.pauseWindowMs / 1000)) : cfg.timeout;
    const label = `${where} expiring`;
    const phase = progress.phase(label, w.expiredCount, 'expired records removed');
    const finished = await untilCleared(tracker, limitS * 1000, phase);
    const endAt = now();
    const cpuMs = cpuNow() - cpu0;
    c.stop();
    phase.end(tracker.count);
    const left = await c.remainingExpired();
    if (!finished && !def.mayLeaveBacklog) {
      throw new Error(`did not clear the backlog within ${cfg.timeout} s: ${left} of ${w.expiredCount} expired records remain`);
    }
    const pauses = stalls ? await stalls : null;
    const checked = c.checked ? c.checked() : null;
    const cleared = finished && tracker.lastAt !== null;
    const clear: TrialResult['clear'] = {
      detectMs: tracker.firstAt !== null ? Math.max(0, tracker.firstAt - dueAt) : null,
      // A wall-clock cache's timer can fire a millisecond before our estimate of "due": clamp, so detect + clear = due→gone.
      clearMs: cleared ? tracker.lastAt! - Math.max(tracker.firstAt!, dueAt) : null,
      dueToClearedMs: cleared ? tracker.lastAt! - dueAt : null,
      cpuMs,
      // Only over a cleared backlog: a store that left most of it (Redis, by design) would show
      // its whole watch window's CPU spread over the few it deleted.
      cpuNsPerExpired: cleared && tracker.count > 0 ? (cpuMs * 1e6) / tracker.count : Number.NaN,
      deleted: tracker.count,
      left,
      measuredMs: (cleared ? tracker.lastAt! : endAt) - dueAt,
      checked,
    };
    if (left > 0 && c.finish) await c.finish();
    errors.push(...(await c.verify()).map((e) => `after the ${kind} pass: ${e}`));
    closed = true;
    await c.close();
    return { figures: { loadMs: load.ms, clear, idle, memory, pauses }, workload: w };
  } finally {
    if (!closed) {
      c.stop();
      await c.close();
    }
  }
}

/** Nothing may be deleted before the backlog is due: for a wall-clock cache the margin was too short (retried). */
function beforeDue(tracker: DeletionTracker, outcome: LoadOutcome, lateAt = Number.POSITIVE_INFINITY): void {
  if (outcome.backlogAt !== undefined && (tracker.count > 0 || now() > lateAt)) {
    throw new DeadlineMissedError('the short TTLs ran out before the measurement could start; retrying with a larger margin');
  }
  if (tracker.count > 0) throw new Error(`${tracker.count} records were deleted before the backlog was due`);
}

async function timedLoad(c: Contender, w: Workload, label: string, progress: Progress): Promise<{ ms: number; outcome: LoadOutcome }> {
  const phase = progress.phase(label, w.tuples, 'records');
  const t0 = now();
  const outcome = await c.load((loaded) => phase.update(loaded));
  const ms = now() - t0;
  phase.end(w.tuples);
  return { ms, outcome };
}

/** Resolves true when the tracker is done, false when limitMs passed first. */
function untilCleared(tracker: DeletionTracker, limitMs: number, phase: { update(n: number): void }): Promise<boolean> {
  return new Promise((resolve) => {
    let ticker: NodeJS.Timeout | undefined;
    const startTicker = setTimeout(() => {
      ticker = setInterval(() => phase.update(tracker.count), 250);
    }, 1000);
    const finish = (ok: boolean): void => {
      clearTimeout(startTicker);
      clearTimeout(limit);
      if (ticker) clearInterval(ticker);
      resolve(ok);
    };
    const limit = setTimeout(() => finish(false), limitMs);
    void tracker.done.then(() => finish(true));
  });
}
