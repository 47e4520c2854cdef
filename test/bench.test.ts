// The benchmark harness runs end to end on a tiny workload: every contender loads, clears its
// backlog and passes its correctness check, and latest.json / latest.svg have the documented shape.
// Times are never asserted.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { contenderNames } from '../bench/lib/contender.js';
import type { BenchResults } from '../bench/lib/results.js';
import { runBench } from '../bench/lib/run.js';
import { formatTable } from '../bench/lib/table.js';

const TUPLES = 2000;
const EXPIRED = 0.1;
let out: string;
let results: BenchResults;

beforeAll(async () => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-bench-'));
  results = await runBench({ tuples: TUPLES, expired: EXPIRED, scanTime: 0.25, repeat: 1, out, progress: false });
}, 60_000);

afterAll(() => {
  if (out) fs.rmSync(out, { recursive: true, force: true });
});

describe('npm run bench on a tiny workload', () => {
  test('runs every contender in bench/contenders, baseline first', () => {
    const names = contenderNames();
    expect(names.slice(0, 2)).toEqual(['capped-indexed', 'capped-scan']);
    expect(names).toEqual(expect.arrayContaining(['ttlcache', 'lru-cache', 'node-cache', 'sqlite']));
    expect(results.contenders.map((c) => c.name)).toEqual(names);
    expect(results.baseline).toBe('capped-indexed');
  });

  test('every contender removes every expired tuple and keeps every live one', () => {
    for (const c of results.contenders) {
      expect({ name: c.name, errors: c.errors }).toEqual({ name: c.name, errors: [] });
      expect(c.ok).toBe(true);
      expect(c.runs).toBe(1);
      for (const run of c.raw) expect(run.verify).toEqual({ ok: true, errors: [] });
    }
    expect(results.ok).toBe(true);
    expect(results.failures).toEqual([]);
  });

  test('reports finite figures for every contender, and ratios to the baseline for the others', () => {
    for (const c of results.contenders) {
      const m = c.median!;
      for (const key of ['loadMs', 'loadNsPerTuple', 'clearWallMs', 'clearCpuMs', 'cpuNsPerExpired', 'maxPauseMs', 'p99PauseMs'] as const) {
        expect(Number.isFinite(m[key]), `${c.name}.${key}`).toBe(true);
        expect(m[key], `${c.name}.${key}`).toBeGreaterThanOrEqual(0);
      }
      expect(Number.isFinite(m.memoryBytesPerTuple), `${c.name}.memoryBytesPerTuple`).toBe(true);
      expect(['native', 'heap', 'rss']).toContain(c.memoryKind);
      if (c.name === results.baseline) {
        expect(c.vsBaseline).toBeNull();
      } else {
        for (const v of Object.values(c.vsBaseline!)) expect(Number.isFinite(v)).toBe(true);
      }
    }
  });

  test('ours reports native memory and the tuples its task checked', () => {
    const indexed = results.contenders.find((c) => c.name === 'capped-indexed')!;
    const scan = results.contenders.find((c) => c.name === 'capped-scan')!;
    const expired = Math.round(TUPLES * EXPIRED);
    for (const c of [indexed, scan]) {
      expect(c.ours).toBe(true);
      expect(c.memoryKind).toBe('native');
      expect(c.raw[0]!.memory.nativeBytes).toBeGreaterThan(0);
    }
    // The indexed task stops at the first live tuple; the full scan visits every tuple.
    expect(indexed.median!.checked).toBeGreaterThanOrEqual(expired);
    expect(indexed.median!.checked).toBeLessThan(TUPLES);
    expect(scan.median!.checked).toBeGreaterThanOrEqual(TUPLES);
  });

  test('writes latest.json with the machine, the flags and the raw runs', () => {
    const json = JSON.parse(fs.readFileSync(path.join(out, 'latest.json'), 'utf8')) as BenchResults;
    expect(json.schema).toBe(1);
    expect(typeof json.date).toBe('string');
    expect(json.machine).toMatchObject({ cores: expect.any(Number), memoryBytes: expect.any(Number), node: process.version });
    expect(typeof json.machine.cpuModel).toBe('string');
    expect(json.flags).toMatchObject({ tuples: TUPLES, expired: EXPIRED, scanSize: 1024, scanTime: 0.25, repeat: 1 });
    expect(json.workload).toMatchObject({ tuples: TUPLES, expired: Math.round(TUPLES * EXPIRED), live: TUPLES - Math.round(TUPLES * EXPIRED) });
    expect(json.contenders.map((c) => c.name)).toEqual(results.contenders.map((c) => c.name));
    for (const c of json.contenders) {
      expect(c.raw).toHaveLength(1);
      const run = c.raw[0]!;
      expect(run.load.ms).toHaveLength(2);
      expect(run.pauses.samples).toBeGreaterThan(0);
      expect(run).toMatchObject({ tuples: TUPLES, name: c.name, label: c.label });
    }
  });

  test('writes a self-contained latest.svg naming every contender', () => {
    const svg = fs.readFileSync(path.join(out, 'latest.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).not.toMatch(/(href|src)=/);
    for (const c of results.contenders) expect(svg).toContain(c.label.replace(/&/g, '&amp;'));
  });

  test('prints one table row per contender with its ratio to the baseline', () => {
    const table = formatTable(results);
    for (const c of results.contenders) expect(table).toContain(c.label);
    expect(table).toContain('CPU/expired vs indexed');
    expect(table).toMatch(/\d×/);
  });
});
