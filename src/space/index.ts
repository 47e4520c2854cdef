// Index: reads through one index of a space. The native handle it holds is the space's, passed
// in by Space.createIndex and never exposed.
import { Iter, type NativeResult, type NativeSpace } from '../native/loader.js';
import { decodeApplied, decodeMany, decodeOne, limitOf, packKey, packOps, scratchBuffer, type Key, type Tuple } from '../native/codec.js';
import { checkCount, checkOptions } from '../validate.js';
import { checkKey, iteratorOf, type IndexType, type IteratorType, type Part } from './args.js';
import { TupleIterator } from './iterator.js';
import { maxTupleSizeOf, type Space } from './space.js';
import { checkOps, opsBufferOf, packOpsFast, type UpdateOp } from './update.js';
import { atomicActive, enlist } from './atomic.js';
import { readClock, type TtlClock } from './ttl.js';
import type { KeyPrefix } from './keys.js';

export interface SelectOptions {
  iterator?: IteratorType;
  limit?: number;
  offset?: number;
}

/**
 * An index of a Space<T>. K is its full key (get, update), R what its reads take (a prefix of K
 * on a TREE index). Both are the untyped Key unless createIndex() worked them out from literal
 * parts on a typed space (see keys.ts).
 */
export class Index<T extends unknown[] = unknown[], K = Key, R = KeyPrefix<K>> {
  readonly name: string;
  readonly id: number;
  readonly type: IndexType;
  readonly unique: boolean;
  readonly parts: readonly Part[];
  readonly space: Space<T, any>;
  readonly #h: NativeSpace;
  readonly #stored: ((tuple: Tuple | undefined) => void) | undefined;
  /** A TTL space's clock: every read passes its now and the addon hides expired tuples. */
  readonly #clock: TtlClock | undefined;

  /**
   * @internal `stored`: called after an update with the new tuple (the space's insert watchers,
   * its evictions), or with undefined when the update was applied but its tuple cannot be decoded.
   */
  constructor(space: Space<T, any>, handle: NativeSpace, id: number, name: string, type: IndexType, unique: boolean, parts: Part[],
    stored?: (tuple: Tuple | undefined) => void) {
    this.space = space;
    this.#h = handle;
    this.#stored = stored;
    this.id = id;
    this.name = name;
    this.type = type;
    this.unique = unique;
    this.parts = Object.freeze(parts.map((p) => Object.freeze({ ...p })));
    this.#clock = readClock(space);
  }

  /** What JSON.stringify(index) writes: its definition and its space's name (not the space). */
  toJSON(): { space: string; name: string; type: IndexType; unique: boolean; parts: readonly Part[] } {
    return { space: this.space.name, name: this.name, type: this.type, unique: this.unique, parts: this.parts };
  }

  /** The tuple with this full key, or undefined. Unique indexes only. */
  get(key: K): T | undefined {
    // The clock first (in every read): an injected one is user code, and may read the space
    // (the scratch Buffer, msgpackr).
    const now = this.#clock?.read();
    return decodeOne(this.#h.get(this.id, packKey(checkKey('get', key)), scratchBuffer(), now)) as T | undefined;
  }

  select(key?: R, options?: SelectOptions): T[] {
    const o = checkOptions('select', options, ['iterator', 'limit', 'offset']);
    const iterator = iteratorOf('select', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    const limit = checkCount('select', 'limit', o.limit, Infinity, true);
    const offset = checkCount('select', 'offset', o.offset, 0, true);
    const now = this.#clock?.read();
    return decodeMany(this.#h.select(this.id, packKey(checkKey('select', key)), iterator, limit, offset, scratchBuffer(), now)) as T[];
  }

  /** A lazy iterator; it stays valid while the space changes between steps. */
  pairs(key?: R, options?: { iterator?: IteratorType }): IterableIterator<T> {
    const o = checkOptions('pairs', options, ['iterator']);
    const iterator = iteratorOf('pairs', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    return new TupleIterator<T>(this.#h.cursor(this.id, packKey(checkKey('pairs', key)), iterator), this.#clock);
  }

  /** The first tuple (with this key prefix, when given). TREE only. */
  min(key?: R): T | undefined {
    const now = this.#clock?.read();
    return decodeOne(this.#h.minmax(this.id, packKey(checkKey('min', key)), false, scratchBuffer(), now)) as T | undefined;
  }

  /** The last tuple (with this key prefix, when given). TREE only. */
  max(key?: R): T | undefined {
    const now = this.#clock?.read();
    return decodeOne(this.#h.minmax(this.id, packKey(checkKey('max', key)), true, scratchBuffer(), now)) as T | undefined;
  }

  count(key?: R, options?: { iterator?: IteratorType }): number {
    const o = checkOptions('count', options, ['iterator']);
    const iterator = iteratorOf('count', o.iterator) ?? (key === undefined || key === null ? Iter.ALL : Iter.EQ);
    const now = this.#clock?.read();
    return this.#h.count(this.id, packKey(checkKey('count', key)), iterator, now);
  }

  /** Entries stored, expired ones included (a TTL space's count() walks instead). */
  len(): number {
    return this.#h.len(this.id);
  }

  /**
   * Applies Tarantool update operations to the tuple with this full key (unique indexes only),
   * natively and atomically; returns the new tuple, or undefined when the key is absent.
   */
  update(key: K, ops: UpdateOp[]): T | undefined {
    const k = packKey(checkKey('update', key));
    checkOps('update', ops);
    // One operation with a number (not NaN) as its value, the counter's and the sliding
    // session's: passed as plain arguments, the addon packs it as packOpsFast would.
    const one = ops.length === 1 ? ops[0] : undefined;
    const value = one !== undefined && one.length === 3 ? one[2] : undefined;
    // Each element read once more (a getter may answer otherwise than to checkOps): anything but
    // an operator of one ASCII character takes the general path, which the addon checks.
    const name = typeof value === 'number' && value === value ? one![0] : undefined;
    if (typeof name === 'string' && name.length === 1 && name.charCodeAt(0) <= 0x7f) {
      if (atomicActive) enlist(this.space, this.#h);
      return this.#updated(this.#h.updateNumber(this.id, k, name.charCodeAt(0), one![1], value as number, scratchBuffer()));
    }
    const end = packOpsFast(ops);
    if (atomicActive) enlist(this.space, this.#h);
    let result;
    if (end >= 0) {
      result = this.#h.update(this.id, k, opsBufferOf(), 0, end, scratchBuffer());
    } else {
      const o = packOps(ops, limitOf(maxTupleSizeOf(this.space), ops.length), limitOf(maxTupleSizeOf(this.space)));
      result = this.#h.update(this.id, k, o, o.start, o.end, scratchBuffer());
    }
    return this.#updated(result);
  }

  #updated(result: NativeResult): T | undefined {
    let tuple: T | undefined;
    try {
      tuple = decodeApplied(result, 'update') as T | undefined;
    } catch (error) {
      // Applied: what it evicted still goes to onEvict (the update's own error is the one told).
      try {
        this.#stored?.(undefined);
      } catch {
        // reported through the update's error
      }
      throw error;
    }
    if (tuple !== undefined && this.#stored !== undefined) this.#stored(tuple);
    return tuple;
  }
}
