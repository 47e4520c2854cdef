// A delayed job queue (Redis in Action, 6.4): jobs wait in a `delayed` space until their run-at
// time; an expirationd task moves each due job to the `queue` space, atomically (processExpired
// runs inside the chunk's transaction, which spans both spaces); async workers claim jobs from
// the queue, run them and acknowledge them. While jobs flow, the program stops and resumes the
// task, kills it and starts a new one, and restarts it, then checks that no job was lost, none ran
// twice and none ran before its time.
//
//   npx tsx examples/delayed-jobs.ts
import assert from 'node:assert/strict';
import { Space, atomic, expirationd, type Task } from '../src/index.js';

type Job = [id: number, payload: string, runAt: number];
const RETRY_MS = 100;  // a job whose work failed runs again this much later

const delayed = new Space('delayed');
delayed.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
delayed.createIndex('runAt', { unique: false, parts: [[3, 'number']] });

// [id, payload, runAt, state, enqueuedAt]; workers take the oldest 'ready' job.
const queue = new Space('queue');
queue.createIndex('primary', { type: 'HASH', parts: [[1, 'unsigned']] });
queue.createIndex('ready', { unique: false, parts: [[4, 'string'], [5, 'number']] });

/** Moves due jobs from `delayed` to `queue`: both writes commit or roll back with the chunk. */
function enqueueDue(jobs: unknown[][]): void {
  const now = Date.now();
  for (const [id, payload, runAt] of jobs as Job[]) {
    queue.insert([id, payload, runAt, 'ready', now]);  // a job moved twice would throw ER_DUPLICATE_KEY here
    delayed.delete(id);
  }
}

function startMover(): Task {
  const task = expirationd.start('delayed-jobs', delayed, {
    itIndex: 'runAt', // early break: each pass stops at the first job not yet due
    field: 3,
    unit: 'ms',
    scanSize: 16,
    processExpired: enqueueDue,
  });
  task.on('error', (err) => errors.push(err));
  return task;
}

const errors: unknown[] = [];
const runs = new Map<number, number>();
const produced = new Map<number, number>(); // id -> runAt
let nextId = 1;
let acked = 0;

/** Jobs moved so far: a plain counter bumped in enqueueDue would not roll back with a failed chunk. */
const moved = (): number => queue.len() + acked;

function schedule(delayMs: number): void {
  const id = nextId++;
  const runAt = Date.now() + delayMs;
  produced.set(id, runAt);
  delayed.insert([id, `job-${id}`, runAt]);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function worker(stop: () => boolean): Promise<void> {
  while (!stop()) {
    const job = queue.index.ready.min('ready');
    if (job === undefined) {
      await sleep(2);
      continue;
    }
    const [id, , runAt] = job as [number, string, number];
    queue.update(id, [['=', 4, 'running']]); // claim it: synchronous, so no other worker takes it
    assert.ok(Date.now() >= runAt, `job ${id} ran ${runAt - Date.now()} ms early`);
    runs.set(id, (runs.get(id) ?? 0) + 1);
    try {
      await sleep(1 + (id % 4)); // the work
    } catch {
      // Failed: back to `delayed`, to run again in RETRY_MS (at-least-once), in one transaction.
      // Without this a job whose work throws would stay 'running' for good, taken by no one; put
      // straight back as 'ready', a job that always fails would be retried in a hot loop.
      const [, payload] = job as Job;
      atomic(() => {
        queue.delete(id);
        delayed.insert([id, payload, Date.now() + RETRY_MS]);
      });
      continue;
    }
    queue.delete(id); // acknowledge
    acked++;
  }
}

async function main(): Promise<void> {
  let task = startMover();
  for (let i = 0; i < 40; i++) schedule(i % 5 === 0 ? -10 : (i * 37) % 600); // some already due
  let producing = true;
  const producer = (async () => {
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 5; i++) schedule((round * 13 + i * 71) % 400);
      await sleep(20);
    }
    producing = false;
  })();
  const done = () => !producing && acked === produced.size;
  const workers = [worker(done), worker(done), worker(done)];

  // Lifecycle changes while jobs flow.
  await sleep(100);
  task.stop(); // paused: due jobs wait in `delayed`
  assert.equal(expirationd.task('delayed-jobs'), task);
  const movedAtStop = moved();
  await sleep(80);
  assert.equal(moved(), movedAtStop, 'a stopped task moves nothing');
  task.start(); // resumes the same pass
  await sleep(100);
  task.kill(); // gone; a new task takes over
  await sleep(50);
  task = startMover();
  await sleep(100);
  task.restart(); // a fresh pass
  await sleep(100);
  task.stop();
  task.stop(); // idempotent
  await sleep(30);
  task.start();

  await producer;
  await Promise.all(workers);
  task.kill();

  assert.deepEqual(errors, []);
  assert.equal(runs.size, produced.size, 'every job ran');
  for (const [id, count] of runs) assert.equal(count, 1, `job ${id} ran ${count} times`);
  assert.equal(delayed.len(), 0);
  assert.equal(queue.len(), 0);
  console.log(`${produced.size} jobs, each moved once and run once, across stop/start, kill and restart`);
  delayed.drop();
  queue.drop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
