// bench/floor.mjs, Node's own cost for the schedule of a paced pass (README, "The goals"). Times
// are never asserted, only what the script prints and that it refuses a mode it does not know.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const SCRIPT = path.resolve(__dirname, '..', 'bench', 'floor.mjs');
// The script runs plain Node code; the sanitizer runtime that test:asan preloads is not needed.
const ENV = { ...process.env };
delete ENV.LD_PRELOAD;

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', env: ENV, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bench/floor.mjs', () => {
  test('cold: one line per call, the time after a 10 ms sleep and back to back', () => {
    const r = run('cold');
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.map((l) => l.slice(0, l.lastIndexOf(': ')))).toEqual(['process.hrtime()', 'Buffer.alloc(16)', `JSON.parse('{"a":[1,2,3]}')`]);
    for (const line of lines) {
      const m = /: ([\d.]+) µs after a 10 ms sleep, ([\d.]+) µs back to back \(medians\)$/.exec(line);
      expect(m, line).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThan(0);
      expect(Number(m![2])).toBeGreaterThan(0);
    }
  });

  test('a schedule mode prints each round and the median of the warm ones', () => {
    const r = run('nopoll', '--wakeups', '5', '--rounds', '2');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^nopoll round 1: [\d.]+ ms CPU, \d+ ms wall$/m);
    expect(r.stdout).toMatch(/^nopoll round 2: [\d.]+ ms CPU, \d+ ms wall$/m);
    expect(r.stdout).toMatch(/^nopoll, 5 wake-ups: median of the warm rounds [\d.]+ ms CPU$/m);
  });

  test('refuses an unknown mode and a bad count', () => {
    const bad = run('fast');
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('mode must be one of all, nopoll, poll, timers, hops, idle, cold, got fast');
    const count = run('nopoll', '--wakeups', '0');
    expect(count.status).not.toBe(0);
    expect(count.stderr).toContain('--wakeups must be a positive integer');
  });
});
