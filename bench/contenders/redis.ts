// Redis as its users run it: a private redis-server (persistence off, loopback only), the records
// loaded with pipelined SET key value PX ttl (live) and SET key value PXAT deadline (expired, so
// the whole backlog is due at one moment, as for the caches), and Redis's own expiry: lazy on
// access plus the active expire cycle (hz 10, sampling 20 keys a loop, stopping while fewer than
// 10% of the sampled keys are stale), all defaults. Redis may leave expired keys stored by design
// (reads never return them), so this row is watched for --window seconds and reports what is left.
// CPU and resident set are the server's (/proc/<pid>/stat and /status), "self" is INFO memory's
// used_memory, and deletions are seen as the client sees them: DBSIZE polled every 10 ms from
// just before the backlog is due.
import type { ContenderDefinition, DeletionTracker } from '../lib/contender.js';
import { processCpuMs, processRssBytes, sleep } from '../lib/measure.js';
import { findRedisServer, infoField, RedisServer, RespClient } from '../lib/redis.js';
import { performance } from 'node:perf_hooks';
import { DeadlineMissedError, email, expSeconds, liveTtlMs, type Workload } from '../lib/workload.js';

const PIPELINE = 10_000;
const POLL_MS = 10;
const POLL_LEAD_MS = 30;
const MGET = 1000;

const key = (id: number): string => `t:${id}`;
const value = (w: Workload, id: number): string => JSON.stringify([id, email(id), expSeconds(w, id)]);

const definition: ContenderDefinition = {
  label: 'Redis, SET … PX, active expiry',
  description:
    "private redis-server --save '' --appendonly no (defaults otherwise: hz 10, active-expire-effort 1); pipelined SET t:<id> <json> PX ttl, expired ones PXAT deadline; server CPU and RSS; deletions seen through DBSIZE every 10 ms",
  selfMemory: 'used_memory',
  mayLeaveBacklog: true,
  unavailable: () =>
    findRedisServer() ? null : 'redis-server is not on PATH: `apt-get install redis-server` (Debian/Ubuntu) adds this row',
  create({ workload: w, marginFactor, quietMs }) {
    let server: RedisServer | undefined;
    let client: RespClient | undefined;
    let polling = false;
    let backlogAt = 0;
    let poller: Promise<void> | undefined;
    const pollErrors: string[] = [];
    const rc = (): RespClient => {
      if (!client) throw new Error('the Redis contender is not open');
      return client;
    };
    const dbsize = async (): Promise<number> => (await rc().call('DBSIZE')) as number;
    return {
      async open() {
        server = await RedisServer.start(findRedisServer()!);
        process.send?.({ type: 'server', pid: server.pid, port: server.port });
        client = await RespClient.connect(server.port);
      },
      async load(progress) {
        const c = rc();
        let loaded = 0;
        const send = async (commands: (string | number)[][]): Promise<void> => {
          const replies = await c.pipeline(commands);
          const bad = replies.find((r) => r !== 'OK');
          if (bad !== undefined) throw new Error(`SET failed: ${String(bad)}`);
          loaded += commands.length;
          progress(loaded);
        };
        const started = Date.now();
        let batch: (string | number)[][] = [];
        for (const id of w.liveIds) {
          batch.push(['SET', key(id), value(w, id), 'PX', liveTtlMs(id)]);
          if (batch.length === PIPELINE) {
            await send(batch);
            batch = [];
          }
        }
        if (batch.length) await send(batch);
        batch = [];
        const liveMs = Date.now() - started;
        const perEntryMs = w.liveCount > 0 ? liveMs / w.liveCount : 0.005;
        const marginMs = marginFactor * (300 + 4 * perEntryMs * w.expiredCount + 0.5 * liveMs) + quietMs;
        const deadline = Math.ceil(Date.now() + perEntryMs * w.expiredCount + marginMs);
        for (const id of w.expiredIds) {
          batch.push(['SET', key(id), value(w, id), 'PXAT', deadline]);
          if (batch.length === PIPELINE) {
            await send(batch);
            batch = [];
          }
        }
        if (batch.length) await send(batch);
        // Redis expires a key when its clock is past PXAT: at deadline + 1 ms.
        backlogAt = deadline + 1 - Date.now() + performance.now();
        if (performance.now() >= backlogAt) throw new DeadlineMissedError('the expired keys went stale while loading; retrying with a larger margin');
        return { backlogAt };
      },
      selfBytes: async () => infoField((await rc().call('INFO', 'memory')) as string, 'used_memory'),
      serverRssBytes: () => (server ? processRssBytes(server.pid) : Number.NaN),
      serverCpuMs: () => (server ? processCpuMs(server.pid) : Number.NaN),
      start(tracker: DeletionTracker) {
        polling = true;
        poller = (async () => {
          // Polling costs the server a little CPU: start it just before the backlog is due, so the
          // idle window measures Redis alone.
          await sleep(backlogAt - POLL_LEAD_MS - performance.now());
          let last = w.tuples;
          while (polling) {
            await sleep(POLL_MS);
            if (!polling) break;
            try {
              const n = await dbsize();
              if (n < last) tracker.deleted(last - n);
              last = n;
            } catch (err) {
              pollErrors.push((err as Error).message);
              break;
            }
          }
        })();
      },
      remainingExpired: async () => (await dbsize()) - w.liveCount,
      stop() {
        polling = false;
      },
      async verify() {
        await poller;
        const errors = pollErrors.map((e) => `polling DBSIZE failed: ${e}`);
        // MGET returns nil for an expired key (and deletes it: Redis's lazy expiry).
        let stale = 0;
        let missing = 0;
        for (let from = 1; from <= w.tuples; from += MGET) {
          const ids: number[] = [];
          for (let id = from; id < from + MGET && id <= w.tuples; id++) ids.push(id);
          const values = (await rc().call('MGET', ...ids.map(key))) as (string | null)[];
          ids.forEach((id, i) => {
            if (w.expired[id]) {
              if (values[i] !== null) stale++;
            } else if (values[i] !== value(w, id)) missing++;
          });
        }
        if (stale) errors.push(`${stale} expired keys still read back`);
        if (missing) errors.push(`${missing} live keys are missing or wrong`);
        const size = await dbsize();
        if (size !== w.liveCount) errors.push(`DBSIZE is ${size} after reading every key, expected ${w.liveCount}`);
        return errors;
      },
      async close() {
        polling = false;
        client?.close();
        client = undefined;
        await server?.stop();
        server = undefined;
      },
    };
  },
};

export default definition;
