// node-cache as documented, with its default options (useClones: true, stdTTL: 0) but for
// checkperiod, which is set to the scan time so that it matches our tuned task: set(key, value,
// ttl) with a per-key TTL in seconds (the records have their own TTLs; stdTTL is the default TTL
// for keys set without one), and its periodic check walks every key and deletes the stale ones.
import NodeCache from 'node-cache';
import type { ContenderDefinition, DeletionTracker } from '../lib/contender.js';
import { email, loadWallClockCache, type Tuple } from '../lib/workload.js';

const definition: ContenderDefinition = {
  label: 'node-cache, checkperiod = scan time',
  description:
    'new NodeCache({ checkperiod: scan time }) (useClones: true and stdTTL: 0, the defaults); set(id, tuple, ttlSeconds) per key; its periodic check walks every key',
  selfMemory: 'heap',
  create({ workload: w, scanTime, marginFactor, quietMs }) {
    let tracker: DeletionTracker | undefined;
    let cache: NodeCache | undefined = new NodeCache({ checkperiod: scanTime });
    const c = (): NodeCache => cache!;
    c().on('expired', () => tracker?.deleted(1));
    return {
      load: (progress) =>
        loadWallClockCache(w, {
          clock: () => Date.now(),
          set: (id, value, ttlMs) => c().set<Tuple>(id, value, ttlMs / 1000),
          marginFactor,
          quietMs,
          progress,
        }),
      start(t) {
        tracker = t;
      },
      remainingExpired: () => c().getStats().keys - w.liveCount,
      stop: () => {},
      verify() {
        const errors: string[] = [];
        const keys = c().keys().length;
        if (keys !== w.liveCount) errors.push(`${keys} keys remain, expected ${w.liveCount} live ones`);
        let stale = 0;
        let missing = 0;
        for (let id = 1; id <= w.tuples; id++) {
          if (w.expired[id]) {
            // Not has()/get(): they would delete a stale key themselves and hide it.
            if (Object.prototype.hasOwnProperty.call(c().data, id)) stale++;
          } else if (c().get<Tuple>(id)?.[1] !== email(id)) missing++;
        }
        if (stale) errors.push(`${stale} expired keys are still there`);
        if (missing) errors.push(`${missing} live keys are missing or wrong`);
        return errors;
      },
      close: () => {
        if (!cache) return;
        cache.flushAll();
        cache.close();
        cache = undefined;
      },
    };
  },
};

export default definition;
