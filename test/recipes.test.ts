// Every program in examples/ runs to completion: exit status 0, nothing on stderr. The recipes
// assert their own behaviour with node:assert, so a recipe whose behaviour breaks exits non-zero
// here. The folder is listed, so a new example is covered without touching this file: .ts files
// run under tsx (as `npx tsx examples/<name>.ts` does), .mjs files under plain node (they import
// the built dist/, as a user of the package would).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const EXAMPLES = path.join(ROOT, 'examples');
const programs = fs.readdirSync(EXAMPLES).filter((f) => /\.(ts|mts|mjs|js|cjs)$/.test(f) && !f.endsWith('.d.ts')).sort();

describe('examples/', () => {
  test('holds the recipes of the README', () => {
    expect(programs).toEqual(expect.arrayContaining([
      'esm.mjs', 'event-log.ts', 'lock.ts', 'rate-limit-sliding.ts', 'rate-limit.ts', 'semaphore.ts', 'sessions.ts',
      'visitor-counter.ts',
    ]));
  });

  test.each(programs)('%s runs, asserts its own behaviour and exits 0 with nothing on stderr', (file) => {
    const typescript = /\.m?ts$/.test(file);
    const args = typescript ? ['--import', 'tsx', path.join(EXAMPLES, file)] : [path.join(EXAMPLES, file)];
    const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
    expect(run.error, `spawning ${file}`).toBeUndefined();
    expect({ status: run.status, signal: run.signal, stderr: run.stderr }, `stdout:\n${run.stdout}`)
      .toEqual({ status: 0, signal: null, stderr: '' });
  });
});
