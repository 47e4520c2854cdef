// `npm run bench`: parses the flags, runs the benchmark, prints the table on stdout, and exits
// non-zero with a clear message when a contender failed to run or failed its correctness check.
// Then, unless --no-keepup, the short form of `npm run bench:keepup` (a steady stream of expiring
// records against our defaults and the caches) runs in a child process and prints its own table.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseCommandLine, USAGE } from './lib/options.js';
import { runBench } from './lib/run.js';
import { formatTable } from './lib/table.js';

// The keep-up benchmark's short form, as its own process (it forks its contenders itself).
function runKeepup(): number {
  process.stdout.write('\n== keep-up under a steady stream (npm run bench:keepup -- --quick)\n');
  const script = path.join(__dirname, 'keepup.ts');
  const tsx = pathToFileURL(require.resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, script, '--quick'], { stdio: 'inherit' });
  return r.status ?? 1;
}

async function main(): Promise<number> {
  let partial;
  const args = process.argv.slice(2);
  const keepup = !args.includes('--no-keepup');
  try {
    partial = parseCommandLine(args.filter((a) => a !== '--no-keepup'));
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (partial === null) {
    process.stdout.write(USAGE);
    return 0;
  }
  let results;
  try {
    results = await runBench(partial);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    process.stderr.write(`bench: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  process.stdout.write(`\n${formatTable(results)}`);
  if (results.files) process.stdout.write(`\nwrote ${results.files.json}\nwrote ${results.files.svg}\n`);
  if (!results.ok) {
    const failed = [...new Set(results.shapes.flatMap((s) => s.contenders.filter((c) => !c.ok).map((c) => c.name)))];
    process.stderr.write(
      `\nbench: FAILED: ${failed.join(', ')} did not complete or left the data wrong (see the ERROR lines above)\n`,
    );
    return 1;
  }
  return keepup && !partial.sweep ? runKeepup() : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
