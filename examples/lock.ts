// A lock with a timeout (Redis in Action 6.2, acquire_lock_with_timeout): a lock is a tuple
// [name, owner, expiresAt] in a TTL space. Acquiring inserts it, which fails while a live lock
// holds the name and succeeds over an expired one, so a holder that crashed without releasing
// frees the lock when its timeout passes. Releasing deletes the lock only while the caller still
// owns it. An expirationd task reclaims the locks nobody released.
//
//   npx tsx examples/lock.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { CappedError, Space, expirationd } from '../src/index.js';

let clock = 1_000_000;  // ms; injected, so the program runs at once and the same way every time
type Lock = [name: string, owner: string, expiresAt: number];
const locks = new Space<Lock>('locks', { ttl: { field: 3, unit: 'ms', now: () => clock } });
locks.createIndex('name', { type: 'HASH', parts: [[1, 'string']] });
locks.createIndex('expiresAt', { unique: false, parts: [[3, 'number']] });

let owners = 0;

/**
 * A lease must end after now: one that already ended is stored expired, and reads hide it. Checked
 * on the sum, not on timeoutMs alone: at a wall clock of ~1.7e12 ms, clock + 1e-4 === clock.
 */
function checkTimeout(timeoutMs: number): void {
  if (!(Number.isFinite(timeoutMs) && clock + timeoutMs > clock)) throw new RangeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
}

/** The owner token of the lock, or undefined while someone else holds it. */
function acquire(name: string, timeoutMs: number): string | undefined {
  checkTimeout(timeoutMs);  // a lease of 0 would hand the same lock to every caller
  const owner = `owner-${++owners}`;
  try {
    locks.insert([name, owner, clock + timeoutMs]);
    return owner;
  } catch (error) {
    if (error instanceof CappedError && error.code === 'ER_DUPLICATE_KEY') return undefined;
    throw error;
  }
}

/** Releases the lock if `owner` still holds it; false when it timed out (and maybe moved on). */
function release(name: string, owner: string): boolean {
  return locks.transaction(() => {
    if (locks.get(name)?.[1] !== owner) return false;
    locks.delete(name);
    return true;
  });
}

/** Extends the holder's timeout; false when the lock is no longer its own. */
function extend(name: string, owner: string, timeoutMs: number): boolean {
  checkTimeout(timeoutMs);
  return locks.transaction(() => {
    if (locks.get(name)?.[1] !== owner) return false;
    locks.update(name, [['=', 3, clock + timeoutMs]]);
    return true;
  });
}

assert.throws(() => acquire('market', 0), RangeError, 'a lease that ends now would be no lock at all');
const a = acquire('market', 100);
assert.ok(a);
assert.equal(acquire('market', 100), undefined, 'held: a second client waits');
assert.equal(release('market', a), true);

const b = acquire('market', 100);
assert.ok(b, 'released: the next client gets it');
clock += 80;
assert.equal(extend('market', b, 100), true);
clock += 80;
assert.equal(acquire('market', 100), undefined, 'extended: still held 160 ms after acquiring');

// b crashes without releasing: its lock frees itself when the timeout passes.
clock += 30;
const c = acquire('market', 100);
assert.ok(c, 'the crashed holder timed out');
assert.equal(release('market', b), false, 'a late release by the old holder does not free the new lock');
assert.equal(locks.get('market')?.[1], c);

// Locks nobody released are deleted by the task (keepAlive: this program waits for its pass).
acquire('orders', 50);
clock += 200;
const task = expirationd.start('locks', locks, { itIndex: 'expiresAt', keepAlive: true });
once(task, 'fullScan').then(() => {
  assert.equal(locks.len(), 0);
  task.kill();
  console.log('lock: ok');
});
