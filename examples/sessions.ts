// A sliding session store: a session expires IDLE seconds after its last request. Sessions live
// in a TTL space, [token, user, exp]: a read hides a session once exp has passed, each request
// pushes exp forward with update('='), and an indexed expirationd task deletes expired sessions
// at a cost proportional to what expires. A session also ends MAX_AGE after it started.
//
//   npx tsx examples/sessions.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Space, expirationd } from '../src/index.js';

const IDLE = 30 * 60;
const MAX_AGE = 8 * 3600;
let clock = 1_700_000_000;  // seconds, injected
type Session = [token: string, user: string, exp: number, started: number];
const sessions = new Space<Session, string>('sessions', { ttl: { field: 3, now: () => clock } });
sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
sessions.createIndex('exp', { unique: false, parts: [[3, 'number']] });

function login(token: string, user: string): void {
  sessions.insert([token, user, clock + IDLE, clock]);
}

/** The session's user, its idle timeout pushed forward; undefined once it has expired. */
function request(token: string): string | undefined {
  const session = sessions.get(token);  // hides an expired session that no task deleted yet
  if (session === undefined) return undefined;
  sessions.update(token, [['=', 3, Math.min(clock + IDLE, session[3] + MAX_AGE)]]);
  return session[1];
}

login('s-1', 'ada');
login('s-2', 'grace');
clock += 20 * 60;
assert.equal(request('s-1'), 'ada');
clock += 20 * 60;  // 40 minutes in: s-2 idled out, s-1 was active 20 minutes ago
assert.equal(request('s-1'), 'ada');
assert.equal(request('s-2'), undefined);
assert.equal(sessions.len(), 2, 's-2 is hidden, and still stored');

// Active all day, but not past MAX_AGE.
for (let minutes = 40; minutes < MAX_AGE / 60; minutes += 20) {
  assert.equal(request('s-1'), 'ada', `${minutes} minutes in`);
  clock += 20 * 60;
}
assert.equal(request('s-1'), undefined);

// The task deletes what expired (keepAlive: this program waits for its pass).
login('s-3', 'linus');
const task = expirationd.start('sessions', sessions, { itIndex: 'exp', keepAlive: true });
const expired: string[] = [];
task.on('expired', (tuples) => expired.push(...tuples.map((t) => t[1])));
once(task, 'fullScan').then(() => {
  assert.deepEqual(expired.sort(), ['ada', 'grace']);
  assert.deepEqual(sessions.select().map((t) => t[0]), ['s-3']);
  assert.equal(task.stats().expired, 2);
  task.kill();
  console.log('sessions: ok');
});
