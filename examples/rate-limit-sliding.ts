// A sliding-window rate limiter (the sliding window counter): the fixed-window counters of
// rate-limit.ts, with the previous window's count weighted by how much of it still overlaps the
// last WINDOW_MS: estimate = previous * (1 - elapsed / WINDOW_MS) + current. A burst at the end of
// one window can no longer be followed by a full burst at the start of the next. A window's
// counter lives two windows (it is the previous one during the next).
//
//   npx tsx examples/rate-limit-sliding.ts
import assert from 'node:assert/strict';
import { Space } from '../src/index.js';

const WINDOW_MS = 60_000;
const LIMIT = 10;
let clock = 1_700_000_000_000;  // ms, injected
type Hits = [client: string, window: number, until: number, count: number];
const hits = new Space<Hits>('sliding', { ttl: { field: 3, unit: 'ms', now: () => clock } });
const counters = hits.createIndex('primary', { parts: [[1, 'string'], [2, 'unsigned']] });
hits.createIndex('until', { unique: false, parts: [[3, 'unsigned']] });

function allow(client: string): boolean {
  const window = Math.floor(clock / WINDOW_MS);
  const elapsed = (clock % WINDOW_MS) / WINDOW_MS;
  // window 0 has no previous one (a clock from 0, such as performance.now(); -1 is no 'unsigned').
  const previous = window > 0 ? counters.get([client, window - 1])?.[3] ?? 0 : 0;
  const current = counters.get([client, window])?.[3] ?? 0;
  if (previous * (1 - elapsed) + current + 1 > LIMIT) return false;  // refused requests do not count
  if (counters.update([client, window], [['+', 4, 1]]) === undefined) {
    hits.insert([client, window, (window + 2) * WINDOW_MS, 1]);
  }
  return true;
}

const allowed = (client: string, n: number): number => Array.from({ length: n }, () => allow(client)).filter(Boolean).length;

clock = Math.ceil(clock / WINDOW_MS) * WINDOW_MS + 50_000;  // 50 s into a window
assert.equal(allowed('ada', 12), 10, 'the limit');
clock += 15_000;  // 5 s into the next window: 11/12 of the last one still overlaps
assert.equal(allowed('ada', 12), 0, 'a fixed window would allow 10 more here');
clock += 30_000;  // 35 s in: 5/12 of 10 still counts
assert.equal(allowed('ada', 12), 5);
clock += 60_000;  // the window after: the previous one (5) counts 5/12
assert.equal(allowed('ada', 12), 7);
assert.equal(allowed('grace', 3), 3, 'each client has its own counters');
clock += 2 * WINDOW_MS;
assert.equal(hits.count(), 0, 'every counter has outlived its two windows');
console.log('rate-limit-sliding: ok');
