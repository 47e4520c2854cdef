// Errors: every failure the library reports is a CappedError with a stable `code`.
// The native layer constructs the same class (src/native/loader.ts registers it), so JavaScript and C++
// errors look alike to the user.

export type ErrorCode =
  | 'ER_TUPLE_FORMAT'
  | 'ER_TUPLE_TOO_LARGE'
  | 'ER_FIELD_MISSING'
  | 'ER_FIELD_TYPE'
  | 'ER_KEY_TYPE'
  | 'ER_KEY_PART_COUNT'
  | 'ER_KEY_TOO_LARGE'
  | 'ER_DUPLICATE_KEY'
  | 'ER_NO_SUCH_INDEX'
  | 'ER_INDEX_EXISTS'
  | 'ER_NO_PRIMARY_INDEX'
  | 'ER_ITERATOR_TYPE'
  | 'ER_UNSUPPORTED'
  | 'ER_NO_SUCH_TASK'
  | 'ER_SPACE_DROPPED'
  | 'ER_ILLEGAL_PARAMS'
  | 'ER_TRANSACTION'
  | 'ER_MEMORY_ISSUE'
  | 'ER_TUPLE_SKIPPED'
  | 'ER_UPDATE_OP'
  | 'ER_UPDATE_FIELD'
  | 'ER_UPDATE_INTEGER_OVERFLOW'
  | 'ER_CANT_UPDATE_PRIMARY_KEY'
  | 'ER_SPACE_FULL'
  | 'ER_INDEX_BUILD_ABORTED'
  | 'ER_INTERNAL';

/**
 * Marks every CappedError, whichever copy of the package made it. A program can hold two copies
 * in one thread (two versions in node_modules, a cleared require cache, a test runner's module
 * registry); the addon is loaded once per thread and throws the error class of the copy that
 * registered last, so `instanceof CappedError` asks for the mark, not for the class.
 */
const BRAND = Symbol.for('capped-expirationd.CappedError');

export class CappedError extends Error {
  readonly code: ErrorCode;
  /** ER_TUPLE_SKIPPED: the primary key of the tuple the daemon skipped. */
  declare readonly key?: unknown;

  constructor(message: string, code: ErrorCode, details?: { key?: unknown; cause?: unknown }) {
    super(message, details?.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'CappedError';
    this.code = code;
    if (details !== undefined && 'key' in details) (this as { key?: unknown }).key = details.key;
  }

  /** A CappedError of any copy of the package; a subclass keeps the usual prototype check. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== CappedError) return Function.prototype[Symbol.hasInstance].call(this, value);
    if (value === null || typeof value !== 'object') return false;
    try {
      return (value as Record<symbol, unknown>)[BRAND] === true;
    } catch {
      return false;  // a Proxy whose trap throws, a revoked Proxy
    }
  }
}
Object.defineProperty(CappedError.prototype, BRAND, { value: true });

export function illegal(message: string): CappedError {
  return new CappedError(message, 'ER_ILLEGAL_PARAMS');
}

/**
 * A value that user code handed over (a thrown value, a bad argument), as text for a message.
 * Never throws: String() throws for Object.create(null), a revoked Proxy, an object whose
 * toString throws, and `instanceof` throws for a revoked Proxy; such a value reads as its type.
 */
export function textOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value);
  } catch {
    return `${value === null ? 'null' : typeof value} that cannot be printed`;
  }
}
