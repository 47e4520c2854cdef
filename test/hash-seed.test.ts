// HASH indexes hash keys with a seed drawn at random once per process (native/engine/key_def.cc),
// so that keys an attacker computed to collide for one process do not collide in another.
// CAPPED_EXPIRATIOND_HASH_SEED fixes it (the test suite runs with 0, vitest.config.mts). Each
// check runs in fresh `node` processes, since the seed is drawn once per process.
// `node scripts/hash-flood.mjs` shows what the seed is for: keys made to collide under a known
// seed, inserted with that seed and with a random one.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');

// The order in which a HASH index walks 2,000 integer keys and 2,000 string keys (ALL).
const PROBE = `
const { Space } = require(${JSON.stringify(path.join(ROOT, 'dist', 'index.js'))});
const out = [];
for (const type of ['unsigned', 'string']) {
  const s = new Space('seed-' + type);
  s.createIndex('pk', { type: 'HASH', parts: [[1, type]] });
  for (let i = 0; i < 2000; i++) s.insert([type === 'unsigned' ? i : 'key-' + i, i]);
  out.push(s.select().map((t) => t[1]).join(','));
  s.checkIntegrity();
}
console.log(JSON.stringify(out));
`;

function hashOrders(seed: string | undefined): string[] {
  const env = { ...process.env };
  if (seed === undefined) delete env.CAPPED_EXPIRATIOND_HASH_SEED;
  else env.CAPPED_EXPIRATIOND_HASH_SEED = seed;
  const out = execFileSync(process.execPath, ['-e', PROBE], { env, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out.trim().split('\n').pop() as string) as string[];
}

describe('the hash seed', () => {
  it('is drawn at random per process: two processes walk the same keys in different orders', () => {
    const a = hashOrders(undefined);
    const b = hashOrders(undefined);
    expect(a[0]).not.toBe(b[0]);
    expect(a[1]).not.toBe(b[1]);
    // The same keys, every one of them, whatever the order.
    for (const orders of [a, b]) {
      for (const order of orders) expect(order.split(',').map(Number).sort((x, y) => x - y)).toEqual([...Array(2000).keys()]);
    }
  });

  it('CAPPED_EXPIRATIOND_HASH_SEED fixes it: the same seed gives the same order, another seed another', () => {
    const zero = hashOrders('0');
    expect(hashOrders('0')).toEqual(zero);
    const other = hashOrders('12345');
    expect(other[0]).not.toBe(zero[0]);
    expect(other[1]).not.toBe(zero[1]);
    expect(hashOrders('12345')).toEqual(other);
  });
});
