// capped-expirationd walking a non-unique TREE index on exp: each pass starts at the smallest TTL
// and stops at the first live tuple, so the work follows what expires, not the size of the space.
import { expirationd, Space, type Task } from '../../src/index.js';
import type { ContenderDefinition } from '../lib/contender.js';
import { email, expSeconds, tuple, type Tuple } from '../lib/workload.js';

const BATCH = 10_000;
let spaces = 0;

/** Both variants share one space shape: HASH primary on field 1, non-unique TREE 'exp' on field 3. */
export function cappedContender(variant: 'indexed' | 'scan'): ContenderDefinition {
  const itIndex = variant === 'indexed' ? 'exp' : 'primary';
  return {
    label: variant === 'indexed' ? 'capped-expirationd, indexed' : 'capped-expirationd, full scan',
    description:
      variant === 'indexed'
        ? "insertMany in 10k batches; expirationd itIndex 'exp' (TREE on field 3), rmIndex 'primary', early break"
        : "insertMany in 10k batches; expirationd itIndex = rmIndex = 'primary' (HASH): a full scan",
    memoryKind: 'native',
    ours: true,
    create({ workload: w, scanSize, scanTime }) {
      const space = new Space(`bench_${variant}_${++spaces}`);
      space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
      space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
      const taskErrors: string[] = [];
      let task: Task | undefined;
      let dropped = false;
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
        nativeBytes: () => space.memory().total,
        clear: () =>
          new Promise<void>((resolve) => {
            const started = expirationd.start(`bench-${variant}`, space, {
              rmIndex: 'primary',
              itIndex,
              field: 3,
              scanSize,
              scanTime,
              now: () => w.nowSeconds,
            });
            task = started;
            started.on('error', (err: Error) => taskErrors.push(err.message));
            // A pass ends at the first live tuple (indexed) or after the whole space (scan).
            started.on('fullScan', () => {
              if (space.len() <= w.liveCount) resolve();
            });
          }),
        remainingExpired: () => space.len() - w.liveCount,
        stop: () => task?.kill(),
        checked: () => (task ? task.stats().checked : 0),
        verify() {
          const errors = taskErrors.map((m) => `the task reported an error: ${m}`);
          if (space.len() !== w.liveCount) errors.push(`${space.len()} tuples remain, expected ${w.liveCount} live ones`);
          const inExp = space.index.exp!.len();
          if (inExp !== w.liveCount) errors.push(`index 'exp' holds ${inExp} tuples, expected ${w.liveCount}`);
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
          // Lookups through both indexes agree: a sample of get()s, and nothing at or below now in 'exp'.
          let badGets = 0;
          for (let id = 1; id <= w.tuples; id += 97) if ((space.get(id) === undefined) !== Boolean(w.expired[id])) badGets++;
          if (badGets) errors.push(`${badGets} sampled get() calls disagree with the expected contents`);
          const expiredInIndex = space.index.exp!.count(w.nowSeconds, { iterator: 'LE' });
          if (expiredInIndex) errors.push(`index 'exp' still has ${expiredInIndex} tuples with exp <= now`);
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
