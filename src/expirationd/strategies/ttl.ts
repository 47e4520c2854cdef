// The TTL rule in JavaScript, the same as the engine's (native/engine/expiry/chunk.h): a tuple is
// expired when its TTL field is a number or bigint, not NaN, and <= now. Anything else (missing,
// a string, NaN) is live. Used when a TTL strategy scans instead of expiring natively (an async
// onExpired, or a chunk being split to isolate a poison tuple).
import type { Tuple } from '../../native/codec.js';
import type { ChunkContext, Decide, Decision } from './strategy.js';

export function ttlExpired(value: unknown, now: number): boolean {
  if (typeof value === 'number') return value <= now;  // NaN <= now is false
  if (typeof value === 'bigint') return value <= now;
  return false;
}

/** A Decide by the TTL field; with `earlyBreak` the first live tuple ends the pass. */
export function decideByTtl(earlyBreak: boolean): Decide {
  return (visited: readonly Tuple[], now: number, ctx: ChunkContext): Decision => {
    const fieldno = ctx.config.fieldno;
    const positions: number[] = [];
    for (let i = 0; i < visited.length; i++) {
      if (ttlExpired(visited[i][fieldno], now)) {
        if (!ctx.isSkipped(visited[i])) positions.push(i);
      } else if (earlyBreak) {
        ctx.cursor.reset();
        return { positions, checked: i + 1, passEnd: true, stopped: false };
      }
    }
    return { positions, checked: visited.length, passEnd: false, stopped: false };
  };
}
