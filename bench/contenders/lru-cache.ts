// lru-cache with per-entry ttl: expired entries get TTLs that end together, and one purgeStale()
// call (which walks every entry) runs as soon as they are stale.
import { LRUCache } from 'lru-cache';
import { performance } from 'node:perf_hooks';
import type { ContenderDefinition } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

const definition: ContenderDefinition = {
  label: 'lru-cache',
  description: 'new LRUCache({ max, ttl }); set(id, tuple, { ttl }) in a loop; purgeStale() once the backlog exists',
  memoryKind: 'heap',
  create({ workload: w, marginFactor }) {
    const cache = new LRUCache<number, Tuple>({ max: w.tuples, ttl: 3600_000 });
    let timer: NodeJS.Timeout | undefined;
    let allStaleAt = 0;
    return {
      load(progress) {
        const loaded = loadWallClockCache(w, {
          clock: () => performance.now(),
          set: (id, value, ttl) => cache.set(id, value, { ttl }),
          marginFactor,
          progress,
        });
        allStaleAt = loaded.allStaleAt;
        return loaded;
      },
      // The user's purge, timed for the moment every expired entry is stale.
      clear: () =>
        new Promise<void>((resolve) => {
          const purge = (): void => {
            const early = allStaleAt - performance.now();
            if (early > 0) {
              timer = setTimeout(purge, Math.ceil(early));
              return;
            }
            cache.purgeStale();
            resolve();
          };
          purge();
        }),
      remainingExpired: () => cache.size - w.liveCount,
      stop: () => {
        if (timer) clearTimeout(timer);
      },
      verify() {
        const errors: string[] = [];
        if (cache.size !== w.liveCount) errors.push(`${cache.size} entries remain, expected ${w.liveCount} live ones`);
        let stale = 0;
        let missing = 0;
        for (let id = 1; id <= w.tuples; id++) {
          if (w.expired[id]) {
            if (cache.peek(id, { allowStale: true }) !== undefined) stale++;
          } else if (cache.get(id)?.[1] !== email(id)) missing++;
        }
        if (stale) errors.push(`${stale} expired entries are still there`);
        if (missing) errors.push(`${missing} live entries are missing or wrong`);
        return errors;
      },
      close: () => cache.clear(),
    };
  },
};

export default definition;
