// `npm run bench`: parses the flags, runs the benchmark, prints the table on stdout, and exits
// non-zero with a clear message when a contender failed to run or failed its correctness check.
import { parseCommandLine, USAGE } from './lib/options.js';
import { runBench } from './lib/run.js';
import { formatTable } from './lib/table.js';

async function main(): Promise<number> {
  let partial;
  try {
    partial = parseCommandLine(process.argv.slice(2));
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
  return 0;
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
