// The long fuzz run: the properties of test/fuzz-*.test.ts and test/stress-daemon.test.ts, in
// batches with fresh seeds, for a number of minutes.
//
//   npm run fuzz -- --minutes 5 [--only <text>] [--batch <runs>] [--stats]
//
// --only keeps the properties whose name or file contains <text>; --batch sets the runs of one
// batch (default 2000, scaled by each property's weight); --stats prints how often each call
// succeeded or failed with each code. A failing property is reported with its seed, path,
// shrunk counterexample and the command that replays it under vitest, and is not run again; the
// others go on until the time is up. The exit code is 1 when any property failed.
import fc from 'fast-check';
import { PROPERTIES, countOutcomes, installManualTimers, outcomeCounts, runsFor, type FuzzProperty } from './properties.js';

interface Args { minutes: number; only: string | undefined; batch: number; stats: boolean }

function parseArgs(argv: string[]): Args {
  const args: Args = { minutes: 1, only: undefined, batch: 2000, stats: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--minutes') args.minutes = Number(value());
    else if (a === '--only') args.only = value();
    else if (a === '--batch') args.batch = Number(value());
    else if (a === '--stats') args.stats = true;
    else if (a === '--help' || a === '-h') {
      console.log('usage: tsx test/fuzz/run.ts [--minutes N] [--only TEXT] [--batch RUNS] [--stats]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!(args.minutes > 0)) throw new Error('--minutes must be a positive number');
  if (!(Number.isInteger(args.batch) && args.batch > 0)) throw new Error('--batch must be a positive integer');
  return args;
}

const TEST_FILE: Record<FuzzProperty['file'], string> = {
  msgpack: 'test/fuzz-msgpack.test.ts',
  keys: 'test/fuzz-keys.test.ts',
  options: 'test/fuzz-options.test.ts',
  stress: 'test/stress-daemon.test.ts',
};

function report(p: FuzzProperty, details: fc.RunDetails<unknown>): void {
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  const path = details.counterexamplePath ?? '';
  console.log([
    '',
    `FAILED: ${p.name}`,
    `  seed ${details.seed}, path ${path}, after ${details.numRuns} runs, shrunk ${details.numShrinks} times`,
    `  counterexample: ${fc.stringify(details.counterexample)}`,
    `  ${error.split('\n').join('\n  ')}`,
    `  replay: FUZZ_SEED=${details.seed} FUZZ_PATH=${path} npx vitest run ${TEST_FILE[p.file]} -t ${JSON.stringify(p.name)}`,
    '',
  ].join('\n'));
}

function main(): number {
  const args = parseArgs(process.argv.slice(2));
  const chosen = PROPERTIES.filter((p) => args.only === undefined || p.name.includes(args.only) || p.file.includes(args.only));
  if (chosen.length === 0) throw new Error(`no property matches ${args.only}`);
  countOutcomes(args.stats);
  const timers = installManualTimers();
  const started = Date.now();
  const deadline = started + args.minutes * 60_000;
  const cases = new Map<FuzzProperty, number>();
  const failed = new Set<FuzzProperty>();
  let lastProgress = 0;
  try {
    console.log(`fuzzing ${chosen.length} properties for ${args.minutes} min (batches of ${args.batch} runs, scaled by weight)`);
    while (Date.now() < deadline && failed.size < chosen.length) {
      for (const p of chosen) {
        if (failed.has(p) || Date.now() >= deadline) continue;
        const seed = (Math.random() * 2 ** 32) | 0;
        const numRuns = runsFor(p, args.batch);
        const details = fc.check(p.build(() => timers), { seed, numRuns }) as unknown as fc.RunDetails<unknown>;
        cases.set(p, (cases.get(p) ?? 0) + details.numRuns);
        if (details.failed) {
          failed.add(p);
          report(p, details);
        }
        if (Date.now() - lastProgress > 10_000) {
          lastProgress = Date.now();
          const total = [...cases.values()].reduce((a, b) => a + b, 0);
          console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${total} cases, ${failed.size} failing properties`);
        }
      }
    }
  } finally {
    timers.uninstall();
  }
  console.log(`\ndone in ${((Date.now() - started) / 1000).toFixed(0)} s:`);
  for (const p of chosen) console.log(`  ${failed.has(p) ? 'FAIL' : 'ok  '} ${String(cases.get(p) ?? 0).padStart(9)} cases  ${p.name}`);
  if (args.stats) {
    console.log('\noutcomes:');
    for (const [k, v] of [...outcomeCounts].sort()) console.log(`  ${String(v).padStart(9)}  ${k}`);
  }
  return failed.size > 0 ? 1 : 0;
}

process.exitCode = main();
