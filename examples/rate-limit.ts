// A fixed-window rate limiter: one tuple per (client, window), counted with replace() inside a
// transaction, and expired by a task once the window is over.
//
//   npx tsx examples/rate-limit.ts
import { Space, expirationd } from '../src/index.js';

const WINDOW_MS = 1000;
const LIMIT = 3;
const hits = new Space('hits');
hits.createIndex('primary', { type: 'TREE', parts: [[1, 'string'], [2, 'unsigned']] });
hits.createIndex('until', { type: 'TREE', unique: false, parts: [[3, 'unsigned']] });

function allow(client: string, nowMs = Date.now()): boolean {
  const window = Math.floor(nowMs / WINDOW_MS);
  return hits.transaction(() => {
    const [, , until, count] = (hits.get([client, window]) ?? [client, window, (window + 1) * WINDOW_MS, 0]) as
      [string, number, number, number];
    if (count >= LIMIT) return false;
    hits.replace([client, window, until, count + 1]);
    return true;
  });
}

const task = expirationd.start('hits', hits, { itIndex: 'until', field: 3, unit: 'ms', scanTime: 1 });

const results = Array.from({ length: 5 }, () => allow('10.0.0.1'));
console.log('5 requests in one window:', results); // [true, true, true, false, false]
console.log('tuples now:', hits.len());

setTimeout(() => {
  console.log('after the window, tuples left:', hits.len(), task.stats());
  task.kill();
}, WINDOW_MS * 2 + 100);
