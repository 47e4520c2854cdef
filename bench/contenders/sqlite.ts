// better-sqlite3 on :memory:, an indexed expires_at column, purged every scan time (setInterval,
// matched to our tuned scanTime) in one of the two ways users write it:
//   batched (sqlite): DELETE ... WHERE rowid IN (SELECT rowid ... WHERE expires_at <= ? LIMIT scanSize)
//     in a loop that yields with setImmediate between batches;
//   single (sqlite-single): one DELETE FROM t WHERE expires_at <= ?, whatever it finds.
// The time is injected (the workload's clock), as for our task.
import Database from 'better-sqlite3';
import type { ContenderDefinition, DeletionTracker } from '../lib/contender.js';
import { now } from '../lib/measure.js';
import { email, expSeconds } from '../lib/workload.js';

const BATCH = 10_000;

export function sqliteContender(mode: 'batched' | 'single'): ContenderDefinition {
  return {
    label: mode === 'batched' ? 'better-sqlite3 :memory:, batched DELETE' : 'better-sqlite3 :memory:, one DELETE',
    description:
      mode === 'batched'
        ? 'INSERT in 10k-row transactions; every scan time: DELETE FROM t WHERE rowid IN (SELECT rowid FROM t WHERE expires_at <= ? LIMIT scanSize), setImmediate between batches, until a batch deletes fewer'
        : 'INSERT in 10k-row transactions; every scan time: DELETE FROM t WHERE expires_at <= ? (one statement)',
    selfMemory: 'pages',
    create({ workload: w, scanSize, scanTime, clock }) {
      const db = new Database(':memory:');
      db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT NOT NULL, expires_at INTEGER NOT NULL);
               CREATE INDEX t_expires_at ON t (expires_at);`);
      const insert = db.prepare('INSERT INTO t (id, email, expires_at) VALUES (?, ?, ?)');
      const insertBatch = db.transaction((from: number, to: number) => {
        for (let id = from; id <= to; id++) insert.run(id, email(id), expSeconds(w, id));
      });
      const batched = db.prepare('DELETE FROM t WHERE rowid IN (SELECT rowid FROM t WHERE expires_at <= ? LIMIT ?)');
      const single = db.prepare('DELETE FROM t WHERE expires_at <= ?');
      const pageCount = db.prepare('PRAGMA page_count').pluck();
      const pageSize = db.prepare('PRAGMA page_size').pluck();
      const count = db.prepare('SELECT count(*) FROM t').pluck();
      let tracker: DeletionTracker | undefined;
      let interval: NodeJS.Timeout | undefined;
      let immediate: NodeJS.Immediate | undefined;
      let running = false;
      let stopped = false;
      const errors: string[] = [];

      const purge = (): void => {
        if (running || stopped) return;
        try {
          if (mode === 'single') {
            const t0 = now();
            const { changes } = single.run(clock.seconds());
            tracker?.deleted(changes, t0);
            return;
          }
          running = true;
          const batch = (): void => {
            immediate = undefined;
            if (stopped) return;
            try {
              const t0 = now();
              const { changes } = batched.run(clock.seconds(), scanSize);
              tracker?.deleted(changes, t0);
              if (changes < scanSize) running = false;
              else immediate = setImmediate(batch);
            } catch (err) {
              running = false;
              errors.push((err as Error).message);
            }
          };
          batch();
        } catch (err) {
          errors.push((err as Error).message);
        }
      };

      return {
        load(progress) {
          for (let from = 1; from <= w.tuples; from += BATCH) {
            const to = Math.min(w.tuples, from + BATCH - 1);
            insertBatch(from, to);
            progress(to);
          }
          return {};
        },
        selfBytes: () => (pageCount.get() as number) * (pageSize.get() as number),
        start(t) {
          tracker = t;
          interval = setInterval(purge, scanTime * 1000);
        },
        remainingExpired: () => (count.get() as number) - w.liveCount,
        stop: () => {
          stopped = true;
          if (interval) clearInterval(interval);
          if (immediate) clearImmediate(immediate);
        },
        verify() {
          const out = errors.map((e) => `a purge failed: ${e}`);
          const rows = db.prepare('SELECT id, email, expires_at FROM t').raw().all() as [number, string, number][];
          if (rows.length !== w.liveCount) out.push(`${rows.length} rows remain, expected ${w.liveCount} live ones`);
          const seen = new Uint8Array(w.tuples + 1);
          let stale = 0;
          let wrong = 0;
          for (const [id, mail, exp] of rows) {
            if (w.expired[id]) stale++;
            else if (mail !== email(id) || exp !== expSeconds(w, id)) wrong++;
            seen[id] = 1;
          }
          let missing = 0;
          for (const id of w.liveIds) if (!seen[id]) missing++;
          if (stale) out.push(`${stale} expired rows are still there`);
          if (missing) out.push(`${missing} live rows are missing`);
          if (wrong) out.push(`${wrong} live rows have wrong contents`);
          return out;
        },
        close: () => {
          if (db.open) db.close();
        },
      };
    },
  };
}

export default sqliteContender('batched');
