// A counting semaphore whose holders may crash (Redis in Action 6.3): each holder is a tuple
// [semaphore, owner, expiresAt] in a TTL space. Acquiring counts the live holders and inserts
// one more if there is room, in one transaction; a holder that crashed stops counting when its
// timeout passes (reads of a TTL space hide expired tuples); a live holder refreshes its slot.
// In one process the clock is shared, so Redis's "fair" variant (6.3.2) is not needed.
//
//   npx tsx examples/semaphore.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Space, expirationd } from '../src/index.js';

let clock = 5_000;  // seconds, injected
type Holder = [semaphore: string, owner: string, expiresAt: number];
const holders = new Space<Holder, [string, string]>('holders', { ttl: { field: 3, now: () => clock } });
holders.createIndex('primary', { parts: [[1, 'string'], [2, 'string']] });
holders.createIndex('expiresAt', { unique: false, parts: [[3, 'number']] });

/** A slot must end after now (the sum, as in lock.ts): one that already ended is stored expired, and count() skips it. */
function checkTimeout(timeout: number): void {
  if (!(Number.isFinite(timeout) && clock + timeout > clock)) throw new RangeError(`timeout must be a positive number, got ${timeout}`);
}

function acquire(semaphore: string, owner: string, limit: number, timeout: number): boolean {
  checkTimeout(timeout);  // a slot of 0 would admit every caller past the limit
  return holders.transaction(() => {
    if (holders.count(semaphore) >= limit) return false;  // live holders only
    holders.replace([semaphore, owner, clock + timeout]);
    return true;
  });
}

function refresh(semaphore: string, owner: string, timeout: number): boolean {
  checkTimeout(timeout);
  return holders.transaction(() => {
    if (holders.get([semaphore, owner]) === undefined) return false;  // timed out: lost the slot
    holders.update([semaphore, owner], [['=', 3, clock + timeout]]);
    return true;
  });
}

function release(semaphore: string, owner: string): boolean {
  return holders.transaction(() => {
    if (holders.get([semaphore, owner]) === undefined) return false;  // timed out already
    holders.delete([semaphore, owner]);
    return true;
  });
}

const LIMIT = 3;
for (const worker of ['w1', 'w2', 'w3']) assert.equal(acquire('db', worker, LIMIT, 10), true);
assert.equal(acquire('db', 'w4', LIMIT, 10), false, 'three slots, all taken');
assert.equal(release('db', 'w1'), true);
assert.equal(acquire('db', 'w4', LIMIT, 10), true, 'a released slot is free at once');

// w2 crashes; w3 and w4 keep refreshing their slots.
clock += 6;
assert.equal(refresh('db', 'w3', 10), true);
assert.equal(refresh('db', 'w4', 10), true);
clock += 6;
assert.equal(holders.count('db'), 2, "w2's timeout passed: it no longer counts");
assert.equal(acquire('db', 'w5', LIMIT, 10), true);
assert.equal(acquire('db', 'w6', LIMIT, 10), false);
assert.equal(refresh('db', 'w2', 10), false, 'the crashed holder lost its slot');
assert.equal(release('db', 'w2'), false);

// The task deletes the holders that crashed (keepAlive: this program waits for its pass).
const task = expirationd.start('holders', holders, { itIndex: 'expiresAt', keepAlive: true });
once(task, 'fullScan').then(() => {
  assert.equal(holders.len(), 3);
  assert.deepEqual(holders.select('db').map((h) => h[1]), ['w3', 'w4', 'w5']);
  task.kill();
  console.log('semaphore: ok');
});
