// Mutation testing of the native engine and the TypeScript layer: a curated list of realistic
// bugs, each applied alone to a scratch copy of the tree and judged by the tests.
//
//   npm run mutate [-- --native | --ts] [--only id,id] [--list] [--full] [--jobs 1] [--keep] [--resume]
//
// --resume skips the mutants that already have a result for their current text (an interrupted
// run goes on where it stopped); --keep leaves the scratch tree in place.
//
// Mutants are in scripts/mutants/native.json and scripts/mutants/ts.json: each names a file, an
// exact snippet of it (it must occur exactly once) and its replacement, the vitest files most
// likely to kill it, and for native mutants the native/test programs to run. A mutant whose
// snippet is gone or no longer unique is reported "stale" (the code moved on: update the entry),
// never applied somewhere else. A mutant with `equivalent` set is not run: it is listed with the
// reason.
//
// The working tree is never changed. The tracked and untracked (not ignored) files are copied
// to a scratch directory under the system temp dir (node_modules symlinked), the addon is built
// there once, and each native mutant is rebuilt incrementally from that baseline (make; only the
// objects that depend on the mutated file), then the file and the build are put back. TS mutants
// need no build: vitest compiles src/ as it loads it. For each mutant, in order, until one fails:
//   1. its vitest files (`vitest run --bail 1`), with the scratch addon;
//   2. its native programs (native/test/run.sh --quick --only ...);
//   3. with --full, for survivors only: the whole `npm test` (and all the native programs).
// A test run that times out (MUTATE_TIMEOUT seconds, default 600) counts as a kill (a hang).
// Results are merged by id into scripts/mutants/results.json (an entry is dropped when its mutant
// changes), and docs/mutation.md is written from it: the table and the scores.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const MUTANTS_DIR = path.join(ROOT, 'scripts/mutants');
const RESULTS = path.join(MUTANTS_DIR, 'results.json');
const DOC = path.join(ROOT, 'docs/mutation.md');
const TIMEOUT_S = Number(process.env.MUTATE_TIMEOUT ?? 600);
/** The output of each mutant's deciding run, for a look at what killed it. */
const LOG_DIR = path.join(os.tmpdir(), 'ce-mutate-logs');

type Kind = 'native' | 'ts';

interface Mutant {
  id: string;
  file: string;
  find: string;
  replace: string;
  description: string;
  /** vitest files, relative to the root. */
  tests?: string[];
  /** native/test programs by name (btree_test, msgpack_test, ...). */
  native?: string[];
  /** Run the native programs with ASan + UBSan (run.sh --one-mode) instead of --quick: for a
   * read past a buffer or a leak, which only a sanitizer sees. */
  nativeAsan?: boolean;
  /** Set when the mutant cannot change behaviour: the reason. Not run. */
  equivalent?: string;
}

type Status = 'killed' | 'survived' | 'equivalent' | 'stale' | 'error';

interface Result {
  id: string;
  kind: Kind;
  file: string;
  description: string;
  status: Status;
  /** killed: what killed it; survived: what ran; equivalent: the reason; stale: why. */
  detail: string;
  /** Whether the whole suite was run on a survivor (--full). */
  full: boolean;
  hash: string;
  seconds: number;
  date: string;
}

interface Args { kinds: Kind[]; only: Set<string> | undefined; list: boolean; full: boolean; jobs: number; keep: boolean; resume: boolean }

function parseArgs(argv: string[]): Args {
  const args: Args = { kinds: ['native', 'ts'], only: undefined, list: false, full: false, jobs: 1, keep: false, resume: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--native') args.kinds = ['native'];
    else if (a === '--ts') args.kinds = ['ts'];
    else if (a === '--only') args.only = new Set(value().split(',').map((s) => s.trim()).filter(Boolean));
    else if (a === '--list') args.list = true;
    else if (a === '--full') args.full = true;
    else if (a === '--keep') args.keep = true;
    else if (a === '--resume') args.resume = true;
    else if (a === '--jobs') {
      args.jobs = Number(value());
      if (args.jobs !== 1) throw new Error('--jobs: only 1 is supported (one scratch tree, one build at a time)');
    } else if (a === '--help' || a === '-h') {
      console.log('usage: npm run mutate -- [--native|--ts] [--only id,id] [--list] [--full] [--jobs 1] [--keep] [--resume]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

function loadMutants(kind: Kind): Mutant[] {
  const list = JSON.parse(fs.readFileSync(path.join(MUTANTS_DIR, `${kind}.json`), 'utf8')) as Mutant[];
  const seen = new Set<string>();
  for (const m of list) {
    for (const key of ['id', 'file', 'find', 'replace', 'description'] as const) {
      if (typeof m[key] !== 'string') throw new Error(`${kind}.json: mutant ${m.id ?? '?'} has no ${key}`);
    }
    if (seen.has(m.id)) throw new Error(`${kind}.json: duplicate mutant id ${m.id}`);
    if (m.find === m.replace) throw new Error(`${kind}.json: mutant ${m.id} changes nothing`);
    seen.add(m.id);
  }
  return list;
}

const hashOf = (m: Mutant): string => createHash('sha256').update(JSON.stringify([m.file, m.find, m.replace])).digest('hex').slice(0, 12);

function occurrences(text: string, snippet: string): number {
  let n = 0;
  for (let at = text.indexOf(snippet); at !== -1; at = text.indexOf(snippet, at + 1)) n++;
  return n;
}

/** Why the mutant cannot be applied to `root`, or undefined when it can. */
function staleReason(root: string, m: Mutant): string | undefined {
  const file = path.join(root, m.file);
  if (!fs.existsSync(file)) return `file ${m.file} not found (stale)`;
  const n = occurrences(fs.readFileSync(file, 'utf8'), m.find);
  if (n === 0) return 'snippet not found (stale)';
  if (n > 1) return `snippet occurs ${n} times (stale: make it unique)`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The scratch tree.

function makeScratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ce-mutate-'));
  const files = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (files.status !== 0) throw new Error(`git ls-files failed: ${files.stderr}`);
  for (const f of files.stdout.split('\0').filter(Boolean)) {
    if (f === 'node_modules' || f.startsWith('node_modules/')) continue;
    const from = path.join(ROOT, f);
    if (!fs.existsSync(from) || fs.lstatSync(from).isSymbolicLink()) continue;
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, f));
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

interface RunResult { ok: boolean; timedOut: boolean; output: string; seconds: number }

/** Runs a command in its own process group; kills the group on timeout. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutS = TIMEOUT_S): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (b: Buffer): void => {
      output += b.toString();
      if (output.length > 400_000) output = output.slice(-200_000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0 && !timedOut, timedOut, output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

let currentId = '';
const killedBy = (r: RunResult, what: string): string => {
  fs.mkdirSync(LOG_DIR, { recursive: true });
  fs.writeFileSync(path.join(LOG_DIR, `${currentId}.log`), r.output);
  if (r.timedOut) return `${what} (timed out after ${TIMEOUT_S} s: a hang)`;
  const failed = [...new Set([...r.output.matchAll(/(?:FAIL|×|✗)\s+(test\/[\w./-]+\.test\.ts)/g)].map((x) => x[1]))];
  const crashed = /Worker exited unexpectedly|Segmentation fault|SIGSEGV|SIGABRT/.test(r.output) ? ' (a crash)' : '';
  // run.sh stops at the first failing program: the last one it announced.
  const nativeFail = [...r.output.matchAll(/^(\w+_test) \((?:pool|per-node)\)$/gm)].pop();
  if (failed.length) return `${what}: ${failed.slice(0, 2).join(', ')}${crashed}`;
  if (nativeFail) return `${what}: ${nativeFail[1]}`;
  return `${what}${crashed}`;
};

class Scratch {
  readonly dir = makeScratch();
  private built = false;

  /** The baseline build: the addon from the unmutated sources, and build.base/ to restore it from. */
  async buildBaseline(nativeToo: boolean): Promise<void> {
    if (this.built) return;
    const addon = path.join(ROOT, 'build/Release/capped_expirationd.node');
    if (!nativeToo && fs.existsSync(addon)) {
      // TS mutants only: the working tree's addon (built from the same native/) is enough.
      console.log(`scratch tree: ${this.dir}; using ${path.relative(ROOT, addon)}`);
      fs.mkdirSync(path.join(this.dir, 'build/Release'), { recursive: true });
      fs.copyFileSync(addon, path.join(this.dir, 'build/Release/capped_expirationd.node'));
    } else {
      console.log(`scratch tree: ${this.dir}; building the baseline addon...`);
      const r = await run('npm', ['run', 'build:native'], this.dir, {}, 1800);
      if (!r.ok) throw new Error(`the baseline build failed:\n${r.output.slice(-4000)}`);
    }
    const ts = await run('npx', ['tsc', '-p', 'tsconfig.json'], this.dir, {}, 600);
    if (!ts.ok) throw new Error(`the baseline tsc failed:\n${ts.output.slice(-4000)}`);
    fs.cpSync(path.join(this.dir, 'build'), path.join(this.dir, 'build.base'), { recursive: true, preserveTimestamps: true });
    this.built = true;
  }

  /** Applies m, runs fn, and puts the file (content and mtime) and the build back. */
  async withMutant<T>(m: Mutant, kind: Kind, fn: () => Promise<T>): Promise<T> {
    const file = path.join(this.dir, m.file);
    const original = fs.readFileSync(file, 'utf8');
    const stat = fs.statSync(file);
    fs.writeFileSync(file, original.replace(m.find, () => m.replace));
    try {
      return await fn();
    } finally {
      fs.writeFileSync(file, original);
      fs.utimesSync(file, stat.atime, stat.mtime);
      if (kind === 'native') {
        fs.rmSync(path.join(this.dir, 'build'), { recursive: true, force: true });
        fs.cpSync(path.join(this.dir, 'build.base'), path.join(this.dir, 'build'), { recursive: true, preserveTimestamps: true });
      }
    }
  }

  async rebuild(): Promise<RunResult> {
    return run('make', ['-C', 'build', 'BUILDTYPE=Release', '-j', String(Math.max(1, Math.min(2, os.cpus().length)))], this.dir, {}, 1800);
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Judging one mutant.

async function judge(scratch: Scratch, kind: Kind, m: Mutant, full: boolean): Promise<Omit<Result, 'hash' | 'date' | 'seconds'>> {
  const base = { id: m.id, kind, file: m.file, description: m.description, full: false };
  currentId = `${kind}-${m.id}`;
  const env = { CAPPED_EXPIRATIOND_ADDON: path.join(scratch.dir, 'build/Release/capped_expirationd.node') };
  return scratch.withMutant(m, kind, async () => {
    if (kind === 'native') {
      const b = await scratch.rebuild();
      // A mutant that does not compile is killed by the compiler: it is not a realistic bug.
      if (!b.ok) return { ...base, status: 'error' as Status, detail: `does not compile: ${/error: .*/.exec(b.output)?.[0] ?? b.output.slice(-300)}` };
    }
    const ran: string[] = [];
    const tests = (m.tests ?? []).filter((t) => fs.existsSync(path.join(scratch.dir, t)));
    const missing = (m.tests ?? []).filter((t) => !tests.includes(t));
    if (missing.length) console.warn(`${m.id}: no such test file ${missing.join(', ')} (skipped)`);
    if (tests.length) {
      // The property tests with a fixed seed run a prefix of `npm test`'s cases: what they kill,
      // npm test kills too (MUTATE_FUZZ_RUNS, default 2000 of npm test's 10000).
      const r = await run('npx', ['vitest', 'run', '--bail', '1', ...tests], scratch.dir, { ...env, FUZZ_RUNS: process.env.MUTATE_FUZZ_RUNS ?? '2000' });
      if (!r.ok) return { ...base, status: 'killed' as Status, detail: killedBy(r, 'vitest') };
      ran.push(`vitest ${tests.map((t) => path.basename(t, '.test.ts')).join(' ')}`);
    }
    if (m.native?.length) {
      const mode = m.nativeAsan ? '--one-mode' : '--quick';
      const r = await run('bash', ['native/test/run.sh', mode, '--only', m.native.join(',')], scratch.dir);
      const what = m.nativeAsan ? 'native (ASan)' : 'native';
      if (!r.ok) return { ...base, status: 'killed' as Status, detail: killedBy(r, what) };
      ran.push(`${what} ${m.native.join(' ')}`);
    }
    if (full) {
      const r = await run('npm', ['test'], scratch.dir, env, Math.max(TIMEOUT_S, 1800));
      if (!r.ok) return { ...base, full: true, status: 'killed' as Status, detail: killedBy(r, 'npm test') };
      ran.push('npm test');
      if (kind === 'native') {
        const n = await run('bash', ['native/test/run.sh', '--quick'], scratch.dir);
        if (!n.ok) return { ...base, full: true, status: 'killed' as Status, detail: killedBy(n, 'native (all)') };
        ran.push('native (all)');
      }
    }
    return { ...base, full, status: 'survived' as Status, detail: ran.join('; ') || 'no tests listed' };
  });
}

// ---------------------------------------------------------------------------------------------
// The table, the scores, docs/mutation.md.

function loadResults(): Map<string, Result> {
  if (!fs.existsSync(RESULTS)) return new Map();
  const list = JSON.parse(fs.readFileSync(RESULTS, 'utf8')) as Result[];
  return new Map(list.map((r) => [`${r.kind}:${r.id}`, r]));
}

function score(results: Result[]): { killed: number; counted: number; text: string } {
  const killed = results.filter((r) => r.status === 'killed').length;
  const counted = results.filter((r) => r.status === 'killed' || r.status === 'survived').length;
  const pct = counted ? ((100 * killed) / counted).toFixed(1) : '-';
  const eq = results.filter((r) => r.status === 'equivalent').length;
  const stale = results.filter((r) => r.status === 'stale').length;
  const err = results.filter((r) => r.status === 'error').length;
  return { killed, counted, text: `${killed}/${counted} killed (${pct}%), ${eq} equivalent, ${stale} stale, ${err} not compiling` };
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function table(results: Result[]): string {
  const lines = ['| id | file | mutant | result |', '|---|---|---|---|'];
  for (const r of results) {
    const what = r.status === 'killed' ? `killed by ${r.detail}` : r.status === 'survived' ? `**SURVIVED** (${r.detail})` : `${r.status}: ${r.detail}`;
    lines.push(`| ${r.id} | ${cell(r.file)} | ${cell(r.description)} | ${cell(what)} |`);
  }
  return lines.join('\n');
}

function writeDoc(all: Map<string, Result>, mutants: Record<Kind, Mutant[]>): void {
  const sections: string[] = [];
  const summary: string[] = [];
  for (const kind of ['native', 'ts'] as Kind[]) {
    const results = mutants[kind].map((m) => all.get(`${kind}:${m.id}`)).filter((r): r is Result => r !== undefined);
    const s = score(results);
    const notRun = mutants[kind].length - results.length;
    summary.push(`- **${kind === 'native' ? 'Native engine' : 'TypeScript (src/ and bench/lib/)'}**: ${s.text}` +
      `${notRun ? `; ${notRun} not run yet` : ''} (${mutants[kind].length} mutants).`);
    sections.push(`## ${kind === 'native' ? 'Native engine (scripts/mutants/native.json)' : 'TypeScript (scripts/mutants/ts.json)'}\n\n${table(results)}`);
  }
  const dates = [...all.values()].map((r) => r.date).sort();
  const doc = [
    '# Mutation testing',
    '',
    'Written by `npm run mutate` (scripts/mutate.ts). Each mutant is one realistic bug, applied alone',
    'to a scratch copy of the tree, rebuilt, and judged by its listed vitest files (`--bail 1`) and',
    'native programs (`native/test/run.sh --quick`); with `--full`, survivors also get the whole',
    '`npm test`. The score counts killed / (killed + survived); equivalent mutants (listed with the',
    'reason) and stale ones (their snippet is no longer in the file) are not counted.',
    '',
    `Results from ${dates[0] ?? '-'} to ${dates[dates.length - 1] ?? '-'}:`,
    '',
    ...summary,
    '',
    'Run: `npm run mutate` (everything: about 1-2 min per native mutant, a rebuild and its tests,',
    'and 15-30 s per TypeScript mutant, on a busy 2-core machine), `npm run mutate -- --native` or',
    '`--ts`, `--only <id,id>` for some, `--resume` to go on after an interrupted run, `--list` to',
    'check which snippets still apply, `--full` to run the whole suite on survivors. A survivor',
    'judged without `--full` (the column says what ran) may still be killed by the whole suite.',
    '',
    ...sections.flatMap((s) => [s, '']),
  ].join('\n');
  fs.mkdirSync(path.dirname(DOC), { recursive: true });
  fs.writeFileSync(DOC, doc);
}

function printRow(r: Pick<Result, 'id' | 'file' | 'status' | 'detail'> & { description: string }): void {
  const status = r.status === 'survived' ? 'SURVIVED' : r.status;
  console.log(`${r.id.padEnd(24)} ${r.file.replace(/^native\/engine\/|^src\//, '').padEnd(24)} ${status.padEnd(10)} ${r.detail}  — ${r.description}`);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const mutants: Record<Kind, Mutant[]> = { native: loadMutants('native'), ts: loadMutants('ts') };
  if (args.only) {
    const known = new Set([...mutants.native, ...mutants.ts].map((m) => m.id));
    const unknown = [...args.only].filter((id) => !known.has(id));
    if (unknown.length) throw new Error(`--only: no mutant ${unknown.join(', ')}`);
  }
  const chosen = (kind: Kind): Mutant[] => (args.kinds.includes(kind) ? mutants[kind].filter((m) => !args.only || args.only.has(m.id)) : []);

  if (args.list) {
    for (const kind of args.kinds) {
      for (const m of chosen(kind)) {
        const stale = staleReason(ROOT, m);
        printRow({ id: m.id, file: m.file, description: m.description, status: m.equivalent ? 'equivalent' : stale ? 'stale' : 'ok', detail: m.equivalent ?? stale ?? '' } as never);
      }
    }
    return 0;
  }

  const all = loadResults();
  const ran: Result[] = [];
  let scratch: Scratch | undefined;
  const cleanup = (): void => {
    if (scratch && !args.keep) scratch.remove();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { cleanup(); process.exit(130); });
  try {
    for (const kind of args.kinds) {
      for (const m of chosen(kind)) {
        // --resume: a mutant with a result for its current text is not run again.
        const done = all.get(`${kind}:${m.id}`);
        if (args.resume && done !== undefined && done.hash === hashOf(m) && done.status !== 'stale') continue;
        const started = Date.now();
        let r: Omit<Result, 'hash' | 'date' | 'seconds'>;
        const stale = staleReason(ROOT, m);
        if (m.equivalent) r = { id: m.id, kind, file: m.file, description: m.description, full: false, status: 'equivalent', detail: m.equivalent };
        else if (stale) r = { id: m.id, kind, file: m.file, description: m.description, full: false, status: 'stale', detail: stale };
        else {
          scratch ??= new Scratch();
          await scratch.buildBaseline(args.kinds.includes('native'));
          r = await judge(scratch, kind, m, args.full);
        }
        const result: Result = { ...r, hash: hashOf(m), date: new Date().toISOString().slice(0, 16).replace('T', ' '), seconds: Math.round((Date.now() - started) / 1000) };
        printRow(result);
        ran.push(result);
        all.set(`${kind}:${m.id}`, result);
        // Saved after every mutant: an interrupted run keeps what it found. The results file and
        // the mutant lists are read again first, so that two runs at once (--native and an
        // --only of TS mutants) merge their results instead of writing over each other's.
        const merged = loadResults();
        merged.set(`${kind}:${m.id}`, result);
        const current: Record<Kind, Mutant[]> = { native: loadMutants('native'), ts: loadMutants('ts') };
        const valid = [...merged.values()].filter((x) => {
          const mm = current[x.kind]?.find((y) => y.id === x.id);
          return mm !== undefined && hashOf(mm) === x.hash;
        });
        const tmp = `${RESULTS}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, `${JSON.stringify(valid, null, 1)}\n`);
        fs.renameSync(tmp, RESULTS);
        writeDoc(new Map(valid.map((v) => [`${v.kind}:${v.id}`, v])), current);
      }
    }
  } finally {
    cleanup();
  }
  console.log('');
  for (const kind of args.kinds) {
    const mine = ran.filter((r) => r.kind === kind);
    if (mine.length) console.log(`${kind}: ${score(mine).text}`);
  }
  for (const r of ran.filter((x) => x.status === 'survived')) console.log(`survived: ${r.id} (${r.file}): ${r.description}`);
  console.log(`\nwritten: ${path.relative(ROOT, DOC)} (all results: ${path.relative(ROOT, RESULTS)})`);
  return ran.some((r) => r.status === 'survived') ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exitCode = 2;
});
