// The vitest config Stryker runs (stryker.config.mjs). Stryker's vitest runner forces
// pool 'threads' with one worker, so every test file below loads the addon in a worker thread.
// Left out: the files that only exercise other processes or the build (they cannot see a mutant
// in src/, which Stryker instruments in its sandbox, and they cost minutes each):
//   bench*.test.ts        run the benchmarks (minutes; figures, not assertions on src/)
//   native-engine.test.ts compiles and runs the C++ engine tests
//   packaging, types      npm pack / tsc over dist/
//   gc, hash-tombstones   child processes over dist/
//   workers, worker-termination, shared-buffer   Worker threads over dist/ fixtures
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
