// A session store: sessions expire 30 minutes after their last touch, and an indexed
// expirationd task deletes them as they expire, at a cost proportional to what expires.
//
//   npx tsx examples/sessions.ts
import { Space, expirationd } from '../src/index.js';

const sessions = new Space('sessions');
sessions.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'string' }] });
sessions.createIndex('expires', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'number' }] });

const TTL = 30 * 60;
const now = () => Date.now() / 1000;

function touch(id: string, user: string): void {
  sessions.replace([id, user, now() + TTL]);
}

touch('s-1', 'ada');
touch('s-2', 'grace');
sessions.replace(['s-old', 'linus', now() - 1]); // already expired

const task = expirationd.start('sessions', sessions, {
  itIndex: 'expires', // walk the TTL index: each pass stops at the first live session
  field: 3,
  scanSize: 1024,
  scanTime: 60, // a full pass over the space takes about a minute
  onExpired: (gone) => console.log('expired:', gone.map((t) => t[0])),
});

task.once('fullScan', (stats) => {
  console.log('after one pass:', sessions.select().map((t) => t[0]), stats);
  task.kill();
  sessions.drop();
});
