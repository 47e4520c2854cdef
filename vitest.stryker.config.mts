// The vitest config Stryker runs (stryker.config.mjs). Stryker's vitest runner forces
// pool 'threads' with one worker, so every test file below loads the addon in a worker thread.
// Left out: the files whose work happens in another process or thread, or in the build (a
// mutant is switched on only inside the test's own thread, so they cannot see it), or that test
// the native engine alone; most of them cost minutes:
//   bench*.test.ts        run the benchmarks (minutes; figures, not assertions on src/)
//   native-engine.test.ts compiles and runs the C++ engine tests
//   packaging, types      npm pack / tsc over dist/
//   gc, hash-tombstones   child processes over dist/
//   workers, worker-termination   Worker threads over dist/
//   shared-buffer         the addon's validation of bytes another thread mutates (raw handle)
//   recipes               runs examples/ as child processes
// The main suite (vitest.config.mts) is unchanged.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      '**/node_modules/**',
      'test/bench*.test.ts',
      'test/native-engine.test.ts',
      'test/packaging.test.ts',
      'test/types.test.ts',
      'test/gc.test.ts',
      'test/hash-tombstones.test.ts',
      'test/workers.test.ts',
      'test/worker-termination.test.ts',
      'test/shared-buffer.test.ts',
      'test/recipes.test.ts',
      'test/slow/**',
    ],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
