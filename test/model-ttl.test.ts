// A randomized model test of TTL-aware spaces: a Space with a ttl declaration and an injected
// clock, and a plain JavaScript reference (a Map of what is stored; "visible" is computed at each
// read from the clock), run the same random operations (writes, clock moves forwards and back,
// reads on every index) and must agree after every one of them.
//
// The PRNG is seeded; a failure names the seed and the operation number. Reproduce or explore with
//   MODEL_SEED=<seed> MODEL_OPS=<n> npx vitest run test/model-ttl.test.ts
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type IteratorType, type Key, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';

const OPS = Number(process.env.MODEL_OPS) || 5_000;
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);

interface Config {
  name: string;
  seed: number;
  pk: 'TREE' | 'HASH';
  /** A non-unique TREE on the TTL field (then every TTL is a number). */
  ttlIndex: boolean;
  /** A unique index on field 2 (a name). */
  nameIndex: 'TREE' | 'HASH';
}

const NAMES = ['ann', 'bob', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal'];

function run(config: Config, seed: number, ops: number): void {
  const next = mulberry32(seed);
  const int = (n: number): number => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

  let now = 50;
  const space = new Space(`model-ttl-${config.name}`, { ttl: { field: 3, now: () => now } });
  space.createIndex('pk', { type: config.pk, parts: [[1, 'unsigned']] });
  space.createIndex('name', { type: config.nameIndex, parts: [[2, 'string']] });
  if (config.ttlIndex) space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  const stored = new Map<number, Tuple>();

  const ttlValue = (): unknown => {
    // Around the clock, so that some are due and some are not; never -0 (msgpackr stores 0).
    const base = Math.floor(now) + int(40) - 20;
    const negative = base === 0 ? 0 : -base;
    if (config.ttlIndex) return pick([base, base + 0.5, negative, 2 ** 33 + base]);
    return pick<unknown>([base, base + 0.5, negative, NaN, 'soon', null, undefined, base, base]);
  };
  const makeTuple = (): Tuple => {
    const ttl = ttlValue();
    const t: Tuple = [int(40), `${pick(NAMES)}${int(6)}`];
    if (ttl !== undefined) t.push(ttl);
    return t;
  };
  const visible = (t: Tuple): boolean => !(typeof t[2] === 'number' && !Number.isNaN(t[2]) && t[2] <= now);
  const live = (): Tuple[] => [...stored.values()].filter(visible);
  const byPk = (a: Tuple, b: Tuple): number => (a[0] as number) - (b[0] as number);
  const byName = (a: Tuple, b: Tuple): number => ((a[1] as string) < (b[1] as string) ? -1 : (a[1] as string) > (b[1] as string) ? 1 : 0);
  const byExp = (a: Tuple, b: Tuple): number => (a[2] as number) - (b[2] as number) || byPk(a, b);
  const storedName = (name: unknown): Tuple | undefined => [...stored.values()].find((t) => t[1] === name);

  // The reference's insert/replace: throws 'dup' where the space must throw ER_DUPLICATE_KEY.
  const apply = (t: Tuple, replace: boolean, into: Map<number, Tuple>): void => {
    const old = into.get(t[0] as number);
    if (old !== undefined && !replace && visible(old)) throw new Error('dup');
    const other = [...into.values()].find((u) => u[1] === t[1]);
    if (other !== undefined && other !== old) throw new Error('dup');
    into.set(t[0] as number, t);
  };
  const expectOutcome = (fn: () => unknown, reference: () => void): void => {
    let expected: string | undefined;
    try {
      reference();
    } catch {
      expected = 'ER_DUPLICATE_KEY';
    }
    let got: string | undefined;
    try {
      fn();
    } catch (error) {
      if (!(error instanceof CappedError)) throw error;
      got = error.code;
    }
    expect(got).toBe(expected);
  };
  const sorted = (ts: Tuple[], cmp: (a: Tuple, b: Tuple) => number): Tuple[] => [...ts].sort(cmp);

  let lastOp = '';
  for (let op = 0; op < ops; op++) {
    const where = `[model-ttl ${config.name}: seed=${seed} op=#${op} now=${now} last=${lastOp}] `;
    try {
      const roll = int(100);
      if (roll < 10) {
        now += pick([0, 1, 1, 2, 5, 0.5, -3]);
        lastOp = `clock ${now}`;
      } else if (roll < 30) {
        const t = makeTuple();
        lastOp = `insert ${JSON.stringify(t)}`;
        expectOutcome(() => space.insert(t), () => apply(t, false, stored));
      } else if (roll < 38) {
        const t = makeTuple();
        lastOp = `replace ${JSON.stringify(t)}`;
        expectOutcome(() => space.replace(t), () => apply(t, true, stored));
      } else if (roll < 43) {
        const batch = [makeTuple(), makeTuple(), makeTuple()];
        lastOp = `insertMany ${JSON.stringify(batch)}`;
        const copy = new Map(stored);
        let ok = true;
        try {
          for (const t of batch) apply(t, false, copy);
        } catch {
          ok = false;
        }
        expectOutcome(() => space.insertMany(batch), () => {
          if (!ok) throw new Error('dup');
        });
        if (ok) {
          stored.clear();
          for (const [k, v] of copy) stored.set(k, v);
        }
      } else if (roll < 50) {
        const id = int(40);
        lastOp = `delete ${id}`;
        expect(space.delete(id)).toEqual(stored.get(id));
        stored.delete(id);
      } else if (roll < 60) {
        const id = int(40);
        lastOp = `get ${id}`;
        const t = stored.get(id);
        expect(space.get(id)).toEqual(t !== undefined && visible(t) ? t : undefined);
        const name = `${pick(NAMES)}${int(6)}`;
        const n = storedName(name);
        expect(space.index.name.get(name)).toEqual(n !== undefined && visible(n) ? n : undefined);
      } else if (roll < 68) {
        lastOp = 'select/count ALL';
        const limit = int(5);
        const offset = int(4);
        if (config.pk === 'TREE') {
          expect(space.select(undefined, { limit, offset })).toEqual(sorted(live(), byPk).slice(offset, offset + limit));
        } else {
          expect(sorted(space.select(), byPk)).toEqual(sorted(live(), byPk));
          expect(space.select(undefined, { limit, offset }).length).toBe(live().slice(offset, offset + limit).length);
        }
        expect(space.count()).toBe(live().length);
        expect(space.len()).toBe(stored.size);
      } else if (roll < 78 && config.nameIndex === 'TREE') {
        const iterator = pick<IteratorType>(['GE', 'GT', 'LE', 'LT', 'EQ', 'REQ']);
        const key = `${pick(NAMES)}${int(6)}`;
        lastOp = `name ${iterator} ${key}`;
        const name = (t: Tuple): string => t[1] as string;
        const match: Record<string, (t: Tuple) => boolean> = {
          GE: (t) => name(t) >= key, GT: (t) => name(t) > key, LE: (t) => name(t) <= key,
          LT: (t) => name(t) < key, EQ: (t) => name(t) === key, REQ: (t) => name(t) === key,
        };
        const asc = sorted(live().filter(match[iterator]), byName);
        const expected = iterator === 'LE' || iterator === 'LT' || iterator === 'REQ' ? asc.reverse() : asc;
        expect(space.index.name.select(key, { iterator })).toEqual(expected);
        expect(space.index.name.select(key, { iterator, limit: 3, offset: 1 })).toEqual(expected.slice(1, 4));
        expect(space.index.name.count(key, { iterator })).toBe(expected.length);
        expect([...space.index.name.pairs(key, { iterator })]).toEqual(expected);
        expect(space.index.name.min()).toEqual(sorted(live(), byName)[0]);
        expect(space.index.name.max()).toEqual(sorted(live(), byName).at(-1));
      } else if (roll < 90 && config.ttlIndex) {
        const key = int(100) - 10;
        const iterator = pick<IteratorType>(['GE', 'GT', 'LE', 'LT', 'EQ', 'ALL']);
        lastOp = `exp ${iterator} ${key}`;
        const cmp: Record<string, (t: Tuple) => boolean> = {
          GE: (t) => (t[2] as number) >= key, GT: (t) => (t[2] as number) > key, LE: (t) => (t[2] as number) <= key,
          LT: (t) => (t[2] as number) < key, EQ: (t) => t[2] === key, ALL: () => true,
        };
        const asc = sorted(live().filter(cmp[iterator]), byExp);
        const expected = iterator === 'LE' || iterator === 'LT' ? asc.reverse() : asc;
        const k = iterator === 'ALL' ? undefined : (key as Key);
        expect(space.index.exp.select(k, { iterator })).toEqual(expected);
        expect(space.index.exp.select(k, { iterator, limit: 2, offset: 1 })).toEqual(expected.slice(1, 3));
        expect(space.index.exp.count(k, { iterator })).toBe(expected.length);
        expect([...space.index.exp.pairs(k, { iterator })]).toEqual(expected);
        expect(space.index.exp.min()).toEqual(sorted(live(), byExp)[0]);
        expect(space.index.exp.max()).toEqual(sorted(live(), byExp).at(-1));
      } else {
        lastOp = 'integrity';
        space.checkIntegrity();
        expect(space.len()).toBe(stored.size);
        expect(sorted([...space.pairs()], byPk)).toEqual(sorted(live(), byPk));
      }
    } catch (error) {
      if (error instanceof Error) error.message = where + error.message;
      throw error;
    }
  }
  space.drop();
}

const CONFIGS: Config[] = [
  { name: 'HASH pk, TTL TREE, TREE names', seed: 0x771e01, pk: 'HASH', ttlIndex: true, nameIndex: 'TREE' },
  { name: 'TREE pk, unindexed odd TTLs, HASH names', seed: 0x771e02, pk: 'TREE', ttlIndex: false, nameIndex: 'HASH' },
  { name: 'TREE pk, TTL TREE, HASH names', seed: 0x771e03, pk: 'TREE', ttlIndex: true, nameIndex: 'HASH' },
];

describe('model: TTL-aware space against a reference', () => {
  for (const config of CONFIGS) {
    it(`${config.name}: ${OPS} random operations`, () => {
      run(config, SEED ?? config.seed, OPS);
    });
  }
});
