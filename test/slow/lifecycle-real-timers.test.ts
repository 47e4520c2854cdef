// The lifecycle cases that run on real time (moved from test/lifecycle.test.ts by issue 14, so that
// the fast files are deterministic; still run by `npm test` and CI): tasks started and killed on
// real timers, with nothing left behind, counted by the task's own timers (async_hooks) and, as a
// second check, the process's timer resources; and child processes that must (or must not) exit
// by themselves while a task runs (real processes, real time: a safety limit, not a timing
// assertion).
import { createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { Space, expirationd } from '../../src/index.js';

const { ensureDist } = createRequire(__filename)('../fixtures/dist.cjs') as { ensureDist: () => string };

const NOW = 1000;
const TOTAL = 60;
// Tuple i: [i, ttl, key]; two in three are expired, spread over every index order.
const isExpiredId = (i: number) => i % 3 !== 0;

function makeSpace(name = 'faults'): Space {
  const space = new Space(name);
  space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  space.createIndex('sk', { parts: [[3, 'string']] });
  for (let i = 0; i < TOTAL; i++) {
    space.insert([i, isExpiredId(i) ? NOW - 1 - i : NOW + 100 + i, `k${String((i * 919) % 1000).padStart(3, '0')}`]);
  }
  return space;
}

afterEach(() => {
  expirationd.killAll();
});

// ---------------------------------------------------------------------------------------------
// Many tasks: nothing left behind.
// ---------------------------------------------------------------------------------------------

function timerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length;
}

/**
 * Tracks the timers and immediates created from src/expirationd while it is enabled: `live()` is
 * how many of them were neither run nor cleared.
 */
function trackTaskTimers() {
  const live = new Set<number>();
  const hook = createHook({
    init(asyncId, type) {
      if ((type === 'Timeout' || type === 'Immediate') && /[\\/]expirationd[\\/]/.test(new Error().stack ?? '')) live.add(asyncId);
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  });
  hook.enable();
  return { live: () => live.size, disable: () => hook.disable() };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('many tasks started and killed', () => {
  test('keepAlive tasks killed in a loop leave no timer or immediate behind (real timers)', async () => {
    await tick();
    const before = timerResources();
    const tracked = trackTaskTimers();
    const space = makeSpace();
    const spaces = [space, makeSpace('second')];
    for (let round = 0; round < 300; round++) {
      const target = spaces[round % 2];
      const task = expirationd.start(`loop${round % 7}`, target, {
        rmIndex: 'pk', itIndex: 'exp', field: 2, keepAlive: true, scanSize: 3,
        iterationDelay: round % 3 === 0 ? 0 : 0.002, fullScanDelay: round % 5 === 0 ? 0 : 0.003,
      });
      if (round % 4 === 1) task.restart();
      if (round % 2 === 0) await tick();          // some are killed after a chunk ran, some before
      if (round % 6 === 0) expirationd.start(`loop${round % 7}`, target, { field: 2, keepAlive: true });
      if (round % 3 === 0) task.kill();
      else if (round % 3 === 1) expirationd.killAll();
      else expirationd.kill(task.name);
    }
    expirationd.killAll();
    expect(expirationd.tasks()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    tracked.disable();
    expect(tracked.live()).toBe(0);
    expect(timerResources()).toBeLessThanOrEqual(before);
    for (const s of spaces) s.checkIntegrity();
  });

  test('tasks ended by dropping their spaces leave no timer behind (real timers)', async () => {
    await tick();
    const before = timerResources();
    const tracked = trackTaskTimers();
    for (let round = 0; round < 100; round++) {
      const space = makeSpace(`drop${round}`);
      expirationd.start(`a${round % 3}`, space, { rmIndex: 'pk', itIndex: 'exp', field: 2, keepAlive: true, scanSize: 4 });
      expirationd.start(`b${round % 3}`, space, { rmIndex: 'pk', field: 2, keepAlive: true, iterationDelay: 0.001 });
      if (round % 2 === 0) await tick();
      space.drop();
    }
    expect(expirationd.tasks()).toEqual([]);
    await tick();
    tracked.disable();
    expect(tracked.live()).toBe(0);
    expect(timerResources()).toBeLessThanOrEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Processes.
// ---------------------------------------------------------------------------------------------

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'idle-task.cjs');
let dist = '';

beforeAll(() => {
  dist = ensureDist();
}, 180_000);

interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  line: { ready: boolean; chunks: number; expired: number; running: boolean; len: number } | undefined;
  stderr: string;
  aliveAfterReady?: boolean;
}

/**
 * Runs the fixture. Without `killAfterMs` it waits for the child to exit (failing after `limitMs`,
 * a safety net rather than a timing assertion); with it, it checks the child is still running that
 * long after its ready line and then kills it.
 */
function runFixture(mode: string, opts: { limitMs?: number; killAfterMs?: number } = {}): Promise<ChildRun> {
  const limitMs = opts.limitMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, dist, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let line: ChildRun['line'];
    let aliveAfterReady: boolean | undefined;
    const limit = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fixture '${mode}' did not exit within ${limitMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, limitMs);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (line === undefined && stdout.includes('\n')) {
        line = JSON.parse(stdout.slice(0, stdout.indexOf('\n')));
        if (opts.killAfterMs !== undefined) {
          setTimeout(() => {
            aliveAfterReady = child.exitCode === null && child.signalCode === null;
            child.kill('SIGKILL');
          }, opts.killAfterMs);
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      resolve({ code, signal, line, stderr, aliveAfterReady });
    });
  });
}

describe('a process with a running task', () => {
  test('exits by itself when it has nothing else to do (keepAlive: false)', async () => {
    const run = await runFixture('unref');
    expect(run.stderr).toBe('');
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500, len: 500 });
    expect(run.line?.chunks).toBeGreaterThanOrEqual(1);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  });

  test('does not exit by itself while a keepAlive: true task runs', async () => {
    const run = await runFixture('keepAlive', { killAfterMs: 1000 });
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500 });
    expect(run.aliveAfterReady).toBe(true);
    expect(run.signal).toBe('SIGKILL');
  });

  test.each(['kill', 'drop'])('exits by itself once its keepAlive task ends by %s', async (mode) => {
    const run = await runFixture(mode);
    expect(run.stderr).toBe('');
    expect(run.line).toMatchObject({ ready: true, running: true, expired: 500 });
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  });
});
