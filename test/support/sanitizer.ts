// What tests need to know about `npm run test:asan` (scripts/test-asan.sh), which runs them
// against the sanitizer build of the addon.

/**
 * The sanitizer build (CAPPED_EXPIRATIOND_ADDON, CE_TUPLE_MALLOC): every tuple, B+tree node and
 * HASH table is its own malloc block, so memory() counts what is live, not slabs, pools or pages.
 */
export const PER_TUPLE_MALLOC = process.env.CAPPED_EXPIRATIOND_ADDON !== undefined;

/**
 * The environment for a child process whose RSS a test checks: under the sanitizer the child
 * inherits ASan, and a small quarantine keeps it from holding on to 256 MB of freed blocks, so
 * that RSS follows what is really live.
 */
export function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (env.ASAN_OPTIONS !== undefined) env.ASAN_OPTIONS = `${env.ASAN_OPTIONS}:quarantine_size_mb=16`;
  return env;
}
