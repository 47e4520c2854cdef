// Unhandled promise rejections during a test: the library must never leave one behind.
import { afterEach, beforeEach, expect } from 'vitest';

/**
 * Records every unhandled rejection of each test of the file (the list starts empty for each);
 * with `failAfterEach` (the default) a test that left one fails. `list` is the current test's.
 */
export function watchUnhandledRejections(options: { failAfterEach?: boolean } = {}): { readonly list: unknown[] } {
  let list: unknown[] = [];
  const record = (reason: unknown): void => {
    list.push(reason);
  };
  beforeEach(() => {
    list = [];
    process.on('unhandledRejection', record);
  });
  afterEach(() => {
    process.off('unhandledRejection', record);
    if (options.failAfterEach ?? true) expect(list).toEqual([]);
  });
  return {
    get list() {
      return list;
    },
  };
}
