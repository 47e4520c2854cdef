// Adversarial review of the day's fixes (git diff 83496a9..HEAD): createIndexAsync builds whose
// failure a rolled-back write caused start over (native/engine/index_build.{h,cc}); truncate()
// inside a transaction is all or nothing; commit/rollback take only the innermost savepoint;
// options read once (src/validate.ts), parts read once (src/space/args.ts), createIndexAsync on an
// empty space, expirationd.start's kill moved into Task#begin, atomic()/transaction() refusing
// async and generator functions, CappedError's Symbol.hasInstance brand, textOf().
// Every finished index is compared with a plain JavaScript reference (every iterator, count,
// min, max, len, get). No bug was found, so there is no 'bugs' block: every test here asserts
// documented behaviour that holds today.
//   REVIEW_SEED=<n> npx vitest run test/review-fixes-adversarial.test.ts
import { afterEach, describe, expect, test } from 'vitest';
import { Space, atomic, expirationd, CappedError, type IteratorType, type Tuple } from '../src/index.js';
import { setBuildSlice } from '../src/space/build.js';
import { native } from '../src/native/loader.js';
import { rng, cmpParts, type Rng, type Scalar } from './support/reference.js';
import { codeOf } from './support/errors.js';
import { handleOf } from '../src/space/space.js';
import { errCode, settle, useBuildSlice } from './support/builds.js';

const SEED = Number(process.env.REVIEW_SEED) || 7777;
const ITERATORS: IteratorType[] = ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'];
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await turn();
};

useBuildSlice(64);
afterEach(() => {
  native.testing.failAllocationAfter(-1);
  expirationd.killAll();
});


class Boom extends Error {}
/** Runs fn, expects Boom, swallows it. */
function throwing(fn: () => void): void {
  expect(() => fn()).toThrow(Boom);
}

// ---------------------------------------------------------------------------------------------
// Reference checks.

type Row = [id: number, key: number, grp: number, pad: string];
interface Def {
  name: string;
  field: number;
  unique: boolean;
  type: 'TREE' | 'HASH';
}

/** The whole contents of a space, by primary key (field 1), from its primary index. */
function contents(space: Space): Tuple[] {
  return [...space.index[0].select()].sort((a, b) => (a[0] as number) - (b[0] as number));
}

function checkIndex(space: Space, def: Def, rows: Tuple[], r: Rng, ctx: string): void {
  const idx = space.index[def.name];
  expect(idx, `${ctx}: ${def.name} exists`).toBeDefined();
  expect(idx.len(), `${ctx}: ${def.name}.len()`).toBe(rows.length);
  const key = (t: Tuple): Scalar[] => [t[def.field - 1] as Scalar];
  if (def.type === 'HASH') {
    const byPk = (a: Tuple, b: Tuple): number => (a[0] as number) - (b[0] as number);
    expect([...idx.select()].sort(byPk), `${ctx}: ${def.name}.select()`).toEqual([...rows].sort(byPk));
    expect(idx.count()).toBe(rows.length);
    for (let k = 0; k < 30 && rows.length > 0; k++) {
      const t = r.pick(rows);
      expect(idx.get(key(t)[0]) ?? null, `${ctx}: get`).toEqual(t);
    }
    return;
  }
  const sorted = [...rows].sort((a, b) => cmpParts(key(a), key(b)) || (a[0] as number) - (b[0] as number));
  expect(idx.select(), `${ctx}: ${def.name}.select()`).toEqual(sorted);
  expect(idx.count(), `${ctx}: count`).toBe(sorted.length);
  expect(idx.min() ?? null, `${ctx}: min`).toEqual(sorted[0] ?? null);
  expect(idx.max() ?? null, `${ctx}: max`).toEqual(sorted[sorted.length - 1] ?? null);
  const probes: Scalar[] = [0, 1e12, 7];
  for (let k = 0; k < 12 && rows.length > 0; k++) probes.push(key(r.pick(rows))[0]);
  for (const p of probes) {
    const c = (t: Tuple): number => cmpParts(key(t), [p]);
    const eq = sorted.filter((t) => c(t) === 0);
    const want: Record<IteratorType, Tuple[]> = {
      EQ: eq, REQ: [...eq].reverse(), ALL: sorted, GE: sorted.filter((t) => c(t) >= 0), GT: sorted.filter((t) => c(t) > 0),
      LE: sorted.filter((t) => c(t) <= 0).reverse(), LT: sorted.filter((t) => c(t) < 0).reverse(),
    };
    for (const it of ITERATORS) {
      expect(idx.select(p, { iterator: it }), `${ctx}: select(${p}, ${it})`).toEqual(want[it]);
      expect(idx.count(p, { iterator: it }), `${ctx}: count(${p}, ${it})`).toBe(want[it].length);
    }
    expect(idx.min(p) ?? null, `${ctx}: min(${p})`).toEqual(eq[0] ?? null);
    expect(idx.max(p) ?? null, `${ctx}: max(${p})`).toEqual(eq[eq.length - 1] ?? null);
    if (def.unique) expect(idx.get(p) ?? null).toEqual(eq[0] ?? null);
  }
}

/** Every index of the space against its primary's contents. */
function checkAll(space: Space, defs: Def[], r: Rng, ctx: string): void {
  const rows = contents(space);
  for (const d of defs) checkIndex(space, d, rows, r, ctx);
  space.checkIntegrity();
}

function populated(name: string, pk: 'TREE' | 'HASH', n: number, opts: ConstructorParameters<typeof Space>[1] = {}): Space {
  const s = new Space(name, opts);
  s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  const batch: Row[] = [];
  for (let id = 0; id < n; id++) batch.push([id, id * 10, id % 7, 'p']);
  s.insertMany(batch);
  return s;
}

const KEY: Def = { name: 'key', field: 2, unique: true, type: 'TREE' };
const KEYH: Def = { name: 'key', field: 2, unique: true, type: 'HASH' };

// ---------------------------------------------------------------------------------------------

describe('createIndexAsync: a failure a rolled-back write caused is undone', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    for (const def of [KEY, KEYH]) {
      const ctx = `${pk}/${def.type}`;

      test(`${ctx}: nested: the dup in an inner frame that commits, the outer rolls back`, async () => {
        const r = rng(SEED);
        const s = populated(`n1${ctx}`, pk, 2000);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(4);
        throwing(() => s.transaction(() => {
          s.insert([5000, 123456, 0, 'ok']);
          atomic(() => {
            s.insert([5001, 10, 0, 'dup of id 1']);   // the walk passed key 10
            s.insert([5002, 19990, 0, 'dup not walked']);
          });
          throw new Boom();
        }));
        const { error } = await settle(p);
        expect(errCode(error)).toBeUndefined();
        checkAll(s, [def], r, ctx);
      });

      test(`${ctx}: nested: the dup in an inner frame that rolls back, the outer commits`, async () => {
        const r = rng(SEED);
        const s = populated(`n2${ctx}`, pk, 2000);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(4);
        s.transaction(() => {
          s.insert([5000, 123456, 0, 'kept']);
          throwing(() => atomic(() => {
            s.replace([7, 20, 0, 'dup of id 2']);
            throw new Boom();
          }));
          s.insert([5003, 123457, 0, 'kept after']);
          s.delete(3);
        });
        const { error } = await settle(p);
        expect(errCode(error)).toBeUndefined();
        checkAll(s, [def], r, ctx);
        expect(s.get(5003)).toEqual([5003, 123457, 0, 'kept after']);
      });

      test(`${ctx}: the dup before an inner frame that rolls back stands when the outer commits`, async () => {
        const s = populated(`n3${ctx}`, pk, 2000);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(4);
        s.insert([4000, 777777, 0, 'written during the build: in the new index whatever the walk order']);
        s.transaction(() => {
          s.insert([5000, 777777, 0, 'dup']);
          throwing(() => s.transaction(() => {
            s.insert([5001, 99999, 0, 'x']);
            throw new Boom();
          }));
          s.delete(5000);  // the duplicate is gone again, but the write that made it commits
        });
        const { error } = await settle(p);
        expect(errCode(error)).toBe('ER_DUPLICATE_KEY');
        expect(s.index[def.name]).toBeUndefined();
        s.checkIntegrity();
      });

      test(`${ctx}: many restarts in a row, writes between the rollback and the restart step`, async () => {
        const r = rng(SEED + 1);
        const s = populated(`n4${ctx}`, pk, 1500);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        let next = 100000;
        for (let round = 0; round < 40; round++) {
          await turns(1 + r.int(3));
          throwing(() => s.transaction(() => {
            s.insert([next++, r.int(1500) * 10, 1, 'dup']);
            throw new Boom();
          }));
          // outside any transaction, before the step that restarts: these must be in the index
          s.insert([next++, 1_000_000 + next, 2, 'between']);
          s.delete(r.int(1500));
          s.update(r.int(1500), [['=', 4, `u${round}`]]);
          if (pk === 'HASH') for (let k = 0; k < 50; k++) s.insert([next++, 2_000_000 + next, 3, 'grow']);
        }
        const { error } = await settle(p);
        expect(errCode(error)).toBeUndefined();
        checkAll(s, [def], r, ctx);
      });

      test(`${ctx}: a committed dup written between the rollback and the restart fails the build`, async () => {
        const s = populated(`n5${ctx}`, pk, 1500);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(3);
        throwing(() => s.transaction(() => {
          s.insert([9000, 10, 1, 'dup']);
          throw new Boom();
        }));
        s.insert([9001, 20, 1, 'committed dup']);
        const { error } = await settle(p);
        expect(errCode(error)).toBe('ER_DUPLICATE_KEY');
        expect(s.index[def.name]).toBeUndefined();
      });

      test(`${ctx}: truncate() during a pending restart aborts the build`, async () => {
        const s = populated(`n6${ctx}`, pk, 1500);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(3);
        throwing(() => s.transaction(() => {
          s.insert([9000, 10, 1, 'dup']);
          throw new Boom();
        }));
        s.truncate();
        const { error } = await settle(p);
        expect(errCode(error)).toBe('ER_INDEX_BUILD_ABORTED');
        expect(s.len()).toBe(0);
      });

      test(`${ctx}: truncate() in a frame that rolls back, after a dup in it, aborts the build`, async () => {
        const s = populated(`n7${ctx}`, pk, 1500);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(3);
        throwing(() => s.transaction(() => {
          s.insert([9000, 10, 1, 'dup']);
          s.truncate();
          throw new Boom();
        }));
        const { error } = await settle(p);
        expect(errCode(error)).toBe('ER_INDEX_BUILD_ABORTED');
        expect(s.len()).toBe(1500);
        s.checkIntegrity();
      });

      test(`${ctx}: insertMany failing part-way (a dup in the new index first) fails no build`, async () => {
        const r = rng(SEED);
        const s = populated(`n8${ctx}`, pk, 1500);
        const p = s.createIndexAsync(def.name, { type: def.type, parts: [[2, 'unsigned']] });
        await turns(3);
        expect(codeOf(() => s.insertMany([[9000, 10, 0, 'dup'], [9001, 11, 0, 'x'], [5, 12, 0, 'pk dup']]))).toBe('ER_DUPLICATE_KEY');
        // a wrong type in the new index's field, then a primary duplicate: rolled back as a whole
        expect(codeOf(() => s.insertMany([[9002, 'str', 0, 'not unsigned'], [6, 13, 0, 'pk dup']]))).toBe('ER_DUPLICATE_KEY');
        const { error } = await settle(p);
        expect(errCode(error)).toBeUndefined();
        checkAll(s, [def], r, ctx);
      });
    }
  }

  test('a tuple missing the indexed field, rolled back (restore of a delete of an unfit tuple)', async () => {
    const r = rng(SEED);
    const s = populated('unfit', 'TREE', 1000);
    s.insert([5000, 'text', 0, 'unfit']);  // the build will fail on it when the walk reaches it...
    const p = s.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    await turns(2);
    // ... unless it is deleted: a frame deletes it and rolls back (the restore meets it), then it is deleted for good
    throwing(() => s.transaction(() => {
      s.delete(5000);
      throw new Boom();
    }));
    s.delete(5000);
    const { error } = await settle(p);
    expect(errCode(error)).toBeUndefined();
    checkAll(s, [KEY], r, 'unfit');
  });

  test('atomic() across two spaces, each with a build: a rollback undoes both failures', async () => {
    const r = rng(SEED);
    const a = populated('twoA', 'TREE', 1200);
    const b = populated('twoB', 'HASH', 1200);
    const pa = a.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    const pb = b.createIndexAsync('key', { type: 'HASH', parts: [[2, 'unsigned']] });
    await turns(3);
    throwing(() => atomic(() => {
      a.insert([9000, 10, 0, 'dup']);
      b.insert([9000, 10, 0, 'dup']);
      a.insert([9001, 999999, 0, 'x']);
      throw new Boom();
    }));
    atomic(() => {
      a.insert([9002, 888888, 0, 'kept']);
      b.insert([9002, 20, 0, 'dup in b only']);
    });
    const ra = await settle(pa);
    const rb = await settle(pb);
    expect(errCode(ra.error)).toBeUndefined();
    expect(errCode(rb.error)).toBe('ER_DUPLICATE_KEY');
    checkAll(a, [KEY], r, 'twoA');
    b.checkIntegrity();
  });

  test('an expiry chunk whose processExpired writes a dup and throws fails no build', async () => {
    const r = rng(SEED);
    let clock = 1000;
    const s = new Space('chunkbuild', { ttl: { field: 3, now: () => clock } });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const rows: Tuple[] = [];
    for (let id = 0; id < 3000; id++) rows.push([id, id * 10, id < 40 ? 500 : 5000, 'p']);
    s.insertMany(rows);
    s.createIndex('ttl', { unique: false, parts: [[3, 'number']] });
    const p = s.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    await turns(3);
    let calls = 0;
    const task = expirationd.start('chunkbuild', s, {
      field: 3, scanSize: 100, itIndex: 'ttl', now: () => clock,
      processExpired: (tuples) => {
        calls++;
        s.insert([100000 + calls, 10, 0, 'dup']);
        for (const t of tuples) s.delete(t[0] as number);
        throw new Boom();
      },
    });
    while (calls < 40) await turn();
    task.kill();
    const { error } = await settle(p);
    expect(errCode(error)).toBeUndefined();
    expect(s.len()).toBe(3000);
    clock = 0;  // reads hide nothing
    checkAll(s, [{ ...KEY }, { name: 'ttl', field: 3, unique: false, type: 'TREE' }], r, 'chunk');
  });

  test('a synchronous onExpired that writes a dup and throws (the native chunk rolled back) fails no build', async () => {
    const r = rng(SEED);
    let clock = 1000;
    const s = new Space('chunkbuild2', { ttl: { field: 3, now: () => clock } });
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    const rows: Tuple[] = [];
    for (let id = 0; id < 3000; id++) rows.push([id, id * 10, id % 50 === 0 ? 500 : 5000, 'p']);
    s.insertMany(rows);
    const p = s.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    await turns(2);
    let calls = 0;
    const task = expirationd.start('chunkbuild2', s, {
      field: 3, scanSize: 500, now: () => clock,
      onExpired: () => {
        calls++;
        s.insert([100000 + calls, 20, 0, 'dup']);
        throw new Boom();
      },
    });
    while (calls < 30) await turn();
    task.kill();
    const { error } = await settle(p);
    expect(errCode(error)).toBeUndefined();
    expect(s.len()).toBe(3000);
    clock = 0;
    checkAll(s, [KEY], r, 'chunk2');
  });

  test('builds on TTL and capped spaces: evictions inside a rolled-back frame', async () => {
    const r = rng(SEED);
    let clock = 1000;
    const evicted: Tuple[] = [];
    const s = new Space('cappedbuild', { ttl: { field: 3, now: () => clock }, maxTuples: 1000, onFull: 'evictExpiring', onEvict: (t) => { evicted.push(...t); } });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('ttl', { unique: false, parts: [[3, 'number']] });
    const rows: Tuple[] = [];
    for (let id = 0; id < 1000; id++) rows.push([id, id * 10, 2000 + id, 'p']);
    s.insertMany(rows);
    const p = s.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    await turns(3);
    throwing(() => s.transaction(() => {
      for (let k = 0; k < 20; k++) s.insert([5000 + k, 10 * k, 9000, 'evicts and dups']);
      throw new Boom();
    }));
    expect(evicted).toEqual([]);
    for (let k = 0; k < 5; k++) s.insert([6000 + k, 7_000_000 + k, 9000, 'evicts']);
    const { error } = await settle(p);
    expect(errCode(error)).toBeUndefined();
    expect(evicted.length).toBe(5);
    checkAll(s, [KEY, { name: 'ttl', field: 3, unique: false, type: 'TREE' }], r, 'capped');
  });

  test('memory() after many restarts is what one build takes', async () => {
    const fresh = populated('memA', 'TREE', 5000);
    await fresh.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    const once = fresh.memory().indexes;
    const s = populated('memB', 'TREE', 5000);
    const p = s.createIndexAsync('key', { parts: [[2, 'unsigned']] });
    for (let round = 0; round < 60; round++) {
      await turns(1);
      throwing(() => s.transaction(() => {
        s.insert([100000 + round, 10, 0, 'dup']);
        throw new Boom();
      }));
    }
    const { error } = await settle(p);
    expect(errCode(error)).toBeUndefined();
    expect(s.memory().indexes).toBeLessThanOrEqual(once * 1.25 + 65536);
  });
});

// ---------------------------------------------------------------------------------------------
// A random walk of nested frames around a build: a write that breaks the new index happens only
// in a frame bound to roll back (itself or an enclosing one); everything committed keeps it
// valid. So every build must finish and equal the reference.

function randomFrames(s: Space, r: Rng, field: number, state: { next: number }, willRollBack: boolean, depth: number): void {
  const n = 1 + r.int(6);
  for (let i = 0; i < n; i++) {
    const p = r.next();
    if (p < 0.2 && depth < 4) {
      const inner = r.chance(0.5);
      const body = (): void => {
        randomFrames(s, r, field, state, willRollBack || inner, depth + 1);
        if (inner) throw new Boom();
      };
      if (inner) throwing(() => (r.chance(0.5) ? atomic(body) : s.transaction(body)));
      else if (r.chance(0.5)) atomic(body);
      else s.transaction(body);
      continue;
    }
    const stored = contents(s);
    const keys = new Set(stored.map((t) => t[field - 1]));
    const fresh = (): number => {
      let k: number;
      do k = r.int(10_000_000); while (keys.has(k));
      return k;
    };
    if (willRollBack && p < 0.35 && stored.length > 0) {
      // a write that breaks the new index: a dup, or a wrong type
      const other = r.pick(stored);
      const v = r.chance(0.8) ? other[field - 1] : 'not a number';
      if (r.chance(0.5)) s.insert([state.next++, v, 0, 'bad']);
      else s.update(r.pick(stored)[0] as number, [['=', field, v]]);
    } else if (p < 0.55) {
      s.insert([state.next++, fresh(), 0, 'ins']);
    } else if (p < 0.7 && stored.length > 0) {
      s.delete(r.pick(stored)[0] as number);
    } else if (p < 0.85 && stored.length > 0) {
      s.replace([r.pick(stored)[0] as number, fresh(), 1, 'rep']);
    } else if (stored.length > 0) {
      s.update(r.pick(stored)[0] as number, [['=', 4, `u${r.int(100)}`]]);
    }
  }
}

describe('random nested frames around a build (rolled-back breakage only)', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    for (const kind of ['TREE', 'HASH'] as const) {
      test(`${pk} primary, ${kind} unique build`, async () => {
        for (let run = 0; run < 6; run++) {
          const r = rng(SEED * 31 + run + (pk === 'HASH' ? 100 : 0) + (kind === 'HASH' ? 1000 : 0));
          const s = populated(`rf${pk}${kind}${run}`, pk, 400 + r.int(800));
          const state = { next: 100_000 };
          const p = s.createIndexAsync('key', { type: kind, parts: [[2, 'unsigned']] });
          for (let step = 0; step < 25; step++) {
            await turns(r.int(2));
            const outerRollsBack = r.chance(0.5);
            const body = (): void => {
              randomFrames(s, r, 2, state, outerRollsBack, 1);
              if (outerRollsBack) throw new Boom();
            };
            if (outerRollsBack) throwing(() => atomic(body));
            else atomic(body);
          }
          const { error } = await settle(p);
          expect(errCode(error), `run ${run}`).toBeUndefined();
          checkAll(s, [{ name: 'key', field: 2, unique: true, type: kind }], r, `run ${run}`);
          s.drop();
        }
      });
    }
  }
});

// ---------------------------------------------------------------------------------------------
// truncate() inside a transaction: all or nothing, and a build fails only once it succeeded.

/** No native transaction is left open on the space (a commit with any savepoint says which). */
function expectNoOpenTransaction(s: Space, ctx: string): void {
  let message = '';
  try {
    handleOf(s).commit(987654321);
  } catch (e) {
    message = (e as Error).message;
  }
  expect(message, `${ctx}: a native transaction was left open`).toMatch(/without a matching begin/);
}

describe('truncate() inside a transaction', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    test(`${pk}: an allocation failure at any point leaves everything as it was; a build survives it`, async () => {
      const r = rng(SEED);
      let n = 0;
      for (; n < 400; n++) {
        const s = populated(`tr${pk}${n}`, pk, 300);
        s.createIndex('grp', { unique: false, parts: [[3, 'unsigned']] });
        s.createIndex('key', { type: 'HASH', parts: [[2, 'unsigned']] });
        const p = s.createIndexAsync('key2', { parts: [[2, 'unsigned']] });
        await turns(2);
        let truncated = false;
        s.transaction(() => {
          s.insert([9000, 90000, 1, 'in frame']);
          const before = contents(s);
          native.testing.failAllocationAfter(n);
          try {
            s.truncate();
            truncated = true;
          } catch (e) {
            native.testing.failAllocationAfter(-1);
            expect(errCode(e), `n=${n}`).toBe('ER_MEMORY_ISSUE');
            expect(contents(s), `n=${n}: truncate failed part-way`).toEqual(before);
            for (const name of ['grp', 'key']) expect(s.index[name].len(), `n=${n} ${name}`).toBe(before.length);
          }
          native.testing.failAllocationAfter(-1);
        });
        expectNoOpenTransaction(s, `n=${n}`);
        s.checkIntegrity();
        const { error } = await settle(p);
        if (truncated) {
          expect(s.len()).toBe(0);
          expect(errCode(error), `n=${n}`).toBe('ER_INDEX_BUILD_ABORTED');
          break;
        }
        expect(errCode(error), `n=${n}: a failed truncate() failed the build`).toBeUndefined();
        checkAll(s, [{ name: 'key', field: 2, unique: true, type: 'HASH' }, { name: 'key2', field: 2, unique: true, type: 'TREE' }, { name: 'grp', field: 3, unique: false, type: 'TREE' }], r, `n=${n}`);
        s.drop();
      }
      expect(n).toBeGreaterThan(0);
    });
  }

  test('truncate() in a nested frame: the inner rollback restores every tuple; the outer commit keeps the rest', () => {
    const s = populated('trnest', 'TREE', 200);
    s.createIndex('key', { parts: [[2, 'unsigned']] });
    const before = contents(s);
    atomic(() => {
      s.insert([9000, 90000, 0, 'kept']);
      throwing(() => atomic(() => {
        s.truncate();
        s.insert([9001, 90010, 0, 'gone']);
        s.truncate();
        throw new Boom();
      }));
      expect(s.len()).toBe(201);
    });
    expect(contents(s)).toEqual([...before, [9000, 90000, 0, 'kept']]);
    expectNoOpenTransaction(s, 'nested truncate');
    s.checkIntegrity();
  });
});

// ---------------------------------------------------------------------------------------------
// Savepoints nest through every public path.

describe('savepoints nest through the public paths', () => {
  test('callbacks that open frames and throw, inside a chunk with onExpired', async () => {
    let clock = 1000;
    const s = new Space('nestA', { ttl: { field: 3, now: () => clock } });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const other = new Space('nestB');
    other.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    for (let id = 0; id < 200; id++) s.insert([id, id, id % 2 === 0 ? 500 : 5000]);
    let calls = 0;
    const errors: unknown[] = [];
    const task = expirationd.start('nestA', s, {
      field: 3, scanSize: 50, now: () => clock,
      onExpired: (tuples) => {
        calls++;
        other.insert([calls, 'a']);
        throwing(() => atomic(() => {
          s.insert([100000 + calls, 0, 9999]);
          other.transaction(() => other.insert([100000 + calls, 'b']));
          throw new Boom();
        }));
        s.transaction(() => s.insert([200000 + calls, 0, 9999]));
        if (calls % 3 === 0) throw new Boom();
        return tuples.length;
      },
    });
    task.on('error', (e) => errors.push(e));
    while (task.stats().fullScans < 2) await turn();
    task.kill();
    expectNoOpenTransaction(s, 'space');
    expectNoOpenTransaction(other, 'other');
    s.checkIntegrity();
    other.checkIntegrity();
    // every committed call of onExpired left its two writes; none of the thrown frames did
    expect(s.select(100001)).toEqual([]);
    expect(other.select().filter((t) => (t[0] as number) >= 100000)).toEqual([]);
    clock = 0;
    expect(s.select().filter((t) => (t[0] as number) < 100000 && (t[2] as number) === 500)).toEqual([]);
  });

  test('processExpired that drops the space mid-frame, and one that kills its task', async () => {
    const s = new Space('nestC');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const other = new Space('nestD');
    other.createIndex('pk', { parts: [[1, 'unsigned']] });
    for (let id = 0; id < 100; id++) s.insert([id, 1]);
    const t1 = expirationd.start('nestC', s, {
      field: 2, scanSize: 10, now: () => 10,
      processExpired: (tuples) => {
        other.insert([tuples[0][0] as number, 'x']);
        atomic(() => {
          other.insert([1000 + (tuples[0][0] as number), 'y']);
          s.drop();
        });
        other.insert([2000 + (tuples[0][0] as number), 'z']);
      },
    });
    while (!s.dropped) await turn();
    await turns(3);
    expect(t1.state).toBe('killed');
    expectNoOpenTransaction(other, 'other after a drop');
    expect(other.len()).toBe(3);
    other.checkIntegrity();

    const s2 = new Space('nestE');
    s2.createIndex('pk', { parts: [[1, 'unsigned']] });
    for (let id = 0; id < 100; id++) s2.insert([id, 1]);
    const t2 = expirationd.start('nestE', s2, {
      field: 2, scanSize: 10, now: () => 10,
      processExpired: (tuples, task) => {
        for (const t of tuples) s2.delete(t[0] as number);
        s2.transaction(() => {
          s2.insert([5000, 99]);
          task.kill();
        });
        throw new Boom();  // the kill stands, the frame is undone
      },
    });
    while (t2.state !== 'killed') await turn();
    await turns(3);
    expectNoOpenTransaction(s2, 'after a kill');
    expect(s2.len()).toBe(100);
    s2.checkIntegrity();
  });

  test('a capped space evicting inside nested frames, with onEvict writing to another space', () => {
    let clock = 1000;
    const log = new Space('evlog');
    log.createIndex('pk', { parts: [[1, 'unsigned']] });
    let logged = 0;
    const s = new Space('evnest', {
      ttl: { field: 2, now: () => clock }, maxTuples: 10, onFull: 'evictExpiring',
      onEvict: (tuples) => {
        for (const t of tuples) log.transaction(() => log.insert([++logged, t[0]]));
      },
    });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let id = 0; id < 10; id++) s.insert([id, 2000 + id]);
    atomic(() => {
      s.insert([100, 5000]);
      throwing(() => atomic(() => {
        s.insert([101, 5000]);
        s.upsert([102, 5000], [['=', 2, 1]]);
        throw new Boom();
      }));
      s.update(100, [['=', 2, 5001]]);
      s.insertMany([[103, 5000], [104, 5000]]);
    });
    expect(s.len()).toBe(10);
    expect(logged).toBe(3);
    expect(log.select().map((t) => t[1])).toEqual([0, 1, 2]);
    expectNoOpenTransaction(s, 'capped');
    expectNoOpenTransaction(log, 'log');
    s.checkIntegrity();
  });
});

// ---------------------------------------------------------------------------------------------
// The TypeScript changes: options read once, parts read once, createIndexAsync on an empty
// space, expirationd.start's kill, atomic()'s refusals, CappedError's brand.

describe('options, parts, tasks and errors', () => {
  test('options that used to work: inherited, class instances with getters, frozen, undefined values', () => {
    const base = { maxTuples: 2, onFull: 'refuse' as const };
    const capped = new Space('inh', Object.create(base));
    expect(capped.maxTuples).toBe(2);
    capped.createIndex('pk', Object.freeze({ parts: Object.freeze([Object.freeze([1, 'unsigned'] as const)]) }));
    capped.insert([1]);
    capped.insert([2]);
    expect(codeOf(() => capped.insert([3]))).toBe('ER_SPACE_FULL');
    class Sel {
      get limit(): number { return 1; }
      get iterator(): 'GE' { return 'GE'; }
    }
    expect(capped.select(1, new Sel() as never)).toEqual([[1]]);
    expect(capped.select(undefined, { limit: undefined, offset: undefined, iterator: undefined })).toEqual([[1], [2]]);
    class PartDef {
      constructor(readonly field: number, readonly type: 'unsigned') {}
    }
    class Def {
      get parts(): PartDef[] { return [new PartDef(1, 'unsigned')]; }
      get unique(): boolean { return false; }
    }
    capped.createIndex('byId', new Def() as never);
    expect(capped.index.byId.unique).toBe(false);
    expect(capped.index.byId.parts).toEqual([{ field: 1, type: 'unsigned' }]);
  });

  test('createIndexAsync on an empty space creates the checked definition, read once', async () => {
    const s = new Space('emptyAsync');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    let reads = 0;
    const def = {
      get parts() {
        reads++;
        return reads === 1 ? [[2, 'string']] : [[3, 'unsigned']];
      },
      unique: false,
    };
    const idx = await s.createIndexAsync('byName', def as never);
    expect(reads).toBe(1);
    expect(idx.parts).toEqual([{ field: 2, type: 'string' }]);
    expect(s.index.byName).toBe(idx);
    s.insert([1, 'a']);
    expect(codeOf(() => s.insert([2, 5]))).toBe('ER_FIELD_TYPE');
  });

  test('the positional expirationd.start form, restart() and start() of a killed task', async () => {
    const s = new Space('posit');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    for (let id = 0; id < 20; id++) s.insert([id, id < 10 ? 1 : 2 ** 40]);
    const t = expirationd.start('posit', s, 'pk', 'exp', 2, 5, 1);
    expect(expirationd.task('posit')).toBe(t);
    while (s.len() > 10) await turn();
    t.kill();
    expect(expirationd.tasks()).not.toHaveProperty('posit');
    t.restart();
    expect(expirationd.task('posit')).toBe(t);
    expect(t.stats().restarts).toBe(2);
    t.kill();
    t.start();
    expect(t.stats().restarts).toBe(3);
    expect(expirationd.task('posit')).toBe(t);
  });

  test('two tasks started with the same name from inside a callback of the first: the last one runs alone', async () => {
    const s = new Space('samename');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    for (let id = 0; id < 50; id++) s.insert([id, 1]);
    const started: ReturnType<typeof expirationd.start>[] = [];
    let handed = 0;
    const first = expirationd.start('dup', s, {
      field: 2, scanSize: 10, now: () => 10,
      onExpired: () => {
        handed++;
        if (started.length === 0) {
          started.push(expirationd.start('dup', s, { field: 2, scanSize: 10, now: () => 10 }));
          started.push(expirationd.start('dup', s, { field: 2, scanSize: 10, now: () => 10 }));
        }
      },
    });
    while (s.len() > 0) await turn();
    expect(first.state).toBe('killed');
    expect(started[0].state).toBe('killed');
    expect(started[1].state).toBe('running');
    expect(expirationd.task('dup')).toBe(started[1]);
    expect(handed).toBe(1);
  });

  test('a start that fails leaves the running task of the name alone; a later good one replaces it', () => {
    const s = new Space('failstart');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const a = expirationd.start('fs', s, { field: 2 });
    expect(codeOf(() => expirationd.start('fs', s, { field: 2, itIndex: 'nope' }))).toBe('ER_NO_SUCH_INDEX');
    expect(codeOf(() => expirationd.start('fs', s, { field: 2, scanSize: 0 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(a.state).toBe('running');
    expect(expirationd.task('fs')).toBe(a);
    const b = expirationd.start('fs', s, { field: 2 });
    expect(a.state).toBe('killed');
    expect(expirationd.task('fs')).toBe(b);
  });

  test('atomic()/transaction() refuse async and generator functions before they run, and run everything else', () => {
    const s = new Space('kinds');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    let ran = 0;
    const deferred = [
      async () => { ran++; },
      function* gen() { ran++; },
      async function* agen() { ran++; },
      (async () => { ran++; }).bind(null),
    ];
    for (const fn of deferred) {
      expect(codeOf(() => atomic(fn as () => unknown))).toBe('ER_TRANSACTION');
      expect(codeOf(() => s.transaction(fn as () => unknown))).toBe('ER_TRANSACTION');
    }
    expect(ran).toBe(0);
    const ok = [
      () => s.insert([ran++]),
      function named() { return s.insert([ran++]); },
      new Proxy(() => s.insert([ran++]), {}),
      { m() { return s.insert([ran++]); } }.m,
      (function (this: unknown) { return s.insert([ran++]); }).bind({}),
    ];
    for (const fn of ok) atomic(fn);
    expect(s.len()).toBe(5);
    // a promise returned by a plain function: undone, refused
    expect(codeOf(() => atomic(() => { s.insert([100]); return Promise.resolve(1); }))).toBe('ER_TRANSACTION');
    expect(s.get(100)).toBeUndefined();
  });

  test('CappedError: instanceof for the class, subclasses and their instances', () => {
    class MyError extends CappedError {}
    class Deeper extends MyError {}
    const base = new CappedError('m', 'ER_TUPLE_FORMAT');
    const mine = new MyError('m', 'ER_TUPLE_FORMAT');
    const deeper = new Deeper('m', 'ER_TUPLE_FORMAT');
    expect(base instanceof CappedError).toBe(true);
    expect(mine instanceof CappedError).toBe(true);
    expect(mine instanceof MyError).toBe(true);
    expect(deeper instanceof MyError).toBe(true);
    expect(base instanceof MyError).toBe(false);
    expect(mine instanceof Deeper).toBe(false);
    expect(base instanceof Error).toBe(true);
    expect(new Error('x') instanceof CappedError).toBe(false);
    expect((null as unknown as object) instanceof CappedError).toBe(false);
    expect((() => {}) instanceof CappedError).toBe(false);
    expect(mine.name === 'CappedError' || mine.name === 'MyError' || mine.name === 'Error').toBe(true);
    // errors the library throws are CappedErrors with their code
    const s = new Space('err');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    try {
      s.insert(['x']);
    } catch (e) {
      expect(e).toBeInstanceOf(CappedError);
      expect((e as CappedError).code).toBe('ER_FIELD_TYPE');
    }
  });

  test('error messages name what was wrong', () => {
    const s = new Space('msgs');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(() => s.select(1, { limit: -1 })).toThrow(/limit must be a non-negative integer.*got -1/);
    expect(() => s.select(1, { iterator: 'NOPE' as never })).toThrow(/unknown iterator 'NOPE'/);
    expect(() => s.createIndex('x', { parts: [[0, 'unsigned']] })).toThrow(/parts\[0\]\.field must be a 1-based field number, got 0/);
    expect(() => s.createIndex('x', { parts: [[1, 'float' as never]] })).toThrow(/parts\[0\]\.type must be one of .*got float/);
    expect(() => s.select(1, { limit: Object.create(null) })).toThrow(/limit must be a non-negative integer/);
    expect(() => expirationd.kill('nope')).toThrow(/no task named 'nope'/);
  });
});

describe('restarts of large builds', () => {
  for (const kind of ['HASH', 'TREE'] as const) {
    for (const unique of kind === 'HASH' ? [true] : [true, false]) {
      test(`${kind}${unique ? '' : ' non-unique'}: restarts at many points of a 12k walk; memory() as one build`, async () => {
        setBuildSlice({ tuples: 800, ms: 50 });
        const r = rng(SEED + 9);
        const def = { type: kind, unique, parts: [[2, 'unsigned']] as [[number, 'unsigned']] };
        const fresh = populated(`big0${kind}${unique}`, 'HASH', 12000);
        await fresh.createIndexAsync('key', def);
        const once = fresh.memory().indexes;
        fresh.drop();
        const s = populated(`big1${kind}${unique}`, 'HASH', 12000);
        const p = s.createIndexAsync('key', def);
        let next = 200000;
        for (let round = 0; round < 30; round++) {
          await turns(r.int(4));
          throwing(() => s.transaction(() => {
            for (let k = 0; k < 20; k++) s.insert([next++, 5_000_000 + next, 0, 'x']);
            s.insert([next++, unique ? r.int(12000) * 10 : 'wrong type', 0, 'breaks it']);
            throw new Boom();
          }));
        }
        const { error } = await settle(p);
        expect(errCode(error)).toBeUndefined();
        checkAll(s, [{ name: 'key', field: 2, unique, type: kind }], r, `${kind}`);
        expect(s.memory().indexes).toBeLessThanOrEqual(once * 1.1 + 65536);
      });
    }
  }
});
