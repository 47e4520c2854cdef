// The chunk's transaction, shared by the strategies: one native expireChunk call (the TTL rule
// decided natively), or a scan whose tuples JavaScript decides on and deleteVisited removes.
// onExpired runs inside the chunk's open transaction; if it throws the chunk is rolled back and
// the cursor put back.
import { decodeMany, scratchBuffer, type Tuple } from '../native/codec.js';
import type { NativeCursor } from '../native/loader.js';
import type { ChunkContext, ChunkOutcome } from './strategies/strategy.js';

/** One native call that visits, decides by the TTL field and deletes. */
export function expireNatively(ctx: ChunkContext, earlyBreak: boolean): ChunkOutcome {
  const { fieldno, scanSize, onExpired } = ctx.config;
  const mode = onExpired ? 2 : ctx.wantsTuples() ? 1 : 0;
  const now = ctx.now();
  if (!ctx.alive()) return { checked: 0, expired: 0, deleted: [], passEnd: false };
  const bytes = ctx.handle.expireChunk(ctx.cursor, fieldno, scanSize, now, earlyBreak, mode, ctx.out, scratchBuffer());
  const [checked, expired, passEnd, , savepoint] = ctx.out;
  const deleted = mode === 0 ? [] : decodeMany(bytes);
  if (mode === 2) finishOpenChunk(ctx, savepoint, deleted);
  return { checked, expired, deleted, passEnd: passEnd === 1 };
}

/** Chooses, among the visited tuples, the positions to delete. */
export type Decide = (visited: Tuple[], now: number, ctx: ChunkContext) => { positions: number[]; checked: number; passEnd: boolean };

/** Scans natively, decides in JavaScript, deletes natively. */
export function expireByScan(ctx: ChunkContext, decide: Decide): ChunkOutcome {
  const { scanSize, onExpired } = ctx.config;
  const { handle: h, cursor } = ctx;
  const now = ctx.now();
  if (!ctx.alive()) return { checked: 0, expired: 0, deleted: [], passEnd: false };
  const visited = decodeMany(h.scanChunk(cursor, scanSize, ctx.out, scratchBuffer()));
  const scanEnded = ctx.out[2] === 1;
  let decision;
  try {
    decision = decide(visited, now, ctx);
  } catch (error) {
    if (!ctx.config.rm.space.dropped) cursor.restore();
    throw error;
  }
  const { positions, checked } = decision;
  const passEnd = scanEnded || decision.passEnd;
  if (ctx.config.rm.space.dropped) return { checked: 0, expired: 0, deleted: [], passEnd: false };
  let deleted: Tuple[] = [];
  if (positions.length > 0) {
    const keepOpen = onExpired !== undefined;
    deleted = decodeMany(h.deleteVisited(cursor, Uint32Array.from(positions), keepOpen, ctx.out, scratchBuffer()));
    if (keepOpen) finishOpenChunk(ctx, ctx.out[4], deleted);
  }
  return { checked, expired: deleted.length, deleted, passEnd };
}

// Runs onExpired inside the chunk's open transaction, then commits or rolls back.
function finishOpenChunk(ctx: ChunkContext, savepoint: number, tuples: Tuple[]): void {
  const { handle: h } = ctx;
  const space = ctx.config.rm.space;
  try {
    if (tuples.length > 0) (ctx.config.onExpired as (t: Tuple[]) => unknown)(tuples);
  } catch (error) {
    if (!space.dropped) h.rollbackChunk(ctx.cursor as NativeCursor, savepoint);
    throw error;
  }
  if (!space.dropped) h.commit(savepoint);
}
