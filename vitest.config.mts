import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // HASH indexes hash with a random seed per process (native/engine/key_def.cc); the tests fix
    // it, so that every run meets the same HASH orders (test/hash-seed.test.ts checks both).
    env: { CAPPED_EXPIRATIOND_HASH_SEED: '0' },
  },
});
