// bench/scale.ts: ten million entries without a stall? Loads N entries [id, 'user<id>@tarantool.io',
// exp] one insert at a time into this project (HASH primary + TTL TREE), a JavaScript Map,
// lru-cache and @isaacs/ttlcache, each in a fresh child process, and reports per contender:
// load ns per entry, bytes per entry (RSS growth after GC), the longest single insert, inserts
// over 1 ms and over 5 ms (each insert timed with process.hrtime.bigint()); the floor: the same
// loop around a call that does no work (the store's size), timed the same way, whose pauses are
// the process's, V8's and the scheduler's, not the store's; the same floor with the entry's tuple
// built in the timed part (the caller's garbage, and V8's scavenges of it); and then, with the
// data loaded, the longest event-loop pause (perf_hooks monitorEventLoopDelay) during a
// fixed-rate get/set/expire mix, beside V8's longest garbage collection in it; and the same mix
// with no store at all, each operation building the tuple it would store or read (its floor: the
// pauses of V8's scavenges of that garbage, and anything else outside the store). Each insert over
// 1 ms is matched against V8's garbage collections (PerformanceObserver 'gc' entries) during the
// load: how many overlap one, and the longest insert that overlaps none. Each one outside a
// collection is also matched against the main thread's schedstat (read every 256 inserts and after
// each slow one), which bounds its own time (bench/lib/slow-calls.ts): the rest, the thread was not
// running, its virtual CPU stolen by the hypervisor or its CPU taken by another thread. Reported:
// how many inserts over 5 ms were so only for not running, the longest own time, and the longest
// insert's window: time on a CPU, time waiting for one, and how many times the thread was switched in.
//
//   npm run bench:scale [-- --quick] [-- --entries 10000000 --mix-seconds 10 --rate 100000]
//                       [-- --only capped-expirationd] [-- --slow]
//
// --only runs one contender; --slow prints, per contender, each insert and each no-op call over
// 1 ms to stderr, with how much of it the main thread spent on a CPU and how much waiting for
// one (runnable, not running: the scheduler's share), read from /proc/self/task/<pid>/schedstat
// before and after the call (outside the timed part; Linux only).
// --quick loads 2M entries. The table shows the issue's goals beside our figures.
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { mkdirSync, openSync, readSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { renderScaleSvg } from './lib/scale-svg.js';
import { ownTime, type SlowCall, splitSlowCalls, type Window } from './lib/slow-calls.js';

type Result = {
  name: string;
  entries: number;
  loadNs: number;
  bytesPerEntry: number;
  longestInsertMs: number;
  longestAt: number;
  /** The longest insert's schedstat window (see child()): ms on a CPU, ms waiting, times switched in. */
  longestWindow: [number, number, number];
  over1ms: number;
  over5ms: number;
  /** Inserts over 1 ms / over 5 ms whose time overlaps a V8 garbage collection. */
  over1msInGc: number;
  over5msInGc: number;
  /** The longest insert over 1 ms that overlaps no V8 garbage collection; 0: none (all under 1 ms). */
  longestOutsideGcMs: number;
  /** Inserts over 5 ms outside a V8 collection whose own time was at most 5 ms (bench/lib/slow-calls.ts):
   * the rest, the thread was not running (its virtual CPU stolen, or another thread on its CPU). */
  over5msNotRunning: number;
  /** The longest own time of an insert outside a V8 collection; 0: none over 1 ms. */
  longestOwnMs: number;
  floorLongestMs: number;
  floorOver1ms: number;
  floorOver5ms: number;
  floorCalls: number;
  tupleFloorLongestMs: number;
  tupleFloorOver1ms: number;
  tupleFloorOver5ms: number;
  mixPauseMs: number;
  mixGcMs: number;
  mixOps: number;
  /** The same mix with no store: each operation builds the tuple it would store or read. */
  mixFloorPauseMs: number;
  mixFloorGcMs: number;
};

const CONTENDERS = ['capped-expirationd', 'Map', 'lru-cache', '@isaacs/ttlcache'] as const;
type Name = (typeof CONTENDERS)[number];

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

interface Store {
  set(id: number, exp: number): void;
  get(id: number): unknown;
  expire(id: number): void;
  // The floor: a call that does no work (the store's size), timed as an insert is.
  trivial(): unknown;
}

// The entry every contender stores (and the floor's second loop builds).
const tuple = (id: number, exp: number) => [id, `user${id}@tarantool.io`, exp];

async function makeStore(name: Name, n: number): Promise<Store> {
  switch (name) {
    case 'capped-expirationd': {
      const { Space } = await import('../src/index.js');
      const space = new Space('scale');
      space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
      space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
      return {
        set: (id, exp) => void space.replace(tuple(id, exp)),
        get: (id) => space.get(id),
        expire: (id) => void space.delete(id),
        trivial: () => space.len(),
        // single inserts during the load (replace() in the mix)
        ...{ load: (id: number, exp: number) => void space.insert(tuple(id, exp)) },
      } as Store & { load(id: number, exp: number): void };
    }
    case 'Map': {
      const m = new Map<number, unknown[]>();
      return { set: (id, exp) => void m.set(id, tuple(id, exp)), get: (id) => m.get(id), expire: (id) => void m.delete(id), trivial: () => m.size };
    }
    case 'lru-cache': {
      const { LRUCache } = await import('lru-cache');
      const c = new LRUCache<number, unknown[]>({ max: n + 1 });
      return { set: (id, exp) => void c.set(id, tuple(id, exp)), get: (id) => c.get(id), expire: (id) => void c.delete(id), trivial: () => c.size };
    }
    case '@isaacs/ttlcache': {
      const { TTLCache } = await import('@isaacs/ttlcache');
      // No `max` (the default, Infinity): with max = n + 1, every set of a new id in the mix runs
      // purgeToCapacity(), a for-in over every expiration bucket, and the buckets are per
      // millisecond (floor(now() + ttl)), so about one per entry loaded: at 1M entries 400
      // operations in a 1 s mix and a 697 ms pause, at 10M it never finished. The mix's sets
      // add at most 15% of its operations, so the cache holds the same entries either way.
      const c = new TTLCache<number, unknown[]>({ ttl: 3_600_000 });
      return {
        set: (id, exp) => void c.set(id, tuple(id, exp), { ttl: 1000 * (exp - NOW) }),
        get: (id) => c.get(id),
        expire: (id) => void c.delete(id),
        trivial: () => c.size,
      };
    }
  }
}

const NOW = Math.floor(Date.now() / 1000);
let kept: unknown = null;  // the floor's last tuple (see child())
const SLOW = process.argv.includes('--slow');

// The main thread's time on a CPU and time runnable but waiting for one, in ns, and how many
// times it was switched in (schedstat). On Linux with CONFIG_PARAVIRT_TIME_ACCOUNTING (any KVM
// guest) the time on a CPU leaves out steal time: while the hypervisor runs something else on our
// virtual CPU, neither count moves. Elsewhere (no /proc) every figure reads 0.
const schedFd = (() => {
  try {
    return openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
  } catch {
    return -1;
  }
})();
type Sched = [run: number, wait: number, slices: number];
const schedBuf = Buffer.alloc(128);
function sched(): Sched {
  if (schedFd < 0) return [0, 0, 0];
  const len = readSync(schedFd, schedBuf, 0, schedBuf.length, 0);
  const [run, wait, slices] = schedBuf.toString('latin1', 0, len).split(' ');
  return [Number(run), Number(wait), Number(slices)];
}
// How often the load samples schedstat (a read of /proc, a few microseconds): every SAMPLE inserts.
const SAMPLE = 256;
function slowLine(what: string, i: number, d: bigint, s0: Sched): string {
  const s1 = sched();
  // `ends`: CLOCK_MONOTONIC seconds, to match against `perf record -k CLOCK_MONOTONIC` samples.
  const ends = (Number(process.hrtime.bigint()) / 1e9).toFixed(6);
  return `${what} #${i} at ${performance.now().toFixed(0)} ms (ends ${ends} s) ${(Number(d) / 1e6).toFixed(2)} ms: on CPU ${((s1[0] - s0[0]) / 1e6).toFixed(2)} ms, waiting for a CPU ${((s1[1] - s0[1]) / 1e6).toFixed(2)} ms, switched in ${s1[2] - s0[2]} times`;
}
const NO_SCHED: Sched = [0, 0, 0];
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

async function child(name: Name, n: number, mixSeconds: number, rate: number): Promise<Result> {
  const store = await makeStore(name, n);
  const load = (store as Store & { load?: (id: number, exp: number) => void }).load ?? store.set;
  gc();
  const rss0 = process.memoryUsage().rss;
  let longest = 0n;
  let longestAt = 0;
  let over1 = 0;
  let over5 = 0;
  // The longest insert's window (since the schedstat read before it): ms on a CPU, ms waiting for
  // one, times switched in; all -1 when it was not over 1 ms (no window read).
  let longestWindow: [number, number, number] = [-1, -1, -1];
  let seed = 12345;
  const slow: string[] = [];
  // V8's collections during the load, and each insert over 1 ms, on performance.now()'s clock.
  const loadGcs: Array<[number, number]> = [];
  const gcWatch = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) loadGcs.push([e.startTime, e.startTime + e.duration]);
  });
  gcWatch.observe({ entryTypes: ['gc'] });
  // Each insert over 1 ms: its start and end, and a bound of its own time (bench/lib/slow-calls.ts)
  // over the window since the last schedstat read, taken every SAMPLE inserts and after each slow one.
  const slowInserts: SlowCall[] = [];
  const read = (): Window => {
    const [run, wait, slices] = sched();
    return { run, wait, slices, at: performance.now() };
  };
  let since = read();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    if (i % SAMPLE === 0) since = read();
    const s0 = SLOW ? sched() : NO_SCHED;
    const t0 = process.hrtime.bigint();
    load(i, NOW + 600 + (seed % 3600));
    const d = process.hrtime.bigint() - t0;
    if (d > longest) {
      longest = d;
      longestAt = i;
    }
    if (d > 1_000_000n) {
      over1++;
      const end = performance.now();
      const to = read();
      const ms = Number(d) / 1e6;
      const own = schedFd >= 0 ? ownTime(ms, end - ms, since, to) : ms;
      if (d === longest) longestWindow = [(to.run - since.run) / 1e6, (to.wait - since.wait) / 1e6, to.slices - since.slices];
      since = to;
      slowInserts.push([end - ms, end, own]);
      if (SLOW) slow.push(slowLine('insert', i, d, s0));
    }
    if (d > 5_000_000n) over5++;
    if ((i + 1) % 1_000_000 === 0 || i + 1 === n)
      process.stderr.write(`\r  ${name}: ${((i + 1) / 1e6).toFixed(1)}M of ${(n / 1e6).toFixed(1)}M loaded, longest insert ${(Number(longest) / 1e6).toFixed(2)} ms   `);
  }
  const loadWall = process.hrtime.bigint() - start;
  const loadNs = Number(loadWall) / n;
  process.stderr.write('\n');
  await new Promise((r) => setTimeout(r, 50));  // the observer's entries arrive in a later task
  gcWatch.disconnect();
  const split = splitSlowCalls(slowInserts, loadGcs);

  gc();
  const bytesPerEntry = (process.memoryUsage().rss - rss0) / n;

  // The floor: the same loop, the same timing, around a call that does no work (the store's
  // size; for us one native call that reads a counter), for at least n calls and at least as long
  // as the load took (a pause from outside lands on whatever call is running: the chance that one
  // does grows with the time spent). Its longest pause and its calls over 1 ms and 5 ms are what
  // the process, V8 and the scheduler cost any call on this machine meanwhile. The second floor
  // also builds, in the timed part, the tuple the load passes (an array and a string, kept until
  // the next call, so that V8 cannot leave them out): the caller's own garbage, whose scavenges
  // any caller that builds tuples pays, whatever it then does with them.
  const floor = (label: string, build: boolean) => {
    let longestCall = 0n;
    let calls1 = 0;
    let calls5 = 0;
    let calls = 0;
    let sink = 0;
    const floorStart = process.hrtime.bigint();
    for (let i = 0; i < n || (i & 1023) !== 0 || process.hrtime.bigint() - floorStart < loadWall; i++) {
      calls++;
      seed = (seed * 1103515245 + 12345) >>> 0;
      const s0 = SLOW ? sched() : NO_SCHED;
      const t0 = process.hrtime.bigint();
      if (build) kept = tuple(i, NOW + 600 + (seed % 3600));
      sink += store.trivial() === i ? 1 : 0;
      const d = process.hrtime.bigint() - t0;
      if (d > longestCall) longestCall = d;
      if (d > 1_000_000n) {
        calls1++;
        if (SLOW) slow.push(slowLine(label, i, d, s0));
      }
      if (d > 5_000_000n) calls5++;
    }
    if (sink < 0) console.error(sink);
    return { longestMs: Number(longestCall) / 1e6, over1: calls1, over5: calls5, calls };
  };
  const bare = floor('no-op', false);
  const built = floor('tuple + no-op', true);
  if (SLOW) process.stderr.write(`  ${name}, calls over 1 ms:\n${slow.map((l) => `    ${l}\n`).join('')}`);

  // The mix: every millisecond, rate/1000 operations (80% get, 15% set, 5% expire) on random ids,
  // for mixSeconds; its longest event-loop pause, and V8's longest garbage collection in it (a
  // pause any JavaScript on the thread pays). Then the same mix (operations, ids, timer) on no
  // store: each operation builds the tuple it would store (set) or return (get, as our reads
  // decode one), so that its pauses are those of that garbage and of the process, not the store's.
  let next = n;
  const mix = async (target: Store | undefined): Promise<{ pauseMs: number; gcMs: number; ops: number }> => {
    const h = monitorEventLoopDelay({ resolution: 1 });
    let longestGc = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) longestGc = Math.max(longestGc, e.duration);
    });
    gcs.observe({ entryTypes: ['gc'] });
    let ops = 0;
    let sink = 0;
    const perTick = Math.max(1, Math.round(rate / 1000));
    await new Promise<void>((resolve) => {
      const end = Date.now() + mixSeconds * 1000;
      h.enable();
      const timer = setInterval(() => {
        for (let k = 0; k < perTick; k++) {
          seed = (seed * 1103515245 + 12345) >>> 0;
          const r = seed % 100;
          const id = seed % next;
          if (target === undefined) {
            if (r < 95) kept = tuple(r >= 80 && r < 90 ? next++ : id, NOW + 600 + (seed % 3600));
          } else if (r < 80) sink += target.get(id) === undefined ? 0 : 1;
          else if (r < 95) target.set(r < 90 ? next++ : id, NOW + 600 + (seed % 3600));
          else target.expire(id);
          ops++;
        }
        if (Date.now() >= end) {
          clearInterval(timer);
          h.disable();
          gcs.disconnect();
          resolve();
        }
      }, 1);
    });
    if (sink < 0) console.error(sink);
    await new Promise((r) => setTimeout(r, 50));  // the last collections' entries
    return { pauseMs: h.max / 1e6, gcMs: longestGc, ops };
  };
  const withStore = await mix(store);
  const noStore = await mix(undefined);
  return {
    name,
    entries: n,
    loadNs,
    bytesPerEntry,
    longestInsertMs: Number(longest) / 1e6,
    longestAt,
    longestWindow,
    over1ms: over1,
    over5ms: over5,
    over1msInGc: split.over1InGc,
    over5msInGc: split.over5InGc,
    longestOutsideGcMs: split.longestOutsideGc,
    over5msNotRunning: split.over5NotRunning,
    longestOwnMs: split.longestOwn,
    floorLongestMs: bare.longestMs,
    floorOver1ms: bare.over1,
    floorOver5ms: bare.over5,
    floorCalls: bare.calls,
    tupleFloorLongestMs: built.longestMs,
    tupleFloorOver1ms: built.over1,
    tupleFloorOver5ms: built.over5,
    mixPauseMs: withStore.pauseMs,
    mixGcMs: withStore.gcMs,
    mixOps: withStore.ops,
    mixFloorPauseMs: noStore.pauseMs,
    mixFloorGcMs: noStore.gcMs,
  };
}

function main(): void {
  const quick = process.argv.includes('--quick');
  const n = flag('entries', quick ? 2_000_000 : 10_000_000);
  const mixSeconds = flag('mix-seconds', 10);
  const rate = flag('rate', 100_000);
  const self = resolve(process.argv[1]);
  const results: Result[] = [];
  console.log(`bench:scale: ${(n / 1e6).toFixed(1)}M entries, one insert at a time; then ${mixSeconds} s of a get/set/expire mix at ${rate} ops/s`);
  const oi = process.argv.indexOf('--only');
  const names = oi >= 0 ? CONTENDERS.filter((c) => c === process.argv[oi + 1]) : CONTENDERS;
  for (const name of names) {
    const r = spawnSync(
      process.execPath,
      [...process.execArgv, '--expose-gc', '--max-old-space-size=16384', self, '--child', name, '--entries', String(n),
       '--mix-seconds', String(mixSeconds), '--rate', String(rate), ...(SLOW ? ['--slow'] : [])],
      { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    const line = (r.stdout ?? '').trim().split('\n').pop() ?? '';
    if (r.status !== 0 || !line.startsWith('{')) {
      console.log(`  ${name}: failed (exit ${r.status ?? r.signal})`);
      continue;
    }
    results.push(JSON.parse(line) as Result);
  }
  const goals: Record<string, string> = {
    'ns per insert': '<= 2000 (today, from JS)',
    'bytes per entry': '<= 70',
    'longest insert, ms': '<= 1',
    'longest insert: its window on a CPU / waiting, ms; switched in': '-',
    'inserts over 1 ms': '-',
    'inserts over 5 ms': '0',
    'inserts over 1 ms / 5 ms during a V8 GC': '-',
    'longest insert outside V8 GC, ms': '-',
    'inserts over 5 ms outside V8 GC, only for not running': '-',
    'longest insert outside V8 GC, its own time, ms': '-',
    'floor: no-op calls timed': '>= n, >= load time',
    'floor: longest no-op call, ms': '-',
    'floor: no-op calls over 1 ms': '-',
    'floor: no-op calls over 5 ms': '-',
    'floor with the tuple: longest call, ms': '-',
    'floor with the tuple: calls over 1 ms': '-',
    'floor with the tuple: calls over 5 ms': '-',
    'longest pause in the mix, ms': '<= 2',
    'longest V8 GC in the mix, ms': '-',
    'mix floor (no store): longest pause, ms': '-',
    'mix floor (no store): longest V8 GC, ms': '-',
  };
  const rows: Array<[string, (r: Result) => string]> = [
    ['ns per insert', (r) => r.loadNs.toFixed(0)],
    ['bytes per entry', (r) => r.bytesPerEntry.toFixed(0)],
    ['longest insert, ms', (r) => `${r.longestInsertMs.toFixed(2)} (#${(r.longestAt / 1e6).toFixed(2)}M)`],
    ['longest insert: its window on a CPU / waiting, ms; switched in', (r) =>
      (r.longestWindow[0] < 0 ? '-' : `${r.longestWindow[0].toFixed(2)} / ${r.longestWindow[1].toFixed(2)}; ${r.longestWindow[2]}`)],
    ['inserts over 1 ms', (r) => String(r.over1ms)],
    ['inserts over 5 ms', (r) => String(r.over5ms)],
    ['inserts over 1 ms / 5 ms during a V8 GC', (r) => `${r.over1msInGc} / ${r.over5msInGc}`],
    ['longest insert outside V8 GC, ms', (r) => (r.longestOutsideGcMs === 0 ? '< 1' : r.longestOutsideGcMs.toFixed(2))],
    ['inserts over 5 ms outside V8 GC, only for not running', (r) => String(r.over5msNotRunning)],
    ['longest insert outside V8 GC, its own time, ms', (r) => (r.longestOwnMs === 0 ? '< 1' : r.longestOwnMs.toFixed(2))],
    // In millions, with three decimals below a million (a tiny run's 20,480 calls is 0.020M, not 0.0M).
    ['floor: no-op calls timed', (r) => `${(r.floorCalls / 1e6).toFixed(r.floorCalls < 1e6 ? 3 : 1)}M`],
    ['floor: longest no-op call, ms', (r) => r.floorLongestMs.toFixed(2)],
    ['floor: no-op calls over 1 ms', (r) => String(r.floorOver1ms)],
    ['floor: no-op calls over 5 ms', (r) => String(r.floorOver5ms)],
    ['floor with the tuple: longest call, ms', (r) => r.tupleFloorLongestMs.toFixed(2)],
    ['floor with the tuple: calls over 1 ms', (r) => String(r.tupleFloorOver1ms)],
    ['floor with the tuple: calls over 5 ms', (r) => String(r.tupleFloorOver5ms)],
    ['longest pause in the mix, ms', (r) => r.mixPauseMs.toFixed(2)],
    ['longest V8 GC in the mix, ms', (r) => r.mixGcMs.toFixed(2)],
    ['operations in the mix', (r) => String(r.mixOps)],
    ['mix floor (no store): longest pause, ms', (r) => r.mixFloorPauseMs.toFixed(2)],
    ['mix floor (no store): longest V8 GC, ms', (r) => r.mixFloorGcMs.toFixed(2)],
  ];
  const head = ['measure', 'goal (ours)', ...results.map((r) => r.name)];
  const body = rows.map(([label, f]) => [label, goals[label] ?? '', ...results.map(f)]);
  const widths = head.map((_, c) => Math.max(...[head, ...body].map((row) => row[c].length)));
  const fmt = (row: string[]) => `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join(' | ')} |`;
  console.log(fmt(head));
  console.log(`|${widths.map((w, c) => (c === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const row of body) console.log(fmt(row));
  // The raw figures and the chart, beside the main benchmark's (bench/results/), for a full run.
  if (names.length !== CONTENDERS.length) return;
  const dir = join(dirname(self), 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'scale-latest.json'), `${JSON.stringify({ date: new Date().toISOString(), node: process.version, entries: n, mixSeconds, rate, results }, null, 2)}\n`);
  writeFileSync(join(dir, 'scale-latest.svg'), renderScaleSvg(results.map((r) => ({ name: r.name, longestInsertMs: r.longestInsertMs, mixPauseMs: r.mixPauseMs, bytesPerEntry: r.bytesPerEntry })), n));
  console.log(`figures: bench/results/scale-latest.json, chart: bench/results/scale-latest.svg`);
}

const ci = process.argv.indexOf('--child');
if (ci >= 0) {
  child(process.argv[ci + 1] as Name, flag('entries', 2_000_000), flag('mix-seconds', 10), flag('rate', 100_000)).then(
    (r) => console.log(JSON.stringify(r)),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  main();
}
