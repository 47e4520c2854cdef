// A visitor counter with expiring shadow keys (the memcached articles): how many distinct
// visitors each page had in the last WINDOW seconds, read in O(1). A visit writes a shadow key
// [page, visitor, until] to a TTL space: a new one adds 1 to the page's counter with upsert('+'),
// a repeat visit only pushes `until` forward. When a shadow key expires, the expirationd task
// deletes it and its onExpired subtracts 1 from the counter, in the same transaction (a
// synchronous onExpired runs inside the chunk's transaction, which spans both spaces). So the
// count drops when the task deletes a shadow key: at most one pass after it expired.
//
//   npx tsx examples/visitor-counter.ts
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Space, atomic, expirationd } from '../src/index.js';

const WINDOW = 5 * 60;
let clock = 1_700_000_000;  // seconds, injected
const seen = new Space<[page: string, visitor: string, until: number]>('seen', { ttl: { field: 3, now: () => clock } });
const shadow = seen.createIndex('primary', { parts: [[1, 'string'], [2, 'string']] });
seen.createIndex('until', { unique: false, parts: [[3, 'number']] });
const visitors = new Space<[page: string, count: number], string>('visitors');
visitors.createIndex('page', { type: 'HASH', parts: [[1, 'string']] });

function visit(page: string, visitor: string): void {
  atomic(() => {
    // update() acts on what is stored: a shadow key that expired but is not deleted yet still
    // counts, so refreshing it is right.
    if (shadow.update([page, visitor], [['=', 3, clock + WINDOW]]) !== undefined) return;
    seen.insert([page, visitor, clock + WINDOW]);
    visitors.upsert([page, 1], [['+', 2, 1]]);
  });
}

const count = (page: string): number => visitors.get(page)?.[1] ?? 0;

const task = expirationd.start('seen', seen, {
  itIndex: 'until',
  keepAlive: true,  // this program waits for the task's passes
  onExpired: (gone) => {
    for (const [page] of gone) visitors.update(page, [['-', 2, 1]]);
  },
});
const pass = async (): Promise<void> => {
  const done = once(task, 'fullScan');
  task.wake();
  await done;
};

async function main(): Promise<void> {
  for (const visitor of ['ada', 'grace', 'ada', 'linus', 'ada']) visit('/home', visitor);
  visit('/docs', 'ada');
  assert.equal(count('/home'), 3, 'distinct visitors');
  assert.equal(count('/docs'), 1);

  clock += 4 * 60;
  visit('/home', 'grace');  // grace is still around; ada and linus go quiet
  clock += 2 * 60;
  await pass();
  assert.equal(count('/home'), 1, 'only grace visited in the last 5 minutes');
  assert.equal(count('/docs'), 0);

  visit('/home', 'ada');  // back after the window: counted again
  assert.equal(count('/home'), 2);
  clock += WINDOW;
  await pass();
  assert.equal(count('/home'), 0);
  assert.equal(seen.len(), 0, 'every shadow key expired and was deleted');
  task.kill();
  console.log('visitor-counter: ok');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
