// scripts/pause-probe.ts runs end to end on a tiny load over each pk type, and refuses bad
// arguments. Times are never asserted: only that the pass ran and the report has its parts.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
const run = (...args: string[]) =>
  spawnSync(process.execPath, ['--expose-gc', '--import', tsx, 'scripts/pause-probe.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });

describe('scripts/pause-probe.ts, tiny', () => {
  test.each(['HASH', 'TREE'])('%s pk: one pass of 20,000 tuples, its chunks and gaps reported', (pk) => {
    const r = run(pk, '20000');
    expect(r.status, r.stderr).toBe(0);
    // ceil(20,000 / 1024) = 20 chunks in the pass.
    expect(r.stdout).toMatch(new RegExp(`^${pk} pk, 20000 tuples: 20 chunks, the pass ended at [\\d.]+ ms; \\d+ gaps over 2 ms`, 'm'));
    expect(r.stdout).toMatch(/^longest chunks \(wall ms \/ the process.s CPU ms\): #\d+ at [\d.]+ ms: [\d.]+ \/ [\d.]+/m);
    for (const line of r.stdout.split('\n').filter((l) => l.startsWith('gap '))) {
      expect(line).toMatch(/^gap [\d.]+ ms at [\d.]+ ms: \d+ chunks \([\d. ]*\), \d+ collections \([\d. ]*\)$/);
    }
  });

  test.each([['BTREE'], ['HASH', '5'], ['TREE', 'many']])('refuses %s', (...args) => {
    const r = run(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('usage: npx tsx scripts/pause-probe.ts');
  });
});
