// atomic(fn): one transaction over every space of this thread (Tarantool's box.atomic).
//
// Spaces join lazily: a write (insert, replace, insertMany, delete, truncate, update, upsert)
// made while a frame is open calls enlist(), which begins a native transaction on that space
// for every open frame that has not begun one yet, outermost first. So a space costs nothing
// until it is written, and every space's savepoints nest in the same order as the frames.
// Closing a frame commits or rolls back, innermost space last-enlisted first, each space's
// savepoint of that frame. A space dropped inside the frame is skipped (its memory is gone);
// a space created inside it joins on its first write like any other (its tuples are undone, the
// space itself stays). Frames are synchronous. An async function, a generator function or an
// async generator function is refused before it runs: its body (or the part after its first
// await) would run later, outside any frame. Any other fn that returns a promise (or any
// thenable) is refused after it ran, its changes undone, and a promise's rejection is marked
// handled: the caller never gets the promise, so could not handle it.
//
// The expiry chunk opens a frame (openAtomic) around a synchronous onExpired and around each
// processExpired call, so what those callbacks write to any space commits or rolls back with
// the chunk.
import { types } from 'node:util';
import type { NativeSpace } from '../native/loader.js';
import { CappedError, illegal } from '../errors.js';
import { ignoreRejection, isThenable } from '../thenable.js';
import { functionKind } from '../validate.js';

interface Member {
  readonly dropped: boolean;
}

interface Frame {
  readonly members: Set<Member>;
  readonly list: Array<{ space: Member; h: NativeSpace; savepoint: number }>;
  closed: boolean;
  /** afterCommit() functions queued in this frame. */
  readonly pending: Array<() => void>;
}

const frames: Frame[] = [];

/** Whether a frame is open: the one check a write pays outside atomic(). */
export let atomicActive = false;
/** Counts outermost frames: a space created inside one records it (createIndex's rule). */
export let outermostFrame = 0;

/** @internal Called by a space's write methods while a frame is open (atomicActive). */
export function enlist(space: Member, h: NativeSpace): void {
  const top = frames[frames.length - 1];
  if (top === undefined || top.members.has(space)) return;
  for (const frame of frames) {
    if (frame.members.has(space)) continue;
    const savepoint = h.begin();  // throws ER_SPACE_DROPPED for a dropped space: nothing joined
    frame.members.add(space);
    frame.list.push({ space, h, savepoint });
  }
}

/** @internal An open frame: commit() or rollback() closes it (innermost first). */
export interface AtomicFrame {
  commit(): void;
  rollback(): void;
}

function close(frame: Frame, commit: boolean): void {
  if (frame.closed) return;
  if (frames[frames.length - 1] !== frame) throw new CappedError('atomic: frames must close innermost first', 'ER_TRANSACTION');
  frame.closed = true;
  frames.pop();
  atomicActive = frames.length > 0;
  let failure: unknown;
  for (let i = frame.list.length - 1; i >= 0; i--) {
    const { space, h, savepoint } = frame.list[i];
    if (space.dropped) continue;
    try {
      if (commit) h.commit(savepoint);
      else h.rollback(savepoint);
    } catch (error) {
      failure ??= error;  // go on with the other spaces; report the first failure
    }
  }
  if (commit && frame.pending.length > 0) {
    const parent = frames[frames.length - 1];
    if (parent !== undefined) parent.pending.push(...frame.pending);
    else for (const fn of frame.pending) fn();
  }
  if (failure !== undefined) throw failure;
}

/**
 * @internal Runs fn once what the current statement changed is committed: at once outside
 * atomic(), else when the outermost frame commits; never if a frame it was queued in rolls back
 * (capped spaces report evictions this way). fn must not throw.
 */
export function afterCommit(fn: () => void): void {
  const top = frames[frames.length - 1];
  if (top === undefined) fn();
  else top.pending.push(fn);
}

/** @internal Opens a frame; the caller closes it with commit() or rollback(). */
export function openAtomic(): AtomicFrame {
  const frame: Frame = { members: new Set(), list: [], closed: false, pending: [] };
  if (frames.length === 0) outermostFrame++;
  frames.push(frame);
  atomicActive = true;
  return { commit: () => close(frame, true), rollback: () => close(frame, false) };
}

/** Functions whose body does not run, or not all of it, when they are called. */
const DEFERRED_KINDS = new Set(['[object AsyncFunction]', '[object GeneratorFunction]', '[object AsyncGeneratorFunction]']);

/**
 * Runs fn in one transaction over every space of this thread: if fn throws, every change it
 * made to any space is undone and the error is rethrown. fn must be synchronous (a returned
 * promise is refused with ER_TRANSACTION and its changes undone). Frames nest: an inner one that
 * throws undoes only its own changes. Returns what fn returns.
 */
export function atomic<T>(fn: () => T): T {
  return runAtomic(fn, 'atomic');
}

/** @internal atomic(), naming `where` in errors; `space` (with its handle) joins at once. */
export function runAtomic<T>(fn: () => T, where: string, space?: Member, h?: NativeSpace): T {
  if (typeof fn !== 'function') throw illegal(`${where}: expects a function`);
  const kind = functionKind(fn) ?? '[object Function]';  // a Proxy whose trap throws: called as is
  if (DEFERRED_KINDS.has(kind)) {
    const what = kind.slice(8, -1).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
    throw new CappedError(`${where}: fn must be synchronous (got ${what.startsWith('a') ? 'an' : 'a'} ${what}: ` +
      'its body would run outside the transaction)', 'ER_TRANSACTION');
  }
  const frame = openAtomic();
  if (space !== undefined && h !== undefined) {
    try {
      enlist(space, h);
    } catch (error) {
      frame.rollback();
      throw error;
    }
  }
  let result: T;
  try {
    result = fn();
  } catch (error) {
    try {
      frame.rollback();
    } catch {
      // the first error is the one to report
    }
    throw error;
  }
  if (isThenable(result)) {
    // A promise's rejection is marked handled; another thenable's then() is user code, not run.
    if (types.isPromise(result)) ignoreRejection(result);
    frame.rollback();
    throw new CappedError(`${where}: fn must be synchronous (it returned a promise); its changes were undone`,
      'ER_TRANSACTION');
  }
  frame.commit();
  return result;
}
