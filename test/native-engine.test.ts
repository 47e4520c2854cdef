// The engine's C++ tests (native/test/*_test.cc) as part of `npm test` (issue 14): compiled and
// run once by `native/test/run.sh --quick` (no sanitizers, the production allocators, -O1; about
// 45 s on 2 cores), one vitest case per program. CI also runs them under ASan + UBSan in both
// allocator builds (`bash native/test/run.sh`). Some engine bugs only these catch every time, such
// as a B+tree cursor successor off by one that the randomized B+tree stress test meets at once.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';

const root = path.resolve(__dirname, '..');
const programs = fs.readdirSync(path.join(root, 'native/test'))
  .filter((f) => f.endsWith('_test.cc'))
  .map((f) => f.slice(0, -'.cc'.length))
  .sort();

let output = '';
let status: number | null = null;

// Under `npm run test:asan` (which sets CE_ASAN_REPORTS) these are skipped: that run preloads
// libasan into every child process, compilers included, and CI runs the sanitized native tests
// itself (`bash native/test/run.sh`).
describe.skipIf(process.env.CE_ASAN_REPORTS !== undefined)('native engine tests (native/test/run.sh --quick)', () => {
  beforeAll(() => {
    const r = spawnSync('bash', [path.join(root, 'native/test/run.sh'), '--quick'], {
      cwd: root,
      env: { ...process.env, LD_PRELOAD: '' },
      encoding: 'utf8',
      timeout: 540_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `\n${String(r.error)}` : ''}`;
    status = r.status;
  }, 600_000);

  test('there are native test programs', () => {
    expect(programs.length).toBeGreaterThan(5);
  });

  for (const name of programs) {
    test(name, () => {
      // run.sh prints "<name> (pool)" before each program and stops at the first that fails
      // (which prints FAIL and its seed): a program passed when the run went past it.
      const headers = [...output.matchAll(/^(\w+_test) \(pool\)$/gm)].map((m) => m[1]);
      const at = headers.indexOf(name);
      const ok = at !== -1 && (at + 1 < headers.length || status === 0);
      expect(ok, `${name} did not pass; run.sh exited ${String(status)}; output:\n${output.slice(-6000)}`).toBe(true);
    });
  }

  test('run.sh exits 0', () => {
    expect(status, output.slice(-6000)).toBe(0);
  });
});
