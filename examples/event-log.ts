// An event log that keeps the last KEEP seconds (the memcached articles' "recent events"):
// events are numbered, [seq, at, until, kind, text], in a TTL space whose TTL field is
// `until = at + KEEP`. Reads see only the last KEEP seconds, in order; a reader that remembers
// the last seq it saw asks for what came after; an expirationd task trims the rest, walking the
// `until` index and stopping at the first event still in the window.
//
//   npx tsx examples/event-log.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Space, expirationd } from '../src/index.js';

const KEEP = 60;
let clock = 1_700_000_000;  // seconds, injected
type Event = [seq: number, at: number, until: number, kind: string, text: string];
const log = new Space<Event, number>('events', { ttl: { field: 3, now: () => clock } });
log.createIndex('seq', { parts: [[1, 'unsigned']] });
log.createIndex('until', { unique: false, parts: [[3, 'number']] });
const byKind = log.createIndex('kind', { unique: false, parts: [[4, 'string'], [1, 'unsigned']] });

let seq = 0;
function append(kind: string, text: string): number {
  log.insert([++seq, clock, clock + KEEP, kind, text]);
  return seq;
}

const texts = (events: Event[]): string[] => events.map((e) => e[4]);

append('login', 'ada');
clock += 20;
const seen = append('deploy', 'v1.2');
clock += 20;
append('login', 'grace');
append('error', 'disk full');

assert.deepEqual(texts(log.select()), ['ada', 'v1.2', 'grace', 'disk full'], 'the last minute, in order');
assert.deepEqual(texts(log.select(seen, { iterator: 'GT' })), ['grace', 'disk full'], 'what came after seq 2');
assert.deepEqual(texts(byKind.select('login')), ['ada', 'grace'], 'by kind');

clock += 30;  // ada's login is 70 s old, the deploy 50 s
assert.deepEqual(texts(log.select()), ['v1.2', 'grace', 'disk full']);
assert.deepEqual(texts(byKind.select('login')), ['grace']);
assert.equal(log.len(), 4, 'the old event is hidden, and stored until the task trims it');

// The task trims the log (keepAlive: this program waits for its pass).
const task = expirationd.start('events', log, { itIndex: 'until', keepAlive: true });
once(task, 'fullScan').then(() => {
  assert.equal(log.len(), 3);
  clock += 60;
  append('logout', 'grace');
  assert.deepEqual(texts(log.select()), ['grace'], 'a quiet minute later, only the newest event is left');
  task.kill();
  console.log('event-log: ok');
});
