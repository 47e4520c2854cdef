// Capped spaces (issue 11): the maxTuples, maxBytes, onFull and onEvict options of new Space(),
// checked here, and the delivery of evictions to onEvict.
//
// The caps are enforced natively (native/engine/space.h, "Capped spaces"): a statement that
// would take the space over a cap is refused with ER_SPACE_FULL, or, with onFull
// 'evictExpiring', first evicts the tuples with the smallest TTL, in the same statement. After
// each write of an evicting space, the space takes the statement's evicted tuples from the addon
// and hands them to EvictionReporter.deliver() here: at once outside atomic(), else when the outermost frame
// commits (atomic.ts afterCommit); a rolled-back frame reports nothing, since its evictions were
// undone with it.
//
// Delivery: onEvict(tuples) is called once per statement that evicted (an insertMany once for
// the batch), in the order of the statements. A report made while any space's onEvict runs (it
// wrote to a capped space, its own or another) is queued and delivered after it returns, so no
// onEvict is ever called nested inside another.
// An onEvict that throws (or returns a promise that rejects) changes nothing that was written
// and does not stop the other reports: as a task keeps its callbacks' errors in
// task.lastError, the space keeps it in lastEvictError, and it is emitted as a process warning
// (code ER_EVICT_CALLBACK) so that it is not silent. Nothing is thrown to the writer.
import { illegal, textOf } from '../errors.js';
import { describe as describeType } from '../validate.js';
import type { Tuple } from '../native/codec.js';
import type { NativeCaps } from '../native/loader.js';
import { isThenable } from '../thenable.js';

export type OnFull = 'evictExpiring' | 'refuse';

/** The options of new Space() that make a capped space. */
export interface CapOptions<T extends unknown[] = Tuple> {
  /** At most this many tuples (a positive integer). */
  maxTuples?: number;
  /** At most this many bytes of tuples, as space.bsize() counts them (a positive integer). */
  maxBytes?: number;
  /** What a write over a cap does: 'refuse' (default; ER_SPACE_FULL) or 'evictExpiring'. */
  onFull?: OnFull;
  /** 'evictExpiring' only: called with the tuples each statement evicted, after it committed. */
  onEvict?: (tuples: T[]) => void;
}

/** A capped space's limits, checked and with the defaults filled in. */
export interface Caps {
  readonly maxTuples: number | undefined;
  readonly maxBytes: number | undefined;
  readonly onFull: OnFull;
  readonly onEvict: ((tuples: Tuple[]) => void) | undefined;
}

const describe = (v: unknown): string => (typeof v === 'number' ? String(v) : typeof v === 'string' ? `'${v}'` : describeType(v));

function positive(where: string, what: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw illegal(`${where}: ${what} must be a positive integer, got ${describe(value)}`);
  }
  return value;
}

/**
 * Checks the cap options (each value read once by the caller); undefined when the space is
 * not capped. hasTtl: the space declares a TTL field (evictExpiring needs one).
 */
export function checkCaps(where: string, o: { maxTuples: unknown; maxBytes: unknown; onFull: unknown; onEvict: unknown },
  hasTtl: boolean): Caps | undefined {
  const maxTuples = positive(where, 'maxTuples', o.maxTuples);
  const maxBytes = positive(where, 'maxBytes', o.maxBytes);
  if (o.onFull !== undefined && o.onFull !== 'evictExpiring' && o.onFull !== 'refuse') {
    throw illegal(`${where}: onFull must be 'evictExpiring' or 'refuse', got ${describe(o.onFull)}`);
  }
  if (o.onEvict !== undefined && typeof o.onEvict !== 'function') {
    throw illegal(`${where}: onEvict must be a function, got ${describe(o.onEvict)}`);
  }
  if (maxTuples === undefined && maxBytes === undefined) {
    if (o.onFull !== undefined || o.onEvict !== undefined) {
      throw illegal(`${where}: onFull and onEvict apply to a capped space: give maxTuples or maxBytes too`);
    }
    return undefined;
  }
  const onFull = (o.onFull ?? 'refuse') as OnFull;
  if (onFull === 'evictExpiring' && !hasTtl) {
    throw illegal(`${where}: onFull 'evictExpiring' evicts the tuples with the smallest TTL, so it needs the ttl option ` +
      `(and a TREE index led by the TTL field)`);
  }
  if (o.onEvict !== undefined && onFull !== 'evictExpiring') {
    throw illegal(`${where}: onEvict is called only with onFull 'evictExpiring' (onFull is 'refuse')`);
  }
  return Object.freeze({ maxTuples, maxBytes, onFull, onEvict: o.onEvict as Caps['onEvict'] });
}

/** What createSpaceHandle takes. */
export function nativeCaps(caps: Caps): NativeCaps {
  return { maxTuples: caps.maxTuples ?? Infinity, maxBytes: caps.maxBytes ?? Infinity, evict: caps.onFull === 'evictExpiring' };
}

// One queue for every space: while any onEvict runs, a report of any space (its write evicted
// from another capped space) waits until it returns. Per space, an onEvict shared by two spaces,
// or one space's onEvict writing to another, would run nested.
const pending: Array<{ reporter: EvictionReporter; tuples: Tuple[] }> = [];
let delivering = false;

/** Delivers one space's evictions to its onEvict (see the file comment). */
export class EvictionReporter {
  lastError: unknown = undefined;
  readonly #name: string;
  readonly #onEvict: ((tuples: Tuple[]) => void) | undefined;

  constructor(name: string, onEvict: ((tuples: Tuple[]) => void) | undefined) {
    this.#name = name;
    this.#onEvict = onEvict;
  }

  /** Called once the statement that evicted these tuples committed. */
  deliver(tuples: Tuple[]): void {
    if (this.#onEvict === undefined) return;
    pending.push({ reporter: this, tuples });
    if (delivering) return;
    delivering = true;
    try {
      for (let next = pending.shift(); next !== undefined; next = pending.shift()) next.reporter.#call(next.tuples);
    } finally {
      delivering = false;
    }
  }

  #call(tuples: Tuple[]): void {
    try {
      const result: unknown = (this.#onEvict as (tuples: Tuple[]) => unknown)(tuples);
      if (isThenable(result)) {
        try {
          result.then(undefined, (error: unknown) => this.#fail(error));
        } catch (error) {
          this.#fail(error);
        }
      }
    } catch (error) {
      this.#fail(error);
    }
  }

  #fail(error: unknown): void {
    this.lastError = error;
    process.emitWarning(`Space '${this.#name}': onEvict threw (the writes and evictions stand): ${textOf(error)}`,
      { code: 'ER_EVICT_CALLBACK' });
  }
}
