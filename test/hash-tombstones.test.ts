// A HASH index under insert/delete churn with few live tuples: deleting leaves tombstones, and
// a table whose load check forgot them fills with tombstones until no empty slot is left; a
// lookup of an absent key then probes forever (found by mutation testing, issue 14:
// scripts/mutants/native.json, ht-full-tombstones). The churn runs in a child process (a native
// loop cannot be interrupted from JavaScript) that must finish well within its time limit; the
// limit is a safety net for a hang, not a timing assertion.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { expect, test } from 'vitest';

const dist = path.join(__dirname, '..', 'dist', 'index.js');

const CHURN = `
const { Space } = require(${JSON.stringify(dist)});
const space = new Space('churn');
space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
const live = [];
for (let k = 0; k < 16; k++) { space.insert([k]); live.push(k); }
let seed = 20261123;
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
let next = 16;
for (let step = 0; step < 50000; step++) {
  space.insert([next]); live.push(next); next++;
  const j = Math.floor(random() * live.length);
  space.delete(live[j]);
  live[j] = live[live.length - 1]; live.pop();
  if (space.get(1e9 + step) !== undefined) throw new Error('found an absent key');
}
for (const k of live) if (space.get(k) === undefined) throw new Error('lost key ' + k);
space.checkIntegrity();
console.log(JSON.stringify({ len: space.len(), live: live.length }));
`;

test('50,000 insert/delete pairs with 16 live tuples: lookups of absent keys end, and every live key is found', () => {
  const r = spawnSync(process.execPath, ['-e', CHURN], { encoding: 'utf8', timeout: 90_000 });
  expect(r.signal, `the churn did not finish (a probe loop that never meets an empty slot?)\n${r.stderr}`).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout.trim())).toEqual({ len: 16, live: 16 });
});

