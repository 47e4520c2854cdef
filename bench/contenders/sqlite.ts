// better-sqlite3 on :memory:, the common pattern: an indexed expires_at column and a loop of
// DELETE ... LIMIT scanSize statements that yields to the event loop (setImmediate) between batches.
import Database from 'better-sqlite3';
import type { ContenderDefinition } from '../lib/contender.js';
import { email, expSeconds } from '../lib/workload.js';

const BATCH = 10_000;

const definition: ContenderDefinition = {
  label: 'better-sqlite3 :memory:',
  description:
    'INSERT in 10k-row transactions; DELETE FROM t WHERE rowid IN (SELECT rowid FROM t WHERE expires_at <= ? LIMIT scanSize), setImmediate between batches',
  memoryKind: 'rss',
  create({ workload: w, scanSize }) {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT NOT NULL, expires_at INTEGER NOT NULL);
             CREATE INDEX t_expires_at ON t (expires_at);`);
    const insert = db.prepare('INSERT INTO t (id, email, expires_at) VALUES (?, ?, ?)');
    const insertBatch = db.transaction((from: number, to: number) => {
      for (let id = from; id <= to; id++) insert.run(id, email(id), expSeconds(w, id));
    });
    const purge = db.prepare('DELETE FROM t WHERE rowid IN (SELECT rowid FROM t WHERE expires_at <= ? LIMIT ?)');
    let deleted = 0;
    let stopped = false;
    let timer: NodeJS.Immediate | undefined;
    return {
      load(progress) {
        for (let from = 1; from <= w.tuples; from += BATCH) {
          const to = Math.min(w.tuples, from + BATCH - 1);
          insertBatch(from, to);
          progress(to);
        }
        return {};
      },
      clear: () =>
        new Promise<void>((resolve, reject) => {
          const batch = (): void => {
            if (stopped) return resolve();
            try {
              const { changes } = purge.run(w.nowSeconds, scanSize);
              deleted += changes;
              if (changes < scanSize) return resolve();
              timer = setImmediate(batch);
            } catch (err) {
              reject(err);
            }
          };
          batch();
        }),
      remainingExpired: () => w.expiredCount - deleted,
      stop: () => {
        stopped = true;
        if (timer) clearImmediate(timer);
      },
      verify() {
        const errors: string[] = [];
        const rows = db.prepare('SELECT id, email, expires_at FROM t').raw().all() as [number, string, number][];
        if (rows.length !== w.liveCount) errors.push(`${rows.length} rows remain, expected ${w.liveCount} live ones`);
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
        if (stale) errors.push(`${stale} expired rows are still there`);
        if (missing) errors.push(`${missing} live rows are missing`);
        if (wrong) errors.push(`${wrong} live rows have wrong contents`);
        return errors;
      },
      close: () => db.close(),
    };
  },
};

export default definition;
