// runBench(options): the whole benchmark as a function. For each repeat, for each workload shape,
// runs every contender once in a fresh child process (interleaved, one at a time), then aggregates
// medians, min, max and ratios per shape and writes latest.json and latest.svg. main.ts and the
// tests both call it. A contender that cannot run here (Redis without redis-server) is skipped
// after its first attempt, with the reason in its row.
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChildMessage, ChildRequest } from './child.js';
import { BASELINE, CONTENDERS_DIR, contenderNames } from './contender.js';
import { median } from './measure.js';
import { resolveOptions, shapesOf, type BenchOptions, type Shape } from './options.js';
import { Progress } from './progress.js';
import { mulberry32 } from './random.js';
import { aggregateShape, assemble, type BenchResults, type RunFailure } from './results.js';
import { renderSvg } from './svg.js';
import { fmtMs } from './table.js';
import type { TrialConfig, TrialResult } from './trial.js';

export const ROOT = path.resolve(__dirname, '..', '..');
const CHILD = path.join(__dirname, 'child.ts');

export async function runBench(partial: Partial<BenchOptions> = {}): Promise<BenchResults> {
  const options = resolveOptions(partial);
  const available = contenderNames();
  const names = options.only ?? available;
  const unknown = names.filter((n) => !available.includes(n));
  if (unknown.length) {
    throw new TypeError(`unknown contender(s) ${unknown.join(', ')}; available: ${available.join(', ')}`);
  }
  const progress = new Progress({ enabled: options.progress });
  const started = new Date();
  const loadStart = os.loadavg();
  const shapes = shapesOf(options);
  progress.line(
    `bench: ${shapes.map((s) => `${s.tuples.toLocaleString('en-US')} records × ${s.expired * 100}% expired`).join(', ')}; ` +
      `scan size ${options.scanSize}, scan time ${options.scanTime} s; ${names.length} contenders × ${options.repeat} runs, interleaved`,
  );

  const key = (s: Shape): string => `${s.tuples}/${s.expired}`;
  const runs = new Map<string, Map<string, TrialResult[]>>(shapes.map((s) => [key(s), new Map(names.map((n) => [n, []]))]));
  const skipped = new Map<string, string>();
  const failures: RunFailure[] = [];
  const phases = mulberry32(options.seed);
  for (let r = 1; r <= options.repeat; r++) {
    const phase = phases();
    for (const shape of shapes) {
      for (const name of names) {
        if (skipped.has(name)) continue;
        const tag = `run ${r}/${options.repeat}${shapes.length > 1 ? ` [${shape.tuples}×${shape.expired}]` : ''}`;
        const config: TrialConfig = {
          name,
          tuples: shape.tuples,
          expired: shape.expired,
          seed: options.seed,
          scanSize: options.scanSize,
          scanTime: options.scanTime,
          timeout: options.timeout,
          window: options.window,
          idleMs: options.idle * 1000,
          pauseWindowMs: options.pauseWindow * 1000,
          phase,
          tag,
        };
        const t0 = Date.now();
        try {
          const outcome = await runChild({ config, contendersDir: CONTENDERS_DIR, progress: options.progress });
          if (outcome.type === 'skipped') {
            skipped.set(name, outcome.reason);
            progress.line(`${name}: skipped: ${outcome.reason}`);
            continue;
          }
          const result = outcome.result;
          runs.get(key(shape))!.get(name)!.push(result);
          const mark = result.verify.ok ? 'ok' : `FAILED CHECK: ${result.verify.errors.join('; ')}`;
          const c = result.clear;
          progress.line(
            `${name} ${tag}: load ${fmtMs(median(result.load.ms))}, idle ${result.idle.cpuMsPerS.toFixed(1)} ms CPU/s, ` +
              `detect ${c.detectMs === null ? '—' : fmtMs(c.detectMs)}, ` +
              (c.dueToClearedMs !== null ? `gone after ${fmtMs(c.dueToClearedMs)}` : `${c.left} left after ${fmtMs(c.measuredMs)}`) +
              `, ${fmtMs(c.cpuMs)} CPU, max stall ${fmtMs(result.pauses.maxMs)} (${((Date.now() - t0) / 1000).toFixed(1)} s) ${mark}`,
          );
        } catch (err) {
          const message = (err instanceof Error ? err.message : String(err)).trim().replace(/\s*\n\s*/g, '; ');
          failures.push({ name, tuples: shape.tuples, expired: shape.expired, run: r, message });
          progress.line(`${name} ${tag}: ERROR ${message}`);
        }
      }
    }
  }

  const shapeResults = shapes.map((s) =>
    aggregateShape(
      { tuples: s.tuples, fraction: s.expired, names, runs: runs.get(key(s))!, skipped, failures },
      options.repeat,
      BASELINE,
    ),
  );
  const results = assemble(options, shapeResults, failures, {
    date: started.toISOString(),
    durationS: (Date.now() - started.getTime()) / 1000,
    machine: machine(loadStart),
  });

  if (options.out !== null) {
    const out = path.resolve(ROOT, options.out);
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    fs.writeFileSync(path.join(out, 'latest.svg'), renderSvg(results));
    results.files = { json: path.join(out, 'latest.json'), svg: path.join(out, 'latest.svg') };
  }
  return results;
}

function machine(loadStart: number[]): BenchResults['machine'] {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    v8: process.versions.v8,
    loadAvg: { start: loadStart, end: os.loadavg() },
  };
}

type ChildOutcome = { type: 'result'; result: TrialResult } | { type: 'skipped'; reason: string };

/**
 * Forks child.ts under tsx with --expose-gc and waits for its outcome. A server the child reports
 * (Redis) is killed here if it is still running when the child exits, however the child ended.
 */
function runChild(request: ChildRequest): Promise<ChildOutcome> {
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  const heap = request.config.tuples >= 5_000_000 ? ['--max-old-space-size=16384'] : [];
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [JSON.stringify(request)], {
      cwd: ROOT,
      execArgv: ['--expose-gc', ...heap, '--import', tsx],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let outcome: ChildOutcome | undefined;
    let error: string | undefined;
    const servers: { pid: number; port: number }[] = [];
    child.on('message', (m) => {
      const message = m as ChildMessage;
      if (message.type === 'server') servers.push({ pid: message.pid, port: message.port });
      else if (message.type === 'error') error = process.env.BENCH_STACK ? (message.stack ?? message.message) : message.message;  // BENCH_STACK=1: the child's stack
      else outcome = message;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      for (const server of servers) killOrphanServer(server);
      if (outcome) resolve(outcome);
      else if (error !== undefined) reject(new Error(error));
      else reject(new Error(`the ${request.config.name} process died (${signal ?? `exit code ${code}`}) without reporting`));
    });
  });
}

/** Kills a server the child started, only if that pid is still that redis-server on that port. */
function killOrphanServer(server: { pid: number; port: number }): void {
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${server.pid}/cmdline`, 'utf8');
  } catch {
    return; // gone: the child stopped it
  }
  if (!cmdline.includes('redis-server') || !cmdline.includes(`:${server.port}`)) return;
  try {
    process.kill(server.pid, 'SIGKILL');
  } catch {
    // it exited meanwhile
  }
}
