// TTL-aware spaces (issue 15): the `ttl` option of new Space(), checked here, and the clock
// that each read of such a space passes to the addon. The addon knows the space's TTL field
// (given at creation) and hides a tuple whose TTL field is a number <= now, by the same rule
// as the daemon (native/engine/ttl.h).
//
// Index and TupleIterator find a space's clock through ttlClock(), which src/index.ts does not
// export; a space without a declaration has none, and its reads stay the plain ones.
import { CappedError, illegal } from '../errors.js';
import { checkOptions, describe as describeType } from '../validate.js';

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

const clocks = new WeakMap<object, () => number>();

const seconds = (): number => Date.now() / 1000;
const millis = (): number => Date.now();

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

/** Registers the clock of a TTL space (from its constructor, before any index exists). */
export function setTtlClock(space: object, name: string, ttl: TtlDeclaration): void {
  const user = ttl.now;
  if (user === undefined) {
    clocks.set(space, ttl.unit === 's' ? seconds : millis);
    return;
  }
  clocks.set(space, () => {
    const now: unknown = user();
    if (typeof now !== 'number' || Number.isNaN(now)) {
      throw new CappedError(`Space '${name}': ttl.now() must return a number, got ${describe(now)}`, 'ER_ILLEGAL_PARAMS');
    }
    return now;
  });
}

/** The clock a read of this space passes as `now`, or undefined for a space without a TTL. */
export function ttlClock(space: object): (() => number) | undefined {
  return clocks.get(space);
}
