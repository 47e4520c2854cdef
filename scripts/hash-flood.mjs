// scripts/hash-flood.mjs: what the HASH index's random seed is for (native/engine/key_def.cc).
//
//   npm run build && node scripts/hash-flood.mjs [--keys 40000]
//
// The hash of an 'unsigned' key is a bijection of the key for a known seed, so keys whose hashes
// share their top 32 bits (one home slot in any table under 2^32 slots) can be computed: inverting
// mix() twice. This script computes --keys of them for seed 0, then inserts them, and then looks
// each up, in a HASH space of a fresh process: once with CAPPED_EXPIRATIOND_HASH_SEED=0 (the seed
// they were made for: one probe cluster, every insert walks it) and once with the default random
// seed (they spread as any keys do). It prints the wall time of each.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const i = process.argv.indexOf('--keys');
const KEYS = i >= 0 ? Number(process.argv[i + 1]) : 40_000;
if (!Number.isInteger(KEYS) || KEYS < 1) throw new Error('scripts/hash-flood.mjs: --keys must be a positive integer');

const M = (1n << 64n) - 1n;
const C1 = 0xbf58476d1ce4e5b9n;
const C2 = 0x94d049bb133111ebn;
function inverse(a) {  // of an odd a, mod 2^64 (Newton's iteration)
  let x = a;
  for (let k = 0; k < 6; k++) x = (x * (2n - a * x)) & M;
  return x;
}
const I1 = inverse(C1);
const I2 = inverse(C2);
const unshift = (y, s) => {  // the inverse of y ^= y >> s
  let x = y;
  for (let k = s; k < 64; k += s) x = y ^ (x >> BigInt(s));
  return x & M;
};
// key_def.cc's mix(), inverted.
const unmix = (h) => unshift((unshift((unshift(h, 31) * I2) & M, 27) * I1) & M, 30);
const mix = (z) => {
  z = ((z ^ (z >> 30n)) * C1) & M;
  z = ((z ^ (z >> 27n)) * C2) & M;
  return z ^ (z >> 31n);
};
// Seed 0, one 'unsigned' part: hash = mix(0 * 31 + mix(key)).
const keys = [];
for (let n = 0; keys.length < KEYS; n++) {
  const h = (0x9e3779b9n << 32n) | BigInt(n);
  const key = unmix(unmix(h));
  if (mix(mix(key)) !== h) throw new Error('mix() inverted wrongly');
  keys.push(key.toString());
}

const child = `
const { Space } = require(${JSON.stringify(path.join(ROOT, 'dist', 'index.js'))});
const keys = JSON.parse(require('fs').readFileSync(0, 'utf8')).map(BigInt);
const s = new Space('flood');
s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
let t0 = performance.now();
for (let i = 0; i < keys.length; i++) s.insert([keys[i], i]);
const insert = performance.now() - t0;
t0 = performance.now();
for (let i = 0; i < keys.length; i++) if (s.get(keys[i]) === undefined) throw new Error('lost a key');
const get = performance.now() - t0;
console.log(JSON.stringify({ insert, get }));
`;
for (const [label, seed] of [['seed 0 (the keys were made for it)', '0'], ['random seed (the default)', undefined]]) {
  const env = { ...process.env };
  if (seed === undefined) delete env.CAPPED_EXPIRATIOND_HASH_SEED;
  else env.CAPPED_EXPIRATIOND_HASH_SEED = seed;
  const out = execFileSync(process.execPath, ['-e', child], { env, input: JSON.stringify(keys), encoding: 'utf8', maxBuffer: 1 << 26 });
  const { insert, get } = JSON.parse(out.trim().split('\n').pop());
  console.log(`${KEYS} keys made to collide for seed 0, ${label}: insert ${insert.toFixed(0)} ms, get ${get.toFixed(0)} ms`);
}
