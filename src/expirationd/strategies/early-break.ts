// Early break: the walk goes up a TREE index led by the TTL field, so the first live tuple ends
// the pass; the next pass starts again at the smallest TTL. A pass checks expired + 1 tuples.
// One native call decides and deletes, unless onExpired is async, the pass has a poison tuple or
// processExpired replaces the delete (then the same rule runs in JavaScript over a scan).
import { expireNatively } from '../chunk.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategy.js';
import { decideByTtl } from './ttl.js';

const decide = decideByTtl(true);

export const earlyBreak: Strategy = {
  name: 'early-break',
  runChunk(ctx: ChunkContext): ChunkOutcome | Promise<ChunkOutcome> {
    return expireNatively(ctx, true, decide);
  },
};
