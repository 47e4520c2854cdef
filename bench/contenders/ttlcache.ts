// @isaacs/ttlcache: expired entries get TTLs that end together; its own timer fires at that moment
// and purgeStale() drops the stale buckets in one go.
import { TTLCache } from '@isaacs/ttlcache';
import { performance } from 'node:perf_hooks';
import { Countdown, type ContenderDefinition } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

const definition: ContenderDefinition = {
  label: '@isaacs/ttlcache',
  description: 'set(id, tuple, { ttl }) in a loop; its own timer calls purgeStale() when the first TTL runs out',
  memoryKind: 'heap',
  create({ workload: w, marginFactor }) {
    const gone = new Countdown(w.expiredCount);
    const cache = new TTLCache<number, Tuple>({
      // Called for every removal anyway (the default is a no-op); counting costs no more.
      dispose: (_value, _key, reason) => {
        if (reason === 'stale') gone.tick();
      },
    });
    return {
      load: (progress) =>
        loadWallClockCache(w, {
          clock: () => performance.now(),
          set: (id, value, ttl) => cache.set(id, value, { ttl }),
          marginFactor,
          progress,
        }),
      clear: () => gone.done,
      remainingExpired: () => cache.size - w.liveCount,
      stop: () => {},
      verify() {
        const errors: string[] = [];
        if (cache.size !== w.liveCount) errors.push(`${cache.size} entries remain, expected ${w.liveCount} live ones`);
        let stale = 0;
        let missing = 0;
        for (let id = 1; id <= w.tuples; id++) {
          // get() does not check ages by default, so a stale entry still shows.
          const v = cache.get(id);
          if (w.expired[id]) {
            if (v !== undefined) stale++;
          } else if (v?.[1] !== email(id)) missing++;
        }
        if (stale) errors.push(`${stale} expired entries are still there`);
        if (missing) errors.push(`${missing} live entries are missing or wrong`);
        return errors;
      },
      close: () => {
        cache.cancelTimer();
        cache.clear();
      },
    };
  },
};

export default definition;
