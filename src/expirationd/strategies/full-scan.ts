// Full scan: the walk covers the whole index (the rmIndex, or a HASH), checking each tuple's
// TTL field natively; reaching the end of the index ends the pass.
import { expireNatively } from '../chunk.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategy.js';

export const fullScan: Strategy = {
  name: 'full-scan',
  runChunk(ctx: ChunkContext): ChunkOutcome {
    return expireNatively(ctx, false);
  },
};
