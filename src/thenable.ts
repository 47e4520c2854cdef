// Promises handed back by user code: how the library recognises and disposes of them.

/** Whether value is a promise or any thenable; a `then` getter that throws means no. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  try {
    return typeof (value as { then?: unknown }).then === 'function';
  } catch {
    return false;
  }
}

/** Marks a promise's rejection as handled: no unhandledRejection, the process does not exit. */
export function ignoreRejection(value: PromiseLike<unknown>): void {
  try {
    value.then(undefined, () => {});
  } catch {
    // A thenable whose then() throws has nothing left to handle.
  }
}
