// The ESM entry: re-exports the CommonJS build, so ESM and require() share one module state
// (one task registry) instead of loading two copies. Each class is exported as a value and as
// a type, like a class declaration.
import cjs from './index.js';
import type * as types from './index.js';

export const Space = cjs.Space;
export type Space<T extends unknown[] = unknown[], K = types.Key> = types.Space<T, K>;
export const Index = cjs.Index;
export type Index<T extends unknown[] = unknown[], K = types.Key, R = types.KeyPrefix<K>> = types.Index<T, K, R>;
export const Task = cjs.Task;
export type Task<T extends unknown[] = unknown[]> = types.Task<T>;
export const CappedError = cjs.CappedError;
export type CappedError = types.CappedError;
export const expirationd = cjs.expirationd;
export const atomic = cjs.atomic;
export type {
  FieldType, IndexType, IteratorType, Part, IndexOptions, SelectOptions, SpaceOptions, CapOptions, OnFull, MemoryUsage,
  TtlOptions, TtlDeclaration, TtlUnit, TaskOptions, TaskStats, TaskState, TaskEvents, ErrorCode, Tuple, Key, KeyPart,
  FieldValue, FullKey, IndexKey, KeyPrefix, PartSpec, PartValue, ReadKey,
} from './index.js';
export type { UpdateOp, UpdateOperator } from './index.js';
