// Garbage collection: a Space nobody refers to any more frees its native memory without drop(),
// and a running task keeps its space alive (it is registered globally) until it is killed, after
// which the space is collected. Run in a child process with --expose-gc so the collections are
// explicit; RSS must stay bounded over many large spaces, and FinalizationRegistry tells which
// spaces were collected. V8 is told what each space holds natively, so that its own heuristics
// collect unreachable spaces even when nobody calls gc().
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { fitSlope, mb } from './support/memory.js';
import { childEnv } from './support/sanitizer.js';

const { ensureDist } = createRequire(__filename)('./fixtures/dist.cjs') as { ensureDist: () => string };
const FIXTURE = path.join(__dirname, 'fixtures', 'gc-spaces.cjs');

let dist = '';
beforeAll(() => {
  dist = ensureDist();
}, 180_000);

interface Line {
  phase: string;
  round?: number;
  rss: number;
  finalized: number;
  heapTotal: number;
  held?: number;
  done?: boolean;
  aliveWhileRunning?: boolean;
  chunksWhileUnreferenced?: number;
  collectedAfterKill?: boolean;
}


function runPhase(phase: string, rounds: number, mb: number): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', FIXTURE, dist, phase, String(rounds), String(mb)],
      { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    let stdout = '';
    let stderr = '';
    const limit = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gc fixture '${phase}' still running after 120 s; stderr: ${stderr}`));
    }, 120_000);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      if (code !== 0) {
        reject(new Error(`gc fixture '${phase}' exited with ${code ?? signal}; stderr: ${stderr}`));
        return;
      }
      resolve(stdout.trim().split('\n').map((l) => JSON.parse(l) as Line));
    });
  });
}


/**
 * RSS after the warm-up rounds must not keep growing: if the spaces were not freed, every round
 * would add `held` bytes. Allowed: a third of that in all, and a slope under a quarter of a space
 * per round (generous slack for the allocator keeping freed memory for reuse).
 */
function expectBounded(lines: Line[], warmup: number): void {
  const rounds = lines.filter((l) => l.round !== undefined);
  const held = Math.min(...rounds.map((l) => l.held ?? 0));
  const rss = rounds.slice(warmup).map((l) => l.rss);
  const growth = rss[rss.length - 1] - rss[0];
  const slope = fitSlope(rss);
  const leak = (rss.length - 1) * held;
  const summary = `held per space ${mb(held)}; RSS after warm-up ${rss.map(mb).join(', ')}; growth ${mb(growth)} ` +
    `(a leak would be ${mb(leak)}), slope ${mb(slope)}/round`;
  expect(growth, summary).toBeLessThan(leak / 3);
  expect(slope, summary).toBeLessThan(held / 4);
}

describe('garbage collection', () => {
  test('a Space that becomes unreachable without drop() is collected and its native memory freed', async () => {
    const lines = await runPhase('unreachable', 20, 20);
    const rounds = lines.filter((l) => l.round !== undefined);
    expect(rounds).toHaveLength(20);
    expect(rounds[0].held).toBeGreaterThan(20 * 1024 * 1024);
    // Every space but possibly the most recent is collected.
    expect(rounds[rounds.length - 1].finalized).toBeGreaterThanOrEqual(19);
    expectBounded(lines, 6);
    expect(lines[lines.length - 1]).toMatchObject({ done: true });
  });

  test('a running task keeps its space alive; once it is killed, the space is collected and freed', async () => {
    const lines = await runPhase('task', 20, 20);
    const rounds = lines.filter((l) => l.round !== undefined);
    expect(rounds).toHaveLength(20);
    for (const r of rounds) {
      expect(r.aliveWhileRunning, `round ${r.round}`).toBe(true);
      expect(r.chunksWhileUnreferenced, `round ${r.round}`).toBeGreaterThan(1);
      expect(r.collectedAfterKill, `round ${r.round}`).toBe(true);
    }
    expectBounded(lines, 6);
  });

  test('V8 is told about native memory, so unreachable spaces are collected without any explicit gc()', async () => {
    // 40 spaces of ~27 MB each, none dropped and no gc() call. V8 sees each space's native
    // memory (napi_adjust_external_memory) and collects on its own. Without the reporting it saw
    // only a few small JavaScript objects: 9 of the 40 were collected and RSS reached 1 GB. (It is
    // told up to 16 MiB a space, which is enough.)
    const rounds = 40;
    const lines = await runPhase('pressure', rounds, 20);
    const last = lines.filter((l) => l.round !== undefined).pop() as Line;
    const held = lines[0].held as number;
    const maxRss = Math.max(...lines.map((l) => l.rss));
    expect(last.round).toBe(rounds - 1);
    expect(last.finalized).toBeGreaterThanOrEqual(rounds / 2);
    expect(maxRss, `max RSS ${mb(maxRss)} for ${rounds} spaces of ${mb(held)}`).toBeLessThan((rounds * held) / 2);
  });
});
