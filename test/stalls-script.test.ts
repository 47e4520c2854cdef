// scripts/stalls.mjs runs end to end on a tiny load in each mode (our space from dist/, and the two
// no-store controls): it exits 0 and ends with its summary line, each count a number; an unknown
// mode is refused with its usage. Times are never asserted.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const run = (...args: string[]) =>
  spawnSync(process.execPath, ['--expose-gc', 'scripts/stalls.mjs', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });

describe('scripts/stalls.mjs, tiny', () => {
  test.each(['store', 'growth', 'random'])('%s: exits 0 with its summary line', (mode) => {
    const r = run(mode, '20000');
    expect(r.status, r.stderr).toBe(0);
    const last = r.stdout.trim().split('\n').pop() ?? '';
    expect(last).toMatch(new RegExp(`^${mode}: 20000 calls; over 1 ms \\d+, of them during a V8 GC \\d+; outside a GC: ` +
      'over 2 ms \\d+, over 5 ms \\d+, longest (none over 1 ms|\\d+\\.\\d\\d ms); ' +
      'less the vCPU\'s time not running: over 5 ms \\d+, longest (none over 1 ms|\\d+\\.\\d\\d ms); ' +
      'steal time during the run \\d+ ms$'));
  }, 130_000);

  test('an unknown mode or a bad count is refused with the usage', () => {
    for (const args of [['nope'], ['store', '0'], ['growth', 'x']]) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/usage: node --expose-gc scripts\/stalls\.mjs/);
    }
  });
});
