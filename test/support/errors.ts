// The error check most test files share: the code of the CappedError a call throws.
import { expect } from 'vitest';
import { CappedError } from '../../src/index.js';

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
