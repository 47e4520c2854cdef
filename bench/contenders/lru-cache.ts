// lru-cache with per-entry ttl and purgeStale() on a timer. OFF-LABEL: lru-cache's docs advise
// leaving stale entries in place to fall out as new ones are added (purging walks every entry),
// and ttlAutopurge warns of the cost. The row shows what that walk costs when users purge anyway:
// setInterval(() => cache.purgeStale(), scanTime), the period matched to our tuned scanTime.
import { LRUCache } from 'lru-cache';
import { performance } from 'node:perf_hooks';
import type { ContenderDefinition, DeletionTracker } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

const definition: ContenderDefinition = {
  label: 'lru-cache, purgeStale() (off-label)',
  description:
    'new LRUCache({ max, ttl: 1 h, dispose }); set(id, tuple, { ttl }) in a loop; setInterval(purgeStale, scan time): off-label, its docs advise against purging',
  selfMemory: 'heap',
  create({ workload: w, scanTime, marginFactor, quietMs }) {
    let tracker: DeletionTracker | undefined;
    const cache = new LRUCache<number, Tuple>({
      max: w.tuples,
      ttl: 3600_000,
      dispose: (_value, _key, reason) => {
        if (reason === 'expire') tracker?.deleted(1);
      },
    });
    let timer: NodeJS.Timeout | undefined;
    return {
      load: (progress) =>
        loadWallClockCache(w, {
          clock: () => performance.now(),
          set: (id, value, ttl) => cache.set(id, value, { ttl }),
          marginFactor,
          quietMs,
          progress,
        }),
      start(t) {
        tracker = t;
        timer = setInterval(() => cache.purgeStale(), scanTime * 1000);
      },
      remainingExpired: () => cache.size - w.liveCount,
      stop: () => {
        if (timer) clearInterval(timer);
        timer = undefined;
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
