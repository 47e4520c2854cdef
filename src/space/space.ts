// Space and Index: the public classes over the addon's SpaceHandle.
//
// Options and arguments are checked here; the addon checks again (it may be reached directly).
// Tuples and keys are packed with msgpackr before they cross; results come back as MessagePack
// bytes and are unpacked here (codec.ts).
import { createSpaceHandle, Iter, type NativeCursor, type NativeSpace } from '../native/loader.js';
import { decodeMany, decodeOne, pack, packKey, packRange, scratchBuffer, type Key, type Tuple } from '../native/codec.js';
import { CappedError, illegal } from '../errors.js';
import { checkCount, checkName, checkOptions, checkTuple, describe } from '../validate.js';

export type FieldType = 'unsigned' | 'integer' | 'number' | 'string' | 'boolean';
export type IndexType = 'TREE' | 'HASH';
export type IteratorType = 'EQ' | 'REQ' | 'ALL' | 'GE' | 'GT' | 'LE' | 'LT';

export interface Part {
  field: number;
  type: FieldType;
}

export interface IndexOptions {
  type?: IndexType;
  unique?: boolean;
  parts: Array<Part | [number, FieldType]>;
}

export interface SelectOptions {
  iterator?: IteratorType;
  limit?: number;
  offset?: number;
}

export interface SpaceOptions {
  maxTupleSize?: number;
}

export interface MemoryUsage {
  tuples: number;
  indexes: number;
  total: number;
}

const FIELD_TYPES: readonly FieldType[] = ['unsigned', 'integer', 'number', 'string', 'boolean'];
const ITERATORS: Record<IteratorType, Iter> = {
  EQ: Iter.EQ, REQ: Iter.REQ, ALL: Iter.ALL, GE: Iter.GE, GT: Iter.GT, LE: Iter.LE, LT: Iter.LT,
};

/**
 * @internal The native handle of a space, for the daemon and for tests that reach past the
 * public API. Not exported from the package's entry.
 */
export function handleOf(space: Space): NativeSpace {
  return space.handle;
}

/** Hooks the expiration daemon uses to learn that a space was dropped. */
export const dropHooks = new WeakMap<Space, Set<() => void>>();

function iteratorOf(where: string, value: unknown): Iter | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(value.toUpperCase() in ITERATORS)) {
    throw new CappedError(`${where}: unknown iterator '${String(value)}' (expected one of ${Object.keys(ITERATORS).join(', ')})`,
      'ER_ITERATOR_TYPE');
  }
  return ITERATORS[value.toUpperCase() as IteratorType];
}

function isScalar(v: unknown): boolean {
  const t = typeof v;
  return t === 'number' || t === 'string' || t === 'boolean' || t === 'bigint';
}

function checkKey(where: string, key: unknown): Key | undefined {
  if (key === undefined || key === null) return undefined;
  if (isScalar(key)) return key as Key;
  if (Array.isArray(key) && key.every(isScalar)) return key as Key;
  throw new CappedError(`${where}: a key is a number, string, boolean or an array of them, got ${describe(key)}`, 'ER_KEY_TYPE');
}

function checkParts(where: string, parts: unknown): Part[] {
  if (!Array.isArray(parts) || parts.length === 0) throw illegal(`${where}: parts must be a non-empty array`);
  return parts.map((p: unknown, i) => {
    const [field, type] = Array.isArray(p) ? p : p !== null && typeof p === 'object'
      ? [(p as Part).field, (p as Part).type] : [undefined, undefined];
    if (typeof field !== 'number' || !Number.isInteger(field) || field < 1 || field > 65535) {
      throw illegal(`${where}: parts[${i}].field must be a 1-based field number, got ${String(field)}`);
    }
    if (!FIELD_TYPES.includes(type as FieldType)) {
      throw illegal(`${where}: parts[${i}].type must be one of ${FIELD_TYPES.join(', ')}, got ${String(type)}`);
    }
    return { field, type: type as FieldType };
  });
}

export class Index {
  readonly name: string;
  readonly id: number;
  readonly type: IndexType;
  readonly unique: boolean;
  readonly parts: readonly Part[];
  readonly space: Space;
  private readonly h: NativeSpace;

  /** @internal */
  constructor(space: Space, handle: NativeSpace, id: number, name: string, type: IndexType, unique: boolean, parts: Part[]) {
    this.space = space;
    this.h = handle;
    this.id = id;
    this.name = name;
    this.type = type;
    this.unique = unique;
    this.parts = Object.freeze(parts.map((p) => Object.freeze({ ...p })));
  }

  /** The tuple with this full key, or undefined. Unique indexes only. */
  get(key: Key): Tuple | undefined {
    return decodeOne(this.h.get(this.id, packKey(checkKey('get', key)), scratchBuffer()));
  }

  select(key?: Key, options?: SelectOptions): Tuple[] {
    const o = checkOptions('select', options, ['iterator', 'limit', 'offset']);
    const iterator = iteratorOf('select', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    const limit = checkCount('select', 'limit', o.limit, Infinity, true);
    const offset = checkCount('select', 'offset', o.offset, 0, true);
    return decodeMany(this.h.select(this.id, packKey(checkKey('select', key)), iterator, limit, offset, scratchBuffer()));
  }

  /** A lazy iterator; it stays valid while the space changes between steps. */
  pairs(key?: Key, options?: { iterator?: IteratorType }): IterableIterator<Tuple> {
    const o = checkOptions('pairs', options, ['iterator']);
    const iterator = iteratorOf('pairs', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    return new TupleIterator(this.h.cursor(this.id, packKey(checkKey('pairs', key)), iterator));
  }

  /** The first tuple (with this key prefix, when given). TREE only. */
  min(key?: Key): Tuple | undefined {
    return decodeOne(this.h.minmax(this.id, packKey(checkKey('min', key)), false, scratchBuffer()));
  }

  /** The last tuple (with this key prefix, when given). TREE only. */
  max(key?: Key): Tuple | undefined {
    return decodeOne(this.h.minmax(this.id, packKey(checkKey('max', key)), true, scratchBuffer()));
  }

  count(key?: Key, options?: { iterator?: IteratorType }): number {
    const o = checkOptions('count', options, ['iterator']);
    const iterator = iteratorOf('count', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    return this.h.count(this.id, packKey(checkKey('count', key)), iterator);
  }

  len(): number {
    return this.h.len(this.id);
  }
}

class TupleIterator implements IterableIterator<Tuple> {
  private cursor: NativeCursor | undefined;

  constructor(cursor: NativeCursor) {
    this.cursor = cursor;
  }

  next(): IteratorResult<Tuple> {
    if (this.cursor === undefined) return { done: true, value: undefined };
    const tuple = decodeOne(this.cursor.next(scratchBuffer()));
    if (tuple === undefined) {
      this.cursor = undefined;
      return { done: true, value: undefined };
    }
    return { done: false, value: tuple };
  }

  return(): IteratorResult<Tuple> {
    this.cursor = undefined;
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): IterableIterator<Tuple> {
    return this;
  }
}

export class Space {
  readonly name: string;
  /** Indexes by name, and by number (0 is the primary). */
  readonly index: Record<string, Index> = Object.create(null);
  /** @internal */
  readonly handle: NativeSpace;
  private readonly list: Index[] = [];
  private isDropped = false;

  constructor(name: string, options?: SpaceOptions) {
    this.name = checkName('new Space()', name);
    const o = checkOptions('new Space()', options, ['maxTupleSize']);
    const max = checkCount('new Space()', 'maxTupleSize', o.maxTupleSize, 1024 * 1024);
    if (max < 1 || max > 0xffffffff) throw illegal(`new Space(): maxTupleSize must be in [1, 2^32), got ${max}`);
    this.handle = createSpaceHandle(name, max);
  }

  get dropped(): boolean {
    return this.isDropped;
  }

  /** All indexes, primary first. */
  get indexes(): readonly Index[] {
    return this.list;
  }

  createIndex(name: string, options: IndexOptions): Index {
    checkName('createIndex', name);
    const o = checkOptions('createIndex', options, ['type', 'unique', 'parts']);
    if (options === undefined) throw illegal('createIndex: options with parts are required');
    const type = (o.type ?? 'TREE') as IndexType;
    if (type !== 'TREE' && type !== 'HASH') throw illegal(`createIndex: type must be 'TREE' or 'HASH', got ${String(o.type)}`);
    if (o.unique !== undefined && typeof o.unique !== 'boolean') throw illegal('createIndex: unique must be a boolean');
    const unique = (o.unique ?? true) as boolean;
    const parts = checkParts('createIndex', o.parts);
    if (/^\d+$/.test(name)) throw illegal(`createIndex: index name '${name}' must not be a number`);
    const id = this.handle.createIndex(name, type, unique, parts.map((p) => p.field - 1), parts.map((p) => p.type));
    const index = new Index(this, this.handle, id, name, type, unique, parts);
    this.list.push(index);
    this.index[name] = index;
    this.index[id] = index;
    return index;
  }

  private get primary(): Index {
    const pk = this.list[0];
    if (pk === undefined) {
      if (this.isDropped) throw new CappedError(`Space '${this.name}' was dropped`, 'ER_SPACE_DROPPED');
      throw new CappedError(`Space '${this.name}' has no primary index yet: create one first`, 'ER_NO_PRIMARY_INDEX');
    }
    return pk;
  }

  insert(tuple: Tuple): Tuple {
    const b = packRange(checkTuple('insert', tuple));
    this.handle.insert(b, false, b.start, b.end);
    return tuple;
  }

  replace(tuple: Tuple): Tuple {
    const b = packRange(checkTuple('replace', tuple));
    this.handle.insert(b, true, b.start, b.end);
    return tuple;
  }

  /** Inserts every tuple in one native call, all or nothing. Returns the count. */
  insertMany(tuples: Tuple[]): number {
    if (!Array.isArray(tuples)) throw new CappedError('insertMany: expects an array of tuples', 'ER_TUPLE_FORMAT');
    tuples.forEach((t, i) => checkTuple(`insertMany: tuple #${i}`, t));
    return this.handle.insertMany(pack(tuples));
  }

  get(key: Key): Tuple | undefined {
    return this.primary.get(key);
  }

  /** Deletes by primary key; returns the deleted tuple, or undefined. */
  delete(key: Key): Tuple | undefined {
    return decodeOne(this.handle.delete(packKey(checkKey('delete', key)), scratchBuffer()));
  }

  select(key?: Key, options?: SelectOptions): Tuple[] {
    return this.primary.select(key, options);
  }

  pairs(key?: Key, options?: { iterator?: IteratorType }): IterableIterator<Tuple> {
    return this.primary.pairs(key, options);
  }

  count(key?: Key, options?: { iterator?: IteratorType }): number {
    return this.primary.count(key, options);
  }

  len(): number {
    return this.handle.len();
  }

  memory(): MemoryUsage {
    const [tuples, indexes] = this.handle.memory();
    return { tuples, indexes, total: tuples + indexes };
  }

  truncate(): void {
    this.handle.truncate();
  }

  /** Frees the native memory at once and ends the space's expiration tasks. */
  drop(): void {
    if (this.isDropped) return;
    this.handle.drop();
    this.isDropped = true;
    const hooks = dropHooks.get(this);
    if (hooks) for (const hook of [...hooks]) hook();
  }

  /**
   * Runs fn; every change it made is undone if it throws. fn must be synchronous. Transactions
   * nest: an inner one that throws undoes only its own changes.
   */
  transaction<T>(fn: () => T): T {
    if (typeof fn !== 'function') throw illegal('transaction: expects a function');
    const savepoint = this.handle.begin();
    let result: T;
    try {
      result = fn();
    } catch (error) {
      if (!this.isDropped) this.handle.rollback(savepoint);
      throw error;
    }
    if (this.isDropped) return result;
    if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
      this.handle.rollback(savepoint);
      throw new CappedError('transaction: fn must be synchronous (it returned a promise); its changes were undone',
        'ER_TRANSACTION');
    }
    this.handle.commit(savepoint);
    return result;
  }

  /** @internal Verifies that every index agrees with the primary (for tests). */
  checkIntegrity(): void {
    const problem = this.handle.checkIntegrity();
    if (problem !== '') throw new CappedError(`Space '${this.name}' is inconsistent: ${problem}`, 'ER_INTERNAL');
  }
}
