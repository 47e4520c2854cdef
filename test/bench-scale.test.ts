// bench:scale runs end to end on a tiny load (20,000 entries, 1 s of the mix) for our space and a
// Map: the table has every row the README quotes, the floor rows (the same loop around a no-op
// call, and the mix on no store) and the inserts matched against V8's collections included, the
// loads finish with the right count, and --only leaves the result files alone.
// Times are never asserted.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
const latest = path.join(ROOT, 'bench/results/scale-latest.json');

function run(contender: string): { status: number | null; rows: Map<string, string>; stderr: string } {
  const before = fs.existsSync(latest) ? fs.statSync(latest).mtimeMs : null;
  const r = spawnSync(process.execPath, ['--import', tsx, 'bench/scale.ts', '--entries', '20000', '--mix-seconds', '1',
    '--rate', '1000', '--only', contender], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  expect(fs.existsSync(latest) ? fs.statSync(latest).mtimeMs : null).toBe(before);
  const rows = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length >= 4 && cells[1] && !cells[1].startsWith('-')) rows.set(cells[1], cells[cells.length - 2]!);
  }
  return { status: r.status, rows, stderr: r.stderr };
}

describe('bench:scale, tiny', () => {
  test.each(['capped-expirationd', 'Map'])('%s: every row, the floor rows included, with figures', (contender) => {
    const { status, rows, stderr } = run(contender);
    expect(status, stderr).toBe(0);
    for (const row of ['ns per insert', 'bytes per entry', 'longest insert, ms', 'inserts over 1 ms', 'inserts over 5 ms',
      'floor: no-op calls timed', 'floor: longest no-op call, ms', 'floor: no-op calls over 1 ms',
      'floor: no-op calls over 5 ms', 'floor with the tuple: longest call, ms', 'floor with the tuple: calls over 1 ms',
      'floor with the tuple: calls over 5 ms', 'longest pause in the mix, ms', 'longest V8 GC in the mix, ms', 'operations in the mix',
      'inserts over 1 ms / 5 ms during a V8 GC', 'mix floor (no store): longest pause, ms', 'mix floor (no store): longest V8 GC, ms']) {
      expect(rows.get(row), `${row} in ${[...rows.keys()].join(', ')}`).toMatch(/\d/);
    }
    expect(Number(rows.get('ns per insert'))).toBeGreaterThan(0);
    // The floor times at least as many calls as the load made (n = 20,000; printed in millions).
    expect(Number.parseFloat(rows.get('floor: no-op calls timed')!)).toBeGreaterThanOrEqual(0.02);
    expect(Number(rows.get('operations in the mix'))).toBeGreaterThan(0);
    // Of the inserts over 1 ms, those during a V8 GC are at most all of them; the rest has a longest.
    const [inGc1, inGc5] = rows.get('inserts over 1 ms / 5 ms during a V8 GC')!.split(' / ').map(Number);
    expect(inGc1).toBeLessThanOrEqual(Number(rows.get('inserts over 1 ms')));
    expect(inGc5).toBeLessThanOrEqual(Number(rows.get('inserts over 5 ms')));
    expect(rows.get('longest insert outside V8 GC, ms')).toMatch(/^(< 1|\d+\.\d\d)$/);
  }, 130_000);
});
