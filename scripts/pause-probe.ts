// scripts/pause-probe.ts: what fills the event-loop pauses of a paced non-indexed pass (issue 15).
// bench:anchor's pause runs report the longest event-loop delay over a whole pass
// (monitorEventLoopDelay); this says what ran during each of the longest ones.
//
//   npx tsx scripts/pause-probe.ts [HASH|TREE] [tuples]      (defaults: HASH, 1,000,000)
//
// The anchor's workload: [i, 'user<i>@tarantool.io', exp], every 10th expired, a pk of the given
// type and a TTL TREE, then a non-indexed task at scanSize 1024, scanTime 1. A 1 ms setInterval
// runs beside it; every gap of more than 2 ms between two of its callbacks is a pause of more than
// 1 ms. For the five longest gaps it prints the chunks that overlapped the gap (from the task's
// chunk observer, their durations in ms) and V8's collections in it, then the six longest chunks.
// A gap with no chunk and no collection in it had nothing of ours running: the thread was idle
// and woke up late, or did not get its CPU. Each of the longest chunks also gets the process's
// CPU time over it (process.cpuUsage(), read through the task's CPU clock, which the task reads
// just before and just after each chunk): wall time well above the CPU time is time the thread
// did not run (preempted, or its virtual CPU stolen), not work. (The per-thread schedstat is no
// use at this scale: the kernel brings it up to date only at ticks and switches.)
import { PerformanceObserver } from 'node:perf_hooks';

interface Span {
  at: number;
  ms: number;
}

function overlapping(spans: Span[], gap: Span): Span[] {
  return spans.filter((s) => s.at + s.ms > gap.at && s.at < gap.at + gap.ms);
}

async function main(): Promise<void> {
  const pk = process.argv[2] ?? 'HASH';
  const tuples = Number(process.argv[3] ?? 1_000_000);
  if ((pk !== 'HASH' && pk !== 'TREE') || !Number.isInteger(tuples) || tuples < 10) {
    console.error('usage: npx tsx scripts/pause-probe.ts [HASH|TREE] [tuples >= 10]');
    process.exit(2);
  }
  const { Space, expirationd } = await import('../src/index.js');
  const { chunkObserver, cpuClock } = await import('../src/expirationd/scheduler.js');
  const space = new Space('probe');
  space.createIndex('primary', { type: pk, parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  const now = Math.floor(Date.now() / 1000);
  for (let start = 1; start <= tuples; start += 10_000) {
    const batch: unknown[][] = [];
    for (let i = start; i < start + 10_000 && i <= tuples; i++) batch.push([i, `user${i}@tarantool.io`, i % 10 === 0 ? now - 10 : now + 3600]);
    space.insertMany(batch);
  }
  (globalThis as { gc?: () => void }).gc?.();

  const t0 = performance.now();
  const collections: Span[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) collections.push({ at: e.startTime - t0, ms: e.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const chunks: (Span & { cpuMs: number })[] = [];
  // The task reads its CPU clock once before and once after each chunk (a full scan reads it
  // nowhere else): keep the CPU time read at the start, and pair it with the one at the end.
  let started = process.cpuUsage();
  let reads = 0;
  const realNow = cpuClock.now;
  cpuClock.now = () => {
    if (reads++ % 2 === 0) started = process.cpuUsage();
    return performance.now();
  };
  chunkObserver.onChunk = (ms) => {
    const c = process.cpuUsage(started);
    chunks.push({ at: performance.now() - t0 - ms, ms, cpuMs: (c.user + c.system) / 1000 });
  };
  const gaps: Span[] = [];
  let last = performance.now();
  const interval = setInterval(() => {
    const t = performance.now();
    if (t - last > 2) gaps.push({ at: last - t0, ms: t - last });
    last = t;
  }, 1);

  const task = expirationd.start('probe', space, { rmIndex: 'primary', itIndex: 'primary', field: 3, scanSize: 1024, scanTime: 1 });
  let passEnd = NaN;
  task.on('fullScan', () => {
    passEnd = performance.now() - t0;
  });
  const exp = space.index.exp;
  for (;;) {
    const first = exp.min();
    if (first === undefined || (first[2] as number) > now) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  clearInterval(interval);
  task.kill();
  chunkObserver.onChunk = undefined;
  cpuClock.now = realNow;
  await new Promise((resolve) => setImmediate(resolve));  // the last gc entries
  observer.disconnect();

  console.log(`${pk} pk, ${tuples} tuples: ${chunks.length} chunks, the pass ended at ${passEnd.toFixed(1)} ms; ` +
    `${gaps.length} gaps over 2 ms in the 1 ms interval`);
  for (const gap of [...gaps].sort((a, b) => b.ms - a.ms).slice(0, 5)) {
    const inside = overlapping(chunks, gap);
    const gcs = overlapping(collections, gap);
    console.log(`gap ${gap.ms.toFixed(2)} ms at ${gap.at.toFixed(1)} ms: ${inside.length} chunks ` +
      `(${inside.map((c) => c.ms.toFixed(2)).join(' ')}), ${gcs.length} collections (${gcs.map((c) => c.ms.toFixed(2)).join(' ')})`);
  }
  const longest = chunks.map((c, i) => ({ ...c, i })).sort((a, b) => b.ms - a.ms).slice(0, 6);
  console.log(`longest chunks (wall ms / the process's CPU ms): ${longest.map((c) => `#${c.i} at ${c.at.toFixed(1)} ms: ${c.ms.toFixed(2)} / ${c.cpuMs.toFixed(2)}`).join(', ')}`);
}

void main();
