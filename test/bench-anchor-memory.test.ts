// bench/anchor-memory.ts end to end on a tiny load, without Tarantool: the Tarantool columns are
// skipped with a clear message, and our side still loads the tuples in its own process and
// reports its memory per tuple. Sizes are only checked to be positive: they are not asserted.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const TUPLES = 20_000;
const HEAD = [
  'tuples', 'ours memory()', 'ours RSS', 'ours heapTotal', 'Tarantool items_used', 'Tarantool arena_used',
  'Tarantool slabs', 'Tarantool RSS', 'memory()/slabs', 'memory()/arena_used', 'RSS/RSS',
];
const THEIRS = HEAD.slice(4);

let emptyPath: string;
let stdout: string;
let status: number | null;
let head: string[];
let rows: Record<string, string>[];

function parseTable(text: string): { head: string[]; rows: Record<string, string>[] } {
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  const cells = (l: string) => l.slice(1, -1).split('|').map((c) => c.trim());
  const columns = cells(lines[0]);
  expect(lines[1]).toMatch(/^\|[-:|]+\|$/);
  return { head: columns, rows: lines.slice(2).map((l) => Object.fromEntries(cells(l).map((c, i) => [columns[i], c]))) };
}

/** A cell's median: the number before any ' (min–max)'. */
const num = (s: string) => Number(s.split(' ')[0].replace(/,/g, ''));

beforeAll(() => {
  // A PATH without tarantool: its columns must be skipped, whatever this machine has installed.
  emptyPath = fs.mkdtempSync(path.join(os.tmpdir(), 'anchor-memory-path-'));
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, 'bench/anchor-memory.ts', '--runs', '1', '--tuples', String(TUPLES)], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: emptyPath }, timeout: 60_000,
  });
  stdout = r.stdout;
  status = r.status;
  if (status !== 0) console.error(r.stderr);
  ({ head, rows } = parseTable(stdout));
}, 70_000);

afterAll(() => {
  if (emptyPath) fs.rmSync(emptyPath, { recursive: true, force: true });
});

describe('bench/anchor-memory.ts on a tiny load, without tarantool', () => {
  test('says the Tarantool columns are skipped and why, and exits 0', () => {
    expect(status).toBe(0);
    expect(stdout).toContain('tarantool not found: Tarantool columns skipped');
    expect(stdout).not.toContain('Tarantool 2.');
  });

  test('prints one row per N, with our figures and dashes in the Tarantool columns', () => {
    expect(head).toEqual(HEAD);
    expect(rows.map((r) => r.tuples)).toEqual([TUPLES.toLocaleString('en-US')]);
    const [row] = rows;
    expect(num(row['ours memory()'])).toBeGreaterThan(0);
    expect(num(row['ours RSS'])).toBeGreaterThan(0);
    expect(Number.isFinite(num(row['ours heapTotal']))).toBe(true);
    for (const column of THEIRS) expect(row[column]).toBe('-');
  });

  test('our memory() is at least the tuples\' own bytes, and splits into tuples and indexes', () => {
    // A tuple of this workload is at least 30 bytes of MessagePack; two indexes come on top.
    expect(num(rows[0]['ours memory()'])).toBeGreaterThan(30);
    const m = /^- ours: memory\(\) tuples ([\d.,]+) \+ indexes ([\d.,]+);/m.exec(stdout);
    expect(m).not.toBeNull();
    const [tuples, indexes] = [num(m![1]), num(m![2])];
    expect(tuples).toBeGreaterThan(0);
    expect(indexes).toBeGreaterThan(0);
    expect(tuples + indexes).toBeCloseTo(num(rows[0]['ours memory()']), 0);
  });
});
