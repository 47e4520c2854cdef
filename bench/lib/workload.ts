// The embedded workload every contender loads: tuples [id, 'user<id>@tarantool.io', exp], a seeded
// choice of which ids are expired, and the TTL planning that turns the expired set into one backlog
// for the caches whose expiry runs on the wall clock.
import { performance } from 'node:perf_hooks';
import { mulberry32 } from './random.js';

export type Tuple = [id: number, email: string, exp: number];

/** The injected clock of the contenders that take time as data (integer seconds). */
export const NOW_SECONDS = 1_750_000_000;
/** Live tuples expire an hour from now, spread over ten minutes so there are many distinct TTLs. */
export const LIVE_TTL_SECONDS = 3600;
export const TTL_SPREAD_SECONDS = 600;

export interface WorkloadSpec {
  tuples: number;
  expiredFraction: number;
  seed: number;
}

export interface Workload {
  readonly tuples: number;
  readonly expiredCount: number;
  readonly liveCount: number;
  readonly nowSeconds: number;
  /** indexed by id (1..tuples): 1 when the tuple is expired */
  readonly expired: Uint8Array;
  /** ascending */
  readonly expiredIds: Uint32Array;
  /** ascending */
  readonly liveIds: Uint32Array;
}

/** Ids are 1..tuples; a seeded partial Fisher–Yates shuffle picks round(tuples × fraction) expired ones. */
export function makeWorkload(spec: WorkloadSpec): Workload {
  const n = spec.tuples;
  const expiredCount = Math.round(n * spec.expiredFraction);
  const ids = new Uint32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i + 1;
  const random = mulberry32(spec.seed);
  for (let i = 0; i < expiredCount; i++) {
    const j = i + Math.floor(random() * (n - i));
    const t = ids[i]!;
    ids[i] = ids[j]!;
    ids[j] = t;
  }
  const expired = new Uint8Array(n + 1);
  for (let i = 0; i < expiredCount; i++) expired[ids[i]!] = 1;
  const expiredIds = new Uint32Array(expiredCount);
  const liveIds = new Uint32Array(n - expiredCount);
  for (let id = 1, e = 0, l = 0; id <= n; id++) {
    if (expired[id]) expiredIds[e++] = id;
    else liveIds[l++] = id;
  }
  return { tuples: n, expiredCount, liveCount: n - expiredCount, nowSeconds: NOW_SECONDS, expired, expiredIds, liveIds };
}

export function email(id: number): string {
  return `user${id}@tarantool.io`;
}

/** Expired tuples have exp <= now (some exactly now); live ones now + 1 h + id % 600 s. */
export function expSeconds(w: Workload, id: number): number {
  const spread = id % TTL_SPREAD_SECONDS;
  return w.expired[id] ? w.nowSeconds - spread : w.nowSeconds + LIVE_TTL_SECONDS + spread;
}

export function tuple(w: Workload, id: number): Tuple {
  return [id, email(id), expSeconds(w, id)];
}

/**
 * The wall-clock TTL of a live entry in a TTL cache, in ms: the same spread as the tuples' exp
 * (600 distinct seconds; a cache that keys its expirations by the millisecond sees hundreds of
 * thousands of distinct expiry times, as it would after being filled over hours), or, with
 * `oneTtl`, one TTL for every live entry (a cache with a fixed TTL filled in one go).
 */
export function liveTtlMs(id: number, oneTtl = false): number {
  return (LIVE_TTL_SECONDS + (oneTtl ? 0 : id % TTL_SPREAD_SECONDS)) * 1000;
}

/**
 * The injected clock (integer seconds) of the contenders that take time as data. Until release()
 * it reads NOW - TTL_SPREAD_SECONDS, when no tuple is expired yet (expired tuples have exp in
 * (NOW - TTL_SPREAD_SECONDS, NOW]); from release() on it reads NOW, and the whole backlog is due
 * at once, as the wall-clock caches' expired entries all go stale at one deadline.
 */
export class StepClock {
  releasedAt: number | null = null;

  constructor(readonly nowSeconds: number) {}

  seconds(): number {
    return this.releasedAt === null ? this.nowSeconds - TTL_SPREAD_SECONDS : this.nowSeconds;
  }

  /** Makes the backlog due; returns performance.now() ms of that moment. */
  release(): number {
    this.releasedAt = performance.now();
    return this.releasedAt;
  }
}

/** Thrown when a wall-clock deadline passed before the measurement could start; the run is retried. */
export class DeadlineMissedError extends Error {
  readonly code = 'DEADLINE_MISSED';
}

export interface WallClockLoad {
  /** performance.now() ms at which the first expired entries become stale */
  backlogAt: number;
  /** performance.now() ms by which every expired entry is stale (a millisecond or so later) */
  allStaleAt: number;
}

export interface WallClockLoadOptions {
  /** the clock the cache reads: performance.now or Date.now */
  clock: () => number;
  /** stores one entry with a TTL in ms (an integer >= 1) */
  set: (id: number, value: Tuple, ttlMs: number) => void;
  /** multiplies the safety margin between the end of the load and the deadline */
  marginFactor: number;
  /** ms added to the margin for what the trial does before the backlog (GC, idle window) */
  quietMs: number;
  /** one TTL for every live entry instead of the spread */
  oneTtl?: boolean;
  progress: (loaded: number) => void;
}

const PROGRESS_EVERY = 8192;
const TTL_REFRESH_EVERY = 256;

/**
 * Loads a wall-clock TTL cache: live entries first with their long TTLs, then the expired ones with
 * TTLs that all end at one deadline D, so the whole expired set becomes stale at once: a backlog, as
 * for the contenders with an injected clock. D lies after the load plus a margin (estimated from the
 * live entries' loading rate) that leaves time for the post-load GC, the memory snapshot and the
 * priming of the event-loop monitor; waiting for D is not measured.
 */
export function loadWallClockCache(w: Workload, o: WallClockLoadOptions): WallClockLoad {
  const started = performance.now();
  let loaded = 0;
  for (let i = 0; i < w.liveIds.length; i++) {
    const id = w.liveIds[i]!;
    o.set(id, tuple(w, id), liveTtlMs(id, o.oneTtl));
    if (++loaded % PROGRESS_EVERY === 0) o.progress(loaded);
  }
  const liveMs = performance.now() - started;
  const perEntryMs = w.liveCount > 0 ? liveMs / w.liveCount : 0.002;
  const marginMs = o.marginFactor * (300 + 4 * perEntryMs * w.expiredCount + 0.5 * liveMs) + o.quietMs;
  const deadline = o.clock() + perEntryMs * w.expiredCount + marginMs;
  // Each TTL comes from a clock reading taken before its set, so no entry expires before D; the
  // reading after each block bounds when the block's entries expire.
  let ttl = 1;
  let lastStale = deadline;
  for (let i = 0; i < w.expiredIds.length; i++) {
    if (i % TTL_REFRESH_EVERY === 0) {
      if (i > 0) lastStale = Math.max(lastStale, o.clock() + ttl);
      ttl = Math.max(1, Math.ceil(deadline - o.clock()));
    }
    const id = w.expiredIds[i]!;
    o.set(id, tuple(w, id), ttl);
    if (++loaded % PROGRESS_EVERY === 0) o.progress(loaded);
  }
  lastStale = Math.max(lastStale, o.clock() + ttl);
  o.progress(loaded);
  const toPerf = performance.now() - o.clock();
  const backlogAt = deadline + toPerf;
  if (performance.now() >= backlogAt) {
    throw new DeadlineMissedError('the expired entries went stale while loading; retrying with a larger margin');
  }
  // +2 ms: the caches compare with > or round expirations up to whole milliseconds.
  return { backlogAt, allStaleAt: lastStale + toPerf + 2 };
}

