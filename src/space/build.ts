// createIndexAsync: builds an index over a non-empty space in slices, between which the event
// loop runs (issue 12). The engine does the work (native/engine/index_build.h): the new index
// follows every write from the first slice on, and each slice walks the next tuples of the
// primary into it, for at most `sliceMs` or `sliceTuples` tuples. The index becomes visible (in
// space.indexes, space.index[name], its id) only when the last slice completes it.
//
// A failed build changes nothing and rejects: a duplicate in a unique index, stored or written
// during the build (ER_DUPLICATE_KEY), a tuple the index cannot hold (ER_FIELD_MISSING,
// ER_FIELD_TYPE), running out of memory (ER_MEMORY_ISSUE), truncate() (ER_INDEX_BUILD_ABORTED),
// drop() (ER_SPACE_DROPPED). Writes during the build never fail because of it.
//
// Builds on one space run one after another: a second createIndexAsync waits for the first to
// settle. The synchronous createIndex() is refused (ER_UNSUPPORTED) while a build runs. On an
// empty space, or for the primary index, there is nothing to walk: the index is created at once.
import type { NativeSpace } from '../native/loader.js';
import { CappedError, illegal, textOf } from '../errors.js';
import { checkName, checkOptions } from '../validate.js';
import { checkParts, type IndexType, type Part } from './args.js';
import type { Index } from './index.js';
import type { IndexOptions, Space } from './space.js';
import { atomicActive } from './atomic.js';

export interface IndexDefinition {
  type: IndexType;
  unique: boolean;
  parts: Part[];
}

const slice = { tuples: 16384, ms: 1 };

/**
 * @internal The size of each build slice (tests make it small to interleave writes); returns
 * the previous setting.
 */
export function setBuildSlice(next: { tuples?: number; ms?: number }): { tuples: number; ms: number } {
  const before = { ...slice };
  if (next.tuples !== undefined) slice.tuples = next.tuples;
  if (next.ms !== undefined) slice.ms = next.ms;
  return before;
}

/** The checks createIndex makes on its arguments. */
export function checkIndexDefinition(method: string, name: string, options: IndexOptions): IndexDefinition {
  checkName(method, name);
  const o = checkOptions(method, options, ['type', 'unique', 'parts']);
  if (options === undefined) throw illegal(`${method}: options with parts are required`);
  const type = (o.type ?? 'TREE') as IndexType;
  if (type !== 'TREE' && type !== 'HASH') throw illegal(`${method}: type must be 'TREE' or 'HASH', got ${textOf(o.type)}`);
  if (o.unique !== undefined && typeof o.unique !== 'boolean') throw illegal(`${method}: unique must be a boolean`);
  const unique = (o.unique ?? true) as boolean;
  const parts = checkParts(method, o.parts);
  if (/^\d+$/.test(name)) throw illegal(`${method}: index name '${name}' must not be a number`);
  return { type, unique, parts };
}

const running = new WeakMap<Space, Promise<unknown>>();

/**
 * Space.createIndexAsync. add(id, def) makes the Index object visible once the engine has
 * added the index.
 */
export function createIndexAsync(space: Space<any, any>, h: NativeSpace, name: string, options: IndexOptions,
  add: (id: number, def: IndexDefinition) => Index, createNow: (def: IndexDefinition) => Index): Promise<Index> {
  let def: IndexDefinition;
  try {
    def = checkIndexDefinition('createIndexAsync', name, options);
  } catch (e) {
    return Promise.reject(e);
  }
  // The build would start after the frame ends, whether it commits or not (createIndex() is
  // refused there on a space older than the frame).
  if (atomicActive) {
    return Promise.reject(new CappedError('createIndexAsync() cannot start inside a transaction or atomic()', 'ER_TRANSACTION'));
  }
  const before = running.get(space);
  const build = (before === undefined ? Promise.resolve() : before.then(() => undefined, () => undefined))
    .then(() => run(space, h, name, def, add, createNow));
  const settled = build.then(() => undefined, () => undefined);
  running.set(space, settled);
  void settled.then(() => {
    if (running.get(space) === settled) running.delete(space);
  });
  return build;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function droppedDuring(space: Space<any, any>, name: string): CappedError {
  return new CappedError(`createIndexAsync('${name}'): space '${space.name}' was dropped during the build`,
    'ER_SPACE_DROPPED');
}

/** The build; on an empty space, or for the primary, createNow(def): the definition checked, not the options read again. */
async function run(space: Space<any, any>, h: NativeSpace, name: string, def: IndexDefinition,
  add: (id: number, def: IndexDefinition) => Index, createNow: (def: IndexDefinition) => Index): Promise<Index> {
  if (space.dropped) throw new CappedError(`Space '${space.name}' was dropped`, 'ER_SPACE_DROPPED');
  if (space.indexes.length === 0 || h.len() === 0) return createNow(def);
  h.buildIndexBegin(name, def.type, def.unique, def.parts.map((p) => p.field - 1), def.parts.map((p) => p.type));
  for (;;) {
    await nextTurn();
    if (space.dropped) throw droppedDuring(space, name);
    const id = h.buildIndexStep(slice.tuples, slice.ms);
    if (id >= 0) return add(id, def);
  }
}
