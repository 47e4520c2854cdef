// bench/anchor-poll.lua, the anchor's stop loop alone (bench/anchor.ts runs it after each
// Tarantool round to show what the poll itself costs there). Needs tarantool on the PATH; where
// it is missing the test is skipped, as the anchor columns are. Times are never asserted, only
// the loop's shape: it runs for the wall time asked, sleeps 10 ms a poll, and prints its CPU.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const SCRIPT = path.join(ROOT, 'bench', 'anchor-poll.lua');
// tarantool runs without the sanitizer runtime that test:asan preloads into node: preloaded into
// tarantool, it hangs (its fibers switch stacks under ASan's feet).
const ENV = { ...process.env };
delete ENV.LD_PRELOAD;
const hasTarantool = spawnSync('tarantool', ['--version'], { encoding: 'utf8', env: ENV, timeout: 30_000 }).status === 0;

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'anchor-poll-test-'));
  try {
    const r = spawnSync('tarantool', [SCRIPT, ...args], {
      cwd: dir, encoding: 'utf8', env: { ...ENV, TT_WORKDIR: dir }, timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!hasTarantool)('bench/anchor-poll.lua', () => {
  test('polls for the wall time asked, one poll per 10 ms sleep, and prints its CPU', () => {
    const r = run('300');
    expect(r.status, r.stderr).toBe(0);
    const m = /^poll wall ([\d.]+) s, cpu ([\d.]+) s, polls (\d+)$/m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    const [wall, cpu, polls] = [Number(m![1]), Number(m![2]), Number(m![3])];
    expect(wall).toBeGreaterThanOrEqual(0.3);
    expect(polls).toBeGreaterThanOrEqual(1);
    // Each poll sleeps 10 ms (libev may wake a little early): about 30, and never a busy loop.
    expect(polls).toBeLessThanOrEqual(40);
    expect(cpu).toBeGreaterThan(0);
  });

  test('refuses a missing or non-positive wall time', () => {
    for (const args of [[], ['0'], ['-5'], ['soon']]) {
      const r = run(...args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr + r.stdout).toContain('usage: tarantool anchor-poll.lua WALL_MS');
    }
  });
});
