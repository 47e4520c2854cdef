// Worker threads terminated at random moments never take the process down. A worker can be
// terminated while it is inside any native call; from then on no JavaScript can run in it, so
// every N-API call that would create a value (a cursor object, an error, a Buffer) fails, and the
// binding must cope with each failure instead of aborting ("FATAL ERROR: ...") or crashing.
//
// Each kind of work runs in its own child process (test/fixtures/termination-child.cjs), so that
// a crash kills only the child and the test reports its exit code, signal and output. The child
// starts workers (test/fixtures/worker-churn.cjs) that loop over one kind of work, and terminates
// each on a seeded schedule: half after a delay of 0-15 ms, half as soon as the worker reports
// that it has done a seeded number of operations (it goes on working, so the termination lands
// in whatever comes next).
//
// Seeded (mulberry32 from bench/lib/random.ts): TERMINATION_SEED=<seed> replays a failure; the
// schedule may still meet different instants, but what is asserted (the child survives every
// termination) holds for any. TERMINATIONS=<n> sets the terminations per kind (default 150,
// 40 under test:asan).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { mulberry32 } from '../bench/lib/random.js';

const { ensureDist } = createRequire(__filename)('./fixtures/dist.cjs') as { ensureDist: () => string };
const CHILD = path.join(__dirname, 'fixtures', 'termination-child.cjs');

const SANITIZED = process.env.CAPPED_EXPIRATIOND_ADDON !== undefined;
const SEED = process.env.TERMINATION_SEED === undefined ? 20261123 : Number(process.env.TERMINATION_SEED);
const COUNT = process.env.TERMINATIONS === undefined ? (SANITIZED ? 40 : 150) : Number(process.env.TERMINATIONS);

// An 'ops' termination comes after up to this many operations: about what a worker of the kind
// does in 15 ms on a 2-core machine.
const KINDS = {
  cursors: 'space.pairs() and index.pairs() of each iterator, advanced, abandoned and exhausted while the space changes',
  expiry: 'expirationd tasks of every strategy with scanSize 1-3 and no delay, restart(), kill() and start again',
  writes: 'insert, replace, delete, insertMany, select (past the scratch Buffer), get, count, min/max, memory()',
  schema: 'new Space, insertMany, createIndex on the populated space (TREE and HASH), memory(), drop() with cursors open',
} as const;
const OPS_RANGE = { cursors: 250, expiry: 600, writes: 250, schema: 100 };

type Kind = keyof typeof KINDS;
type Entry = { offset: number; delay: number } | { offset: number; ops: number };

function scheduleOf(kind: Kind, seed: number, count: number): Entry[] {
  const next = mulberry32(seed);
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const offset = Math.floor(next() * 1000);
    entries.push(i % 2 === 0 ? { offset, delay: next() * 15 } : { offset, ops: Math.floor(next() * OPS_RANGE[kind]) });
  }
  return entries;
}

let dist = '';
beforeAll(() => {
  dist = ensureDist();
}, 180_000);

describe('workers terminated at random moments', () => {
  const kinds = Object.keys(KINDS) as Kind[];
  for (const [k, kind] of kinds.entries()) {
    test(`${kind}: ${KINDS[kind]}; ${COUNT} terminations, the process survives each`, () => {
      const seed = (SEED + k * 7919) >>> 0;
      const schedule = scheduleOf(kind, seed, COUNT);
      const started = Date.now();
      const child = spawnSync(process.execPath, [CHILD, JSON.stringify({ dist, kind, parallel: 2, schedule })], {
        encoding: 'utf8',
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      const stdout = child.stdout ?? '';
      const stderr = child.stderr ?? '';
      const lines = stdout.trim().split('\n');
      const reached = lines.filter((l) => l.startsWith('termination #')).length;
      const summary =
        `kind ${kind}, seed ${seed} (TERMINATION_SEED=${SEED}), exit status ${child.status}, signal ${child.signal}, ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s; reached termination ${reached} of ${COUNT}\n` +
        `last stdout lines:\n${lines.slice(-3).join('\n')}\nstderr:\n${stderr.slice(0, 4000)}`;
      expect(child.error, summary).toBeUndefined();
      const outcome = {
        status: child.status,
        signal: child.signal,
        fatal: /FATAL ERROR|Segmentation fault|AddressSanitizer|LeakSanitizer|runtime error:/.test(stderr),
        last: lines[lines.length - 1],
      };
      expect(outcome, summary).toEqual({ status: 0, signal: null, fatal: false, last: `done ${COUNT} terminations` });
    }, 320_000);
  }
});
