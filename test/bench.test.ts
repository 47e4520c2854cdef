// The benchmark harness runs end to end on a tiny workload: every contender loads, clears its
// backlog and passes its correctness check (Redis is skipped, with how to enable it, when
// redis-server is not installed), every row has the memory, idle-cost, latency and stall figures,
// and latest.json / latest.svg / the table have the documented shape. Times are never asserted.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { contenderNames } from '../bench/lib/contender.js';
import { HUGE, parseCommandLine, resolveOptions, shapesOf } from '../bench/lib/options.js';
import { findRedisServer } from '../bench/lib/redis.js';
import type { BenchResults, ContenderSummary } from '../bench/lib/results.js';
import { runBench } from '../bench/lib/run.js';
import { formatTable } from '../bench/lib/table.js';

const TUPLES = 2000;
const EXPIRED = 0.1;
const TINY = { scanTime: 0.25, repeat: 1, idle: 0.2, pauseWindow: 0.5, window: 2, progress: false } as const;
const redisInstalled = findRedisServer() !== null;
let out: string;
let results: BenchResults;
let contenders: ContenderSummary[];

const byName = (name: string): ContenderSummary => contenders.find((c) => c.name === name)!;

beforeAll(async () => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-bench-'));
  results = await runBench({ ...TINY, tuples: TUPLES, expired: EXPIRED, out });
  contenders = results.shapes[0]!.contenders;
}, 240_000);

afterAll(() => {
  if (out) fs.rmSync(out, { recursive: true, force: true });
});

describe('npm run bench on a tiny workload', () => {
  test('runs every contender in bench/contenders, ours first, the peers as their users run them', () => {
    const names = contenderNames();
    expect(names.slice(0, 3)).toEqual(['capped-indexed', 'capped-indexed-defaults', 'capped-scan']);
    expect(names).toEqual(
      expect.arrayContaining(['ttlcache', 'ttlcache-one-ttl', 'lru-cache', 'node-cache', 'sqlite', 'sqlite-single', 'redis']),
    );
    expect(results.shapes).toHaveLength(1);
    expect(contenders.map((c) => c.name)).toEqual(names);
    expect(results.shapes[0]!.baseline).toBe('capped-indexed');
    expect(byName('lru-cache').label).toContain('off-label');
    expect(byName('ttlcache').label).toContain('spread TTLs');
    expect(byName('ttlcache-one-ttl').label).toContain('one TTL');
    expect(byName('sqlite-single').description).toContain('DELETE FROM t WHERE expires_at <= ?');
    expect(byName('node-cache').description).toContain('useClones: true');
    expect(byName('capped-scan').description).toContain('no TTL index');
  });

  test('every contender that ran removes every expired record and keeps every live one', () => {
    for (const c of contenders) {
      if (c.skipped !== null) continue;
      expect({ name: c.name, errors: c.errors }).toEqual({ name: c.name, errors: [] });
      expect(c.ok).toBe(true);
      expect(c.runs).toBe(1);
      for (const run of c.raw) expect(run.verify).toEqual({ ok: true, errors: [] });
    }
    expect(results.ok).toBe(true);
    expect(results.failures).toEqual([]);
  });

  test('Redis runs when redis-server is installed, and is skipped with how to enable it otherwise', () => {
    const redis = byName('redis');
    if (redisInstalled) {
      expect(redis.skipped).toBeNull();
      expect(redis.runs).toBe(1);
      expect(redis.selfMemory).toBe('used_memory');
      expect(redis.raw[0]!.memory.rssOf).toBe('server');
    } else {
      expect(redis.skipped).toContain('apt-get install redis-server');
      expect(redis.ok).toBe(true);
      expect(formatTable(results)).toContain('apt-get install redis-server');
    }
  });

  test('every row has both memory columns, idle CPU, detection, CPU per expired record and the stall figures', () => {
    for (const c of contenders) {
      if (c.skipped !== null) continue;
      const s = c.stats!;
      // CPU per expired record only over a cleared backlog: a store that left most of it would
      // spread its whole watch window's CPU over the few it deleted.
      const clearedRuns = c.raw.filter((r) => r.clear.left === 0 && r.clear.deleted === r.expired).length;
      const cleared = clearedRuns === c.raw.length;
      if (clearedRuns === 0) expect(s.cpuNsPerExpired, `${c.name} left a backlog`).toBeNull();
      const keys = ['loadNsPerTuple', 'rssBytesPerTuple', 'selfBytesPerTuple', 'idleCpuMsPerS', 'detectMs', 'clearCpuMs', 'maxPauseMs', 'stalledMs', 'leftFraction', 'measuredMs'] as const;
      for (const key of [...keys, ...(cleared ? ['cpuNsPerExpired' as const] : [])]) {
        const v = s[key];
        expect(v, `${c.name}.${key}`).not.toBeNull();
        for (const x of [v!.median, v!.min, v!.max]) expect(Number.isFinite(x), `${c.name}.${key}`).toBe(true);
        expect(v!.min).toBeLessThanOrEqual(v!.median);
        expect(v!.median).toBeLessThanOrEqual(v!.max);
      }
      expect(s.idleCpuMsPerS!.median).toBeGreaterThanOrEqual(0);
      expect(['memory()', 'pages', 'heap', 'used_memory']).toContain(c.selfMemory);
      const run = c.raw[0]!;
      expect(run.idle.ms).toBeGreaterThan(0);
      expect(run.pauses.windowMs).toBe(TINY.pauseWindow * 1000);
      // A contender that cleared everything has its clearing time; one that may leave a backlog says what it left.
      if (run.clear.left === 0 && run.clear.deleted === run.expired) {
        expect(Number.isFinite(run.clear.clearMs!), c.name).toBe(true);
        expect(run.clear.dueToClearedMs!).toBeGreaterThanOrEqual(run.clear.detectMs!);
      } else {
        expect(c.mayLeaveBacklog, `${c.name} left ${run.clear.left}`).toBe(true);
      }
      if (c.name === results.shapes[0]!.baseline) expect(c.vsBaseline).toBeNull();
      else if (cleared || clearedRuns === 0) expect(Number.isFinite(c.vsBaseline!.cpuNsPerExpired), c.name).toBe(cleared);
    }
  });

  test('ours reports memory() and the records its task checked; the tuned and the full-scan tasks clear everything', () => {
    const expired = Math.round(TUPLES * EXPIRED);
    for (const name of ['capped-indexed', 'capped-indexed-defaults', 'capped-scan']) {
      const c = byName(name);
      expect(c.ours).toBe(true);
      expect(c.selfMemory).toBe('memory()');
      expect(c.raw[0]!.memory.selfBytes).toBeGreaterThan(0);
    }
    const indexed = byName('capped-indexed');
    const scan = byName('capped-scan');
    for (const c of [indexed, scan]) expect(c.raw[0]!.clear.left).toBe(0);
    // The indexed task stops at the first live tuple; the full scan visits every tuple.
    expect(indexed.stats!.checked!.median).toBeGreaterThanOrEqual(expired);
    expect(indexed.stats!.checked!.median).toBeLessThan(TUPLES);
    expect(scan.stats!.checked!.median).toBeGreaterThanOrEqual(TUPLES);
    // The full-scan space has no TTL index to maintain, so it reports less memory.
    expect(scan.raw[0]!.memory.selfBytes).toBeLessThan(indexed.raw[0]!.memory.selfBytes);
  });

  test('writes latest.json (schema 2) with the machine, the flags, the shapes and the raw runs', () => {
    const json = JSON.parse(fs.readFileSync(path.join(out, 'latest.json'), 'utf8')) as BenchResults;
    expect(json.schema).toBe(2);
    expect(typeof json.date).toBe('string');
    expect(json.machine).toMatchObject({ cores: expect.any(Number), memoryBytes: expect.any(Number), node: process.version });
    expect(json.machine.loadAvg.start).toHaveLength(3);
    expect(json.flags).toMatchObject({ tuples: TUPLES, expired: EXPIRED, scanSize: 1024, scanTime: 0.25, repeat: 1, idle: 0.2 });
    expect(json.shapes).toHaveLength(1);
    const shape = json.shapes[0]!;
    expect(shape).toMatchObject({ tuples: TUPLES, fraction: EXPIRED, expired: Math.round(TUPLES * EXPIRED), live: TUPLES - Math.round(TUPLES * EXPIRED) });
    expect(shape.contenders.map((c) => c.name)).toEqual(contenders.map((c) => c.name));
    for (const c of shape.contenders) {
      if (c.skipped !== null) continue;
      expect(c.raw).toHaveLength(1);
      const run = c.raw[0]!;
      expect(run.load.ms).toHaveLength(2);
      expect(run.pauses.samples).toBeGreaterThan(0);
      expect(run).toMatchObject({ tuples: TUPLES, name: c.name, label: c.label });
      expect(run.memory).toMatchObject({ rssBytes: expect.any(Number), selfBytes: expect.any(Number), heapUsedBytes: expect.any(Number) });
    }
  });

  test('writes a self-contained latest.svg naming every contender that ran', () => {
    const svg = fs.readFileSync(path.join(out, 'latest.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).not.toMatch(/(href|src)=/);
    for (const c of contenders) if (c.skipped === null) expect(svg).toContain(c.label.replace(/&/g, '&amp;'));
    for (const title of ['CPU time per expired record', 'Due → gone', 'Idle CPU', 'Memory per record (RSS)']) expect(svg).toContain(title);
  });

  test('prints one table row per contender with the new columns and the ratio to the baseline', () => {
    const table = formatTable(results);
    for (const c of contenders) expect(table).toContain(c.label);
    for (const header of ['RSS B/rec', 'self B/rec', 'idle CPU/s', 'detect', 'due→gone', 'CPU ns/expired (min–max)', 'max stall (worst run)', '>5 ms stalls (worst run)']) {
      expect(table).toContain(header);
    }
    expect(table).not.toContain('p99');
    expect(table).toContain('baseline');
    expect(table).toMatch(/\d×/);
  });
});

describe('the sweep', () => {
  test('--sweep is sizes 100k and 1M × 1%, 10%, 50%, 100% expired; --with-10m adds 10M', () => {
    const sweep = resolveOptions(parseCommandLine(['--sweep'])!);
    expect(shapesOf(sweep)).toHaveLength(8);
    expect(sweep.sizes).toEqual([100_000, 1_000_000]);
    expect(sweep.fractions).toEqual([0.01, 0.1, 0.5, 1]);
    expect(resolveOptions(parseCommandLine(['--sweep', '--with-10m'])!).sizes).toEqual([100_000, 1_000_000, HUGE]);
    expect(shapesOf(resolveOptions(parseCommandLine([])!))).toEqual([{ tuples: 1_000_000, expired: 0.1 }]);
    expect(() => resolveOptions(parseCommandLine(['--fractions', '0.5,1.5'])!)).toThrow(/--fractions must be in \(0, 1\]/);
  });

  test('runs every shape with the contenders interleaved, and prints a sweep matrix', async () => {
    const sweepOut = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-bench-sweep-'));
    try {
      // A watch window too short for ours at its defaults (1,024 a second): what is left after it
      // is reported, then deleted outside the measurement, and the check still passes.
      const r = await runBench({
        ...TINY,
        window: 0.3,
        sizes: [3000],
        fractions: [0.5, 1],
        only: ['capped-indexed', 'capped-indexed-defaults', 'sqlite-single'],
        out: sweepOut,
      });
      expect(r.failures).toEqual([]);
      expect(r.ok).toBe(true);
      expect(r.shapes.map((s) => [s.tuples, s.fraction, s.expired])).toEqual([
        [3000, 0.5, 1500],
        [3000, 1, 3000],
      ]);
      for (const shape of r.shapes) {
        expect(shape.contenders.map((c) => c.name)).toEqual(['capped-indexed', 'capped-indexed-defaults', 'sqlite-single']);
        for (const c of shape.contenders) {
          const clear = c.raw[0]!.clear;
          if (c.name === 'capped-indexed-defaults') {
            expect(clear.left).toBeGreaterThan(0);
            expect(clear.deleted + clear.left).toBe(shape.expired);
            expect(c.stats!.clearMs).toBeNull();
          } else {
            expect(clear).toMatchObject({ left: 0, deleted: shape.expired });
          }
          expect(c.raw[0]!.verify).toEqual({ ok: true, errors: [] });
        }
      }
      expect(formatTable(r)).toContain('CPU ns/expired (× indexed)');
    } finally {
      fs.rmSync(sweepOut, { recursive: true, force: true });
    }
  }, 120_000);
});
