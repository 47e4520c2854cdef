// Predicate: the user's isExpired(tuple, now) decides, in JavaScript, over tuples scanned
// natively; the chosen ones are deleted natively (only if still unchanged). With an early-break
// index the first tuple it calls live ends the pass.
import type { Tuple } from '../../native/codec.js';
import { expireByScan } from '../chunk.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategy.js';

function decide(visited: Tuple[], now: number, ctx: ChunkContext): { positions: number[]; checked: number; passEnd: boolean } {
  const isExpired = ctx.config.isExpired as (tuple: Tuple, now: number) => unknown;
  const positions: number[] = [];
  let checked = 0;
  for (; checked < visited.length; checked++) {
    if (isExpired(visited[checked], now)) {
      positions.push(checked);
    } else if (ctx.config.earlyBreak) {
      ctx.cursor.reset();
      return { positions, checked: checked + 1, passEnd: true };
    }
  }
  return { positions, checked, passEnd: false };
}

export const predicate: Strategy = {
  name: 'predicate',
  runChunk(ctx: ChunkContext): ChunkOutcome {
    return expireByScan(ctx, decide);
  },
};
