// A task's first chunk loads no module of Node's: whatever the daemon needs is loaded when the
// library is imported. The global `performance` is a lazy getter in Node 20 whose first use
// loads perf_hooks and seven internal modules (1-2 ms), and the chunk clock once used it: a
// process that had never touched it paid that in the pause of its first task's first chunk, and
// in the task's first pass (bench:anchor's timed window). Runs the sources (through tsx,
// so that the mutation harness's copies are what runs) in a fresh process, which never touches
// `performance` itself.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = path.join(__dirname, '..');
const src = path.join(ROOT, 'src', 'index.ts');
const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;

const RUN = `
const { Space, expirationd } = require(${JSON.stringify(src)});
const space = new Space('first-chunk');
space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 2, type: 'unsigned' }] });
for (let i = 1; i <= 3000; i++) space.insert([i, i % 3 === 0 ? 1 : 4e9]);
const before = new Set(process.moduleLoadList);
const task = expirationd.start('first-chunk', space, { itIndex: 'exp', field: 2, scanSize: 100 });
const poll = setInterval(() => {
  if (space.len() > 2000) return;
  clearInterval(poll);
  const stats = task.stats();
  task.kill();
  const loaded = process.moduleLoadList.filter((m) => !before.has(m));
  console.log(JSON.stringify({ loaded, expired: stats.expired, chunks: stats.chunks }));
}, 1);
`;

test('from start() to the end of the backlog, a task loads no module: perf_hooks came with the import', () => {
  const r = spawnSync(process.execPath, ['--import', tsx, '-e', RUN], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout.trim()) as { loaded: string[]; expired: number; chunks: number };
  expect(out.expired).toBe(1000);
  expect(out.chunks).toBeGreaterThanOrEqual(10);
  expect(out.loaded).toEqual([]);
});
