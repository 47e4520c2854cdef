// node-cache: expired entries get TTLs that end together; its checkperiod timer (set to --scan-time)
// walks every key and deletes the stale ones.
import NodeCache from 'node-cache';
import { Countdown, type ContenderDefinition } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

const definition: ContenderDefinition = {
  label: 'node-cache',
  description:
    'new NodeCache({ checkperiod: scanTime, useClones: false }); set(id, tuple, ttl) in a loop; its periodic check deletes stale keys',
  memoryKind: 'heap',
  create({ workload: w, scanTime, marginFactor }) {
    // useClones: false spares it a deep copy per set/get that has nothing to do with expiry.
    const cache = new NodeCache({ checkperiod: scanTime, useClones: false, stdTTL: 0 });
    const gone = new Countdown(w.expiredCount);
    cache.on('expired', () => gone.tick());
    const count = (): number => cache.getStats().keys;
    return {
      load: (progress) =>
        loadWallClockCache(w, {
          clock: () => Date.now(),
          set: (id, value, ttlMs) => cache.set<Tuple>(id, value, ttlMs / 1000),
          marginFactor,
          progress,
        }),
      clear: () => gone.done,
      remainingExpired: () => count() - w.liveCount,
      stop: () => {},
      verify() {
        const errors: string[] = [];
        const keys = cache.keys().length;
        if (keys !== w.liveCount) errors.push(`${keys} keys remain, expected ${w.liveCount} live ones`);
        let stale = 0;
        let missing = 0;
        for (let id = 1; id <= w.tuples; id++) {
          if (w.expired[id]) {
            // Not has()/get(): they would delete a stale key themselves and hide it.
            if (Object.prototype.hasOwnProperty.call(cache.data, id)) stale++;
          } else if (cache.get<Tuple>(id)?.[1] !== email(id)) missing++;
        }
        if (stale) errors.push(`${stale} expired keys are still there`);
        if (missing) errors.push(`${missing} live keys are missing or wrong`);
        return errors;
      },
      close: () => {
        cache.flushAll();
        cache.close();
      },
    };
  },
};

export default definition;
