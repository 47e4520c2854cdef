// @isaacs/ttlcache as documented: set(key, value, { ttl }) and its own timer, which fires when the
// earliest expiration comes and purges the stale buckets (one bucket per distinct expiry time, in
// ms). Two rows: live TTLs spread over 600 s (ttlcache), as in a cache filled over hours, where
// hundreds of thousands of buckets exist and each purge and timer re-arm walks them all; and one
// TTL for every live entry (ttlcache-one-ttl), as in a cache bulk-filled with a fixed TTL.
import { TTLCache } from '@isaacs/ttlcache';
import { performance } from 'node:perf_hooks';
import type { ContenderDefinition, DeletionTracker } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

export function ttlcacheContender(oneTtl: boolean): ContenderDefinition {
  return {
    label: oneTtl ? '@isaacs/ttlcache, one TTL' : '@isaacs/ttlcache, spread TTLs',
    description: oneTtl
      ? 'new TTLCache({ dispose }); set(id, tuple, { ttl }) in a loop, every live entry with the same TTL (1 h); its own timer purges stale buckets'
      : 'new TTLCache({ dispose }); set(id, tuple, { ttl }) in a loop, live TTLs 1 h + id % 600 s; its own timer purges stale buckets',
    selfMemory: 'heap',
    create({ workload: w, marginFactor, quietMs }) {
      let tracker: DeletionTracker | undefined;
      const cache = new TTLCache<number, Tuple>({
        // Called for every removal anyway (the default is a no-op); counting costs no more.
        dispose: (_value, _key, reason) => {
          if (reason === 'stale') tracker?.deleted(1);
        },
      });
      return {
        load: (progress) =>
          loadWallClockCache(w, {
            clock: () => performance.now(),
            set: (id, value, ttl) => cache.set(id, value, { ttl }),
            marginFactor,
            quietMs,
            oneTtl,
            progress,
          }),
        start(t) {
          tracker = t;
        },
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
}

export default ttlcacheContender(false);
