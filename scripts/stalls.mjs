// scripts/stalls.mjs: where the slow calls of a 10M load come from (issue 12). Each call is timed
// with process.hrtime.bigint(); a call over 1 ms is matched against V8's collections
// (PerformanceObserver 'gc' entries), and each one over 2 ms that overlaps none is printed with
// its page faults and context switches (process.resourceUsage(), read around every call) and the
// main thread's on-CPU and runnable time (/proc/self/task/<tid>/schedstat), plus its
// CLOCK_MONOTONIC end time, to match against `perf record -k CLOCK_MONOTONIC`. A call whose
// thread was never switched out has the rest of its time printed as its virtual CPU not running
// (steal time, which Linux leaves out of schedstat's time on a CPU in a KVM guest), and the
// summary counts the calls over 5 ms once that time is taken off, and the machine's steal time
// over the run (/proc/stat, both CPUs).
//
//   npm run build && node --expose-gc scripts/stalls.mjs [store|growth|random] [calls]
//
// store (default): the bench:scale load, [id, 'user<id>@tarantool.io', exp] inserted one at a
//   time into a HASH pk + TTL TREE space (from dist/).
// growth: no store; each call builds the same tuple and writes 72 bytes sequentially into 64 MiB
//   Buffers allocated as needed (the store's memory growth, about 690 MiB at 10M).
// random: no store; each call builds the same tuple and makes four random writes over 600 MiB
//   already touched (the store's random access, without growth).
// Reading the counters around every call makes each call slower; the figures are for comparing
// the modes with each other, not with bench:scale.
import { openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';

const mode = process.argv[2] ?? 'store';
const n = Number(process.argv[3] ?? 10_000_000);
if (!['store', 'growth', 'random'].includes(mode) || !(n > 0)) {
  console.error('usage: node --expose-gc scripts/stalls.mjs [store|growth|random] [calls]');
  process.exit(2);
}
const NOW = Math.floor(Date.now() / 1000);

let call;
if (mode === 'store') {
  const { Space } = createRequire(import.meta.url)('../dist/index.js');
  const space = new Space('stalls');
  space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  call = (i, exp) => space.insert([i, `user${i}@tarantool.io`, exp]);
} else if (mode === 'growth') {
  const CHUNK = 64 << 20;
  let cur = null;
  let off = CHUNK;
  const chunks = [];
  call = (i, exp) => {
    const tuple = [i, `user${i}@tarantool.io`, exp];
    if (off + 72 > CHUNK) {
      cur = Buffer.allocUnsafeSlow(CHUNK);
      chunks.push(cur);
      off = 0;
    }
    cur.writeUInt32LE(i, off);
    cur.fill(0x61, off + 4, off + 72);
    off += 72;
    return tuple;
  };
} else {
  const buf = new Float64Array((600 << 20) / 8);
  buf.fill(1);
  let x = 1;
  call = (i, exp) => {
    const tuple = [i, `user${i}@tarantool.io`, exp];
    for (let k = 0; k < 4; k++) {
      x = (x * 1103515245 + 12345) >>> 0;
      buf[x % buf.length] = i;
    }
    return tuple;
  };
}

const schedFd = openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
const schedBuf = Buffer.alloc(128);
function sched() {
  const len = readSync(schedFd, schedBuf, 0, schedBuf.length, 0);
  const [run, wait, slices] = schedBuf.toString('latin1', 0, len).split(' ');
  return [Number(run), Number(wait), Number(slices)];
}
// The machine's steal time (the hypervisor running something else on our virtual CPUs), in ms,
// summed over the CPUs (/proc/stat, in USER_HZ ticks).
function steal() {
  const line = readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/);
  return (Number(line[8] ?? 0) * 1000) / 100;
}

const gcs = [];
const watch = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
});
watch.observe({ entryTypes: ['gc'] });
const slow = [];
const steal0 = steal();
let seed = 12345;
let kept = null;  // the last call's tuple, kept alive until the next call (as bench:scale's floor does)
for (let i = 0; i < n; i++) {
  seed = (seed * 1103515245 + 12345) >>> 0;
  const r0 = process.resourceUsage();
  const s0 = sched();
  const t0 = process.hrtime.bigint();
  kept = call(i, NOW + 600 + (seed % 3600));
  const d = Number(process.hrtime.bigint() - t0) / 1e6;
  if (d > 1) {
    const end = performance.now();
    const ends = Number(process.hrtime.bigint()) / 1e9;
    const r1 = process.resourceUsage();
    const s1 = sched();
    slow.push({
      i, d, start: end - d, end, ends,
      faults: r1.minorPageFault - r0.minorPageFault,
      involuntary: r1.involuntaryContextSwitches - r0.involuntaryContextSwitches,
      voluntary: r1.voluntaryContextSwitches - r0.voluntaryContextSwitches,
      onCpu: (s1[0] - s0[0]) / 1e6,
      waiting: (s1[1] - s0[1]) / 1e6,
      switchedOut: s1[2] !== s0[2],
    });
  }
}
await new Promise((resolve) => setTimeout(resolve, 50));  // the observer's last entries
watch.disconnect();
let inGc = 0;
let over2 = 0;
let over5 = 0;
let longest = 0;
let host5 = 0;
let ownLongest = 0;
for (const s of slow) {
  // With no switch out during the call, the thread was its CPU's current one throughout: the time
  // neither on that CPU (schedstat's run time leaves out steal time, CONFIG_PARAVIRT_TIME_ACCOUNTING)
  // nor waiting for one is the hypervisor's, when it ran something else on this virtual CPU.
  s.host = s.switchedOut ? 0 : Math.max(0, s.d - s.onCpu - s.waiting);
  if (gcs.some(([a, b]) => a < s.end && b > s.start)) {
    inGc++;
    continue;
  }
  longest = Math.max(longest, s.d);
  ownLongest = Math.max(ownLongest, s.d - s.host);
  if (s.d > 5) over5++;
  if (s.d > 5 && s.d - s.host <= 5) host5++;
  if (s.d <= 2) continue;
  over2++;
  console.log(`#${s.i} ${s.d.toFixed(2)} ms: faults ${s.faults}, context switches ${s.voluntary} voluntary and ` +
    `${s.involuntary} involuntary, on CPU ${s.onCpu.toFixed(2)} ms, waiting for a CPU ${s.waiting.toFixed(2)} ms, ` +
    `${s.switchedOut ? 'switched out' : `the vCPU not running ${s.host.toFixed(2)} ms`} ` +
    `(ends ${s.ends.toFixed(6)} s CLOCK_MONOTONIC)`);
}
console.log(`${mode}: ${n} calls; over 1 ms ${slow.length}, of them during a V8 GC ${inGc}; outside a GC: ` +
  `over 2 ms ${over2}, over 5 ms ${over5}, longest ${longest === 0 ? 'none over 1 ms' : `${longest.toFixed(2)} ms`}; ` +
  `less the vCPU's time not running: over 5 ms ${over5 - host5}, longest ${ownLongest === 0 ? 'none over 1 ms' : `${ownLongest.toFixed(2)} ms`}; ` +
  `steal time during the run ${(steal() - steal0).toFixed(0)} ms`);
