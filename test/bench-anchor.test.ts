// npm run bench:anchor end to end on a tiny workload, without Tarantool: the anchor columns are
// skipped with a clear message, and our side runs every workload in its own process, expires
// exactly the expired tuples and keeps every live one. Times are never asserted.
// Then the anchor's non-indexed goal (at most 100 timer wake-ups per pass) on the fake clock, for
// a pass that deletes as it goes: its bursts are sized by the pass's length when it began.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { Space, expirationd } from '../src/index.js';
import { BASE, useKeepupTimers } from './support/keepup.js';

const ROOT = path.resolve(__dirname, '..');
const TUPLES = 20_000;
const EXPIRED = 2_000;  // every 10th tuple
const SCAN_SIZE = 1024;
const LABELS = ['indexed, TREE pk', 'indexed, HASH pk', 'non-indexed, TREE pk', 'non-indexed, HASH pk'];

let emptyPath: string;
let stdout: string;
let status: number | null;
let rows: Record<string, string>[];

function parseTable(text: string): Record<string, string>[] {
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  const cells = (l: string) => l.slice(1, -1).split('|').map((c) => c.trim());
  const head = cells(lines[0]);
  expect(lines[1]).toMatch(/^\|[-:|]+\|$/);
  return lines.slice(2).map((l) => Object.fromEntries(cells(l).map((c, i) => [head[i], c])));
}

const int = (s: string) => Number(s.replace(/,/g, ''));

beforeAll(() => {
  // A PATH without tarantool: the anchor must be skipped, whatever this machine has installed.
  emptyPath = fs.mkdtempSync(path.join(os.tmpdir(), 'anchor-path-'));
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, 'bench/anchor.ts', '--runs', '1', '--tuples', String(TUPLES)], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: emptyPath }, timeout: 170_000,
  });
  stdout = r.stdout;
  status = r.status;
  if (status !== 0) console.error(r.stderr);
  rows = parseTable(stdout);
}, 180_000);

afterAll(() => {
  if (emptyPath) fs.rmSync(emptyPath, { recursive: true, force: true });
});

describe('npm run bench:anchor on a tiny workload, without tarantool', () => {
  test('says the anchor column is skipped and why, and exits 0', () => {
    expect(status).toBe(0);
    expect(stdout).toContain('tarantool not found: anchor column skipped');
    expect(stdout).toContain(`${TUPLES.toLocaleString('en-US')} tuples, every 10th expired (${EXPIRED.toLocaleString('en-US')})`);
  });

  test('prints one row per workload with our figures, and dashes in the anchor columns', () => {
    expect(rows.map((r) => r.workload)).toEqual(LABELS);
    for (const r of rows) {
      expect(Number.isFinite(int(r['ours CPU ms']))).toBe(true);
      expect(int(r['ours CPU ms'])).toBeGreaterThan(0);
      expect(int(r['ours ns/expired'])).toBeGreaterThan(0);
      expect(int(r['native loop ms'])).toBeGreaterThan(0);
      expect(int(r['Node alone ms'])).toBeGreaterThan(0);
      expect(Number.isFinite(int(r['longest chunk ms']))).toBe(true);
      expect(Number.isFinite(int(r['longest pause ms']))).toBe(true);
      for (const column of ['Tarantool CPU ms', 'Tarantool ns/expired', 'Tarantool wall ms', 'ours/Tarantool CPU']) {
        expect(r[column]).toBe('-');
      }
    }
    expect(stdout).toMatch(/non-indexed pass, ours\/Tarantool CPU ≤ 0\.25: no anchor/);
  });

  test('our side deleted exactly the expired tuples and kept every live one, in every workload', () => {
    for (const r of rows) {
      expect({ workload: r.workload, expired: int(r.expired), remaining: int(r.remaining) })
        .toEqual({ workload: r.workload, expired: EXPIRED, remaining: TUPLES - EXPIRED });
    }
    expect(stdout).not.toContain('ERROR');
  });

  test('a non-indexed pass is one chunk per scanSize tuples; an indexed one stops at the first live tuple', () => {
    const pass = (r: Record<string, string>, column: string) => int(r[column].split('/')[0]);
    for (const r of rows.filter((row) => row.workload.startsWith('non-indexed'))) {
      expect(pass(r, 'chunks pass/all')).toBe(Math.ceil(TUPLES / SCAN_SIZE));
      expect(pass(r, 'wake-ups pass/all')).toBeLessThanOrEqual(100);
    }
    for (const r of rows.filter((row) => row.workload.startsWith('indexed'))) {
      expect(pass(r, 'chunks pass/all')).toBe(Math.ceil(EXPIRED / SCAN_SIZE));
    }
  });
});

describe('a paced pass that deletes as it goes', () => {
  useKeepupTimers();

  test('half its tuples expired, it still takes at most 100 wake-ups: every burst is sized by the pass\'s starting length', () => {
    const space = new Space('anchor-bursts');
    space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { type: 'TREE', unique: false, parts: [[3, 'unsigned']] });
    const tuples: unknown[][] = [];
    for (let i = 1; i <= 20_000; i++) tuples.push([i, `user${i}@tarantool.io`, i % 2 === 0 ? BASE - 10_000 : BASE + 3_600_000]);
    space.insertMany(tuples);
    const task = expirationd.start('anchor-bursts', space, {
      itIndex: 'primary', field: 3, unit: 'ms', now: () => Date.now(), scanSize: 10, scanTime: 200, fullScanDelay: 3600,
    });
    for (let i = 0; i < 100_000 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    const stats = task.stats();
    expect(stats).toMatchObject({ fullScans: 1, expired: 10_000 });
    expect(space.len()).toBe(10_000);
    // ceil(20,001 / 10) = 2,001 chunks per pass at the start: k = 21 for the whole pass. Sized by
    // the shrinking len instead, k would fall to ceil(1,001 / 100) = 11 and the pass take ~140.
    // (scanTime 200 keeps chunkDelay at 0.1-0.2 s, above MIN_WAKEUP_GAP: the gap plays no part.)
    expect(stats.chunks).toBeGreaterThanOrEqual(2000);
    expect(stats.wakeups).toBe(Math.ceil(stats.chunks / 21));
    expect(stats.wakeups).toBeLessThanOrEqual(100);
  });
});
