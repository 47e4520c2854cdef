// The chunk machinery the strategies share: transactions, onExpired delivery, poison tuples.
//
// Two ways to run a chunk:
// - expireNatively: one expireChunk call visits up to scanSize tuples, decides by the TTL field
//   and deletes in one transaction. With onExpired the transaction stays open (mode 2) while
//   onExpired runs, then commits; if it throws, the chunk is rolled back (rollbackChunk puts the
//   cursor back) and re-run as a scan, to find the poison tuple.
// - expireByScan: scanChunk copies the visited tuples, a Decide picks the expired ones, and
//   deleteVisited deletes them by position, only where the stored tuple still has the bytes
//   that were visited.
//
// Delivery to onExpired (deliver below) works on a queue of position sets, first the whole set:
// - synchronous onExpired: deleteVisited(set, keepOpen) + onExpired(tuples) + commit, inside one
//   transaction; a throw rolls that transaction back (space-level rollback: the cursor stays
//   past the chunk).
// - asynchronous onExpired (a promise came back): the tuples are handed while still stored;
//   nothing else runs for this task until the promise settles; on resolve deleteVisited(set)
//   deletes those still unchanged; a rejection deletes nothing. At-least-once: a tuple is never
//   deleted before a delivery of it resolved, and may be delivered more than once. Every
//   hand-off reads its tuples back first (one primary-key read each) and hands only those still
//   stored unchanged, as fresh arrays: user code has run since the scan (an earlier call that
//   edited or emptied its arrays, a write to the space). Which tuples the native path handed is
//   taken from a private copy of their bytes, not from the array the callback was given.
// A set that fails is split in halves that go back to the front of the queue, until the failing
// tuple is alone: it is skipped for the rest of the pass (ctx.skip), every other tuple of the
// chunk is delivered and deleted. A kill (seen through ctx.alive()) stops the queue at once.
// Cost of a chunk with f poison tuples among e expired: O(e) without failures, and at most
// about 2f·log2(e) extra onExpired calls with them.
//
// processExpired (processVisited below) replaces the delete: every strategy scans, decides, and
// hands the expired tuples, still stored, to processExpired(tuples, task) inside one atomic()
// frame, so that what it writes to any space commits or rolls back together. A throw rolls the
// frame back and the set is split in halves as for onExpired (poison tuples skipped for the
// pass). It must be synchronous: a promise rolls its call back and fails the chunk as a whole
// (ER_ILLEGAL_PARAMS), as a promise from isExpired does. A set handed after some user code ran
// since the scan (isExpired, or an earlier processExpired call of the same chunk) keeps only the
// tuples still stored unchanged (one primary-key read each), and hands them as read back: user
// code may edit the arrays it is handed, so the comparison and the keys use a second decode of
// the scan that no user code sees.
//
// The pass must end whatever processExpired does. A tuple it leaves in place keeps its position,
// behind the cursor, and comes again in the next pass. But a tuple it writes into the task's
// space still expired (updated with a TTL that has passed, re-inserted under a new key) may land
// ahead of the cursor, be met again in the same pass, written again, and so on: an endless pass.
// So while it runs, a watcher on the space (onInsert: insert, replace, insertMany, update,
// upsert) notes every tuple written that is expired by the TTL rule at the chunk's now (with
// isExpired: every tuple written); once the call commits, those are not handed again in this
// pass (ctx.handled; the walk passes them and the pass ends) and come again in the next one. A
// re-queue with a TTL in the future notes nothing. Cost: one TTL check per write, one key per
// noted tuple until the pass ends. A HASH walk can also meet a tuple it has passed once more,
// after the table was resized (the cursor resumes at the start of a probe cluster): there, the
// tuples a call left stored and expired are held too (one primary-key read each), so that each
// is handed once a pass.
import {
  decodeEach, decodeFields, decodeMany, decodeOne, pack, packKey, resultBytes, scratchBuffer, splitTuples, type Decoded, type Key,
  type Tuple,
} from '../native/codec.js';
import { illegal } from '../errors.js';
import type { ChunkContext, ChunkOutcome, Decide } from './strategies/strategy.js';
import { ttlExpired } from './strategies/ttl.js';
import { openAtomic } from '../space/atomic.js';
import { onInsert } from '../space/space.js';
import { ignoreRejection, isThenable } from '../thenable.js';

type OnExpired = (tuples: Tuple[]) => unknown;

type Settled = { ok: true } | { ok: false; error: unknown };

function settle(value: PromiseLike<unknown>): Promise<Settled> {
  return new Promise((resolve) => {
    try {
      value.then(() => resolve({ ok: true }), (error: unknown) => resolve({ ok: false, error }));
    } catch (error) {
      resolve({ ok: false, error });
    }
  });
}

/** A tuple's primary key, as a string fit for a Set. */
export function keyOf(ctx: ChunkContext, tuple: Tuple): { key: unknown; id: string } {
  const parts = ctx.config.rm.space.indexes[0].parts;
  const key = parts.length === 1 ? tuple[parts[0].field - 1] : parts.map((p) => tuple[p.field - 1]);
  let id: string;
  try {
    id = pack(key).toString('latin1');
  } catch {
    id = String(key);
  }
  return { key, id };
}

const NOTHING = (checked = 0, failed = false): ChunkOutcome => ({ checked, passEnd: false, failed });

/** The first delivery of a chunk was already made (by the native path) with this result. */
interface Handed {
  tuples: Tuple[];
  result: PromiseLike<unknown>;
}

interface ScanFrom {
  now: number;
  /** The whole chunk already failed once with this error (reported): start with its halves. */
  failed?: { error: unknown };
  handed?: Handed;
}

/** One native call that visits, decides by the TTL field and deletes (see the file comment). */
export function expireNatively(ctx: ChunkContext, earlyBreak: boolean, decide: Decide): ChunkOutcome | Promise<ChunkOutcome> {
  const { fieldno, scanSize } = ctx.config;
  const onExpired = ctx.config.onExpired as OnExpired | undefined;
  if (ctx.config.processExpired !== undefined) return expireByScan(ctx, decide);
  if (onExpired !== undefined && (ctx.asyncDelivery || ctx.hasSkipped())) return expireByScan(ctx, decide);
  const { handle: h, cursor } = ctx;
  const space = ctx.config.rm.space;
  const mode = onExpired ? 2 : ctx.wantsTuples() ? 1 : 0;
  const now = ctx.now();
  if (!ctx.alive()) return NOTHING();
  const bytes = h.expireChunk(cursor, fieldno, scanSize, now, earlyBreak, mode, ctx.out, scratchBuffer());
  const out = ctx.out;
  const checked = out[0];
  const expired = out[1];
  const savepoint = out[4];
  const outcome: ChunkOutcome = { checked, passEnd: out[2] === 1, failed: false };
  if (mode === 0) {
    ctx.expired(expired, []);
    return outcome;
  }
  if (mode === 1) {
    // Committed: a tuple that cannot be decoded (an extension's unpack threw) is gone as expired,
    // and only the 'expired' event misses it; that is reported.
    expiredCommitted(ctx, bytes);
    return outcome;
  }
  // A view, taken before the decode: an extension's unpack that reads the space gets a fresh
  // scratch Buffer, and these bytes stay as the chunk wrote them.
  const raw = resultBytes(bytes);
  let deleted: Tuple[];
  try {
    deleted = decodeMany(raw);
  } catch (error) {
    // Nothing may be deleted that onExpired is not handed: undo the chunk, then scan it, where
    // a tuple that cannot be decoded is skipped and the others are delivered.
    if (!space.dropped) h.rollbackChunk(cursor, savepoint);
    ctx.fail(error);
    if (!ctx.alive()) return NOTHING(0, true);
    return expireByScan(ctx, decide, { now });  // no halving: the scan finds that tuple itself
  }
  if (!ctx.alive()) {
    // Killed, or its space dropped, by an extension's unpack: nothing more is deleted.
    if (!space.dropped) h.rollbackChunk(cursor, savepoint);
    return NOTHING();
  }
  if (deleted.length === 0) {
    h.commit(savepoint);
    ctx.expired(expired, deleted);
    return outcome;
  }
  // The bytes handed, in a copy no user code sees (the scratch Buffer is reused by any read in
  // onExpired): should it return a promise, they say which tuples it was handed, whatever it did
  // to the arrays (a queue consumer empties them with splice).
  const handedBytes = typeof bytes === 'number' ? Buffer.from(raw) : raw;
  let result: unknown;
  // What onExpired writes to any space commits or rolls back with the chunk (atomic.ts).
  const frame = openAtomic();
  try {
    result = (onExpired as OnExpired)(deleted);
  } catch (error) {
    frame.rollback();
    if (!space.dropped) h.rollbackChunk(cursor, savepoint);
    ctx.fail(error);
    if (!ctx.alive()) return NOTHING(0, true);
    return expireByScan(ctx, decide, { now, failed: { error } });
  }
  if (isThenable(result)) {
    // A promise: this onExpired is asynchronous. Undo the chunk (and whatever the call changed
    // synchronously), then scan the same tuples again; those it was handed are deleted once the
    // promise resolves.
    frame.rollback();
    if (!space.dropped) h.rollbackChunk(cursor, savepoint);
    ctx.asyncDelivery = true;
    if (!ctx.alive()) {
      ignoreRejection(result);
      return NOTHING();
    }
    let handed: Tuple[];
    try {
      handed = decodeMany(handedBytes);
    } catch (error) {
      // Decoded once already: an extension's unpack that throws only sometimes. Whatever the
      // call was handed comes again (at-least-once).
      ignoreRejection(result);
      ctx.fail(error);
      if (!ctx.alive()) return NOTHING(0, true);
      return expireByScan(ctx, decide, { now });
    }
    return expireByScan(ctx, decide, { now, handed: { tuples: handed, result } });
  }
  frame.commit();
  if (!space.dropped) h.commit(savepoint);
  ctx.expired(expired, deleted);
  return outcome;
}

/** Scans natively, decides in JavaScript, delivers and deletes (see the file comment). */
export function expireByScan(ctx: ChunkContext, decide: Decide, from?: ScanFrom): ChunkOutcome | Promise<ChunkOutcome> {
  const { handle: h, cursor } = ctx;
  const space = ctx.config.rm.space;
  const now = from?.now ?? ctx.now();
  if (!ctx.alive()) {
    if (from?.handed) ignoreRejection(from.handed.result);
    return NOTHING();
  }
  // A view, not the scratch offset: an extension's unpack that reads the space during the first
  // decode gets a fresh scratch Buffer (codec.ts), so these bytes stay as scanned.
  const bytes = resultBytes(h.scanChunk(cursor, ctx.config.scanSize, ctx.out, scratchBuffer()));
  const scanEnded = ctx.out[2] === 1;
  const first = decodeEach(bytes);
  const visited = first.tuples;
  // With processExpired or onExpired: a second copy that no user code sees (isExpired,
  // processExpired and an asynchronous onExpired may edit the arrays they are handed), to compare
  // with what is stored and to take keys from.
  const userSees = ctx.config.processExpired !== undefined || ctx.config.onExpired !== undefined;
  const second = userSees ? decodeEach(bytes) : first;
  const pristine = second.tuples;
  // Each tuple's bytes as scanned (copied: user code reads before they are compared), against
  // which a hand-off after user code ran compares what is stored.
  const scanned = userSees ? splitTuples(Buffer.from(bytes)) : [];
  if (first.failed.length > 0 || second.failed.length > 0) {
    if (!undecodable(ctx, visited, pristine, [...first.failed, ...second.failed], now)) {
      if (from?.handed) ignoreRejection(from.handed.result);
      return NOTHING();
    }
  }
  let decision;
  try {
    decision = decide(visited, now, ctx);
  } catch (error) {
    if (!space.dropped) cursor.restore();
    if (from?.handed) ignoreRejection(from.handed.result);
    throw error;
  }
  const { positions, checked } = decision;
  if (decision.stopped || !ctx.alive()) {
    if (from?.handed) ignoreRejection(from.handed.result);
    return NOTHING(checked);
  }
  const outcome: ChunkOutcome = { checked, passEnd: scanEnded || decision.passEnd, failed: from?.failed !== undefined };
  const onExpired = ctx.config.onExpired as OnExpired | undefined;
  if (positions.length === 0 && from?.handed === undefined) return outcome;
  if (ctx.config.processExpired !== undefined) {
    const failed = processVisited(ctx, visited, pristine, scanned, positions, now);
    return failed ? { ...outcome, failed } : outcome;
  }
  if (onExpired === undefined) {
    expiredCommitted(ctx, h.deleteVisited(cursor, Uint32Array.from(positions), false, ctx.out, scratchBuffer()));
    return outcome;
  }
  const done = (failed: boolean): ChunkOutcome => ({ ...outcome, failed: outcome.failed || failed });
  const delivered = deliver(ctx, onExpired, pristine, scanned, positions, from);
  return delivered instanceof Promise ? delivered.then(done) : done(delivered);
}

// The scanned tuples that cannot be decoded (a user's msgpackr extension threw in its unpack)
// become what of them decodes on its own: the primary key and the TTL field, scalars. By the TTL
// rule, a live one stays in the walk (an early-break pass ends there); an expired one, or any one
// that isExpired would have to judge, is skipped for the rest of the pass and reported, since no
// callback can be handed it. Returns whether the task is still alive.
function undecodable(ctx: ChunkContext, visited: Tuple[], pristine: Tuple[], failed: Decoded['failed'], now: number): boolean {
  const { fieldno, isExpired } = ctx.config;
  const fields = [...ctx.config.rm.space.indexes[0].parts.map((p) => p.field - 1), fieldno];
  const seen = new Set<number>();
  for (const { index, error, bytes } of failed) {
    if (seen.has(index)) continue;
    seen.add(index);
    visited[index] = decodeFields(bytes, fields);
    pristine[index] = decodeFields(bytes, fields);
    if (isExpired === undefined && !ttlExpired(visited[index][fieldno], now)) continue;
    ctx.skip(pristine[index], error, 'decoding');
    if (!ctx.alive()) return false;
  }
  return true;
}

// Delivers the expired positions to onExpired and deletes them; returns whether anything failed.
// `pristine`: the scan's tuples as no user code has seen them (keys and comparisons come from it).
function deliver(ctx: ChunkContext, onExpired: OnExpired, pristine: readonly Tuple[], scanned: readonly Buffer[], positions: number[],
  from: ScanFrom | undefined): boolean | Promise<boolean> {
  const { handle: h, cursor } = ctx;
  const space = ctx.config.rm.space;
  const queue: number[][] = [];
  let failed = from?.failed !== undefined;

  const failure = (set: number[], error: unknown): void => {
    failed = true;
    ctx.fail(error);
    if (!ctx.alive()) return;
    if (set.length === 1) {
      ctx.skip(pristine[set[0]], error, 'onExpired');
      return;
    }
    const mid = set.length >> 1;
    queue.unshift(set.slice(0, mid), set.slice(mid));
  };
  // Deletes, after a delivery resolved, those of the set still unchanged.
  const deleteAfter = (set: number[]): void => {
    if (set.length === 0 || !ctx.alive()) return;
    expiredCommitted(ctx, h.deleteVisited(cursor, Uint32Array.from(set), false, ctx.out, scratchBuffer()));
  };
  const afterSettle = (set: number[]) => (s: Settled): boolean | Promise<boolean> => {
    if (s.ok) deleteAfter(set);
    else failure(set, s.error);
    return run();
  };

  const run = (): boolean | Promise<boolean> => {
    while (queue.length > 0 && ctx.alive()) {
      let set = queue.shift() as number[];
      if (ctx.asyncDelivery) {
        // Handed while still stored: user code has run since the scan (an earlier call, a
        // rejection's retry, isExpired), so only the tuples still stored unchanged, as read back
        // (fresh arrays, whatever was done to the ones handed before). One primary-key read each.
        const tuples: Tuple[] = [];
        set = set.filter((p) => {
          const stored = storedUnchanged(ctx, pristine[p], scanned[p]);
          if (stored === undefined) return false;
          tuples.push(stored as Tuple);
          return true;
        });
        if (set.length === 0) continue;
        let result: unknown;
        try {
          result = onExpired(tuples);
        } catch (error) {
          failure(set, error);
          continue;
        }
        if (!isThenable(result)) {
          deleteAfter(set);
          continue;
        }
        return settle(result).then(afterSettle(set));
      }
      const bytes = h.deleteVisited(cursor, Uint32Array.from(set), true, ctx.out, scratchBuffer());
      const savepoint = ctx.out[4];
      let tuples: Tuple[];
      try {
        tuples = decodeMany(bytes);
      } catch (error) {
        // Decoded at the scan, not now (an extension's unpack that throws only sometimes):
        // nothing onExpired is not handed may be deleted.
        if (!space.dropped) h.rollback(savepoint);
        failure(set, error);
        continue;
      }
      if (!ctx.alive()) {  // killed, or its space dropped, by an extension's unpack
        if (!space.dropped) h.rollback(savepoint);
        break;
      }
      if (tuples.length === 0) {
        h.commit(savepoint);
        continue;
      }
      let result: unknown;
      const frame = openAtomic();
      try {
        result = onExpired(tuples);
      } catch (error) {
        frame.rollback();
        if (!space.dropped) h.rollback(savepoint);
        failure(set, error);
        continue;
      }
      if (isThenable(result)) {
        frame.rollback();
        if (!space.dropped) h.rollback(savepoint);
        ctx.asyncDelivery = true;
        return settle(result).then(afterSettle(set));
      }
      frame.commit();
      if (space.dropped) break;
      h.commit(savepoint);
      ctx.expired(tuples.length, tuples);
    }
    return failed;
  };

  if (from?.handed !== undefined) {
    // The native path already handed these tuples: find them among the visited ones by key.
    const ids = new Set(from.handed.tuples.map((t) => keyOf(ctx, t).id));
    const handedSet = positions.filter((p) => ids.has(keyOf(ctx, pristine[p]).id));
    const rest = positions.filter((p) => !ids.has(keyOf(ctx, pristine[p]).id));
    if (rest.length > 0) queue.push(rest);
    return settle(from.handed.result).then(afterSettle(handedSet));
  }
  if (from?.failed !== undefined) {
    if (positions.length === 1) {
      ctx.skip(pristine[positions[0]], from.failed.error, 'onExpired');
    } else if (positions.length > 1) {
      const mid = positions.length >> 1;
      queue.push(positions.slice(0, mid), positions.slice(mid));
    }
  } else {
    queue.push(positions);
  }
  return run();
}

/**
 * The stored tuple with this tuple's primary key (expired or not), or undefined; also undefined
 * when it cannot be decoded (an extension's unpack that throws only sometimes), so that it is not
 * handed as unchanged.
 */
function storedVersion(ctx: ChunkContext, tuple: Tuple): Tuple | undefined {
  const primary = ctx.config.rm.space.indexes[0];
  const result = ctx.handle.get(primary.id, packKey(keyOf(ctx, tuple).key as Key), scratchBuffer());
  try {
    return decodeOne(result);
  } catch {
    return undefined;
  }
}

/**
 * The stored tuple with this tuple's primary key, read back, when its bytes are still those
 * scanned; else undefined. (Bytes, not decoded values: a user's msgpackr extension may unpack to
 * values that are never deep-equal, such as functions, and such a tuple was then never handed.
 * The delete that follows a hand-off compares bytes too.)
 */
function storedUnchanged(ctx: ChunkContext, tuple: Tuple, scannedBytes: Buffer): Tuple | undefined {
  const primary = ctx.config.rm.space.indexes[0];
  const result = ctx.handle.get(primary.id, packKey(keyOf(ctx, tuple).key as Key), scratchBuffer());
  if (result === null || !resultBytes(result).equals(scannedBytes)) return undefined;
  try {
    return decodeOne(result);
  } catch {
    return undefined;
  }
}

/** A committed delete's tuples to the 'expired' event; one that cannot be decoded is reported instead. */
function expiredCommitted(ctx: ChunkContext, bytes: number | Buffer | undefined): void {
  const { tuples, failed } = decodeEach(bytes);
  if (failed.length > 0) ctx.fail(failed[0].error);
  ctx.expired(tuples.length, failed.length > 0 ? tuples.filter((t) => t !== undefined) : tuples);
}

// Hands the expired positions to processExpired, in one atomic frame per call; returns whether
// any call failed. See the file comment.
function processVisited(ctx: ChunkContext, visited: readonly Tuple[], pristine: readonly Tuple[], scanned: readonly Buffer[], positions: number[],
  now: number): boolean {
  const { isExpired, fieldno } = ctx.config;
  let written: Tuple[] = [];
  const off = onInsert(ctx.config.rm.space, (tuple) => {
    if (isExpired !== undefined || ttlExpired(tuple[fieldno], now)) written.push(tuple);
  });
  const processExpired = ctx.config.processExpired as (tuples: Tuple[], task: unknown) => unknown;
  const queue: number[][] = [positions];
  let recheck = isExpired !== undefined;  // isExpired ran user code since the scan
  const hashWalk = ctx.config.it.type === 'HASH';
  let failed = false;
  try {
    while (queue.length > 0 && ctx.alive()) {
      let set = queue.shift() as number[];
      let tuples: Tuple[];
      if (recheck) {
        // Those still stored unchanged, handed as read back (fresh arrays, whatever was done to
        // the ones handed before).
        const kept: number[] = [];
        tuples = [];
        for (const p of set) {
          const stored = storedUnchanged(ctx, pristine[p], scanned[p]);
          if (stored === undefined) continue;
          kept.push(p);
          tuples.push(stored as Tuple);
        }
        set = kept;
      } else {
        tuples = set.map((p) => visited[p]);
      }
      recheck = true;  // every later call follows a call of processExpired
      if (set.length === 0) continue;
      written = [];
      let result: unknown;
      const frame = openAtomic();
      try {
        result = processExpired(tuples, ctx.task);
      } catch (error) {
        frame.rollback();
        failed = true;
        ctx.fail(error);
        if (!ctx.alive()) break;
        if (set.length === 1) {
          ctx.skip(pristine[set[0]], error, 'processExpired');
        } else {
          const mid = set.length >> 1;
          queue.unshift(set.slice(0, mid), set.slice(mid));
        }
        continue;
      }
      if (isThenable(result)) {
        frame.rollback();
        ignoreRejection(result);
        throw illegal('expirationd: processExpired must be synchronous (it runs inside the chunk\'s transaction); ' +
          'it returned a promise, so its changes were rolled back');
      }
      frame.commit();
      ctx.expired(set.length, tuples);
      if (!ctx.alive()) continue;
      for (const tuple of written) ctx.handled(tuple);
      // A HASH walk may meet a tuple again after the table was resized: hold those left stored
      // and still expired (a tuple no longer expired would not be handed anyway).
      if (hashWalk) {
        for (const p of set) {
          const stored = storedVersion(ctx, pristine[p]);
          if (stored !== undefined && (isExpired !== undefined || ttlExpired(stored[fieldno], now))) ctx.handled(pristine[p]);
        }
      }
    }
  } finally {
    off();
  }
  return failed;
}
