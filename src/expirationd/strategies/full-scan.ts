// Full scan: the walk covers the whole index (the rmIndex, or a HASH), checking each tuple's
// TTL field natively; reaching the end of the index ends the pass. Like early-break, it falls
// back to the JavaScript TTL rule over a scan for an async onExpired, a poison tuple or
// processExpired.
import { expireNatively } from '../chunk.js';
import type { ChunkContext, ChunkOutcome, Strategy } from './strategy.js';
import { decideByTtl } from './ttl.js';

const decide = decideByTtl(false);

export const fullScan: Strategy = {
  name: 'full-scan',
  runChunk(ctx: ChunkContext): ChunkOutcome | Promise<ChunkOutcome> {
    return expireNatively(ctx, false, decide);
  },
};
