// A capped cache: at most 3 entries (and 1 MiB of them), each with a TTL. When the cache is full,
// a write evicts the entries that expire soonest, expired ones first, in the same statement, and
// onEvict hears of them. Meanwhile an expirationd task deletes entries as they expire.
//
//   npx tsx examples/capped-cache.ts
import assert from 'node:assert/strict';
import { Space, expirationd } from '../src/index.js';

let clock = 1_000; // seconds; an injected clock keeps this program deterministic
const evicted: string[] = [];

const cache = new Space('cache', {
  ttl: { field: 3, now: () => clock }, // tuples are [key, value, expiresAt]
  maxTuples: 3,
  maxBytes: 1024 * 1024, // counted as space.bsize() counts: the entries' MessagePack bytes
  onFull: 'evictExpiring',
  onEvict: (tuples) => evicted.push(...tuples.map((t) => t[0] as string)),
});
cache.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
cache.createIndex('expires', { unique: false, parts: [[3, 'number']] }); // eviction walks this index

const set = (key: string, value: string, ttl: number) => cache.replace([key, value, clock + ttl]);
const get = (key: string) => cache.get(key)?.[1];

set('a', 'alpha', 60);
set('b', 'beta', 10);
set('c', 'gamma', 300);
set('d', 'delta', 120); // full: evicts 'b', which expires soonest
assert.deepEqual(evicted, ['b']);
assert.equal(get('b'), undefined);
assert.equal(get('d'), 'delta');

clock += 90; // 'a' has expired; it is hidden, but still stored
set('e', 'epsilon', 30); // the expired 'a' goes first
set('c', 'GAMMA', 300); // a key already stored evicts nothing
assert.deepEqual(evicted, ['b', 'a']);
assert.equal(cache.len(), 3);

// The daemon deletes what expires before the cache fills up again.
const expired: string[] = [];
const task = expirationd.start('cache', cache, {
  itIndex: 'expires',
  keepAlive: true, // this program waits for the pass below
  onExpired: (tuples) => expired.push(...tuples.map((t) => t[0] as string)),
});
clock += 100; // 'd' and 'e' expire
task.wake();
task.once('fullScan', () => {
  assert.deepEqual(expired.sort(), ['d', 'e']);
  assert.deepEqual(cache.select(), [['c', 'GAMMA', 1390]]);

  // With onFull 'refuse' (the default), a full space refuses the write instead.
  const queue = new Space('jobs', { maxTuples: 2 });
  queue.createIndex('id', { parts: [[1, 'unsigned']] });
  queue.insertMany([[1, 'a'], [2, 'b']]);
  assert.throws(() => queue.insert([3, 'c']), { code: 'ER_SPACE_FULL' });

  console.log('capped cache:', cache.select(), 'evicted:', evicted, 'expired:', expired);
  task.kill();
  cache.drop();
});
