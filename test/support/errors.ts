// The error check most test files share: the code of the CappedError a call throws.
import { expect } from 'vitest';
import { CappedError } from '../../src/index.js';

/** The error fn throws, or undefined when it returns. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The code of the CappedError fn throws; undefined when it returns; `raw:<message>` for an error without a code. */
export function codeOrUndefined(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return e instanceof CappedError ? e.code : `raw:${(e as Error)?.message}`;
  }
}

/** Runs fn, expects it to throw a CappedError, and returns the error's code. */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CappedError);
    return (error as CappedError).code;
  }
  throw new Error('expected the call to throw');
}

/** The code of the CappedError fn throws, 'no error' when it returns, or what else it threw. */
export function codeOrNone(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof CappedError) return error.code;
    return `not a CappedError: ${String(error)}`;
  }
  return 'no error';
}
