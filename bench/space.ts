// bench/space.ts: what a Space costs per tuple, at 1M tuples [id, 'user<id>@tarantool.io', exp]
// with a HASH primary and a non-unique TREE on field 3 (the expiration index).
//
//   npm run bench:space [-- --tuples 1000000 --rounds 3]
//
// Prints ns per single insert(), per tuple in insertMany() (batches of 10k), per get() of a
// random id, and native bytes per tuple from space.memory(). Each figure is the median of
// --rounds fresh runs in this process. Then a counter at --update-keys keys (default 100k):
// update(key, [['+', 2, 1]]) against get() + replace() of the whole tuple and a plain Map,
// interleaved round by round so that a busy machine slows all three alike.
//
// `get, TTL space`: the same get() on a TTL-aware space (new Space(name, { ttl: { field: 3 } }),
// wall clock, every tuple live, so each get reads the clock and checks the TTL natively). It is
// timed interleaved with a plain get over an identical plain space, pass for pass, so that both
// see the same machine; the row prints both medians and their ratio, in wall time and in process
// CPU time (the second line), which a machine shared with other work distorts less.
//
// `floor` rows: what a binding call costs with no space behind it (native testing.floorTuple: a
// number in, a tuple written into the scratch Buffer as get() writes it, its byte count out),
// alone, then with the tuple decoded as get() decodes it (decodeOne), then with msgpackr's
// unpack instead. The get floor is timed in the same interleaved passes as the gets (the bench's
// 3-field tuple shape), the update floor in the counter rounds (a 2-field [id, n]); the part of a
// get or an update that is ours, past what any such call pays, is the difference.
import { Unpackr } from 'msgpackr';
import { Space } from '../src/index.js';
import { native } from '../src/native/loader.js';
import { decodeOne, scratchBuffer } from '../src/native/codec.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const N = flag('tuples', 1_000_000);
const ROUNDS = flag('rounds', 3);
const BATCH = 10_000;
const NOW = Math.floor(Date.now() / 1000);

function tuples(): unknown[][] {
  const out: unknown[][] = new Array(N);
  let seed = 12345;
  for (let i = 0; i < N; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    out[i] = [i, `user${i}@tarantool.io`, NOW + (seed % 3600)];
  }
  return out;
}

function makeSpace(ttl = false): Space {
  const space = new Space('bench', ttl ? { ttl: { field: 3 } } : undefined);
  space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  return space;
}

// Wall ns per op; the process CPU ns per op of the same call is left in lastCpu (what a shared,
// busy machine distorts less: the rows that print it read it right after).
let lastCpu = 0;
function nsPer(count: number, fn: () => void): number {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  fn();
  const wall = Number(process.hrtime.bigint() - t0) / count;
  const c = process.cpuUsage(c0);
  lastCpu = (c.user + c.system) * 1000 / count;
  return wall;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const data = tuples();
// The same tuples a day later, so that none expires while the TTL rows run.
const live = data.map(([id, email, exp]) => [id, email, (exp as number) + 86_400]);
const keys = Array.from({ length: N }, (_, i) => (i * 7919) % N);
const results = { insert: [] as number[], insertMany: [] as number[], get: [] as number[], bytes: [] as number[],
  tupleBytes: [] as number[], indexBytes: [] as number[], plainGet: [] as number[], ttlGet: [] as number[],
  plainGetCpu: [] as number[], ttlGetCpu: [] as number[],
  floorCall: [] as number[], floorDecode: [] as number[], floorUnpack: [] as number[], floorDecodeCpu: [] as number[] };

const floorTuple = native.testing.floorTuple;
const unpackr = new Unpackr({ useRecords: false, copyBuffers: true });  // as src/native/codec.ts's

// The floor under a read of a tuple of this shape (wide: the bench's 3 fields; else [id, n]).
// mode 0: the call alone; 1: and decodeOne; 2: and msgpackr's unpack.
function floorPass(ids: number[], count: number, wide: boolean, mode: 0 | 1 | 2): number {
  let seen = 0;
  const ns = nsPer(count, () => {
    for (let i = 0; i < count; i++) {
      const r = floorTuple(ids[i], scratchBuffer(), wide);
      if (mode === 0) seen += typeof r === 'number' ? 1 : 0;
      else if (mode === 1) seen += (decodeOne(r) as unknown[]).length;
      else seen += (unpackr.unpack(scratchBuffer(), r as number) as unknown[]).length;
    }
  });
  if (seen !== count * (mode === 0 ? 1 : wide ? 3 : 2)) throw new Error(`floor pass saw ${seen}`);
  return ns;
}

function getPass(space: Space): number {
  let found = 0;
  const ns = nsPer(N, () => { for (let i = 0; i < N; i++) if (space.get(keys[i]) !== undefined) found++; });
  if (found !== N) throw new Error(`get() found ${found} of ${N}`);
  return ns;
}

for (let round = 0; round < ROUNDS; round++) {
  const a = makeSpace();
  results.insert.push(nsPer(N, () => { for (let i = 0; i < N; i++) a.insert(data[i]); }));
  const m = a.memory();
  results.bytes.push(m.total / N);
  results.tupleBytes.push(m.tuples / N);
  results.indexBytes.push(m.indexes / N);
  let found = 0;
  results.get.push(nsPer(N, () => { for (let i = 0; i < N; i++) if (a.get(keys[i]) !== undefined) found++; }));
  if (found !== N) throw new Error(`get() found ${found} of ${N}`);
  a.drop();
  const p = makeSpace();
  const t = makeSpace(true);
  for (let i = 0; i < N; i += BATCH) p.insertMany(live.slice(i, i + BATCH));
  for (let i = 0; i < N; i += BATCH) t.insertMany(live.slice(i, i + BATCH));
  for (let pass = 0; pass < 3; pass++) {  // interleaved: TTL, plain, TTL, plain, ...
    results.ttlGet.push(getPass(t));
    results.ttlGetCpu.push(lastCpu);
    results.plainGet.push(getPass(p));
    results.plainGetCpu.push(lastCpu);
    results.floorCall.push(floorPass(keys, N, true, 0));
    results.floorDecode.push(floorPass(keys, N, true, 1));
    results.floorDecodeCpu.push(lastCpu);
    results.floorUnpack.push(floorPass(keys, N, true, 2));
  }
  t.drop();
  p.drop();

  const b = makeSpace();
  results.insertMany.push(nsPer(N, () => { for (let i = 0; i < N; i += BATCH) b.insertMany(data.slice(i, i + BATCH)); }));
  if (b.len() !== N) throw new Error('insertMany lost tuples');
  b.drop();
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}

const UPDATE_KEYS = flag('update-keys', 100_000);
const UPDATE_OPS = 1_000_000;
const counters = { update: [] as number[], getReplace: [] as number[], map: [] as number[], updateCpu: [] as number[],
  floor: [] as number[], floorCpu: [] as number[] };
{
  const c = new Space('counters');
  c.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  const map = new Map<number, [number, number]>();
  for (let i = 0; i < UPDATE_KEYS; i++) {
    c.insert([i, 0]);
    map.set(i, [i, 0]);
  }
  const ks = Array.from({ length: UPDATE_OPS }, (_, i) => (i * 7919) % UPDATE_KEYS);
  const ops: Array<['+', number, number]> = [['+', 2, 1]];
  for (let round = 0; round < Math.max(ROUNDS, 5); round++) {
    counters.update.push(nsPer(UPDATE_OPS, () => { for (let i = 0; i < UPDATE_OPS; i++) c.update(ks[i], ops); }));
    counters.updateCpu.push(lastCpu);
    counters.floor.push(floorPass(ks, UPDATE_OPS, false, 1));
    counters.floorCpu.push(lastCpu);
    counters.getReplace.push(nsPer(UPDATE_OPS, () => {
      for (let i = 0; i < UPDATE_OPS; i++) {
        const t = c.get(ks[i]) as [number, number];
        c.replace([t[0], t[1] + 1]);
      }
    }));
    counters.map.push(nsPer(UPDATE_OPS, () => {
      for (let i = 0; i < UPDATE_OPS; i++) {
        const t = map.get(ks[i]) as [number, number];
        map.set(ks[i], [t[0], t[1] + 1]);
      }
    }));
  }
  const total = c.select().reduce((sum, t) => sum + (t[1] as number), 0);
  if (total !== 2 * UPDATE_OPS * counters.update.length) throw new Error(`counters lost updates: ${total}`);
  c.drop();
}

const fmt = (x: number) => x.toFixed(0).padStart(6);
console.log(`Space: ${N.toLocaleString('en-US')} tuples, HASH pk + non-unique TREE on field 3, median of ${ROUNDS} rounds`);
console.log(`  insert()              ${fmt(median(results.insert))} ns/tuple   (target <= 500)`);
console.log(`  insertMany() batch 10k ${fmt(median(results.insertMany))} ns/tuple   (target <= 250)`);
console.log(`  get() random id       ${fmt(median(results.get))} ns/op      (target <= 300)`);
const plain = median(results.plainGet);
const ttl = median(results.ttlGet);
console.log(`  get, TTL space        ${fmt(ttl)} ns/op      (plain get interleaved ${plain.toFixed(0)} ns/op: ${((ttl / plain - 1) * 100).toFixed(1)}%; target <= +5%)`);
const plainCpu = median(results.plainGetCpu);
const ttlCpu = median(results.ttlGetCpu);
console.log(`    in process CPU      ${fmt(ttlCpu)} ns/op      (plain get ${plainCpu.toFixed(0)} ns/op: ${((ttlCpu / plainCpu - 1) * 100).toFixed(1)}%)`);
console.log(`  floor under get        ${fmt(median(results.floorDecode))} ns/op      (a binding call returning a 3-field tuple + decodeOne; ` +
  `the call alone ${median(results.floorCall).toFixed(0)}, with msgpackr's unpack ${median(results.floorUnpack).toFixed(0)})`);
console.log(`    in process CPU      ${fmt(median(results.floorDecodeCpu))} ns/op      (get past the floor: ${(plainCpu - median(results.floorDecodeCpu)).toFixed(0)} ns/op of CPU)`);
console.log(`  memory                ${fmt(median(results.bytes))} B/tuple    (target <= 80; tuples ${median(results.tupleBytes).toFixed(1)}, indexes ${median(results.indexBytes).toFixed(1)})`);
console.log(`Counter at ${UPDATE_KEYS.toLocaleString('en-US')} keys (HASH pk), median of ${counters.update.length} interleaved rounds`);
console.log(`  update(k, [['+', 2, 1]]) ${fmt(median(counters.update))} ns/op      (target <= 1000)`);
console.log(`    in process CPU         ${fmt(median(counters.updateCpu))} ns/op`);
console.log(`  floor under update       ${fmt(median(counters.floor))} ns/op      (a binding call returning [id, n] + decodeOne; ` +
  `CPU ${median(counters.floorCpu).toFixed(0)}, update past it ${(median(counters.updateCpu) - median(counters.floorCpu)).toFixed(0)} ns/op of CPU)`);
console.log(`  get() + replace()        ${fmt(median(counters.getReplace))} ns/op`);
console.log(`  Map get + set            ${fmt(median(counters.map))} ns/op`);
