// Entry point of the process that runs one contender once (forked by run.ts with --expose-gc and
// tsx): a fresh heap and a fresh resident set for each run, so no contender measures another's garbage.
import { loadDefinition } from './contender.js';
import { Progress } from './progress.js';
import { runTrial, type TrialConfig, type TrialResult } from './trial.js';

export type ChildMessage =
  | { type: 'result'; result: TrialResult }
  | { type: 'skipped'; reason: string }
  /** a server process this child started (Redis): the parent kills it if the child dies first */
  | { type: 'server'; pid: number; port: number }
  | { type: 'error'; message: string; stack?: string };

export interface ChildRequest {
  config: TrialConfig;
  contendersDir: string;
  progress: boolean;
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '') as ChildRequest;
  const progress = new Progress({ enabled: request.progress });
  const def = loadDefinition(request.config.name, request.contendersDir);
  const reason = def.unavailable ? def.unavailable() : null;
  if (reason !== null) {
    await send({ type: 'skipped', reason });
    return;
  }
  const result = await runTrial(def, request.config, progress);
  await send({ type: 'result', result });
}

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) {
      reject(new Error('bench/lib/child.ts must be started by run.ts (it reports over IPC)'));
      return;
    }
    process.send(message, (err: Error | null) => (err ? reject(err) : resolve()));
  });
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    const e = err instanceof Error ? err : new Error(String(err));
    try {
      await send({ type: 'error', message: e.message, stack: e.stack });
    } finally {
      process.exit(1);
    }
  },
);
