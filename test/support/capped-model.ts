// The model runs of capped spaces (review-capped-adversarial, review-ttl-capped-update), by the
// README's rules ("Capped spaces"): the eviction order, the update operations they draw, and the
// onEvict reports they expect with nested atomic()/transaction() frames (a statement's
// evictions are reported once, in order, after the outermost frame commits, and never for a
// frame that rolled back).
import { expect } from 'vitest';
import { atomic, type Space, type Tuple } from '../../src/index.js';

class Rollback extends Error {}

export class EvictionFrames {
  /** Reports due since the last expectReported(), in order. */
  private readonly due: Tuple[][] = [];
  /** Per open frame, the evictions of its statements. */
  private readonly open: Tuple[][][] = [];

  /** A statement evicted `tuples`: due now outside a frame, else when the outermost one commits. */
  evicted(tuples: Tuple[]): void {
    if (tuples.length === 0) return;
    const top = this.open[this.open.length - 1];
    if (top === undefined) this.due.push(tuples);
    else top.push(tuples);
  }

  /**
   * Runs body in an atomic() (or, with useAtomic false, space.transaction()) frame that commits,
   * or rolls back when `commit` is false (restore() then puts the model back). Rethrows any
   * other error.
   */
  frame(space: Space<any, any>, useAtomic: boolean, commit: boolean, body: () => void, restore: () => void): void {
    this.open.push([]);
    const fn = (): void => {
      body();
      if (!commit) throw new Rollback();
    };
    let threw: unknown;
    try {
      if (useAtomic) atomic(fn);
      else space.transaction(fn);
    } catch (e) {
      threw = e;
    }
    const pending = this.open.pop() as Tuple[][];
    if (!(threw instanceof Rollback) && threw !== undefined) throw threw;
    if (!commit) {
      restore();
      return;
    }
    const parent = this.open[this.open.length - 1];
    if (parent === undefined) this.due.push(...pending);
    else parent.push(...pending);
  }

  /**
   * A random frame of a model run: 1 to 4 statements or nested frames (down to `maxDepth`),
   * committed 2 times in 3, in atomic() or transaction(); no onEvict call may come inside it.
   * `save()` takes the model and returns how to put it back; `after` runs once each frame closed.
   */
  randomFrame(run: {
    space: Space<any, any>;
    int: (n: number) => number;
    maxDepth: number;
    calls: Tuple[][];
    statement: (where: string) => void;
    save: () => () => void;
    after?: (where: string, commit: boolean) => void;
  }, where: string, depth = 0): void {
    const { int } = run;
    const commit = int(3) !== 0;
    const restore = run.save();
    this.frame(run.space, int(2) === 0, commit, () => {
      const n = 1 + int(4);
      for (let i = 0; i < n; i++) {
        if (depth < run.maxDepth && int(4) === 0) this.randomFrame(run, `${where}/${i}`, depth + 1);
        else run.statement(`${where}/${i}`);
        expect(run.calls, `${where}: no report inside a frame`).toEqual([]);
      }
    }, restore);
    run.after?.(where, commit);
  }

  /** The onEvict calls made (then cleared) are exactly the reports due (then cleared). */
  expectReported(calls: Tuple[][], where: string): void {
    expect(calls, where).toEqual(this.due);
    calls.length = 0;
    this.due.length = 0;
  }
}

/** Update operations of the capped model runs: `=` only, on the name, TTL or payload field. */
export type Assignment = [string, number, unknown];

/** The tuple `ops` make of t (`=` on fields 2 to 4). */
export function applyAssignments<T extends unknown[]>(t: T, ops: Assignment[]): T {
  const r = [...t] as T;
  for (const [, f, v] of ops) r[f - 1] = v;
  return r;
}

/** 1 or 2 random assignments: a new payload (field 4), TTL (field 3) or name out of `names` (field 2). */
export function randomAssignments(int: (n: number) => number, payload: () => unknown, ttl: () => unknown, names: number): Assignment[] {
  const ops: Assignment[] = [];
  const n = 1 + int(2);
  for (let i = 0; i < n; i++) {
    const k = int(3);
    ops.push(k === 0 ? ['=', 4, payload()] : k === 1 ? ['=', 3, ttl()] : ['=', 2, `n${int(names)}`]);
  }
  return ops;
}

/**
 * The model's 'evictExpiring' (README "Capped spaces"): evicts from m, into `evicted`, the tuple
 * with the smallest TTL (field 3; ties by primary key, field 1), never the one with id `keep`,
 * until `over(m)` is false. Returns false when nothing is left to evict.
 */
export function evictUntilFits<T extends unknown[]>(m: Map<number, T>, keep: number, over: (m: Map<number, T>) => boolean, evicted: Tuple[]): boolean {
  while (over(m)) {
    let victim: T | undefined;
    for (const x of m.values()) {
      if (x[0] === keep) continue;
      if (victim === undefined || (x[2] as number) < (victim[2] as number) ||
          (x[2] === victim[2] && (x[0] as number) < (victim[0] as number))) victim = x;
    }
    if (victim === undefined) return false;
    evicted.push(victim);
    m.delete(victim[0] as number);
  }
  return true;
}
