// A fixed-window rate limiter: one counter per (client, window), [client, window, until, count],
// in a TTL space. A request adds 1 with update('+') (one native call that returns the new
// tuple), or inserts the window's first count; the counter hides itself when its window ends,
// and an expirationd task deletes it.
//
//   npx tsx examples/rate-limit.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Space, expirationd } from '../src/index.js';

const WINDOW_MS = 1000;
const LIMIT = 3;
let clock = 1_700_000_000_000;  // ms, injected
type Hits = [client: string, window: number, until: number, count: number];
const hits = new Space<Hits>('hits', { ttl: { field: 3, unit: 'ms', now: () => clock } });
const counters = hits.createIndex('primary', { parts: [[1, 'string'], [2, 'unsigned']] });
hits.createIndex('until', { unique: false, parts: [[3, 'unsigned']] });

function allow(client: string): boolean {
  const window = Math.floor(clock / WINDOW_MS);
  const counted = counters.update([client, window], [['+', 4, 1]]) ??
    hits.insert([client, window, (window + 1) * WINDOW_MS, 1]);
  return counted[3] <= LIMIT;
}

const burst = (client: string, n: number): boolean[] => Array.from({ length: n }, () => allow(client));

assert.deepEqual(burst('10.0.0.1', 5), [true, true, true, false, false]);
assert.deepEqual(burst('10.0.0.2', 2), [true, true], 'each client has its own counter');
clock += 500;
assert.equal(allow('10.0.0.1'), false, 'the same window');
clock += 500;
assert.deepEqual(burst('10.0.0.1', 4), [true, true, true, false], 'a new window, a new count');
assert.equal(hits.count(), 1, 'the last window\'s counters are hidden');
assert.equal(hits.len(), 3, 'until a task deletes them');

const task = expirationd.start('hits', hits, { itIndex: 'until', keepAlive: true });
once(task, 'fullScan').then(() => {
  assert.equal(hits.len(), 1);
  task.kill();
  console.log('rate-limit: ok');
});
