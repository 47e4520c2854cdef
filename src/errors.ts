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
}

export function illegal(message: string): CappedError {
  return new CappedError(message, 'ER_ILLEGAL_PARAMS');
}
