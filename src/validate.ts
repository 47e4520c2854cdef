// Argument checks shared by the API classes: each throws a CappedError with a clear message
// before anything reaches the addon.
import { CappedError, illegal, textOf } from './errors.js';

/** Array.isArray, answering false for a revoked Proxy (where Array.isArray throws a TypeError). */
export function isArray(value: unknown): value is unknown[] {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

export function checkOptions(where: string, options: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (options === undefined) return Object.create(null) as Record<string, unknown>;
  if (options === null || typeof options !== 'object' || isArray(options)) {
    throw illegal(`${where}: options must be an object`);
  }
  let keys: string[];
  try {
    keys = Object.keys(options);
  } catch (error) {
    throw new CappedError(`${where}: options cannot be read: ${textOf(error)}`, 'ER_ILLEGAL_PARAMS', { cause: error });
  }
  for (const key of keys) {
    if (!allowed.includes(key)) {
      throw illegal(`${where}: unknown option '${key}' (expected one of: ${allowed.join(', ')})`);
    }
  }
  // Each option is read once, here: what is checked is what is used (a getter or a Proxy may
  // answer differently at each read), and a read that throws is an error with a code.
  // No prototype: a missing option must read as undefined, not as Object.prototype's.
  const snapshot: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const key of allowed) {
    let value: unknown;
    try {
      value = ownOption(options, key);
    } catch (error) {
      throw new CappedError(`${where}: option '${key}' cannot be read: ${textOf(error)}`, 'ER_ILLEGAL_PARAMS', { cause: error });
    }
    if (value !== undefined) snapshot[key] = value;
  }
  return snapshot;
}

const hasOwn = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** o[key], read once, or undefined when it comes from Object.prototype (see onObjectPrototype). */
export function ownOption(o: object, key: string): unknown {
  const value = (o as Record<string, unknown>)[key];
  return value !== undefined && onObjectPrototype(o, key) ? undefined : value;
}

/**
 * Whether `key` reaches `options` from Object.prototype itself, and so is not the caller's: it is
 * there for every object of the process (prototype pollution, through some other library's deep
 * merge), and as an `isExpired` that returns true it would have deleted every live tuple, as a
 * `maxTuples` it would have capped every space. Options inherited from any other prototype (a
 * class's) are the caller's. Costs one lookup unless Object.prototype has the key.
 */
function onObjectPrototype(options: object, key: string): boolean {
  if (!hasOwn(Object.prototype, key)) return false;
  for (let o: object | null = options; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    if (hasOwn(o, key)) return false;
  }
  return true;
}

/**
 * A function's kind ('[object Function]', '[object AsyncFunction]', ...), or undefined when it
 * cannot be told: a revoked Proxy, or one whose trap throws.
 */
export function functionKind(fn: unknown): string | undefined {
  try {
    return Object.prototype.toString.call(fn);
  } catch {
    return undefined;
  }
}

export function checkName(where: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw illegal(`${where}: name must be a non-empty string`);
  return name;
}

export function checkCount(where: string, what: string, value: unknown, fallback: number, allowInfinity = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 ||
      (!Number.isInteger(value) && !(allowInfinity && value === Infinity))) {
    throw illegal(`${where}: ${what} must be a non-negative integer${allowInfinity ? ' or Infinity' : ''}, got ${textOf(value)}`);
  }
  return value;
}

export function checkPositiveNumber(where: string, what: string, value: unknown, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw illegal(`${where}: ${what} must be a ${allowZero ? 'non-negative' : 'positive'} finite number, got ${textOf(value)}`);
  }
  return value;
}

export function checkFunction<T>(where: string, what: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw illegal(`${where}: ${what} must be a function`);
  if (functionKind(value) === undefined) {
    throw illegal(`${where}: ${what} cannot be inspected (a revoked Proxy, or a Proxy whose trap throws)`);
  }
  return value as T;
}

export function checkTuple(where: string, tuple: unknown): unknown[] {
  if (!isArray(tuple)) throw new CappedError(`${where}: a tuple must be an array, got ${describe(tuple)}`, 'ER_TUPLE_FORMAT');
  return tuple;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (isArray(value)) return 'an array';
  return typeof value;
}
