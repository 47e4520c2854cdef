// capped-expirationd walking a non-unique TREE index on exp: each pass starts at the smallest TTL
// and stops at the first live tuple, so the work follows what expires, not the size of the space.
// Tuned: scanTime = --scan-time (1 s by default). The same with the API's defaults is
// capped-indexed-defaults; the full scan on a space without the TTL index is capped-scan.
import { expirationd, Space, type Task, type TaskOptions } from '../../src/index.js';
import type { ContenderDefinition } from '../lib/contender.js';
import { now } from '../lib/measure.js';
import { email, expSeconds, tuple, type Tuple } from '../lib/workload.js';

const BATCH = 10_000;
let spaces = 0;

export type CappedVariant = 'indexed' | 'indexed-defaults' | 'scan';

const LABELS: Record<CappedVariant, string> = {
  indexed: 'capped-expirationd, indexed, scanTime = scan time',
  'indexed-defaults': 'capped-expirationd, indexed, API defaults',
  scan: 'capped-expirationd, full scan, no TTL index',
};

const DESCRIPTIONS: Record<CappedVariant, string> = {
  indexed:
    "HASH primary + non-unique TREE 'exp' on field 3; insertMany in 10k batches; expirationd.start(name, space, { itIndex: 'exp', field: 3, scanSize, scanTime }) with scanTime = --scan-time; early break",
  'indexed-defaults':
    "the same space; expirationd.start(name, space, { itIndex: 'exp', field: 3 }): scanSize 1024, scanTime 3600, iterationDelay 1 (the API defaults)",
  scan:
    "HASH primary only (no TTL index to maintain); insertMany in 10k batches; expirationd.start(name, space, { field: 3, scanSize, scanTime }): itIndex = rmIndex = 'primary', every pass visits every tuple",
};

/** One space shape per variant: HASH primary on field 1, plus a non-unique TREE 'exp' on field 3 unless a full scan. */
export function cappedContender(variant: CappedVariant): ContenderDefinition {
  const withTree = variant !== 'scan';
  return {
    label: LABELS[variant],
    description: DESCRIPTIONS[variant],
    selfMemory: 'memory()',
    ours: true,
    mayLeaveBacklog: variant === 'indexed-defaults',
    create({ workload: w, scanSize, scanTime, clock }) {
      const space = new Space(`bench_${variant}_${++spaces}`);
      space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
      if (withTree) space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
      const taskErrors: string[] = [];
      let task: Task | undefined;
      let dropped = false;
      const taskName = `bench-${variant}-${spaces}`;
      return {
        load(progress) {
          for (let from = 1; from <= w.tuples; from += BATCH) {
            const to = Math.min(w.tuples, from + BATCH - 1);
            const batch: Tuple[] = new Array(to - from + 1);
            for (let id = from; id <= to; id++) batch[id - from] = tuple(w, id);
            space.insertMany(batch);
            progress(to);
          }
          return {};
        },
        selfBytes: () => space.memory().total,
        start(tracker) {
          // Deletions are read from the task's counters, not from 'expired' listeners (which would
          // make every chunk decode its tuples): now() runs once before every chunk, and 'fullScan'
          // after the chunk that ends a pass (for the indexed task, the chunk that deleted the last).
          let seen = 0;
          let chunkAt = 0;
          const observe = (): void => {
            if (!task) return;
            const expired = task.stats().expired;
            if (expired > seen) {
              tracker.deleted(expired - seen, chunkAt);
              seen = expired;
            }
          };
          const options: TaskOptions = {
            field: 3,
            now: () => {
              observe();
              chunkAt = now();
              return clock.seconds();
            },
          };
          if (withTree) options.itIndex = 'exp';
          if (variant !== 'indexed-defaults') {
            options.scanSize = scanSize;
            options.scanTime = scanTime;
          }
          task = expirationd.start(taskName, space, options);
          task.on('error', (err: Error) => taskErrors.push(err.message));
          task.on('fullScan', observe);
        },
        remainingExpired: () => space.len() - w.liveCount,
        stop: () => task?.kill(),
        async finish() {
          // Completes the clear after the measurement window, at full speed.
          task?.kill();
          const done = new Promise<void>((resolve) => {
            const t = expirationd.start(`${taskName}-finish`, space, {
              field: 3,
              ...(withTree ? { itIndex: 'exp' } : {}),
              scanSize: 4096,
              scanTime: 0.001,
              // Its waits grow past 1 ms as the space empties: keep the process alive meanwhile.
              keepAlive: true,
              now: () => w.nowSeconds,
            });
            t.on('fullScan', () => {
              if (space.len() <= w.liveCount) {
                t.kill();
                resolve();
              }
            });
          });
          await done;
        },
        checked: () => (task ? task.stats().checked : 0),
        verify() {
          const errors = taskErrors.map((m) => `the task reported an error: ${m}`);
          if (space.len() !== w.liveCount) errors.push(`${space.len()} tuples remain, expected ${w.liveCount} live ones`);
          if (withTree) {
            const inExp = space.index.exp!.len();
            if (inExp !== w.liveCount) errors.push(`index 'exp' holds ${inExp} tuples, expected ${w.liveCount}`);
            const expiredInIndex = space.index.exp!.count(w.nowSeconds, { iterator: 'LE' });
            if (expiredInIndex) errors.push(`index 'exp' still has ${expiredInIndex} tuples with exp <= now`);
          }
          // One select() over the primary returns every tuple left; each must be a distinct, intact live one.
          const seen = new Uint8Array(w.tuples + 1);
          let stale = 0;
          let wrong = 0;
          for (const t of space.select() as unknown[]) {
            const [id, mail, exp] = t as Tuple;
            if (!Number.isInteger(id) || id < 1 || id > w.tuples || seen[id]) wrong++;
            else if (w.expired[id]) stale++;
            else if (mail !== email(id) || exp !== expSeconds(w, id)) wrong++;
            if (Number.isInteger(id) && id >= 1 && id <= w.tuples) seen[id] = 1;
          }
          let missing = 0;
          for (const id of w.liveIds) if (!seen[id]) missing++;
          if (missing) errors.push(`${missing} live tuples are missing`);
          let badGets = 0;
          for (let id = 1; id <= w.tuples; id += 97) if ((space.get(id) === undefined) !== Boolean(w.expired[id])) badGets++;
          if (badGets) errors.push(`${badGets} sampled get() calls disagree with the expected contents`);
          if (stale) errors.push(`${stale} expired tuples are still there`);
          if (wrong) errors.push(`${wrong} tuples are unknown, duplicated or have wrong contents`);
          return errors;
        },
        close() {
          task?.kill();
          if (!dropped) space.drop();
          dropped = true;
        },
      };
    },
  };
}

export default cappedContender('indexed');
