// Predicate: the user's isExpired(tuple, now) decides, in JavaScript, over tuples scanned
// natively; the chosen ones are deleted natively (only if still unchanged). With an early-break
// index the first tuple it calls live ends the pass.
//
// isExpired must be synchronous and return a boolean. A promise (any thenable) fails the whole
// chunk with ER_ILLEGAL_PARAMS (nothing is deleted; its rejection is handled). A throw, or any
// other non-boolean, makes that tuple alone a poison tuple: skipped for the rest of the pass.
// If the task is killed from inside isExpired, the walk stops there and nothing is deleted.
import type { Tuple } from '../../native/codec.js';
import { illegal, textOf } from '../../errors.js';
import { expireByScan } from '../chunk.js';
import { ignoreRejection, isThenable } from '../../thenable.js';
import type { ChunkContext, ChunkOutcome, Decision, Strategy } from './strategy.js';

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : `${typeof value} ${textOf(value)}`;
}

function decide(visited: readonly Tuple[], now: number, ctx: ChunkContext): Decision {
  const isExpired = ctx.config.isExpired as (tuple: Tuple, now: number) => unknown;
  const positions: number[] = [];
  for (let i = 0; i < visited.length; i++) {
    const tuple = visited[i];
    if (ctx.isSkipped(tuple)) continue;
    let verdict: unknown;
    try {
      verdict = isExpired(tuple, now);
    } catch (error) {
      if (!ctx.alive()) return { positions: [], checked: i + 1, passEnd: false, stopped: true };
      ctx.skip(tuple, error, 'isExpired');
      if (!ctx.alive()) return { positions: [], checked: i + 1, passEnd: false, stopped: true };
      continue;
    }
    if (isThenable(verdict)) {
      ignoreRejection(verdict);
      throw illegal('expirationd: isExpired must be synchronous and return a boolean; it returned a promise, ' +
        'so the chunk was rolled back');
    }
    if (!ctx.alive()) return { positions: [], checked: i + 1, passEnd: false, stopped: true };
    if (verdict === true) {
      positions.push(i);
    } else if (verdict === false) {
      if (ctx.config.earlyBreak) {
        ctx.cursor.reset();
        return { positions, checked: i + 1, passEnd: true, stopped: false };
      }
    } else {
      ctx.skip(tuple, illegal(`expirationd: isExpired must return a boolean, got ${describe(verdict)}`), 'isExpired');
      if (!ctx.alive()) return { positions: [], checked: i + 1, passEnd: false, stopped: true };
    }
  }
  return { positions, checked: visited.length, passEnd: false, stopped: false };
}

export const predicate: Strategy = {
  name: 'predicate',
  runChunk(ctx: ChunkContext): ChunkOutcome | Promise<ChunkOutcome> {
    return expireByScan(ctx, decide);
  },
};
