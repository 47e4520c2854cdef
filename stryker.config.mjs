// Stryker mutation testing of the TypeScript layer (src/): `npm run mutate:stryker`.
// Complements the curated mutants of scripts/mutate.ts (which also covers the C++ engine).
// The vitest runner runs vitest.stryker.config.mts (see there for the test files left out).
//   MUTATE=src/a.ts,src/b.ts   narrows the run (default: all of src/);
//   STRYKER_CONCURRENCY=n      test-runner processes (default 1: the box is shared);
//   STRYKER_REPORT=name        reports/mutation/<name>.json|.html (default "mutation"), written at
//                              the end; <name>-events/ gets one file per mutant as it is tested
//                              (the event-recorder reporter), so an interrupted run keeps its results.
// Cost (docs/stryker.md): the dry run is ~3 min; a mutant costs ~10 s (killed) to minutes
// (survived: every covering test file runs), so a run over all of src/ takes hours on 2 cores.
const mutate = process.env.MUTATE
  ? process.env.MUTATE.split(',')
  : ['src/**/*.ts', '!src/index.ts', '!src/expirationd/registry.ts'];
const report = `reports/mutation/${process.env.STRYKER_REPORT ?? 'mutation'}`;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.stryker.config.mts', related: true },
  coverageAnalysis: 'perTest',
  mutate,
  concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 1),
  timeoutMS: 60_000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'progress', 'json', 'html', 'event-recorder'],
  jsonReporter: { fileName: `${report}.json` },
  htmlReporter: { fileName: `${report}.html` },
  eventReporter: { baseDir: `${report}-events` },
  ignorePatterns: ['bench/results', 'build-asan', 'reports', 'docs'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
