// Where does a loaded space's RSS go beyond space.memory()? (issue 13)
//
//   npx tsx scripts/memory-gap.ts [N] [--repeats R]
//   MODES=insertMany:10000,insert NODE_ARGS='--max-semi-space-size=1' npx tsx scripts/memory-gap.ts
//
// Loads N records [id, 'user<id>@tarantool.io', exp] (the bench's shape: HASH primary on field 1,
// non-unique TREE on field 3) in a fresh child process with --expose-gc, once per loading mode,
// modes interleaved in every repeat, and prints per record: RSS growth after a full GC, what
// memory() reports, V8's heap and external growth, glibc's free-but-kept bytes (mallinfo2), the
// anonymous huge pages, and the RSS after malloc_trim(0). mallinfo2 and malloc_trim come from a
// tiny N-API helper compiled on the fly into the temp directory (scripts/memory-gap-hook.c); without
// a C compiler and /usr/include/node those columns are blank.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

interface Mallinfo { arena: number; fordblks: number; uordblks: number; hblkhd: number; keepcost: number }
interface Hook { mallinfo(): Mallinfo; trim(): number }

function loadHook(): Hook | undefined {
  const out = join(tmpdir(), `ce-memory-gap-hook-${process.getuid?.() ?? 0}.node`);
  const src = join(here, 'memory-gap-hook.c');
  try {
    if (!existsSync(out)) {
      execFileSync('cc', ['-O2', '-shared', '-fPIC', '-I/usr/include/node', '-o', out, src], { stdio: 'pipe' });
    }
    return createRequire(import.meta.url)(out) as Hook;
  } catch {
    return undefined;
  }
}

function smaps(): { rss: number; anonHuge: number } {
  const text = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('Rss'), anonHuge: kb('AnonHugePages') };
}

interface Snapshot {
  rss: number; anonHuge: number; heapUsed: number; heapTotal: number; external: number;
  mallocFree: number; mallocUsed: number; mallocMmapped: number;
}

async function child(n: number, mode: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the child with --expose-gc');
  const hook = loadHook();
  const { Space } = await import('../src/index.js');
  const snap = (): Snapshot => {
    gc(); gc();
    const m = process.memoryUsage();
    const s = smaps();
    const mi = hook?.mallinfo();
    return {
      rss: s.rss, anonHuge: s.anonHuge, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external,
      mallocFree: mi ? mi.fordblks : NaN, mallocUsed: mi ? mi.uordblks : NaN, mallocMmapped: mi ? mi.hblkhd : NaN,
    };
  };
  // Warm up the binding and msgpackr on a throwaway space, so their one-off costs are not counted.
  {
    const w = new Space('warm');
    w.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
    w.insertMany([[1, 'x', 1]]);
    w.insert([2, 'y', 2]);
    w.drop();
  }
  const before = snap();
  const space = new Space('gap');
  space.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'unsigned' }] });
  const now = Math.floor(Date.now() / 1000);
  const tuple = (id: number) => [id, `user${id}@tarantool.io`, now + 3600 + (id % 600)];
  if (mode === 'insert') {
    for (let id = 1; id <= n; id++) space.insert(tuple(id));
  } else {
    const batch = Number(mode.split(':')[1]);
    for (let from = 1; from <= n; from += batch) {
      const to = Math.min(n, from + batch - 1);
      const rows = new Array(to - from + 1);
      for (let id = from; id <= to; id++) rows[id - from] = tuple(id);
      space.insertMany(rows);
    }
  }
  const after = snap();
  const mem = space.memory();
  const trimmed = hook ? (hook.trim(), snap()) : undefined;
  process.stdout.write(JSON.stringify({ before, after, trimmed, mem, len: space.len() }) + '\n');
}

function main(): void {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    void child(Number(args[1]), args[2]);
    return;
  }
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
  const ri = args.indexOf('--repeats');
  const repeats = ri >= 0 ? Number(args[ri + 1]) : 3;
  // NODE_ARGS='--max-semi-space-size=1' shows how much of the gap is V8's young generation.
  const nodeArgs = (process.env.NODE_ARGS ?? '').split(' ').filter(Boolean);
  const modes = (process.env.MODES ?? 'insertMany:10000,insertMany:1000,insertMany:100000,insert').split(',');
  const rows: Record<string, Array<Record<string, number>>> = {};
  for (let r = 0; r < repeats; r++) {
    for (const mode of modes) {
      const res = spawnSync(process.execPath, [...nodeArgs, '--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', String(n), mode],
        { encoding: 'utf8', maxBuffer: 1 << 20 });
      if (res.status !== 0) throw new Error(`child ${mode} failed: ${res.stderr}`);
      const d = JSON.parse(res.stdout.trim().split('\n').pop()!);
      const per = (x: number) => x / d.len;
      const g = (k: string) => per(d.after[k] - d.before[k]);
      (rows[mode] ??= []).push({
        rss: g('rss'), memory: per(d.mem.total), tuples: per(d.mem.tuples), indexes: per(d.mem.indexes),
        gap: g('rss') - per(d.mem.total), heapUsed: g('heapUsed'), heapSlack: g('heapTotal') - g('heapUsed'),
        external: g('external'), mallocFree: g('mallocFree'), mallocUsed: g('mallocUsed'), mallocMmapped: g('mallocMmapped'),
        anonHuge: g('anonHuge'), rssTrimmed: d.trimmed ? per(d.trimmed.rss - d.before.rss) : NaN,
      });
    }
  }
  const cols = ['rss', 'memory', 'tuples', 'indexes', 'gap', 'heapUsed', 'heapSlack', 'external', 'mallocUsed', 'mallocFree', 'mallocMmapped', 'anonHuge', 'rssTrimmed'];
  console.log(`N = ${n}, ${repeats} interleaved repeats; bytes per record (median of the repeats), growth from before the load to after it, after a full GC`);
  console.log(['mode'.padEnd(18), ...cols.map((c) => c.padStart(13))].join(''));
  for (const mode of modes) {
    const cells = cols.map((c) => {
      const v = rows[mode].map((x) => x[c]).sort((a, b) => a - b);
      const med = v[Math.floor(v.length / 2)];
      return (Number.isNaN(med) ? '-' : med.toFixed(1)).padStart(13);
    });
    console.log([mode.padEnd(18), ...cells].join(''));
  }
  console.log('rss: RSS growth; memory/tuples/indexes: space.memory(); gap = rss - memory; heapSlack: V8 heapTotal - heapUsed growth;');
  console.log('mallocUsed/Free/Mmapped: glibc mallinfo2 uordblks/fordblks/hblkhd growth (main arena + mmapped blocks);');
  console.log('anonHuge: AnonHugePages growth; rssTrimmed: RSS growth after malloc_trim(0)');
}

main();
