// bench/expiry.ts: what clearing an expired backlog costs, indexed vs non-indexed.
//
//   npm run bench:expiry [-- --tuples 1000000 --expired 0.1 --scan-size 1024 --scan-time 1]
//
// Workload: N tuples [id, 'user<id>@tarantool.io', exp] with a fraction already expired
// (exp <= now) and the rest live (exp = now + 3600 + id % 600). The clock is injected, so no
// test waits on wall time. Four runs: indexed (HASH or TREE pk + a non-unique TTL TREE, early
// break) and non-indexed (a full scan over the same HASH or TREE pk). For each it prints
// tuples checked per pass, CPU time (process.cpuUsage) and wall time to clear the backlog,
// CPU ns per expired tuple, and the longest chunk (the longest event-loop pause it causes).
//
// A second table runs the same four workloads through the native chunk alone: expireChunk
// called back to back on the space's handle, no timers, no JavaScript between chunks. Pass 1
// clears the backlog; pass 2 walks what is left and finds nothing to delete. It isolates what
// the chunk costs from what Node's timers cost (a bare loop of 1000 setTimeout(1) calls takes
// 70-85 ms of CPU on the 2-core VM these figures come from).
import v8 from 'node:v8';
import vm from 'node:vm';
import { Space, expirationd } from '../src/index.js';
import { handleOf } from '../src/space/space.js';
import { chunkObserver } from '../src/expirationd/scheduler.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const N = flag('tuples', 1_000_000);
const EXPIRED = flag('expired', 0.1);
const SCAN_SIZE = flag('scan-size', 1024);
const SCAN_TIME = flag('scan-time', 1);
const NOW = 1_800_000_000;

interface Row {
  name: string;
  checkedPerPass: number;
  cpuMs: number;
  wallMs: number;
  nsPerExpired: number;
  chunkNsPerExpired: number;
  longestChunkMs: number;
  p99ChunkMs: number;
  chunks: number;
}

function percentile(xs: number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

function isExpiredId(i: number): boolean {
  return (i * 2654435761) % 1000 < EXPIRED * 1000;
}

function load(pk: 'HASH' | 'TREE', ttlIndex: boolean): { space: Space; expired: number } {
  const space = new Space(`${pk}-${ttlIndex}`);
  space.createIndex('primary', { type: pk, parts: [{ field: 1, type: 'unsigned' }] });
  if (ttlIndex) space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  let expired = 0;
  for (let start = 0; start < N; start += 10_000) {
    const batch: unknown[][] = [];
    for (let i = start; i < Math.min(N, start + 10_000); i++) {
      const dead = isExpiredId(i);
      if (dead) expired++;
      batch.push([i, `user${i}@tarantool.io`, dead ? NOW - 1 - (i % 3600) : NOW + 3600 + (i % 600)]);
    }
    space.insertMany(batch);
  }
  return { space, expired };
}

// The load leaves 1M JavaScript arrays behind; collect them before the clock starts, so that
// their garbage collection is not billed to expiry.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

function run(name: string, pk: 'HASH' | 'TREE', indexed: boolean): Promise<Row> {
  const { space, expired } = load(pk, indexed);
  collectGarbage();
  return new Promise((resolve, reject) => {
    let longest = 0;
    let firstPassChecked = -1;
    const cpu0 = process.cpuUsage();
    const wall0 = process.hrtime.bigint();
    const task = expirationd.start(name, space, {
      rmIndex: 'primary', itIndex: indexed ? 'exp' : 'primary', field: 3, scanSize: SCAN_SIZE, scanTime: SCAN_TIME,
      now: () => NOW,
      keepAlive: true,
    });
    let inChunks = 0;
    const durations: number[] = [];
    // Each chunk's synchronous part, as the task itself measures it (performance.now() around it).
    chunkObserver.onChunk = (ms) => {
      inChunks += ms;
      durations.push(ms);
      if (ms > longest) longest = ms;
    };
    task.on('error', reject);
    task.on('fullScan', (stats) => {
      if (firstPassChecked < 0) firstPassChecked = stats.checked;
      if (space.len() !== N - expired) return;
      const cpu = process.cpuUsage(cpu0);
      const wallMs = Number(process.hrtime.bigint() - wall0) / 1e6;
      task.kill();
      chunkObserver.onChunk = undefined;
      const cpuMs = (cpu.user + cpu.system) / 1000;
      resolve({
        name, checkedPerPass: firstPassChecked, cpuMs, wallMs, nsPerExpired: (cpuMs * 1e6) / expired,
        chunkNsPerExpired: (inChunks * 1e6) / expired,
        longestChunkMs: longest, p99ChunkMs: percentile(durations, 0.99), chunks: stats.chunks,
      });
      space.drop();
    });
  });
}

const RUNS = [
  ['indexed, HASH pk', 'HASH', true], ['indexed, TREE pk', 'TREE', true],
  ['non-indexed, HASH pk', 'HASH', false], ['non-indexed, TREE pk', 'TREE', false],
] as const;

interface NativeRow {
  name: string;
  pass1Ms: number;
  nsPerExpired: number;
  pass2Ms: number;
  nsPerChecked: number;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
}

function nativeLoop(name: string, pk: 'HASH' | 'TREE', indexed: boolean): NativeRow {
  const { space, expired } = load(pk, indexed);
  collectGarbage();
  const h = handleOf(space);
  const cursor = h.cursor(indexed ? 1 : 0, undefined, 2 /* ALL */, true);
  const out = new Float64Array(5);
  const scratch = Buffer.alloc(64);
  const pass = (): { ms: number; checked: number; expired: number } => {
    let checked = 0;
    let gone = 0;
    const cpu0 = process.cpuUsage();
    for (;;) {
      h.expireChunk(cursor, 2, SCAN_SIZE, NOW, indexed, 0, out, scratch);
      checked += out[0];
      gone += out[1];
      if (out[2] === 1) break;
    }
    return { ms: cpuMs(cpu0), checked, expired: gone };
  };
  const p1 = pass();
  const p2 = pass();
  if (p1.expired !== expired || p2.expired !== 0) throw new Error(`${name}: expired ${p1.expired} + ${p2.expired} of ${expired}`);
  space.drop();
  return { name, pass1Ms: p1.ms, nsPerExpired: (p1.ms * 1e6) / expired, pass2Ms: p2.ms, nsPerChecked: p2.checked < 1000 ? NaN : (p2.ms * 1e6) / p2.checked };
}

async function main(): Promise<void> {
  console.log(`Expiry: ${N.toLocaleString('en-US')} tuples, ${EXPIRED * 100}% expired, scanSize ${SCAN_SIZE}, scanTime ${SCAN_TIME} s`);
  const rows: Row[] = [];
  for (const [name, pk, indexed] of RUNS) {
    process.stderr.write(`running ${name}...\n`);
    rows.push(await run(name, pk, indexed));
  }
  console.log('run                     checked/pass    CPU ms   wall ms  CPU ns/expired  in-chunk ns/expired  longest chunk ms  p99 chunk ms  chunks');
  for (const r of rows) {
    console.log(`${r.name.padEnd(22)} ${String(r.checkedPerPass).padStart(13)} ${r.cpuMs.toFixed(1).padStart(9)} ` +
      `${r.wallMs.toFixed(1).padStart(9)} ${r.nsPerExpired.toFixed(0).padStart(15)} ${r.chunkNsPerExpired.toFixed(0).padStart(20)} ` +
      `${r.longestChunkMs.toFixed(3).padStart(17)} ${r.p99ChunkMs.toFixed(3).padStart(13)} ${String(r.chunks).padStart(7)}`);
  }
  console.log('CPU is process.cpuUsage() over the whole run (every thread, timers included); in-chunk is the');
  console.log('time the task measured inside its chunks (their synchronous part), divided by expired tuples.');
  console.log('');
  console.log('The native chunk alone (expireChunk back to back, CPU ms):');
  console.log('run                     pass 1 (clears)  ns/expired  pass 2 (nothing to delete)  ns/checked');
  for (const [name, pk, indexed] of RUNS) {
    const r = nativeLoop(name, pk, indexed);
    console.log(`${r.name.padEnd(22)} ${r.pass1Ms.toFixed(1).padStart(16)} ${r.nsPerExpired.toFixed(0).padStart(11)} ` +
      `${r.pass2Ms.toFixed(1).padStart(27)} ${(Number.isNaN(r.nsPerChecked) ? '-' : r.nsPerChecked.toFixed(0)).padStart(11)}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
