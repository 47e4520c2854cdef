// runBench(options): the whole benchmark as a function. Runs every contender `repeat` times, each
// run in a fresh child process (round-robin, one at a time), then aggregates medians and ratios and
// writes latest.json and latest.svg. main.ts and the tests both call it.
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChildMessage, ChildRequest } from './child.js';
import { BASELINE, CONTENDERS_DIR, contenderNames } from './contender.js';
import { median } from './measure.js';
import { resolveOptions, type BenchOptions } from './options.js';
import { Progress } from './progress.js';
import { aggregate, type BenchResults } from './results.js';
import { renderSvg } from './svg.js';
import { fmtMs } from './table.js';
import type { TrialConfig, TrialResult } from './trial.js';

export const ROOT = path.resolve(__dirname, '..', '..');
const CHILD = path.join(__dirname, 'child.ts');

export interface RunFailure {
  name: string;
  run: number;
  message: string;
}

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
  const expiredCount = Math.round(options.tuples * options.expired);
  progress.line(
    `bench: ${options.tuples.toLocaleString('en-US')} tuples, ${expiredCount.toLocaleString('en-US')} expired, ` +
      `scan size ${options.scanSize}, scan time ${options.scanTime} s, ${names.length} contenders × ${options.repeat} runs`,
  );

  const runs = new Map<string, TrialResult[]>(names.map((n) => [n, []]));
  const failures: RunFailure[] = [];
  for (let r = 1; r <= options.repeat; r++) {
    for (const name of names) {
      const tag = `run ${r}/${options.repeat}`;
      const config: TrialConfig = {
        name,
        tuples: options.tuples,
        expired: options.expired,
        seed: options.seed,
        scanSize: options.scanSize,
        scanTime: options.scanTime,
        timeout: options.timeout,
        tag,
      };
      const t0 = Date.now();
      try {
        const result = await runChild({ config, contendersDir: CONTENDERS_DIR, progress: options.progress });
        runs.get(name)!.push(result);
        const mark = result.verify.ok ? 'ok' : `FAILED CHECK: ${result.verify.errors.join('; ')}`;
        progress.line(
          `${name} ${tag}: load ${fmtMs(median(result.load.ms))}, clear ${fmtMs(result.clear.wallMs)} wall / ` +
            `${fmtMs(result.clear.cpuMs)} CPU, longest pause ${fmtMs(result.pauses.maxMs)} (${((Date.now() - t0) / 1000).toFixed(1)} s) ${mark}`,
        );
      } catch (err) {
        const message = (err instanceof Error ? err.message : String(err)).trim().replace(/\s*\n\s*/g, '; ');
        failures.push({ name, run: r, message });
        progress.line(`${name} ${tag}: ERROR ${message}`);
      }
    }
  }

  const results = aggregate({
    options,
    names,
    runs,
    failures,
    baseline: BASELINE,
    date: started.toISOString(),
    durationS: (Date.now() - started.getTime()) / 1000,
    machine: machine(),
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

function machine(): BenchResults['machine'] {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    v8: process.versions.v8,
  };
}

/** Forks child.ts under tsx with --expose-gc and waits for its one message. */
function runChild(request: ChildRequest): Promise<TrialResult> {
  const tsx = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [JSON.stringify(request)], {
      cwd: ROOT,
      execArgv: ['--expose-gc', '--import', tsx],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let message: ChildMessage | undefined;
    child.on('message', (m) => {
      message = m as ChildMessage;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (message?.type === 'result') resolve(message.result);
      else if (message?.type === 'error') reject(new Error(message.message));
      else reject(new Error(`the ${request.config.name} process died (${signal ?? `exit code ${code}`}) without reporting`));
    });
  });
}
