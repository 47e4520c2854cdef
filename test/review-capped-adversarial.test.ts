// Review probes against capped spaces (README "Capped spaces", "TTL-aware spaces"): a careless user
// and an attacker. The tests under 'bugs' assert the documented behaviour for what the review
// found (onEvict nested inside another space's; the tie order of a multi-part eviction index,
// now documented); the rest are attacks that were handled, kept where they add coverage that test/capped-space.test.ts
// lacks (a secondary unique index, nested atomic()/transaction() frames that commit or roll back,
// update through a secondary index, mixed int/float/huge/negative TTLs, oversized tuples, all
// checked against a JavaScript model of the README's rules; writes from inside a chunk of the
// space's own expirationd task; createIndexAsync during evictions).
//   REVIEW_SEED=<n> REVIEW_STEPS=<n> npx vitest run test/review-capped-adversarial.test.ts
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, CappedError, type SpaceOptions, type Tuple } from '../src/index.js';
import { pack } from '../src/native/codec.js';
import { mulberry32 } from '../bench/lib/random.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';
import { EvictionFrames, applyAssignments, evictUntilFits, randomAssignments, type Assignment } from './support/capped-model.js';

const size = (t: Tuple): number => pack(t).length;
let clock = 100;
/** Every stored tuple's id (expired ones too). */
const ids = (s: Space): number[] => {
  const saved = clock;
  clock = -1e300;
  try {
    return s.select().map((t) => t[0] as number).sort((a, b) => a - b);
  } finally {
    clock = saved;
  }
};

function capped(options: SpaceOptions, name = 'cap', pk: 'TREE' | 'HASH' = 'TREE', expType: 'number' | 'unsigned' | 'integer' = 'number'): Space {
  const space = new Space(name, { ttl: { field: 3, now: () => clock }, ...options });
  space.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, expType]] });
  return space;
}
function evicting(options: SpaceOptions = {}, name = 'ev'): { space: Space; reports: Tuple[][] } {
  const reports: Tuple[][] = [];
  const space = capped({ onFull: 'evictExpiring', onEvict: (t) => reports.push(t), ...options }, name);
  return { space, reports };
}

describe('handled attacks', () => {
  test('update, upsert (both forms), replace and insertMany of a tuple over maxBytes are refused, nothing evicted', () => {
    const { space: s, reports } = evicting({ maxBytes: 40 });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    expect(codeOf(() => s.update(1, [['=', 2, 'x'.repeat(50)]]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.upsert([1, 'a', 1], [['=', 2, 'x'.repeat(50)]]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.upsert([3, 'x'.repeat(50), 1], [['=', 2, 'x']]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.replace([1, 'x'.repeat(50), 1]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.insertMany([[3, 'c', 1], [4, 'x'.repeat(50), 1]]))).toBe('ER_SPACE_FULL');
    expect(ids(s)).toEqual([1, 2]);
    expect(reports).toEqual([]);
    s.checkIntegrity();
  });

  test('an insertMany batch three times the cap evicts its own tuples in TTL order, reported in one call', () => {
    const { space: s, reports } = evicting({ maxTuples: 3 });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    const batch: Tuple[] = Array.from({ length: 10 }, (_, i) => [10 + i, 'x', 1000 - i]);
    expect(s.insertMany(batch)).toBe(10);
    expect(s.len()).toBe(3);
    expect(reports.length).toBe(1);
    expect(reports[0].map((t) => t[0])).toEqual([1, 2, 12, 13, 14, 15, 16, 17, 18]);
    s.checkIntegrity();
  });

  test('a duplicate in a secondary unique index held by the tuple that would be evicted: refused, nothing evicted', () => {
    const { space: s, reports } = evicting({ maxTuples: 2 });
    s.createIndex('name', { parts: [[2, 'string']] });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    expect(codeOf(() => s.insert([3, 'b', 400]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.insert([3, 'a', 400]))).toBe('ER_DUPLICATE_KEY');
    expect(ids(s)).toEqual([1, 2]);
    expect(codeOf(() => s.update(2, [['=', 2, 'a']]))).toBe('ER_DUPLICATE_KEY');
    expect(reports).toEqual([]);
    s.checkIntegrity();
  });

  test('onEvict that starts a transaction which evicts and throws: its evictions are undone, not reported', () => {
    let n = 0;
    const s: Space = capped({
      maxTuples: 2, onFull: 'evictExpiring',
      onEvict: (tuples) => {
        n++;
        try {
          s.transaction(() => {
            s.insert([100 + n, 'x', 50 + n]);
            throw new Error('x');
          });
        } catch { /* */ }
      },
    });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    s.insert([3, 'c', 400]);
    expect(n).toBe(1);
    expect(ids(s)).toEqual([2, 3]);
    s.checkIntegrity();
  });

  test('mixed int / float / >2^32 / negative TTLs in a number index are evicted by value', () => {
    const { space: s, reports } = evicting({ maxTuples: 4 });
    s.insertMany([[1, 'a', 1e10], [2, 'b', 5], [3, 'c', 4.5], [4, 'd', -3]]);
    s.insert([5, 'e', 2 ** 40]);
    s.insert([6, 'f', 2 ** 40 + 0.5]);
    s.insert([7, 'g', 2 ** 33]);
    expect(reports.flat().map((t) => t[0])).toEqual([4, 3, 2]);
    expect(ids(s)).toEqual([1, 5, 6, 7]);
  });
});

// ---------------------------------------------------------------------------------------------
// Seeded random sequence against a plain JavaScript model of the README's cap rules.
// Tuples are [id, name, exp, payload]; name is a secondary UNIQUE TREE key; exp the TTL field.
// ---------------------------------------------------------------------------------------------
type T4 = [number, string, number, string];

function runModel(seed: number, steps: number, cfg: { maxTuples?: number; maxBytes?: number; pk: 'TREE' | 'HASH' }): void {
  const next = mulberry32(seed);
  const int = (n: number): number => Math.floor(next() * n);
  clock = 100;
  const calls: Tuple[][] = [];
  const s = new Space<T4>('model', {
    ttl: { field: 3, now: () => clock }, maxTuples: cfg.maxTuples, maxBytes: cfg.maxBytes, onFull: 'evictExpiring',
    onEvict: (t) => calls.push(t as Tuple[]),
  });
  s.createIndex('pk', { type: cfg.pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  s.createIndex('name', { parts: [[2, 'string']] });
  let model = new Map<number, T4>();
  const evictions = new EvictionFrames();
  const bytes = (m: Map<number, T4>): number => { let n = 0; for (const t of m.values()) n += size(t); return n; };
  const over = (m: Map<number, T4>): boolean =>
    (cfg.maxTuples !== undefined && m.size > cfg.maxTuples) || (cfg.maxBytes !== undefined && bytes(m) > cfg.maxBytes);
  const ttl = (): number => {
    const r = int(10);
    if (r === 0) return clock - 1 - int(40);              // expired
    if (r === 1) return clock + int(50) + 0.5;              // float
    if (r === 2) return 2 ** 33 + int(5);                   // > 2^32: msgpackr writes float64
    if (r === 3) return -int(1000);
    return clock + int(120);
  };
  const payload = (): string => {
    const r = int(20);
    if (r === 0) return 'P'.repeat(200 + int(200));
    if (r === 1) return 'Q'.repeat(1100);                   // over maxBytes on its own (when set)
    return 'p'.repeat(int(30));
  };
  const tuple = (): T4 => [int(30), `n${int(25)}`, ttl(), payload()];
  type Outcome = 'ER_SPACE_FULL' | 'ER_DUPLICATE_KEY' | undefined;
  // Stores t (replacing the stored tuple with its id, if any) in m; evicts as the README says.
  const store = (m: Map<number, T4>, t: T4, evicted: Tuple[]): Outcome => {
    for (const x of m.values()) if (x[1] === t[1] && x[0] !== t[0]) return 'ER_DUPLICATE_KEY';
    m.set(t[0], t);
    if (over(m) && cfg.maxBytes !== undefined && size(t) > cfg.maxBytes) return 'ER_SPACE_FULL';
    return evictUntilFits(m, t[0], over, evicted) ? undefined : 'ER_SPACE_FULL';
  };
  const insertInto = (m: Map<number, T4>, t: T4, evicted: Tuple[]): Outcome => {
    const old = m.get(t[0]);
    if (old !== undefined && old[2] > clock) return 'ER_DUPLICATE_KEY';
    return store(m, t, evicted);
  };
  const apply = (t: T4, ops: Assignment[]): T4 => applyAssignments(t, ops);
  const randomOps = (): Assignment[] => randomAssignments(int, payload, ttl, 25);
  const codeOfRun = (fn: () => unknown): Outcome | 'ok' => {
    try {
      fn();
      return 'ok';
    } catch (e) {
      if (e instanceof CappedError) return e.code as Outcome;
      throw e;
    }
  };
  const check = (where: string): void => {
    expect(s.len(), where).toBe(model.size);
    expect(s.bsize(), where).toBe(bytes(model));
    if (cfg.maxTuples !== undefined) expect(s.len(), where).toBeLessThanOrEqual(cfg.maxTuples);
    if (cfg.maxBytes !== undefined) expect(s.bsize(), where).toBeLessThanOrEqual(cfg.maxBytes);
  };
  // One statement, on the real space and on the model.
  const statement = (where: string): void => {
    const op = int(8);
    const work = new Map(model);
    const evicted: Tuple[] = [];
    let expected: Outcome;
    let run: () => unknown;
    if (op === 0) {
      const id = int(30);
      work.delete(id);
      run = () => s.delete(id);
    } else if (op === 1) {
      const t = tuple();
      expected = insertInto(work, t, evicted);
      run = () => s.insert(t);
    } else if (op === 2) {
      const t = tuple();
      expected = store(work, t, evicted);
      run = () => s.replace(t);
    } else if (op === 3) {
      const t = tuple();
      const ops = randomOps();
      const old = model.get(t[0]);
      expected = store(work, old === undefined ? t : apply(old, ops), evicted);
      run = () => s.upsert(t, ops as never);
    } else if (op === 4) {
      const id = int(30);
      const ops = randomOps();
      const old = model.get(id);
      expected = old === undefined ? undefined : store(work, apply(old, ops), evicted);
      run = () => s.update(id, ops as never);
    } else if (op === 5) {
      const name = `n${int(25)}`;
      const ops = randomOps().filter((o) => o[1] !== 1);
      const old = [...model.values()].find((x) => x[1] === name);
      expected = old === undefined ? undefined : store(work, apply(old, ops), evicted);
      run = () => s.index.name.update(name, ops as never);
    } else {
      const batch = Array.from({ length: 1 + int(op === 7 ? 12 : 3) }, tuple);
      for (const t of batch) {
        expected ??= insertInto(work, t, evicted);
      }
      run = () => s.insertMany(batch);
    }
    const got = codeOfRun(run);
    expect(got, `${where}: op ${op}`).toBe(expected ?? 'ok');
    if (expected === undefined) {
      model = work;
      evictions.evicted(evicted);
    }
  };
  const frames = {
    space: s, int, maxDepth: 3, calls, statement,
    save: () => {
      const snapshot = new Map(model);
      return () => {
        model = snapshot;
      };
    },
    after: (where: string, commit: boolean) => check(`${where} after frame (commit ${commit})`),
  };
  for (let step = 0; step < steps; step++) {
    const where = `seed ${seed} step ${step}`;
    if (step % 25 === 0) clock += 7;
    if (int(6) === 0) evictions.randomFrame(frames, where);
    else statement(where);
    evictions.expectReported(calls, where);
    check(where);
  }
  s.checkIntegrity();
  const all = (): T4[] => { const saved = clock; clock = -1e300; try { return s.select(); } finally { clock = saved; } };
  expect(all().sort((a, b) => a[0] - b[0])).toEqual([...model.values()].sort((a, b) => a[0] - b[0]));
}

describe('random sequences against a model', () => {
  const STEPS = Number(process.env.REVIEW_STEPS) || 1500;
  const base = Number(process.env.REVIEW_SEED) || 777;
  test('maxTuples + maxBytes, TREE pk', () => runModel(base, STEPS, { maxTuples: 8, maxBytes: 700, pk: 'TREE' }));
  test('maxBytes only, HASH pk', () => runModel(base + 1, STEPS, { maxBytes: 900, pk: 'HASH' }));
  test('maxTuples only, TREE pk', () => runModel(base + 2, STEPS, { maxTuples: 5, pk: 'TREE' }));
});

describe('handled attacks with expirationd', () => {
  useTaskTimers();

  test('sync onExpired that writes into its own capped space, evicting, then throws: all undone', () => {
    const reports: Tuple[][] = [];
    const s = capped({ maxTuples: 4, onFull: 'evictExpiring', onEvict: (t) => reports.push(t) }, 'self');
    s.insertMany([[1, 'due', 105], [2, 'due', 106], [3, 'live', 300], [4, 'live', 310]]);
    let fail = true;
    const handed: Tuple[][] = [];
    const errors: unknown[] = [];
    const task = expirationd.start('self', s, {
      itIndex: 'exp', scanSize: 16,
      onExpired: (tuples) => {
        handed.push(tuples);
        // the chunk deleted the due tuples: room for 2; insert 3 to evict 1
        s.insertMany([[10, 'n', 500], [11, 'n', 501], [12, 'n', 502]]);
        if (fail) throw new Error('no');
      },
    });
    task.on('error', (e) => errors.push(e));
    clock = 110;
    vi.advanceTimersByTime(10);
    s.checkIntegrity();
    expect(reports).toEqual([]);
    expect(s.len()).toBe(4);
    expect(ids(s)).toEqual([1, 2, 3, 4]);
    fail = false;
    task.wake();
    vi.advanceTimersByTime(5000);
    s.checkIntegrity();
    expect(ids(s)).toEqual([4, 10, 11, 12]);
    expect(reports.flat().map((t) => t[0])).toEqual([3]);
  });

  test('async onExpired: a handed tuple evicted while its promise is pending is not deleted twice', async () => {
    const evicted: Tuple[] = [];
    const s = capped({ maxTuples: 3, onFull: 'evictExpiring', onEvict: (t) => evicted.push(...t) }, 'async');
    s.insertMany([[1, 'due', 105], [2, 'due', 106], [3, 'live', 300]]);
    let resolve!: () => void;
    const handed: Tuple[] = [];
    const task = expirationd.start('async', s, {
      itIndex: 'exp', scanSize: 16,
      onExpired: (tuples) => { handed.push(...tuples); return new Promise<void>((r) => { resolve = r; }); },
    });
    task.on('error', () => {});
    clock = 110;
    vi.advanceTimersByTime(10);
    expect(handed.map((t) => t[0])).toEqual([1, 2]);
    s.insert([4, 'new', 400]);                  // evicts 1, still handed to the pending onExpired
    expect(evicted.map((t) => t[0])).toEqual([1]);
    resolve();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    vi.advanceTimersByTime(10);
    s.checkIntegrity();
    expect(ids(s)).toEqual([3, 4]);             // 2 deleted after the promise resolved, 1 already gone
    expect(evicted.map((t) => t[0])).toEqual([1]);
  });

  test('createIndexAsync of a unique index while every write evicts: the index matches the primary', async () => {
    vi.useRealTimers();
    const { space: s, reports } = evicting({ maxTuples: 500 }, 'build');
    for (let i = 0; i < 500; i++) s.insert([i, 'x', 1000 + i]);
    const p = s.createIndexAsync('name', { parts: [[2, 'string'], [1, 'unsigned']] });
    for (let i = 500; i < 3000; i++) {
      s.insert([i, 'x', 1000 + (i % 700)]);
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await p;
    s.checkIntegrity();
    expect(s.len()).toBe(500);
    expect(reports.flat().length).toBe(2500);
  });
});

describe('bugs', () => {
  // README "Capped spaces", onEvict: "It may read and write any space: a write it makes that evicts
  // is reported after it returns, never by a nested call." The re-entry guard is per space
  // (EvictionReporter), so a write into ANOTHER evicting space is reported by a nested call, and
  // a callback shared by two spaces (one metrics handler) is re-entered.
  test('onEvict shared by two spaces, writing into the other one, is never re-entered', () => {
    let depth = 0;
    let maxDepth = 0;
    const log: string[] = [];
    let b!: Space;
    const onEvict = (tuples: Tuple[]): void => {
      depth++;
      maxDepth = Math.max(maxDepth, depth);
      const t = tuples[0];
      log.push(`${t[1] as string}${t[0] as number}`);
      if (t[1] === 'a') b.insert([100 + (t[0] as number), 'b', 900]);
      depth--;
    };
    const a = capped({ maxTuples: 1, onFull: 'evictExpiring', onEvict }, 'A');
    b = capped({ maxTuples: 1, onFull: 'evictExpiring', onEvict }, 'B');
    b.insert([1, 'b', 50]);
    a.insert([1, 'a', 50]);
    a.insert([2, 'a', 60]);      // evicts a1; onEvict puts b101 into B, which evicts b1
    expect(log).toEqual(['a1', 'b1']);
    expect(maxDepth).toBe(1);    // today 2: onEvict re-entered from inside itself
  });

  test("a write from onEvict into another evicting space is reported after onEvict returns", () => {
    const log: string[] = [];
    let b!: Space;
    const a = capped({
      maxTuples: 1, onFull: 'evictExpiring',
      onEvict: () => {
        log.push('A enter');
        b.insert([2, 'b', 900]);  // evicts b1
        log.push('A exit');
      },
    }, 'A');
    b = capped({ maxTuples: 1, onFull: 'evictExpiring', onEvict: () => { log.push('B'); } }, 'B');
    b.insert([1, 'b', 50]);
    a.insert([1, 'a', 50]);
    a.insert([2, 'a', 60]);
    expect(log).toEqual(['A enter', 'A exit', 'B']);  // today: ['A enter', 'B', 'A exit']
  });

  // README: "The write evicts the tuples in that index's order (smallest TTL first, so expired
  // tuples go first; equal TTLs by primary key)". With an eviction index [ttl, name], equal TTLs
  // go by name, not by primary key (native/engine/space.cc walks the index's own order).
  // The README said "equal TTLs by primary key"; eviction walks the index's own order, so with a
  // further part, ties follow that part first (the README now says so).
  test('equal TTLs are evicted in the TTL index\'s order: its further parts, then the primary key', () => {
    const reports: Tuple[][] = [];
    const s = new Space('multi', { ttl: { field: 3, now: () => clock }, maxTuples: 2, onFull: 'evictExpiring', onEvict: (t) => reports.push(t) });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'number'], [2, 'string']] });
    s.insert([1, 'z', 500]);
    s.insert([2, 'a', 500]);
    s.insert([3, 'm', 900]);
    expect(reports).toEqual([[[2, 'a', 500]]]);  // 'a' < 'z' at TTL 500
    s.insert([4, 'a', 900]);  // [1, 'z', 500] goes next: TTL 500 before 900
    expect(reports[1]).toEqual([[1, 'z', 500]]);
  });
});
