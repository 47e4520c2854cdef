// A randomized model test: a Space and a plain JavaScript reference (a Map keyed by primary key,
// plus sorting helpers with the same ordering: numbers by value, strings bytewise by UTF-8,
// booleans false < true, equal keys of a non-unique index by primary key) run the same random
// operations and must agree after every one of them.
//
// The PRNG is seeded; a failure names the seed and the operation number. Reproduce or explore with
//   MODEL_SEED=<seed> MODEL_OPS=<n> npx vitest run test/model.test.ts
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type FieldType, type IteratorType, type Key, type Tuple } from '../src/index.js';
import { cmpParts, rng, selectByIterator, type Rng, type Scalar } from './support/reference.js';

type PartDef = [number, FieldType];

interface IndexDef {
  name: string;
  type: 'TREE' | 'HASH';
  unique: boolean;
  parts: PartDef[];
}

interface Config {
  name: string;
  seed: number;
  indexes: IndexDef[];
  /** Range of the unsigned first field; smaller means more duplicates. */
  idRange: number;
}

const OPS = Number(process.env.MODEL_OPS) || 10_000;
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
const TREE_ITERATORS: IteratorType[] = ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'];
const HASH_ITERATORS: IteratorType[] = ['EQ', 'ALL'];
const NOW = 1_700_000_000_123;


const BIG_UNSIGNED = [255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40, NOW, NOW + 1, 2 ** 53 - 1];
const STRINGS = ['', 'a', 'A', 'ab', 'abc', 'b', 'é', 'e\u0301', '€', '😀', '\uFF71', 'a\u0000', 'zz', 'm', 'x'.repeat(40)];
const NUMBERS = [-5, -1, 0, 1, 2, 3, 7, -2.5, -0.5, 0.5, 1.5, 0.1, 1e20, -1e20, Infinity, -Infinity, 2 ** 53, NOW + 0.5, 2 ** 32];
const PAYLOADS: unknown[] = [null, 42, 'payload', [1, [2, 'x']], { a: 1, b: 'c' }, true, -7.25, ''];

// ---- the reference ----

const keyOf = (t: Tuple, def: IndexDef): Scalar[] => def.parts.map(([f]) => t[f - 1] as Scalar);
const keyString = (k: Scalar[]): string => k.map((v) => `${typeof v}:${String(v)}`).join('|');

class Model {
  rows = new Map<string, Tuple>();
  private version = 0;
  private sorted = new Map<number, { version: number; rows: Tuple[] }>();

  constructor(readonly defs: IndexDef[]) {}

  pk(t: Tuple | Scalar[], isKey = false): string {
    return keyString(isKey ? (t as Scalar[]) : keyOf(t as Tuple, this.defs[0]));
  }

  clone(): Map<string, Tuple> {
    return new Map(this.rows);
  }

  restore(rows: Map<string, Tuple>): void {
    this.rows = rows;
    this.version++;
  }

  set(t: Tuple): void {
    this.rows.set(this.pk(t), t);
    this.version++;
  }

  remove(pk: string): void {
    this.rows.delete(pk);
    this.version++;
  }

  clear(): void {
    this.rows = new Map();
    this.version++;
  }

  /** Whether t collides in a unique index with a tuple other than the one it replaces. */
  conflicts(t: Tuple, replacing: boolean): boolean {
    const pk = this.pk(t);
    if (!replacing && this.rows.has(pk)) return true;
    for (let i = 1; i < this.defs.length; i++) {
      const def = this.defs[i];
      if (!def.unique) continue;
      const k = keyOf(t, def);
      for (const [otherPk, other] of this.rows) {
        if (otherPk !== pk && cmpParts(keyOf(other, def), k) === 0) return true;
      }
    }
    return false;
  }

  ordered(i: number): Tuple[] {
    const cached = this.sorted.get(i);
    if (cached && cached.version === this.version) return cached.rows;
    const def = this.defs[i];
    const pkDef = this.defs[0];
    const rows = [...this.rows.values()].sort((a, b) =>
      cmpParts(keyOf(a, def), keyOf(b, def)) || cmpParts(keyOf(a, pkDef), keyOf(b, pkDef)));
    this.sorted.set(i, { version: this.version, rows });
    return rows;
  }

  select(i: number, key: Scalar[], iterator: IteratorType): Tuple[] {
    const def = this.defs[i];
    const rows = this.ordered(i);
    return selectByIterator(rows, key.length, iterator, (t) => cmpParts(keyOf(t, def), key));
  }
}

// ---- the random driver ----

function genValue(r: Rng, type: FieldType, field: number, config: Config): unknown {
  switch (type) {
    case 'unsigned':
      return field === 1 && !r.chance(0.1) ? r.int(config.idRange) : r.chance(0.5) ? r.int(config.idRange) : r.pick(BIG_UNSIGNED);
    case 'integer': return r.chance(0.8) ? r.int(41) - 20 : r.pick([-(2 ** 40), 2 ** 40, -(2 ** 31), NOW]);
    case 'number': return r.pick(NUMBERS);
    case 'string': return r.chance(0.7) ? r.pick(STRINGS) : `k${r.int(400)}`;
    case 'boolean': return r.chance(0.5);
  }
}

// Tuples: [1 unsigned, 2 string, 3 number, 4 boolean, 5 payload]; every index uses these types.
const FIELD_TYPES: FieldType[] = ['unsigned', 'string', 'number', 'boolean'];
function genTuple(r: Rng, config: Config): Tuple {
  const t: Tuple = FIELD_TYPES.map((type, i) => genValue(r, type, i + 1, config));
  if (r.chance(0.7)) t.push(r.pick(PAYLOADS));
  return t;
}

function sortForSet(rows: Tuple[]): string[] {
  return rows.map((t) => JSON.stringify(t)).sort();
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (!(error instanceof CappedError)) throw error;
    return error.code;
  }
  return 'none';
}

class Rollback extends Error {}

function run(config: Config, seed: number, ops: number): void {
  const r = rng(seed);
  const space = new Space(`model-${config.name}`);
  for (const def of config.indexes) space.createIndex(def.name, { type: def.type, unique: def.unique, parts: def.parts });
  const model = new Model(config.indexes);
  let op = 0;
  let lastOp = '';

  // A random existing tuple (when there is one) or a fresh random one.
  const someTuple = (): Tuple => {
    if (model.rows.size > 0 && r.chance(0.6)) {
      const k = r.int(model.rows.size);
      let i = 0;
      for (const t of model.rows.values()) if (i++ === k) return t;
    }
    return genTuple(r, config);
  };
  // A key for index i: full, or (TREE) a prefix, or none; scalar or array for one part.
  const someKey = (i: number, allowPartial: boolean): Scalar[] => {
    const def = config.indexes[i];
    const full = keyOf(someTuple(), def);
    if (!allowPartial || def.type === 'HASH') return full;
    return full.slice(0, r.chance(0.7) ? full.length : r.int(full.length + 1));
  };
  const asKey = (k: Scalar[]): Key | undefined =>
    k.length === 0 ? (r.chance(0.5) ? undefined : []) : k.length === 1 && r.chance(0.5) ? k[0] : k;

  const checkAll = () => {
    expect(space.len()).toBe(model.rows.size);
    config.indexes.forEach((def, i) => {
      const got = space.index[def.name].select();
      if (def.type === 'HASH') expect(sortForSet(got)).toEqual(sortForSet(model.ordered(i)));
      else expect(got).toEqual(model.ordered(i));
      expect(space.index[def.name].len()).toBe(model.rows.size);
    });
    space.checkIntegrity();
  };

  const doInsert = () => {
    const t = genTuple(r, config);
    lastOp = `insert ${JSON.stringify(t)}`;
    if (model.conflicts(t, false)) {
      expect(codeOf(() => space.insert(t))).toBe('ER_DUPLICATE_KEY');
    } else {
      expect(space.insert(t)).toBe(t);
      model.set(t);
    }
  };

  const doReplace = () => {
    const base = someTuple();
    const t = genTuple(r, config);
    // Keep the primary key of an existing tuple most of the time.
    config.indexes[0].parts.forEach(([f]) => { t[f - 1] = base[f - 1]; });
    lastOp = `replace ${JSON.stringify(t)}`;
    if (model.conflicts(t, true)) {
      expect(codeOf(() => space.replace(t))).toBe('ER_DUPLICATE_KEY');
    } else {
      space.replace(t);
      model.set(t);
    }
  };

  const doDelete = () => {
    const k = someKey(0, false);
    lastOp = `delete ${JSON.stringify(k)}`;
    const pk = model.pk(k, true);
    const expected = model.rows.get(pk);
    expect(space.delete(asKey(k) as Key)).toEqual(expected);
    if (expected) model.remove(pk);
  };

  const doGet = () => {
    const uniques = config.indexes.map((d, i) => (d.unique ? i : -1)).filter((i) => i >= 0);
    const i = r.pick(uniques);
    const k = someKey(i, false);
    lastOp = `get ${config.indexes[i].name} ${JSON.stringify(k)}`;
    const expected = model.select(i, k, 'EQ')[0];
    expect(space.index[config.indexes[i].name].get(asKey(k) as Key)).toEqual(expected);
    if (i === 0) expect(space.get(asKey(k) as Key)).toEqual(expected);
  };

  const doInsertMany = () => {
    const batch: Tuple[] = [];
    const n = 1 + r.int(12);
    for (let j = 0; j < n; j++) batch.push(genTuple(r, config));
    // Sometimes force a duplicate inside the batch.
    if (n > 1 && r.chance(0.2)) batch.push(batch[r.int(n)]);
    lastOp = `insertMany ${JSON.stringify(batch)}`;
    const saved = model.clone();
    let ok = true;
    for (const t of batch) {
      if (model.conflicts(t, false)) {
        ok = false;
        break;
      }
      model.set(t);
    }
    if (ok) {
      expect(space.insertMany(batch)).toBe(batch.length);
    } else {
      model.restore(saved);
      expect(codeOf(() => space.insertMany(batch))).toBe('ER_DUPLICATE_KEY');
    }
  };

  const doSelect = () => {
    const i = r.int(config.indexes.length);
    const def = config.indexes[i];
    const index = space.index[def.name];
    const iterator = r.pick(def.type === 'HASH' ? HASH_ITERATORS : TREE_ITERATORS);
    const k = iterator === 'ALL' && r.chance(0.5) ? [] : def.type === 'HASH' && r.chance(0.2) ? [] : someKey(i, true);
    const key = asKey(k);
    const paged = r.chance(0.3);
    const limit = paged ? r.int(8) : undefined;
    const offset = paged && r.chance(0.5) ? r.int(10) : undefined;
    lastOp = `select ${def.name} ${JSON.stringify(key)} ${iterator} limit=${limit} offset=${offset}`;
    const opts = { iterator, ...(limit === undefined ? {} : { limit }), ...(offset === undefined ? {} : { offset }) };
    const got = index.select(key, opts);
    const expected = model.select(i, def.type === 'HASH' && iterator === 'ALL' ? [] : k, iterator);
    const from = offset ?? 0;
    const to = limit === undefined ? Infinity : from + limit;
    if (def.type === 'HASH' && (iterator === 'ALL' || k.length === 0)) {
      // HASH order is unspecified: compare as sets, and pages as slices of one walk.
      if (!paged) expect(sortForSet(got)).toEqual(sortForSet(expected));
      else expect(got).toEqual(index.select(key, { iterator }).slice(from, to));
      expect(got.length).toBe(Math.max(0, Math.min(expected.length, to) - from));
    } else {
      expect(got).toEqual(expected.slice(from, to));
    }
    if (def.type === 'TREE' && r.chance(0.3)) {
      lastOp = `count ${def.name} ${JSON.stringify(key)} ${iterator}`;
      expect(index.count(key, { iterator })).toBe(expected.length);
    }
  };

  const doMinMax = () => {
    const trees = config.indexes.map((d, i) => (d.type === 'TREE' ? i : -1)).filter((i) => i >= 0);
    if (trees.length === 0) return;
    const i = r.pick(trees);
    const def = config.indexes[i];
    const k = r.chance(0.3) ? [] : someKey(i, true);
    const key = asKey(k);
    lastOp = `min/max ${def.name} ${JSON.stringify(key)}`;
    const eq = model.select(i, k, 'EQ');
    expect(space.index[def.name].min(key)).toEqual(eq[0]);
    expect(space.index[def.name].max(key)).toEqual(eq[eq.length - 1]);
  };

  const doPairs = () => {
    const i = r.int(config.indexes.length);
    const def = config.indexes[i];
    const iterator = r.pick(def.type === 'HASH' ? HASH_ITERATORS : TREE_ITERATORS);
    const k = iterator === 'ALL' ? [] : someKey(i, true);
    lastOp = `pairs ${def.name} ${JSON.stringify(k)} ${iterator}`;
    const key = asKey(k);
    expect([...space.index[def.name].pairs(key, { iterator })]).toEqual(space.index[def.name].select(key, { iterator }));
  };

  const doInvalid = () => {
    const t = genTuple(r, config);
    const [f, type] = r.pick(config.indexes.flatMap((d) => d.parts));
    t[f - 1] = type === 'string' ? 1 : type === 'boolean' ? 'yes' : type === 'number' ? NaN : -1.5;
    lastOp = `invalid ${JSON.stringify(t)}`;
    expect(codeOf(() => (r.chance(0.5) ? space.insert(t) : space.insertMany([t, genTuple(r, config)])))).toBe('ER_FIELD_TYPE');
  };

  const doTransaction = (depth: number) => {
    const saved = model.clone();
    const fail = r.chance(0.4);
    lastOp = `transaction depth=${depth} fail=${fail}`;
    try {
      space.transaction(() => {
        const n = 1 + r.int(8);
        for (let j = 0; j < n; j++) step(depth + 1);
        if (fail) throw new Rollback();
      });
    } catch (error) {
      if (!(error instanceof Rollback)) throw error;
      model.restore(saved);
      expect(space.len()).toBe(model.rows.size);
      if (r.chance(0.2)) checkAll();
    }
  };

  const doTruncate = () => {
    lastOp = 'truncate';
    space.truncate();
    model.clear();
  };

  function step(depth: number): void {
    const x = r.next();
    if (x < 0.2) doInsert();
    else if (x < 0.32) doReplace();
    else if (x < 0.45) doDelete();
    else if (x < 0.52) doGet();
    else if (x < 0.56) doInsertMany();
    else if (x < 0.6) {
      if (depth < 3) doTransaction(depth);
      else doInsert();
    } else if (x < 0.87) doSelect();
    else if (x < 0.92) doMinMax();
    else if (x < 0.94) doPairs();
    else if (x < 0.95) doInvalid();
    else if (x < 0.9515) doTruncate();
    else doGet();
  }

  try {
    for (op = 0; op < ops; op++) {
      step(0);
      expect(space.len()).toBe(model.rows.size);
      if (op % 1000 === 999) checkAll();
    }
    checkAll();
  } catch (error) {
    const where = `[model ${config.name}: seed=${seed} op=#${op} last=${lastOp.slice(0, 300)}] `;
    if (error instanceof Error) error.message = where + error.message;
    throw error;
  } finally {
    space.drop();
  }
}

const CONFIGS: Config[] = [
  {
    name: 'HASH primary key',
    seed: 0x1a2b3c,
    idRange: 200,
    indexes: [
      { name: 'pk', type: 'HASH', unique: true, parts: [[1, 'unsigned']] },
      { name: 'byNumber', type: 'TREE', unique: false, parts: [[3, 'number']] },
    ],
  },
  {
    name: 'TREE primary key',
    seed: 0x5eed01,
    idRange: 200,
    indexes: [
      { name: 'pk', type: 'TREE', unique: true, parts: [[1, 'unsigned']] },
      { name: 'pair', type: 'HASH', unique: true, parts: [[2, 'string'], [4, 'boolean']] },
    ],
  },
  {
    name: 'multipart TREE primary key',
    seed: 0xbadcafe,
    idRange: 30,
    indexes: [
      { name: 'pk', type: 'TREE', unique: true, parts: [[1, 'unsigned'], [2, 'string']] },
      { name: 'flag', type: 'TREE', unique: false, parts: [[4, 'boolean']] },
    ],
  },
  {
    name: 'non-unique TREE secondary',
    seed: 0x7777,
    idRange: 200,
    indexes: [
      { name: 'pk', type: 'TREE', unique: true, parts: [[1, 'unsigned']] },
      { name: 'byNumber', type: 'TREE', unique: false, parts: [[3, 'number']] },
      { name: 'flagName', type: 'TREE', unique: false, parts: [[4, 'boolean'], [2, 'string']] },
      { name: 'nameNumber', type: 'TREE', unique: true, parts: [[2, 'string'], [3, 'number']] },
    ],
  },
];

describe('model test: a Space agrees with a reference model over random operations', () => {
  for (const config of CONFIGS) {
    it(`${config.name}: ${OPS} random operations`, () => {
      run(config, SEED ?? config.seed, OPS);
    });
  }
});
