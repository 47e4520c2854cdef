// bench:scale runs end to end on a tiny load (20,000 entries, 1 s of the mix) for our space and a
// Map: the table has every row the README quotes, the floor rows (the same loop around a no-op
// call, and the mix on no store) and the inserts matched against V8's collections included, the
// loads finish with the right count, and --only leaves the result files alone. The rules that split
// the slow inserts (bench/lib/slow-calls.ts) are checked on made-up calls.
// Times are never asserted.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { ownTime, splitSlowCalls } from '../bench/lib/slow-calls.js';

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
    // The longest insert's schedstat window: '-' when no insert took over 1 ms, else the split.
    expect(rows.get('longest insert: its window on a CPU / waiting, ms; switched in')).toMatch(/^(-|\d+\.\d\d \/ \d+\.\d\d; \d+)$/);
    // Those over 5 ms only for not running are among those outside a collection.
    const notRunning = Number(rows.get('inserts over 5 ms outside V8 GC, only for not running'));
    expect(notRunning).toBeGreaterThanOrEqual(0);
    expect(notRunning).toBeLessThanOrEqual(Number(rows.get('inserts over 5 ms')) - inGc5);
    const own = rows.get('longest insert outside V8 GC, its own time, ms')!;
    expect(own).toMatch(/^(< 1|\d+\.\d\d)$/);
    if (own !== '< 1') expect(Number(own)).toBeLessThanOrEqual(Number(rows.get('longest insert outside V8 GC, ms')));
  }, 130_000);
});

describe('bench:scale, the split of slow inserts', () => {
  const w = (run: number, wait: number, slices: number, at: number) => ({ run: run * 1e6, wait: wait * 1e6, slices, at });

  test('own time: never switched out, the time neither on a CPU nor waiting was stolen', () => {
    // A 6 ms call starting 0.5 ms into a 6.5 ms window with 1 ms on a CPU: 5.5 ms stolen, of which
    // at most 0.5 ms before the call, so at least 5 ms inside it: own at most 1 ms.
    expect(ownTime(6, 100.5, w(10, 2, 7, 100), w(11, 2, 7, 106.5))).toBeCloseTo(1, 9);
    // The same with the thread switched out: the 5.5 ms could be sleep, which is the call's own.
    expect(ownTime(6, 100.5, w(10, 2, 7, 100), w(11, 2, 8, 106.5))).toBe(6);
    // Switched out, waiting for a CPU counts: 5 ms waiting, at most 0.5 ms of it before the call.
    expect(ownTime(6, 100.5, w(10, 2, 7, 100), w(11, 7, 8, 106.5))).toBeCloseTo(1.5, 9);
    // Not running entirely before the call: nothing is taken off it.
    expect(ownTime(2, 108, w(10, 2, 7, 100), w(12, 2, 7, 110))).toBe(2);
    // Never below zero, never above the call.
    expect(ownTime(3, 100, w(0, 0, 1, 100), w(0, 0, 1, 110))).toBe(0);
    expect(ownTime(3, 100, w(0, 0, 1, 100), w(3, 0, 1, 103))).toBe(3);
  });

  test('calls are split by V8 collection first, then by their own time', () => {
    const gcs: Array<[number, number]> = [[100, 103], [200, 201]];
    const split = splitSlowCalls([
      [99, 101.5, 2.5],       // overlaps the first collection, under 5 ms
      [195, 202, 1],          // overlaps the second, over 5 ms (own time does not matter here)
      [300, 306, 0.5],        // over 5 ms, own 0.5 ms: not running
      [400, 406, 5],          // over 5 ms, own exactly 5 ms: still not running
      [500, 507, 5.5],        // over 5 ms, own 5.5 ms: its own
      [600, 608, 8],          // over 5 ms, all its own
      [700, 703, 0.2],        // under 5 ms
      [103, 104.5, 0.1],      // touches the first collection's end only: outside it
    ], gcs);
    expect(split).toEqual({ over1InGc: 2, over5InGc: 1, longestOutsideGc: 8, over5NotRunning: 2, longestOwn: 8 });
    expect(splitSlowCalls([[0, 9, 4], [10, 13, 3]], [])).toEqual(
      { over1InGc: 0, over5InGc: 0, longestOutsideGc: 9, over5NotRunning: 1, longestOwn: 4 });
    expect(splitSlowCalls([], gcs)).toEqual({ over1InGc: 0, over5InGc: 0, longestOutsideGc: 0, over5NotRunning: 0, longestOwn: 0 });
  });
});
