// Entry point of the process that runs one contender once (forked by run.ts with --expose-gc and
// tsx): a fresh heap and a fresh resident set for each run, so no contender measures another's garbage.
import { contenderFile, type ContenderDefinition } from './contender.js';
import { Progress } from './progress.js';
import { runTrial, type TrialConfig, type TrialResult } from './trial.js';

export type ChildMessage =
  | { type: 'result'; result: TrialResult }
  | { type: 'error'; message: string; stack?: string };

export interface ChildRequest {
  config: TrialConfig;
  contendersDir: string;
  progress: boolean;
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '') as ChildRequest;
  const progress = new Progress({ enabled: request.progress });
  // require, not import(): the adapters are TypeScript compiled to CommonJS by tsx.
  const mod = require(contenderFile(request.config.name, request.contendersDir)) as {
    default?: ContenderDefinition;
  };
  const def = mod.default;
  if (!def || typeof def.create !== 'function') {
    throw new Error(`bench/contenders/${request.config.name}.ts must default-export a ContenderDefinition`);
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
