// Early break: the walk goes up a TREE index led by the TTL field, so the first live tuple ends
// the pass; the next pass starts again at the smallest TTL. A pass checks expired + 1 tuples.
import { expireNatively } from '../chunk.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategy.js';

export const earlyBreak: Strategy = {
  name: 'early-break',
  runChunk(ctx: ChunkContext): ChunkOutcome {
    return expireNatively(ctx, true);
  },
};
