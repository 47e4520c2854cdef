// Space: the public class over one native space (src/native/loader.ts). Options and arguments
// are checked here; the addon checks again. Tuples and keys are packed with msgpackr before they
// cross; results come back as MessagePack bytes and are unpacked here (codec.ts).
//
// The native handle is private: an ECMAScript private field, reached inside the package only
// through handleOf(), which src/index.ts does not export. The daemon learns of a drop through
// onDrop(), also internal, and of inserts through onInsert() (issue 15: an early-break task
// brings its next wake-up forward for a tuple that expires sooner). With no watcher, an insert
// pays one check of a private field.
import { createSpaceHandle, type NativeSpace } from '../native/loader.js';
import {
  applied, decodeApplied, decodeEach, limitOf, packKey, packOps, packTuple, packTupleBuffer, packTuples, scratchBuffer, takeCopy, type Key, type Tuple,
} from '../native/codec.js';
import { CappedError, illegal } from '../errors.js';
import { checkCount, checkName, checkOptions, checkTuple, isArray } from '../validate.js';
import { checkKey, type IndexType, type IteratorType } from './args.js';
import type { IndexKey, KeyPrefix, PartSpec, ReadKey } from './keys.js';
import { Index, type SelectOptions } from './index.js';
import { checkOps, opsBufferOf, packOpsFast, type UpdateOp } from './update.js';
import { afterCommit, atomicActive, enlist, outermostFrame, runAtomic } from './atomic.js';
import { checkCaps, EvictionReporter, nativeCaps, type CapOptions, type Caps, type OnFull } from './capped.js';
import { checkTtl, setTtlClock, ttlClock, wallClockOf, type TtlDeclaration, type TtlOptions } from './ttl.js';
import { checkIndexDefinition, createIndexAsync, type IndexDefinition } from './build.js';

export type { FieldValue, FullKey, IndexKey, KeyPrefix, PartSpec, PartValue, ReadKey } from './keys.js';
export type { FieldType, IndexType, IteratorType, Part } from './args.js';
export { Index, type SelectOptions } from './index.js';
export type { UpdateOp, UpdateOperator } from './update.js';
export type { TtlDeclaration, TtlOptions, TtlUnit } from './ttl.js';
export type { CapOptions, OnFull } from './capped.js';

export interface IndexOptions<Parts extends readonly PartSpec[] = readonly PartSpec[], Type extends IndexType = IndexType> {
  type?: Type;
  unique?: boolean;
  parts: Parts;
}

export interface SpaceOptions<T extends unknown[] = unknown[]> extends CapOptions<T> {
  maxTupleSize?: number;
  /** TTL-aware reads: tuples whose TTL field is <= now are hidden from get/select/pairs/count/min/max. */
  ttl?: TtlOptions;
}

export interface MemoryUsage {
  tuples: number;
  indexes: number;
  total: number;
}

// Any space, whatever its tuple and key types: what the internal hooks take.
type AnySpace = Space<any, any>;

let handleOfSpace: (space: AnySpace) => NativeSpace | undefined;
/** @internal A space's maxTupleSize (bounds what its writes may encode to, codec.ts). */
export let maxTupleSizeOf: (space: AnySpace) => number;
const dropHooks = new WeakMap<AnySpace, Set<() => void>>();
type InsertWatcher = (tuple: Tuple) => void;
let setWatcher: (space: AnySpace, watcher: InsertWatcher | undefined) => void;
const insertHooks = new WeakMap<AnySpace, Set<InsertWatcher>>();

/**
 * @internal Whether `value` is a Space itself: a brand check on its private handle, which a Proxy
 * around a Space (or an object that inherits from one) fails, where instanceof passes.
 */
export function isSpace(value: unknown): value is AnySpace {
  return handleOfSpace(value as AnySpace) !== undefined;
}

/**
 * @internal The native handle of a space, for the daemon and for tests that reach past the
 * public API. Not exported from the package's entry.
 */
export function handleOf(space: AnySpace): NativeSpace {
  const h = handleOfSpace(space);
  if (h === undefined) throw illegal('not a Space');
  return h;
}

/**
 * @internal Calls fn(tuple) after each tuple that insert, replace, insertMany, update or upsert
 * stored (after the native call succeeded); returns the function that unregisters it. fn must not throw.
 */
export function onInsert(space: AnySpace, fn: InsertWatcher): () => void {
  let hooks = insertHooks.get(space);
  if (hooks === undefined) insertHooks.set(space, (hooks = new Set()));
  hooks.add(fn);
  const update = (): void => {
    const set = insertHooks.get(space) as Set<InsertWatcher>;
    const list = [...set];
    setWatcher(space, list.length === 0 ? undefined : list.length === 1 ? list[0] : (t) => {
      for (const watcher of list) watcher(t);
    });
  };
  update();
  return () => {
    insertHooks.get(space)?.delete(fn);
    update();
  };
}

/** @internal Calls fn when the space is dropped; returns the function that unregisters it. */
export function onDrop(space: AnySpace, fn: () => void): () => void {
  let hooks = dropHooks.get(space);
  if (hooks === undefined) dropHooks.set(space, (hooks = new Set()));
  hooks.add(fn);
  return () => dropHooks.get(space)?.delete(fn);
}

/**
 * A space of tuples of type T (default unknown[]: any array). K is the primary key, the untyped
 * Key unless given: `new Space<[string, number], string>('s')`. T is what reads return; nothing
 * checks at run time that stored tuples have its shape, nor that update operations keep it.
 */
export class Space<T extends unknown[] = unknown[], K = Key> {
  readonly name: string;
  /**
   * Indexes by name, and by number (0 is the primary); keys untyped (createIndex() returns them
   * typed). Frozen, and replaced by a new frozen map when an index is added: user code can
   * neither add a fake index to it nor freeze it under createIndex(), which would half-apply it.
   */
  get index(): Readonly<Record<string, Index<T>>> {
    return this.#index;
  }
  #index: Readonly<Record<string, Index<T>>> = Object.freeze(Object.create(null) as Record<string, Index<T>>);
  readonly #h: NativeSpace;
  /** The outermost atomic() frame open when the space was created (outermostFrame), or -1. */
  readonly #bornIn: number;
  #watch: InsertWatcher | undefined = undefined;
  // Private fields, not properties: a frozen space (Object.freeze(space)) must still drop, and
  // user code must not reorder the indexes (space.indexes is a frozen copy).
  readonly #list: Index<T>[] = [];
  #listView: readonly Index<T>[] = Object.freeze([]);

  static {
    handleOfSpace = (space) => (space !== null && typeof space === 'object' && #h in space ? space.#h : undefined);
    maxTupleSizeOf = (space) => space.#maxTupleSize;
    setWatcher = (space, watcher) => {
      space.#watch = watcher;
    };
  }
  #dropped = false;
  readonly #maxTupleSize: number;
  #ttl: TtlDeclaration | undefined;
  #now: (() => number) | undefined;
  #caps: Caps | undefined;
  /** An evicting space with an onEvict: each write hands what it evicted to this (capped.ts). */
  #evictions: EvictionReporter | undefined;

  constructor(name: string, options?: SpaceOptions<T>) {
    this.name = checkName('new Space()', name);
    const o = checkOptions('new Space()', options, ['maxTupleSize', 'ttl', 'maxTuples', 'maxBytes', 'onFull', 'onEvict']);
    const max = checkCount('new Space()', 'maxTupleSize', o.maxTupleSize, 1024 * 1024);
    if (max < 1 || max > 0xffffffff) throw illegal(`new Space(): maxTupleSize must be in [1, 2^32), got ${max}`);
    const ttl = checkTtl('new Space()', o.ttl);
    const caps = checkCaps('new Space()', { maxTuples: o.maxTuples, maxBytes: o.maxBytes, onFull: o.onFull, onEvict: o.onEvict },
      ttl !== undefined);
    this.#bornIn = atomicActive ? outermostFrame : -1;
    this.#maxTupleSize = max;
    this.#h = createSpaceHandle(name, max, ttl === undefined ? undefined : ttl.field - 1,
      caps === undefined ? undefined : nativeCaps(caps), wallClockOf(ttl));
    this.#caps = caps;
    if (caps?.onEvict !== undefined) this.#evictions = new EvictionReporter(name, caps.onEvict);
    if (ttl !== undefined) {
      this.#ttl = ttl;
      setTtlClock(this, name, ttl);
      this.#now = ttlClock(this);
    }
  }

  /** The TTL declaration (frozen), or undefined when reads do not hide expired tuples. */
  get ttl(): TtlDeclaration | undefined {
    return this.#ttl;
  }

  /** A capped space's limit on its tuple count, or undefined. */
  get maxTuples(): number | undefined {
    return this.#caps?.maxTuples;
  }

  /** A capped space's limit on bsize(), or undefined. */
  get maxBytes(): number | undefined {
    return this.#caps?.maxBytes;
  }

  /** What a write over a cap does ('refuse' or 'evictExpiring'), or undefined when uncapped. */
  get onFull(): OnFull | undefined {
    return this.#caps?.onFull;
  }

  /** The last error an onEvict threw (it is also emitted as a process warning), or undefined. */
  get lastEvictError(): unknown {
    return this.#evictions?.lastError;
  }

  /** The bytes of the stored tuples (their MessagePack sizes), as Tarantool's space:bsize(); what maxBytes caps. */
  bsize(): number {
    return this.#h.bsize();
  }

  // After a write of a space with an onEvict: what the statement evicted goes to onEvict once
  // it commits (capped.ts). Decoded at once: the scratch Buffer is reused by the next call.
  #reportEvicted(): void {
    const bytes = this.#h.takeEvicted(scratchBuffer());
    if (bytes === 0) return;
    const { tuples, failed } = decodeEach(bytes);
    const reporter = this.#evictions as EvictionReporter;
    const decoded = failed.length > 0 ? tuples.filter((t) => t !== undefined) : tuples;
    if (decoded.length > 0) afterCommit(() => reporter.deliver(decoded));
    // A user's msgpackr extension failed in its unpack: onEvict cannot be handed those.
    if (failed.length > 0) throw applied('write', `${failed.length} of the tuples it evicted`, failed[0].error);
  }

  /**
   * What JSON.stringify(space) writes: its name, whether it was dropped, its TTL declaration and
   * its indexes' definitions (no tuples; without it the index -> space links made a cycle).
   */
  toJSON(): { name: string; dropped: boolean; ttl?: { field: number; unit: string }; indexes: ReturnType<Index<T>['toJSON']>[] } {
    const ttl = this.#ttl === undefined ? undefined : { field: this.#ttl.field, unit: this.#ttl.unit };
    return { name: this.name, dropped: this.#dropped, ...(ttl === undefined ? {} : { ttl }), indexes: this.#list.map((i) => i.toJSON()) };
  }

  get dropped(): boolean {
    return this.#dropped;
  }

  /** All indexes, primary first (a frozen copy: sorting it for display changes nothing). */
  get indexes(): readonly Index<T>[] {
    return this.#listView;
  }

  /**
   * On a typed space with literal parts, the index's key type is worked out from them (see
   * keys.ts): `createIndex('pk', { parts: [[1, 'string']] })` returns an Index<T, string | [string]>.
   */
  createIndex<const Parts extends readonly PartSpec[], Type extends IndexType = 'TREE'>(name: string,
    options: IndexOptions<Parts, Type>): Index<T, IndexKey<T, Parts>, ReadKey<IndexKey<T, Parts>, Type>> {
    return this.#createIndex(name, checkIndexDefinition('createIndex', name, options)) as Index<T, never>;
  }

  /** createIndex() of a checked definition (createIndexAsync's, on an empty space, too). */
  #createIndex(name: string, def: IndexDefinition): Index<T> {
    const { type, unique, parts } = def;
    // Not inside a frame (transaction() or atomic()) on a space that existed before it: a rollback
    // would not drop the index, so the frame would be half undone. A space created inside the
    // frame stays after a rollback anyway (empty), so it may get its indexes there. The addon
    // refuses it after the definition's own errors.
    const inFrame = atomicActive && this.#bornIn !== outermostFrame;
    const id = this.#h.createIndex(name, type, unique, parts.map((p) => p.field - 1), parts.map((p) => p.type), inFrame);
    return this.#add(id, name, def);
  }

  /**
   * Builds the index over the stored tuples in slices between which the event loop runs; writes
   * meanwhile are reflected in it, and it is visible only once built (build.ts). Typed as
   * createIndex() is.
   */
  createIndexAsync<const Parts extends readonly PartSpec[], Type extends IndexType = 'TREE'>(name: string,
    options: IndexOptions<Parts, Type>): Promise<Index<T, IndexKey<T, Parts>, ReadKey<IndexKey<T, Parts>, Type>>> {
    return createIndexAsync(this, this.#h, name, options, (id, def) => this.#add(id, name, def),
      (def) => this.#createIndex(name, def)) as Promise<Index<T, never>>;
  }

  #add(id: number, name: string, def: IndexDefinition): Index<T> {
    const index = new Index<T>(this, this.#h, id, name, def.type, def.unique, def.parts, (t) => {
      if (t !== undefined) this.#watch?.(t);
      if (this.#evictions !== undefined) this.#reportEvicted();
    });
    this.#list.push(index);
    this.#listView = Object.freeze([...this.#list]);
    this.#index = Object.freeze(Object.assign(Object.create(null) as Record<string, Index<T>>, this.#index, { [name]: index, [id]: index }));
    return index;
  }

  private get primary(): Index<T, K> {
    const pk = this.#list[0];
    if (pk === undefined) {
      if (this.#dropped) throw new CappedError(`Space '${this.name}' was dropped`, 'ER_SPACE_DROPPED');
      throw new CappedError(`Space '${this.name}' has no primary index yet: create one first`, 'ER_NO_PRIMARY_INDEX');
    }
    return pk as Index<T, K>;
  }

  // With an insert watcher (a running task's), a write packs a plain copy of the tuple, each field
  // read once inside the codec's guard (codec.ts, lastCopy), and the watcher is handed that copy:
  // it reads fields after the write committed, and the caller's array may have getters or be a
  // Proxy, whose code must not run then (a throw there reported a stored tuple as failed).
  // A TTL space's insert is given the clock (read before packing): a stored tuple with the same
  // primary key whose TTL is <= now does not block it (it is replaced, in the same statement).
  insert(tuple: T): T {
    const now = this.#now?.();
    const watching = this.#watch !== undefined;
    const b = packTuple(checkTuple('insert', tuple), this.#maxTupleSize, watching);
    const stored = watching ? takeCopy() : undefined;
    if (atomicActive) enlist(this, this.#h);
    this.#h.insert(b, false, b.start, b.end, now);
    if (stored !== undefined) this.#watch?.(stored as Tuple);
    if (this.#evictions !== undefined) this.#reportEvicted();
    return tuple;
  }

  replace(tuple: T): T {
    const watching = this.#watch !== undefined;
    const b = packTuple(checkTuple('replace', tuple), this.#maxTupleSize, watching);
    const stored = watching ? takeCopy() : undefined;
    if (atomicActive) enlist(this, this.#h);
    this.#h.insert(b, true, b.start, b.end);
    if (stored !== undefined) this.#watch?.(stored as Tuple);
    if (this.#evictions !== undefined) this.#reportEvicted();
    return tuple;
  }

  /** Inserts every tuple in one native call, all or nothing. Returns the count. */
  insertMany(tuples: T[]): number {
    if (!isArray(tuples)) throw new CappedError('insertMany: expects an array of tuples', 'ER_TUPLE_FORMAT');
    if (atomicActive) enlist(this, this.#h);
    const now = this.#now?.();
    // Each tuple is checked as the batch is packed, and with a watcher the batch and each tuple
    // are copied there by index (as for insert above): nothing iterates the caller's array.
    const watching = this.#watch !== undefined;
    const bytes = packTuples(tuples, this.#maxTupleSize, watching);
    const batch = watching ? takeCopy() : [];
    const count = this.#h.insertMany(bytes, now);
    // Read the watcher again for each tuple: one (a task's, through its clock) may kill its task,
    // or drop the space, which unregisters it halfway through the batch.
    for (let i = 0; i < batch.length; i++) {
      const watch = this.#watch;
      if (watch === undefined) break;
      watch(batch[i] as Tuple);
    }
    if (this.#evictions !== undefined) this.#reportEvicted();
    return count;
  }

  get(key: K): T | undefined {
    return this.primary.get(key);
  }

  /**
   * Applies Tarantool update operations to the tuple with this primary key, natively and
   * atomically across all indexes; returns the new tuple, or undefined when the key is absent.
   */
  update(key: K, ops: UpdateOp[]): T | undefined {
    return this.primary.update(key, ops);
  }

  /**
   * Inserts `tuple` when its primary key is absent; otherwise applies `ops` to the stored tuple
   * as Tarantool does (an operation that fails on it is skipped; a result that would change the
   * primary key is dropped). Returns nothing, as in Tarantool.
   */
  upsert(tuple: T, ops: UpdateOp[]): void {
    const t = packTupleBuffer(checkTuple('upsert', tuple), this.#maxTupleSize);
    const end = packOpsFast(checkOps('upsert', ops));
    if (atomicActive) enlist(this, this.#h);
    const o = end >= 0 ? opsBufferOf() : packOps(ops, limitOf(this.#maxTupleSize, ops.length), limitOf(this.#maxTupleSize));
    const [start, stop] = end >= 0 ? [0, end] : [(o as ReturnType<typeof packOps>).start, (o as ReturnType<typeof packOps>).end];
    const want = this.#watch !== undefined;
    const result = this.#h.upsert(t, o, start, stop, want, scratchBuffer());
    let stored: Tuple | undefined;
    try {
      stored = want ? decodeApplied(result ?? null, 'upsert') : undefined;  // before the scratch Buffer is reused
    } catch (error) {
      // Applied: what it evicted still goes to onEvict (the upsert's own error is the one told).
      if (this.#evictions !== undefined) {
        try {
          this.#reportEvicted();
        } catch {
          // reported through the upsert's error
        }
      }
      throw error;
    }
    if (this.#evictions !== undefined) this.#reportEvicted();
    if (stored !== undefined) this.#watch?.(stored);
  }

  /** Deletes by primary key; returns the deleted tuple, or undefined. */
  delete(key: K): T | undefined {  // a TTL space's expired tuple too: delete sees what is stored
    if (atomicActive) enlist(this, this.#h);
    return decodeApplied(this.#h.delete(packKey(checkKey('delete', key)), scratchBuffer()), 'delete') as T | undefined;
  }

  select(key?: KeyPrefix<K>, options?: SelectOptions): T[] {
    return this.primary.select(key, options);
  }

  pairs(key?: KeyPrefix<K>, options?: { iterator?: IteratorType }): IterableIterator<T> {
    return this.primary.pairs(key, options);
  }

  count(key?: KeyPrefix<K>, options?: { iterator?: IteratorType }): number {
    return this.primary.count(key, options);
  }

  len(): number {
    return this.#h.len();
  }

  memory(): MemoryUsage {
    const [tuples, indexes] = this.#h.memory();
    return { tuples, indexes, total: tuples + indexes };
  }

  truncate(): void {
    if (atomicActive) enlist(this, this.#h);
    this.#h.truncate();
  }

  /**
   * Frees the native memory at once and ends the space's expiration tasks. Like every later
   * call, a second drop() throws ER_SPACE_DROPPED (as Tarantool's space:drop() does).
   */
  drop(): void {
    if (this.#dropped) throw new CappedError(`Space '${this.name}' was dropped`, 'ER_SPACE_DROPPED');
    this.#h.drop();
    this.#dropped = true;
    const hooks = dropHooks.get(this);
    if (hooks) for (const hook of [...hooks]) hook();
  }

  /**
   * atomic(fn) (see atomic.ts): one transaction over every space of this thread, this one
   * joined at once; every change fn made to any space is undone if it throws. fn must be
   * synchronous. Transactions nest: an inner one that throws undoes only its own changes.
   */
  transaction<T>(fn: () => T): T {
    return runAtomic(fn, 'transaction', this, this.#h);
  }

  /** @internal Verifies that every index agrees with the primary (for tests). */
  checkIntegrity(): void {
    const problem = this.#h.checkIntegrity();
    if (problem !== '') throw new CappedError(`Space '${this.name}' is inconsistent: ${problem}`, 'ER_INTERNAL');
  }
}

