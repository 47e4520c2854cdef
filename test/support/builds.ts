// Index builds in tests: small build slices (so writes interleave with them) and settled promises.
import { afterEach, beforeEach } from 'vitest';
import { CappedError } from '../../src/index.js';
import { setBuildSlice } from '../../src/space/build.js';

/** Each test of the file builds in slices of `tuples` tuples (at most 50 ms each); restored after. */
export function useBuildSlice(tuples: number): void {
  let before: { tuples: number; ms: number };
  beforeEach(() => {
    before = setBuildSlice({ tuples, ms: 50 });
  });
  afterEach(() => {
    setBuildSlice(before);
  });
}

/** Settles p: its value, or the error it rejected with. */
export async function settle<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await p };
  } catch (error) {
    return { error };
  }
}

/** An error's code (a CappedError's), its text otherwise, undefined for none. */
export const errCode = (e: unknown): string | undefined => (e instanceof CappedError ? e.code : e === undefined ? undefined : String(e));
