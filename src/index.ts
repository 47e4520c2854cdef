// capped-expirationd: an in-process, Tarantool-style space with a capped expiration daemon.
export { Space, Index } from './space/space.js';
export type { FieldType, IndexType, IteratorType, Part, IndexOptions, SelectOptions, SpaceOptions, CapOptions, OnFull, MemoryUsage,
  TtlOptions, TtlDeclaration, TtlUnit } from './space/space.js';
export { expirationd, Task } from './expirationd/index.js';
export type { TaskOptions, TaskStats, TaskState, TaskEvents } from './expirationd/index.js';
export type { FieldValue, FullKey, IndexKey, KeyPrefix, PartSpec, PartValue, ReadKey } from './space/space.js';
export type { UpdateOp, UpdateOperator } from './space/space.js';
export { atomic } from './space/atomic.js';
export { CappedError } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { Tuple, Key, KeyPart } from './native/codec.js';
