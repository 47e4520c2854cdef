// TTL-aware spaces (issue 15): the `ttl` option of new Space(), checked here, and the clock
// that each read of such a space passes to the addon. The addon knows the space's TTL field
// (given at creation) and hides a tuple whose TTL field is a number <= now, by the same rule
// as the daemon (native/engine/ttl.h).
//
// Index finds a space's clock through readClock(), which src/index.ts does not export, and
// hands it to the TupleIterators it makes; a space without a declaration has none, and its
// reads stay the plain ones. With an injected `now`, a read calls it and passes the number. With
// the default clock (the wall clock) a read passes nothing, as a plain space's read does: the
// space's handle was created with the clock's unit, and the addon reads the clock itself as
// Date.now() would (wall_clock_now in ttl.h), without a call back into JavaScript. The value is the number that
// Date.now() (or Date.now() / 1000) returns at that instant, read on every call, never cached.
// (The addon reads the kernel's coarse clock first and the exact one only for a TTL due within
// the next minute: the decisions are the exact clock's, see Now in ttl.h.)
// That holds while Date.now is the built-in: when something has replaced it (fake timers, a
// spy), reads call Date.now() and pass its value, so a fake clock governs them as before.
import { CappedError, illegal } from '../errors.js';
import { checkOptions, describe as describeType } from '../validate.js';
import type { NativeNow } from '../native/loader.js';

export type TtlUnit = 's' | 'ms';

export interface TtlOptions {
  /** 1-based field number of the TTL (an absolute time in `unit`). */
  field: number;
  /** 's' (default) or 'ms'. */
  unit?: TtlUnit;
  /** The current time in `unit`; default the wall clock (Date.now()). */
  now?: () => number;
}

/** What space.ttl returns: the declaration, frozen, with its defaults filled in. */
export interface TtlDeclaration {
  readonly field: number;
  readonly unit: TtlUnit;
  readonly now: (() => number) | undefined;
}

const describe = (v: unknown): string => (typeof v === 'number' ? String(v) : typeof v === 'string' ? `'${v}'` : describeType(v));

/** The clock of a TTL space's reads. */
export class TtlClock {
  /** The clock in JavaScript: the injected one (its result checked), or Date.now() in the unit. */
  readonly now: () => number;
  /** Whether this is the wall clock (which the addon reads itself); false: injected. */
  readonly #wall: boolean;

  constructor(now: () => number, wall: boolean) {
    this.now = now;
    this.#wall = wall;
  }

  /**
   * The `now` a read passes: undefined for the wall clock (the space's handle knows its unit), else
   * the number. An injected clock is user code: call this before taking the scratch Buffer.
   */
  read(): NativeNow | undefined {
    if (this.#wall && Date.now === builtinDateNow) return undefined;
    return this.now();
  }
}

const clocks = new WeakMap<object, TtlClock>();

/**
 * The wall clock in `unit`, as Date.now() says. Date.now may have been replaced (fake timers, a
 * spy): its value is checked as an injected clock's is, since NaN would reach the addon as "no TTL
 * check" and serve expired tuples.
 */
function wallClock(name: string, unit: TtlUnit): () => number {
  return () => {
    const ms: unknown = Date.now();
    if (typeof ms !== 'number' || Number.isNaN(ms)) {
      throw new CappedError(`Space '${name}': Date.now() must return a number, got ${describe(ms)}`, 'ER_ILLEGAL_PARAMS');
    }
    return unit === 's' ? ms / 1000 : ms;
  };
}

// The built-in Date.now, or (if something had already replaced it when this module loaded) a
// value no Date.now equals, so that reads always call Date.now().
const builtinDateNow: unknown = /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(Date.now)) ? Date.now : {};

export function checkTtl(where: string, value: unknown): TtlDeclaration | undefined {
  if (value === undefined) return undefined;
  const o = checkOptions(`${where}: ttl`, value, ['field', 'unit', 'now']);
  const field = o.field;
  if (typeof field !== 'number' || !Number.isInteger(field) || field < 1 || field > 65535) {
    throw illegal(`${where}: ttl.field must be a 1-based field number (an integer in [1, 65535]), got ${describe(field)}`);
  }
  if (o.unit !== undefined && o.unit !== 's' && o.unit !== 'ms') {
    throw illegal(`${where}: ttl.unit must be 's' or 'ms', got ${describe(o.unit)}`);
  }
  if (o.now !== undefined && typeof o.now !== 'function') {
    throw illegal(`${where}: ttl.now must be a function returning the current time in ttl.unit, got ${describe(o.now)}`);
  }
  return Object.freeze({ field, unit: (o.unit ?? 's') as TtlUnit, now: o.now as (() => number) | undefined });
}

/**
 * The unit of the wall clock a TTL space's handle reads by default (true: seconds, false: ms), or
 * undefined when the space has no TTL or an injected `now` (its reads then pass their number).
 */
export function wallClockOf(ttl: TtlDeclaration | undefined): boolean | undefined {
  return ttl === undefined || ttl.now !== undefined ? undefined : ttl.unit === 's';
}

/** Registers the clock of a TTL space (from its constructor, before any index exists). */
export function setTtlClock(space: object, name: string, ttl: TtlDeclaration): void {
  const user = ttl.now;
  if (user === undefined) {
    clocks.set(space, new TtlClock(wallClock(name, ttl.unit), true));
    return;
  }
  clocks.set(space, new TtlClock(() => {
    const now: unknown = user();
    if (typeof now !== 'number' || Number.isNaN(now)) {
      throw new CappedError(`Space '${name}': ttl.now() must return a number, got ${describe(now)}`, 'ER_ILLEGAL_PARAMS');
    }
    return now;
  }, false));
}

/** The clock of this space's reads, or undefined for a space without a TTL. */
export function readClock(space: object): TtlClock | undefined {
  return clocks.get(space);
}

/** The space's clock in JavaScript (what an insert passes as `now`), or undefined for a space without a TTL. */
export function ttlClock(space: object): (() => number) | undefined {
  return clocks.get(space)?.now;
}
