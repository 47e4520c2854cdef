// The type tests (test/types/*.ts, *.mts) compile: every positive case type-checks and every
// `@ts-expect-error` line is an error, so a type that becomes looser or stricter than the tests
// say fails here. Same check as `npm run test:types`.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, test } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const TYPES = path.join(ROOT, 'test', 'types');

test('tsc --noEmit -p test/types/tsconfig.json passes, and checks every file of test/types', () => {
  const env = { ...process.env };
  delete env.LD_PRELOAD;  // tsc never loads the addon (see packaging.test.ts)
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const run = spawnSync(process.execPath, [tsc, '--noEmit', '--listFiles', '-p', path.join(TYPES, 'tsconfig.json')], {
    cwd: ROOT, env, encoding: 'utf8', timeout: 120_000,
  });
  const listed = run.stdout.split('\n').filter((line) => line.startsWith(TYPES));
  const errors = run.stdout.split('\n').filter((line) => line.includes('error TS'));
  expect({ status: run.status, errors, stderr: run.stderr }).toEqual({ status: 0, errors: [], stderr: '' });
  const files = fs.readdirSync(TYPES).filter((f) => /\.m?ts$/.test(f)).map((f) => path.join(TYPES, f));
  expect(files.length).toBeGreaterThanOrEqual(3);
  expect(listed.sort()).toEqual(files.sort());
});
