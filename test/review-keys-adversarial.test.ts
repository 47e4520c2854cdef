// Review probes of keys, part types and ordering (README "Tuples, keys and types", "Index",
// "Errors"; key_def.cc's hints and hashes): a careless user and an attacker. A seeded model test
// runs random inserts, replaces, deletes, re-encoding updates, batches and rolled-back
// transactions against a plain JavaScript reference (sorted arrays, numbers compared by exact
// value: JavaScript's < and == between number and BigInt are exact), over TREE and HASH primary
// keys of each numeric type and secondary indexes that get the composite hint (a non-unique
// numeric index over a numeric primary key, and a two-part one whose second part is the primary
// key), multi-part ones with strings and booleans, a unique multi-part TREE and a unique HASH
// that must agree on duplicates. Values straddle 2^20, 2^32, 2^41, 2^53, 2^63, 2^64, include
// negatives, fractions, subnormals and infinities, and are stored in several encodings: msgpackr's
// natural one (float64 above 2^32), uint64/int64 (a BigInt), and float64 for small integers
// (an update `+ 0.5, - 0.5`). Every read is checked: select with every iterator, limit and
// offset, pairs, count, min, max and get, with scalar, BigInt and array keys and key prefixes.
//   REVIEW_SEED=<n> REVIEW_STEPS=<n> npx vitest run test/review-keys-adversarial.test.ts
import { describe, expect, test } from 'vitest';
import { CappedError, Space, type IteratorType, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { setBuildSlice } from '../src/space/build.js';
import { rng, selectByIterator, type Rng } from './support/reference.js';

type Num = number | bigint;
type Val = Num | string | boolean;
type FieldType = 'unsigned' | 'integer' | 'number' | 'string' | 'boolean';
type PartDef = [number, FieldType];

const SEED = Number(process.env.REVIEW_SEED ?? 20250611);
const STEPS = Number(process.env.REVIEW_STEPS ?? 1500);

const T20 = 2 ** 20, T32 = 2 ** 32, T41 = 2 ** 41, T53 = 2 ** 53;
const U64 = 2n ** 64n, I64 = -(2n ** 63n);

// ---------------------------------------------------------------------------------------------
// The reference: the order and the type rules of the README.

const utf8 = (s: string): Buffer => Buffer.from(s);
function cmpVal(a: Val, b: Val): number {
  if (typeof a === 'string') return Buffer.compare(utf8(a), utf8(b as string));
  if (typeof a === 'boolean') return Number(a) - Number(b);
  // number/bigint: exact comparison by value (mixed operands compare exactly in JavaScript).
  return a < (b as Num) ? -1 : a > (b as Num) ? 1 : 0;
}
function cmpKeys(a: Val[], b: Val[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = cmpVal(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}
function isIntegral(v: Num): boolean {
  return typeof v === 'bigint' || Number.isInteger(v);
}
/** Whether the README's part type accepts v. */
function accepts(type: FieldType, v: unknown): boolean {
  switch (type) {
    case 'string': return typeof v === 'string';
    case 'boolean': return typeof v === 'boolean';
    case 'number': return (typeof v === 'number' && !Number.isNaN(v)) || typeof v === 'bigint';
    case 'integer':
      return (typeof v === 'number' || typeof v === 'bigint') && isIntegral(v) && v >= I64 && v < U64;
    case 'unsigned':
      return (typeof v === 'number' || typeof v === 'bigint') && isIntegral(v) && v >= 0 && v < U64;
  }
}

// ---------------------------------------------------------------------------------------------
// Values.

const INTERESTING: Num[] = [
  0, 1, 2, 3, 31, 127, 128, 255, 256, 65535, 65536,
  T20 - 2, T20 - 1, T20, T20 + 1, T20 + 2, 2 ** 21, 2 ** 31 - 1, 2 ** 31,
  T32 - 2, T32 - 1, T32, T32 + 1, T32 + 2, 2 ** 33 + 1,
  T41 - 2, T41 - 1, T41, T41 + 1, 1_763_900_000_123,
  T53 - 1, T53, T53 + 2, 2n ** 53n + 1n, 2n ** 53n + 3n, 2 ** 60, 2n ** 60n + 1n,
  2n ** 63n - 1n, 2n ** 63n, 2 ** 63, 2n ** 63n + 1n, 2 ** 64 - 2048, 2n ** 64n - 2049n, 2n ** 64n - 1n,
  -1, -2, -31, -32, -33, -127, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1,
  -T20, -T32, -(T41), -(T53), -(2n ** 53n) - 1n, -(2 ** 63), I64, -(2 ** 63) + 1024,
];
const FRACTIONS: number[] = [
  0.5, 1.5, 2.5, 0.1, 1e-300, 5e-324, -5e-324, -0.5, -1.5,
  T20 - 0.5, T20 + 0.5, T32 - 0.5, T32 + 0.5, T41 - 0.5, T41 + 0.5, 1_763_900_000_123.5,
  2 ** 64, 2 ** 70, 1e300, -1e300, Infinity, -Infinity, -(2 ** 64),
];

/** A number whose exact value is an integer in [lo, hi], as a number (or BigInt when unsafe). */
function around(r: Rng, centre: number, spread: number): Num {
  const v = centre + r.int(2 * spread + 1) - spread;
  return Number.isSafeInteger(v) ? v : BigInt(Math.round(centre)) + BigInt(r.int(2 * spread + 1) - spread);
}

function randomNum(r: Rng, type: FieldType): Num {
  if (type === 'string') return r.pick(STRINGS) + String(r.int(50)) as never;
  let v: Num;
  for (;;) {
    const k = r.int(10);
    if (k < 3) v = r.pick(INTERESTING);
    else if (k < 4) v = r.pick(FRACTIONS);
    else if (k < 6) v = r.int(40);
    else if (k < 7) v = around(r, r.pick([T20, T32, T41, 0, -T20, 1_763_900_000_000]), 6);
    else if (k < 8) v = r.int(T32) + (r.chance(0.3) ? 0.25 * (1 + r.int(3)) : 0);
    else if (k < 9) v = -r.int(1000) - (r.chance(0.3) ? 0.5 : 0);
    else v = Math.floor(r.next() * T41) + (r.chance(0.5) ? 0 : r.pick([0.5, 0.125, 0.999]));
    if (accepts(type, v)) return reencode(r, v);
  }
}

/** The same value in another JavaScript form (so another MessagePack encoding), sometimes. */
function reencode<V extends Val>(r: Rng, v: V): V;
function reencode(r: Rng, v: Val): Val {
  if (typeof v !== 'number' && typeof v !== 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 63) && v < 2 ** 64 && r.chance(0.3)) return BigInt(v);
  if (typeof v === 'bigint' && BigInt(Number(v)) === v && r.chance(0.5)) return Number(v);
  return v;
}

const STRINGS = [
  '', 'a', 'a\0', 'ab', 'abcdefg', 'abcdefgh', 'abcdefgh\0', 'abcdefghi', 'abcdefgi', 'abcdefgh'.repeat(5),
  'abcdefgh'.repeat(5) + 'a', 'z', 'é', 'e\u0301', '\u{1F600}', 'ü', 'Z', '0', '\uffff', '\ue000', '\u{10FFFF}',
];

// ---------------------------------------------------------------------------------------------
// The model.

interface Row { pk: Num; a: Num; b: Num; s: string; f: boolean; tag: number }
const fieldOf = (row: Row, field: number): Val => [row.pk, row.a, row.b, row.s, row.f, row.tag][field - 1];
const tupleOf = (row: Row): Tuple => [row.pk, row.a, row.b, row.s, row.f, row.tag];

interface IndexDef { name: string; kind: 'TREE' | 'HASH'; unique: boolean; parts: PartDef[] }

function indexDefs(pkKind: 'TREE' | 'HASH', pkType: FieldType): IndexDef[] {
  return [
    { name: 'pk', kind: pkKind, unique: true, parts: [[1, pkType]] },
    { name: 'a', kind: 'TREE', unique: false, parts: [[2, 'number']] },            // composite hint (a, pk)
    { name: 'b', kind: 'TREE', unique: false, parts: [[3, 'unsigned']] },          // composite hint (b, pk)
    { name: 'bp', kind: 'TREE', unique: false, parts: [[3, 'unsigned'], [1, pkType]] }, // composite, 2-part keys
    { name: 'ab', kind: 'TREE', unique: false, parts: [[2, 'number'], [3, 'unsigned']] },
    { name: 'ub', kind: 'TREE', unique: true, parts: [[3, 'unsigned'], [4, 'string']] },
    { name: 'ua', kind: 'TREE', unique: true, parts: [[2, 'number'], [5, 'boolean']] },
    { name: 'ha', kind: 'HASH', unique: true, parts: [[2, 'number'], [5, 'boolean']] },
    { name: 'sf', kind: 'TREE', unique: false, parts: [[4, 'string'], [5, 'boolean']] },
    { name: 'fa', kind: 'TREE', unique: false, parts: [[5, 'boolean'], [2, 'number']] },
    { name: 'hp', kind: 'HASH', unique: true, parts: [[1, pkType], [4, 'string']] },
    { name: 'us', kind: 'TREE', unique: true, parts: [[4, 'string'], [2, 'number'], [3, 'unsigned']] },
    { name: 'n1', kind: 'TREE', unique: false, parts: [[1, pkType], [5, 'boolean']] },
  ];
}

const keyOf = (def: IndexDef, row: Row): Val[] => def.parts.map(([f]) => fieldOf(row, f));

class Model {
  rows: Row[] = [];
  constructor(readonly defs: IndexDef[]) {}
  /** Rows in the index's order (non-unique: equal keys by primary key). */
  ordered(def: IndexDef): Row[] {
    const pk = this.defs[0];
    return [...this.rows].sort((x, y) => cmpKeys(keyOf(def, x), keyOf(def, y)) || cmpKeys(keyOf(pk, x), keyOf(pk, y)));
  }
  byPk(key: Val): Row | undefined {
    return this.rows.find((r) => cmpVal(r.pk, key) === 0);
  }
  /** The error code a write of `row` (replacing `old`) gets, or undefined. */
  conflict(row: Row, old: Row | undefined): string | undefined {
    for (const def of this.defs) {
      for (const [f, type] of def.parts) {
        if (!accepts(type, fieldOf(row, f))) return 'ER_FIELD_TYPE';
      }
    }
    for (const def of this.defs) {
      if (!def.unique) continue;
      const k = keyOf(def, row);
      if (this.rows.some((r) => r !== old && cmpKeys(keyOf(def, r), k) === 0)) return 'ER_DUPLICATE_KEY';
    }
    return undefined;
  }
}

const tags = (tuples: Tuple[]): number[] => tuples.map((t) => t[5] as number);
const rowTags = (rows: Row[]): number[] => rows.map((r) => r.tag);

function createSpace(name: string, defs: IndexDef[]): Space {
  const space = new Space(name);
  for (const d of defs) space.createIndex(d.name, { type: d.kind, unique: d.unique, parts: d.parts });
  return space;
}

/** A key argument for these part values: a scalar (number, BigInt, string, boolean) or an array. */
function keyArg(r: Rng, parts: Val[]): unknown {
  if (parts.length === 1 && r.chance(0.5)) return parts[0];
  return parts;
}

/** Checks every index's full order, and the space's own integrity check. */
function checkAll(space: Space, model: Model, where: string): void {
  space.checkIntegrity();
  expect(space.len(), where).toBe(model.rows.length);
  for (const def of model.defs) {
    const idx = space.index[def.name];
    const expected = model.ordered(def);
    if (def.kind === 'TREE') {
      expect(tags(idx.select()), `${where}: ${def.name} ALL`).toEqual(rowTags(expected));
      expect(tags(idx.select(undefined, { iterator: 'LE' })), `${where}: ${def.name} LE`).toEqual(rowTags(expected).reverse());
    } else {
      expect(tags(idx.select()).sort((x, y) => x - y), `${where}: ${def.name} ALL`).toEqual(rowTags(expected).sort((x, y) => x - y));
    }
    expect(idx.len()).toBe(model.rows.length);
    expect(idx.count()).toBe(model.rows.length);
  }
}

const TREE_ITERS: IteratorType[] = ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'];

/** One random read through a random index, checked against the model. */
function checkRead(r: Rng, space: Space, model: Model, where: string): void {
  const def = r.pick(model.defs);
  const idx = space.index[def.name];
  const rows = model.ordered(def);
  // Part values: usually a stored row's (so EQ finds something), else random ones of the type.
  const source = model.rows.length > 0 && r.chance(0.75) ? r.pick(model.rows) : undefined;
  const full = def.parts.map(([f, type]): Val => {
    if (source !== undefined && r.chance(0.85)) {
      const v = fieldOf(source, f);
      return typeof v === 'number' || typeof v === 'bigint' ? reencode(r, v) : v;
    }
    if (type === 'string') return r.pick(STRINGS);
    if (type === 'boolean') return r.chance(0.5);
    return randomNum(r, type);
  });
  const what = `${where}: ${def.name}`;
  if (def.kind === 'HASH') {
    const key = keyArg(r, full) as never;
    const expected = rows.filter((row) => cmpKeys(keyOf(def, row), full) === 0);
    expect(tags(idx.select(key)), `${what} EQ ${String(full)}`).toEqual(rowTags(expected));
    expect(idx.count(key), `${what} count ${String(full)}`).toBe(expected.length);
    expect(tags(Array.from(idx.pairs(key))), `${what} pairs`).toEqual(rowTags(expected));
    const got = idx.get(key);
    expect(got === undefined ? undefined : got[5], `${what} get ${String(full)}`).toBe(expected[0]?.tag);
    return;
  }
  const n = r.int(def.parts.length + 1);
  const parts = full.slice(0, n);
  const key = (n === 0 ? (r.chance(0.5) ? undefined : []) : keyArg(r, parts)) as never;
  const iterator = r.pick(TREE_ITERS);
  const expected = selectByIterator(rows, n, iterator, (row) => cmpKeys(keyOf(def, row), parts));
  const label = `${what} ${iterator} [${parts.map(String).join(', ')}]`;
  const offset = r.chance(0.3) ? r.int(5) : 0;
  const limit = r.chance(0.3) ? r.int(6) : undefined;
  const sliced = expected.slice(offset, limit === undefined ? undefined : offset + limit);
  const opts = limit === undefined ? { iterator, offset } : { iterator, offset, limit };
  expect(tags(idx.select(key, opts)), label).toEqual(rowTags(sliced));
  expect(idx.count(key, { iterator }), `${label} count`).toBe(expected.length);
  const walked: Tuple[] = [];
  for (const t of idx.pairs(key, { iterator })) walked.push(t);
  expect(tags(walked), `${label} pairs`).toEqual(rowTags(expected));
  // min/max: the first and last tuple equal to the key prefix.
  const eq = n === 0 ? rows : rows.filter((row) => cmpKeys(keyOf(def, row), parts) === 0);
  expect(idx.min(key)?.[5], `${label} min`).toBe(eq[0]?.tag);
  expect(idx.max(key)?.[5], `${label} max`).toBe(eq[eq.length - 1]?.tag);
  if (def.unique && n === def.parts.length) {
    expect(idx.get(key)?.[5], `${label} get`).toBe(eq[0]?.tag);
  }
}

let tagSeq = 1;
function randomRow(r: Rng, model: Model, pkType: FieldType): Row {
  // Primary keys and b values often repeat stored ones, in another encoding: duplicates must be
  // found whatever the encoding.
  const reuse = (pick: (row: Row) => Num): Num | undefined =>
    model.rows.length > 0 && r.chance(0.25) ? reencode(r, pick(r.pick(model.rows))) : undefined;
  return {
    pk: reuse((x) => x.pk) ?? randomNum(r, pkType),
    a: reuse((x) => x.a) ?? randomNum(r, 'number'),
    b: reuse((x) => x.b) ?? randomNum(r, 'unsigned'),
    s: r.pick(STRINGS),
    f: r.chance(0.5),
    tag: tagSeq++,
  };
}

/** A row with one field the README's types refuse. */
function badRow(r: Rng, row: Row, pkType: FieldType): [Row, Tuple, string] {
  const bad = { ...row };
  const t = tupleOf(bad);
  switch (r.int(7)) {
    case 0: t[1] = NaN; break;
    case 1: t[2] = r.pick([1.5, -1, 2 ** 64, Infinity, -(2n ** 10n), NaN]); break;
    case 2: t[3] = r.pick([1, true, null]); break;
    case 3: t[4] = r.pick([0, 1, 'true', null]); break;
    case 4: t[0] = pkType === 'string' ? r.pick([1, true, null]) : pkType === 'number' ? NaN : pkType === 'integer' ? r.pick([0.5, 2 ** 64, -(2 ** 64), Infinity]) : r.pick([-1, 0.5, 2 ** 64, -(2n ** 63n)]); break;
    case 5: t[1] = 'x'; break;
    case 6: return [bad, t.slice(0, 3), 'ER_FIELD_MISSING'];
  }
  return [bad, t, 'ER_FIELD_TYPE'];
}

/** One random write (or refused write), applied to the model when the space accepts it. */
function mutate(r: Rng, space: Space, model: Model, pkType: FieldType, where: string): void {
      const defs = model.defs;
      const op = r.int(100);
      if (op < 35) {
        const row = randomRow(r, model, pkType);
        const code = model.conflict(row, undefined);
        if (code === undefined) {
          space.insert(tupleOf(row));
          model.rows.push(row);
        } else {
          expect(codeOf(() => space.insert(tupleOf(row))), `${where} insert ${String(tupleOf(row))}`).toBe(code);
        }
      } else if (op < 45) {
        const row = randomRow(r, model, pkType);
        const old = model.byPk(row.pk);
        const code = model.conflict(row, old);
        if (code === undefined) {
          space.replace(tupleOf(row));
          model.rows = model.rows.filter((x) => x !== old);
          model.rows.push(row);
        } else {
          expect(codeOf(() => space.replace(tupleOf(row))), `${where} replace ${String(tupleOf(row))}`).toBe(code);
        }
      } else if (op < 58) {
        const victim = model.rows.length > 0 && r.chance(0.8) ? r.pick(model.rows) : undefined;
        const key = victim !== undefined ? reencode(r, victim.pk) : randomNum(r, pkType);
        const target = model.byPk(key);
        const got = space.delete((r.chance(0.5) ? key : [key]) as never);
        expect(got?.[5], `${where} delete ${String(key)}`).toBe(target?.tag);
        if (target !== undefined) model.rows = model.rows.filter((x) => x !== target);
      } else if (op < 68 && model.rows.length > 0) {
        // An update that keeps values and turns a small integer into a float64 (or sets a new value).
        const row = r.pick(model.rows);
        const key = reencode(r, row.pk);
        const field = r.chance(0.5) ? 2 : 3;
        const cur = field === 2 ? row.a : row.b;
        let next: Row;
        let ops: unknown[];
        if (typeof cur === 'number' && Number.isInteger(cur) && Math.abs(cur) < 2 ** 52 && r.chance(0.7)) {
          ops = [['+', field, 0.5], ['-', field, 0.5]];
          next = { ...row };
        } else {
          const v = randomNum(r, field === 2 ? 'number' : 'unsigned');
          ops = [['=', field, v]];
          next = field === 2 ? { ...row, a: v } : { ...row, b: v };
        }
        const code = model.conflict(next, row);
        if (code === undefined) {
          const got = space.update(key as never, ops as never);
          expect(got?.[5], `${where} update`).toBe(row.tag);
          model.rows = model.rows.map((x) => (x === row ? next : x));
        } else {
          expect(codeOf(() => space.update(key as never, ops as never)), `${where} update ${String(ops)}`).toBe(code);
        }
      } else if (op < 74) {
        // insertMany: all or nothing.
        const batch = Array.from({ length: 1 + r.int(4) }, () => randomRow(r, model, pkType));
        const trial = new Model(defs);
        trial.rows = [...model.rows];
        let ok = true;
        for (const row of batch) {
          if (trial.conflict(row, undefined) !== undefined) { ok = false; break; }
          trial.rows.push(row);
        }
        if (ok) {
          expect(space.insertMany(batch.map(tupleOf))).toBe(batch.length);
          model.rows = trial.rows;
        } else {
          expect(['ER_DUPLICATE_KEY', 'ER_FIELD_TYPE']).toContain(codeOf(() => space.insertMany(batch.map(tupleOf))));
        }
      } else if (op < 77 && model.rows.length > 0) {
        // A transaction that writes and throws: nothing changes.
        const before = rowTags(model.ordered(defs[1]));
        expect(() => space.transaction(() => {
          const row = r.pick(model.rows);
          space.delete(row.pk as never);
          const fresh = randomRow(r, model, pkType);
          try { space.replace(tupleOf(fresh)); } catch { /* a conflict is fine */ }
          throw new Error('rollback');
        })).toThrow('rollback');
        expect(tags(space.index.a.select()), `${where} rollback`).toEqual(before);
      } else if (op < 80) {
        const [, tuple, code] = badRow(r, randomRow(r, model, pkType), pkType);
        const len = space.len();
        expect(codeOf(() => (r.chance(0.5) ? space.insert(tuple) : space.replace(tuple))), `${where} bad ${String(tuple)}`).toBe(code);
        expect(space.len()).toBe(len);
      }
}

/**
 * A pairs() walk over a TREE index with writes between its steps. README: the iterator re-seeks
 * past the last tuple it returned whenever the space changed, so each step returns the first
 * tuple now stored strictly past that one (in the index's order, in the iterator's direction),
 * and an EQ/REQ walk ends at the first tuple whose key differs.
 */
function checkWalk(r: Rng, space: Space, model: Model, pkType: FieldType, where: string): void {
  const trees = model.defs.filter((d) => d.kind === 'TREE');
  const def = r.pick(trees);
  const pk = model.defs[0];
  const source = model.rows.length > 0 ? r.pick(model.rows) : undefined;
  const n = source === undefined ? 0 : r.int(def.parts.length + 1);
  const parts = source === undefined ? [] : keyOf(def, source).slice(0, n).map((v) => (typeof v === 'number' || typeof v === 'bigint' ? reencode(r, v) : v));
  const iterator = r.pick(TREE_ITERS);
  const reverse = n === 0 ? iterator === 'LE' || iterator === 'LT' || iterator === 'REQ' : iterator === 'LE' || iterator === 'LT' || iterator === 'REQ';
  const full = (row: Row): Val[] => [...keyOf(def, row), ...keyOf(pk, row)];
  const it = space.index[def.name].pairs((n === 0 ? undefined : keyArg(r, parts)) as never, { iterator });
  let last: Val[] | undefined;
  for (let step = 0; step < 40; step++) {
    let expected: Row | undefined;
    const order = model.ordered(def);
    if (last === undefined) {
      expected = selectByIterator(order, n, iterator, (row) => cmpKeys(keyOf(def, row), parts))[0];
    } else {
      const pos = last;
      const past = (reverse ? [...order].reverse() : order).filter((row) => (reverse ? -1 : 1) * cmpKeys(full(row), pos) > 0);
      expected = past[0];
      if (expected !== undefined && (iterator === 'EQ' || iterator === 'REQ') && n > 0 && cmpKeys(keyOf(def, expected), parts) !== 0) expected = undefined;
    }
    const got = it.next();
    const label = `${where}: walk ${def.name} ${iterator} [${parts.map(String).join(', ')}] step ${step}`;
    expect(got.done ? undefined : got.value[5], label).toBe(expected?.tag);
    if (got.done || expected === undefined) return;
    last = full(expected);
    if (r.chance(0.6)) mutate(r, space, model, pkType, `${label} write`);
  }
}

function runModel(seed: number, pkKind: 'TREE' | 'HASH', pkType: FieldType, steps: number): void {
  const r = rng(seed);
  const defs = indexDefs(pkKind, pkType);
  const space = createSpace(`keys-${pkKind}-${pkType}-${seed}`, defs);
  const model = new Model(defs);
  try {
    for (let step = 0; step < steps; step++) {
      const where = `seed ${seed} ${pkKind}/${pkType} step ${step}`;
      mutate(r, space, model, pkType, where);
      checkRead(r, space, model, where);
      if (r.chance(0.04)) checkWalk(r, space, model, pkType, where);
      if (step % 50 === 49) checkAll(space, model, where);
    }
    checkAll(space, model, `seed ${seed} end`);
  } finally {
    space.drop();
  }
}

// ---------------------------------------------------------------------------------------------

describe('model: keys of every numeric encoding, over TREE and HASH primaries', () => {
  for (const [i, [kind, type]] of ([
    ['TREE', 'unsigned'], ['HASH', 'unsigned'], ['TREE', 'integer'], ['HASH', 'integer'], ['TREE', 'number'], ['HASH', 'number'],
    ['TREE', 'string'], ['HASH', 'string'],
  ] as const).entries()) {
    test(`${kind} primary of '${type}': seeded operations match the reference`, () => {
      runModel(SEED + i, kind, type, STEPS);
    });
  }
});

describe('handled attacks', () => {
  test('equal values in every encoding are one key in a unique TREE, a unique HASH and a unique two-part TREE', () => {
    for (const kind of ['TREE', 'HASH'] as const) {
      const s = new Space(`enc-${kind}`);
      s.createIndex('pk', { type: kind, parts: [[1, 'number']] });
      s.createIndex('two', { parts: [[2, 'integer'], [3, 'number']] });
      const groups: Num[][] = [
        [0, 0n, -0], [1, 1n], [T32 + 1, BigInt(T32 + 1)], [T53, 2n ** 53n], [2 ** 63, 2n ** 63n],
        [2 ** 64 - 2048, 2n ** 64n - 2048n], [-(2 ** 63), I64], [-(2 ** 31) - 1, -(2n ** 31n) - 1n], [-T53, -(2n ** 53n)],
      ];
      groups.forEach((g, i) => {
        s.insert([g[0], i, g[0], i]);
        for (const other of g) {
          expect(codeOf(() => s.insert([other, 1000 + i, 0, 0])), `${kind} pk ${String(other)}`).toBe('ER_DUPLICATE_KEY');
          expect(codeOf(() => s.insert([1e6 + i, i, other, 0])), `${kind} two ${String(other)}`).toBe('ER_DUPLICATE_KEY');
          expect(s.get(other as never)?.[3], `${kind} get ${String(other)}`).toBe(i);
          expect(s.get([other] as never)?.[3]).toBe(i);
          expect(s.index.two.get([i, other] as never)?.[3]).toBe(i);
          expect(s.count(other as never)).toBe(1);
        }
      });
      // Neighbours that a double would round onto them are distinct keys.
      for (const v of [2n ** 53n + 1n, 2n ** 64n - 1n, 2n ** 63n + 1n, I64 + 1n, 2n ** 64n - 2047n]) s.insert([v, -1, v, -1]);
      expect(s.len()).toBe(groups.length + 5);
      expect(s.get(2n ** 53n + 1n as never)?.[0]).toBe(2n ** 53n + 1n);
      expect(s.get(T53 as never)?.[0]).toBe(T53);
      expect(s.get(2n ** 64n - 1n as never)?.[0]).toBe(2n ** 64n - 1n);
      expect(s.get(2 ** 64 as never)).toBeUndefined();
      s.insert([2 ** 64, 0, 1.5, 0]);
      expect(s.get(2 ** 64 as never)?.[0]).toBe(2 ** 64);
      s.checkIntegrity();
      s.drop();
    }
  });

  test('float64-encoded small integers (update + 0.5 - 0.5) stay the same key in every index', () => {
    for (const kind of ['TREE', 'HASH'] as const) {
      const s = new Space(`f64-${kind}`);
      s.createIndex('pk', { type: kind, parts: [[1, 'unsigned']] });
      s.createIndex('v', { type: 'HASH', parts: [[2, 'unsigned']] });
      s.createIndex('w', { unique: false, parts: [[2, 'unsigned']] });
      s.createIndex('vw', { parts: [[2, 'unsigned'], [3, 'integer']] });
      for (let i = 0; i < 40; i++) s.insert([i, i * 3, -i]);
      for (let i = 0; i < 40; i += 2) s.update(i, [['+', 2, 0.5], ['-', 2, 0.5], ['+', 3, 0.5], ['-', 3, 0.5]]);
      s.checkIntegrity();
      for (let i = 0; i < 40; i++) {
        expect(codeOf(() => s.insert([100 + i, i * 3, 0]))).toBe('ER_DUPLICATE_KEY');
        expect(codeOf(() => s.insert([100 + i, i * 3 + 0.5 - 0.5, 0]))).toBe('ER_DUPLICATE_KEY');
        expect(codeOf(() => s.insert([100 + i, BigInt(i * 3), 0]))).toBe('ER_DUPLICATE_KEY');
        expect(s.len()).toBe(40);
        expect(s.index.v.get(i * 3)?.[0]).toBe(i);
        expect(s.index.vw.get([i * 3, -i])?.[0]).toBe(i);
        expect(s.index.w.select(i * 3).map((t) => t[0])).toEqual([i]);
      }
      // A float64 primary key (the update path cannot change it, so build one from a number field).
      const t = new Space(`f64pk-${kind}`);
      t.createIndex('id', { type: kind, parts: [[2, 'unsigned']] });
      t.insert([0, 5]);
      t.update(5, [['+', 1, 0.5], ['-', 1, 0.5]]);
      t.createIndex('n', { type: kind, parts: [[1, 'unsigned']] });
      expect(codeOf(() => t.insert([0, 6]))).toBe('ER_DUPLICATE_KEY');
      expect(t.index.n.get(0)?.[1]).toBe(5);
      t.drop();
      s.drop();
    }
  });

  test('composite hints: values straddling 2^20, 2^32 and 2^41 as primary keys of a non-unique index, every iterator', () => {
    const r = rng(SEED ^ 0x5eed);
    const s = new Space('composite');
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'number']] });
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    s.createIndex('tp', { unique: false, parts: [[2, 'number'], [1, 'number']] }); // cmp def (ttl, pk): 2-part keys
    const pks = new Map<string, Num>();
    const pkValues: Num[] = [];
    for (const c of [0, T20, T32, T41, 2 ** 52, -T20, -1]) {
      for (let d = -5; d <= 5; d++) pkValues.push(c + d, c + d + 0.5, c + d - 0.25);
    }
    pkValues.push(...INTERESTING, ...FRACTIONS);
    const ttls: Num[] = [1, 2, 1.5, T41 - 1, T41 - 0.5, T41, -3, 0, 2 ** 60, Infinity, -Infinity, 1_763_900_000_123];
    const rows: [Num, Num][] = [];
    for (const pk of pkValues) {
      const k = String(pk);
      if (pks.has(k) || [...pks.values()].some((x) => cmpVal(x, pk) === 0)) continue;
      pks.set(k, pk);
      rows.push([reencode(r, pk), r.pick(ttls)]);
    }
    // Insert in random order, so the tree's splits and hints meet them in every arrangement.
    const shuffled = [...rows].sort(() => r.next() - 0.5);
    for (const row of shuffled) s.insert(row);
    s.checkIntegrity();
    const sorted = [...rows].sort((x, y) => cmpVal(x[1], y[1]) || cmpVal(x[0], y[0]));
    const ids = (ts: Tuple[]): string[] => ts.map((t) => String(t[0]));
    const want = (rs: [Num, Num][]): string[] => rs.map((t) => String(t[0]));
    expect(ids(s.index.ttl.select())).toEqual(want(sorted));
    expect(ids(s.index.tp.select())).toEqual(want(sorted));
    for (const ttl of ttls) {
      for (const it of TREE_ITERS) {
        const exp = selectByIterator(sorted, 1, it, (row) => cmpVal(row[1], ttl));
        expect(ids(s.index.ttl.select(ttl as never, { iterator: it })), `ttl ${ttl} ${it}`).toEqual(want(exp));
        expect(s.index.ttl.count(ttl as never, { iterator: it })).toBe(exp.length);
      }
    }
    // Two-part keys (ttl, pk) probe between neighbouring primary keys.
    for (let i = 0; i < 400; i++) {
      const [pk, ttl] = r.pick(rows);
      let probe: Num = r.chance(0.5) ? pk : typeof pk === 'number' ? pk + r.pick([0.5, -0.5, 1, -1, 0.25]) : pk + r.pick([1n, -1n]);
      if (typeof probe === 'bigint' && (probe >= U64 || probe < I64)) probe = pk;
      const key = [ttl, probe];
      const it = r.pick(TREE_ITERS);
      const exp = selectByIterator(sorted, 2, it, (row) => cmpKeys([row[1], row[0]], key));
      expect(ids(s.index.tp.select(key as never, { iterator: it, limit: 7 })), `tp ${String(key)} ${it}`).toEqual(want(exp.slice(0, 7)));
      expect(s.index.tp.count(key as never, { iterator: it }), `tp count ${String(key)} ${it}`).toBe(exp.length);
    }
    // Delete half in random order; the rest keeps its order.
    const keep = rows.filter(() => r.chance(0.5));
    for (const row of rows) if (!keep.includes(row)) expect(s.delete(row[0] as never)).toBeDefined();
    s.checkIntegrity();
    expect(ids(s.index.ttl.select())).toEqual(want(sorted.filter((x) => keep.includes(x))));
    s.drop();
  });

  test('composite hints under a walk: pairs() over a tied TTL index while its neighbours are deleted, inserted, moved and rolled back', () => {
    // The expirationd pattern, where the composite hint matters most: thousands of tuples share a
    // TTL, the walk deletes what it read and the space changes around the cursor.
    const r = rng(SEED ^ 0xa11);
    type R = { pk: Num; ttl: Num; tag: number };
    const s = new Space('walk');
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'number']] });
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    const ttls: Num[] = [-1, 0, 1, 1.5, 2, 1000, 1000.25, T41 - 1, T41, 1_763_900_000_123, 2 ** 60, Infinity];
    const bases = [0, T20 - 40, T32 - 40, T41 - 40, 2 ** 52, -T20, -5000];
    const rows: R[] = [];
    const cmpRow = (x: R, y: R): number => cmpVal(x.ttl, y.ttl) || cmpVal(x.pk, y.pk);
    const seen = new Set<string>();
    let tag = 0;
    const freshPk = (near?: Num): Num | undefined => {
      for (let k = 0; k < 20; k++) {
        let v: Num;
        if (near !== undefined && k < 10) v = typeof near === 'bigint' ? near + BigInt(r.int(5) - 2) : near + r.pick([1, -1, 0.5, -0.5, 2, -2]);
        else v = r.pick(bases) + r.int(90) + (r.chance(0.1) ? 0.5 : 0);
        const key = String(typeof v === 'bigint' && BigInt(Number(v)) === v ? Number(v) : v);
        if (!seen.has(key)) { seen.add(key); return reencode(r, v); }
      }
      return undefined;
    };
    const forget = (pk: Num): void => { seen.delete(String(typeof pk === 'bigint' && BigInt(Number(pk)) === pk ? Number(pk) : pk)); };
    const insertSorted = (row: R): void => {
      let lo = 0, hi = rows.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (cmpRow(rows[mid], row) < 0) lo = mid + 1; else hi = mid; }
      rows.splice(lo, 0, row);
    };
    const batch: Tuple[] = [];
    for (let i = 0; i < 3000; i++) {
      const pk = freshPk();
      if (pk === undefined) continue;
      const row = { pk, ttl: reencode(r, r.pick(ttls)), tag: tag++ };
      insertSorted(row);
      batch.push([row.pk, row.ttl, row.tag]);
    }
    s.insertMany(batch);
    const idx = s.index.ttl;
    for (let walk = 0; walk < 30; walk++) {
      const iterator = r.pick(TREE_ITERS);
      const keyTtl = r.chance(0.2) ? undefined : reencode(r, r.pick(ttls));
      const reverse = iterator === 'LE' || iterator === 'LT' || iterator === 'REQ';
      const it = idx.pairs(keyTtl as never, { iterator });
      let last: R | undefined;
      for (let step = 0; step < 150; step++) {
        let expected: R | undefined;
        if (last === undefined) {
          expected = selectByIterator(rows, keyTtl === undefined ? 0 : 1, iterator, (x) => cmpVal(x.ttl, keyTtl as Num))[0];
        } else {
          const pos = last;
          expected = reverse ? [...rows].reverse().find((x) => cmpRow(x, pos) < 0) : rows.find((x) => cmpRow(x, pos) > 0);
          if (expected !== undefined && keyTtl !== undefined && (iterator === 'EQ' || iterator === 'REQ') && cmpVal(expected.ttl, keyTtl) !== 0) expected = undefined;
        }
        const got = it.next();
        const label = `walk ${walk} ${iterator} ${String(keyTtl)} step ${step}`;
        expect(got.done ? undefined : got.value[2], label).toBe(expected?.tag);
        if (expected === undefined) break;
        last = { ...expected };
        const at = rows.indexOf(expected);
        const near = rows[Math.max(0, Math.min(rows.length - 1, at + r.int(7) - 3))];
        switch (r.int(8)) {
          case 0: case 1: { // the daemon: delete what was just read
            expect(s.delete(expected.pk as never)?.[2]).toBe(expected.tag);
            rows.splice(at, 1); forget(expected.pk);
            break;
          }
          case 2: { // delete a neighbour
            expect(s.delete(near.pk as never)?.[2]).toBe(near.tag);
            rows.splice(rows.indexOf(near), 1); forget(near.pk);
            break;
          }
          case 3: { // insert next to the cursor, same TTL, a nearby primary key
            const pk = freshPk(expected.pk);
            if (pk === undefined) break;
            const row = { pk, ttl: reencode(r, expected.ttl), tag: tag++ };
            s.insert([row.pk, row.ttl, row.tag]);
            insertSorted(row);
            break;
          }
          case 4: { // move a neighbour (or the cursor's own tuple) to another TTL
            const ttl = reencode(r, r.pick(ttls));
            expect(s.update(near.pk as never, [['=', 2, ttl]])?.[2]).toBe(near.tag);
            rows.splice(rows.indexOf(near), 1);
            insertSorted({ ...near, ttl });
            break;
          }
          case 5: { // update a field no index holds: the tuple is replaced, its place is not
            s.update(near.pk as never, [['=', 4, 'x']]);
            break;
          }
          case 6: { // a rolled-back transaction that deletes and inserts around the cursor
            expect(() => s.transaction(() => {
              s.delete(near.pk as never);
              s.delete(expected!.pk as never);
              const pk = freshPk(expected!.pk);
              if (pk !== undefined) { forget(pk); s.insert([pk, expected!.ttl, -1]); }
              throw new Error('undo');
            })).toThrow('undo');
            break;
          }
          default: break; // no change: the O(1) step
        }
      }
      it.return?.();
      if (walk % 10 === 9) {
        s.checkIntegrity();
        expect(idx.select().map((t) => t[2])).toEqual(rows.map((x) => x.tag));
      }
    }
    s.drop();
  });

  test('composite hints: a dense grid of second parts around every binade from 2^-2 to 2^64, under every kind of first part', () => {
    const seconds = new Map<string, Num>();
    const put = (v: Num): void => {
      const key = typeof v === 'bigint' && BigInt(Number(v)) === v ? String(Number(v)) : String(v);
      if (!seconds.has(key) && (typeof v === 'bigint' ? v < U64 && v >= I64 : !Number.isNaN(v))) seconds.set(key, v);
    };
    for (let e = 0; e <= 64; e++) {
      const p = 2n ** BigInt(e);
      for (const d of [-2n, -1n, 0n, 1n, 2n]) {
        put(p + d); put(-(p + d));
        if (p + d < 2n ** 53n) { put(Number(p + d) + 0.5); put(-(Number(p + d) + 0.5)); }
      }
      put(2 ** e); put(-(2 ** e)); put(2 ** e * 1.5);
      // 15 significant bits below 2^32: neighbours that differ only past them.
      if (e >= 20 && e < 32) for (const k of [1, 2 ** (e - 15) - 1, 2 ** (e - 15), 2 ** (e - 15) + 1]) put(2 ** e + k);
    }
    for (const v of [0.25, 0.75, 5e-324, -5e-324, 2 ** 64, 1e300, -1e300, Infinity, -Infinity]) put(v);
    const firsts: Num[] = [0, 1, 7, 7.5, -1, -7.5, T41 - 1, T41, T41 - 0.5, 1_763_900_000_123, 2 ** 60, Infinity, -Infinity];
    for (const pkType of ['number', 'integer', 'unsigned'] as const) {
      const s = new Space(`grid-${pkType}`);
      s.createIndex('pk', { type: 'HASH', parts: [[1, pkType]] });
      s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
      const pks = [...seconds.values()].filter((v) => accepts(pkType, v));
      const rows: [Num, Num][] = [];
      const r = rng(SEED + pkType.length);
      for (const pk of pks) rows.push([pk, r.pick(firsts)]);
      s.insertMany(rows.sort(() => r.next() - 0.5));
      const sorted = [...rows].sort((x, y) => cmpVal(x[1], y[1]) || cmpVal(x[0], y[0]));
      const got = s.index.ttl.select().map((t) => [t[1], t[0]]);
      expect(got.map((x) => String(x[1])), pkType).toEqual(sorted.map((x) => String(x[0])));
      for (const f of firsts) {
        const eq = sorted.filter((x) => cmpVal(x[1], f) === 0).map((x) => String(x[0]));
        expect(s.index.ttl.select(f as never).map((t) => String(t[0])), `${pkType} EQ ${f}`).toEqual(eq);
        expect(s.index.ttl.count(f as never), `${pkType} count ${f}`).toBe(eq.length);
        expect(s.index.ttl.select(f as never, { iterator: 'REQ' }).map((t) => String(t[0]))).toEqual([...eq].reverse());
      }
      // Every entry is found again by its own (ttl, pk) position: deleting through the HASH
      // primary removes it from the tree (an entry the tree cannot find would be left behind).
      for (const [pk] of rows) expect(s.delete(pk as never)).toBeDefined();
      expect(s.index.ttl.len()).toBe(0);
      s.checkIntegrity();
      s.drop();
    }
  });

  test('index builds (sync and async) over mixed encodings: equal values are duplicates, the order is by value', async () => {
    const before = setBuildSlice({ tuples: 16, ms: 50 });
    try {
      for (const kind of ['TREE', 'HASH'] as const) {
        for (const dupDuring of [false, true]) {
          const r = rng(SEED + (kind === 'TREE' ? 1 : 2) + (dupDuring ? 10 : 0));
          const s = new Space(`build-${kind}-${dupDuring}`);
          s.createIndex('pk', { type: kind, parts: [[1, 'unsigned']] });
          const values = new Map<string, Num>(); // by value: the model of the new unique index
          const norm = (v: Num): string => (typeof v === 'bigint' && BigInt(Number(v)) === v ? String(Number(v)) : String(v));
          const rows = new Map<number, Num>();
          const fresh = (): Num => {
            for (;;) {
              const v = randomNum(r, 'number');
              if (!values.has(norm(v))) return v;
            }
          };
          for (let i = 0; i < 400; i++) {
            const v = fresh();
            values.set(norm(v), v);
            rows.set(i, v);
            s.insert([i, v]);
          }
          // A stored duplicate in another encoding fails both kinds of build, changing nothing.
          const some = [...rows.entries()].find(([, v]) => isIntegral(v) && (typeof v === 'bigint' || Math.abs(v) < 2 ** 63))!;
          const twin = typeof some[1] === 'bigint' && BigInt(Number(some[1])) === some[1] ? Number(some[1]) : BigInt(some[1]);
          s.insert([1000, twin]);
          expect(codeOf(() => s.createIndex('u', { type: kind, parts: [[2, 'number']] }))).toBe('ER_DUPLICATE_KEY');
          await expect(s.createIndexAsync('u', { type: kind, parts: [[2, 'number']] })).rejects.toMatchObject({ code: 'ER_DUPLICATE_KEY' });
          expect(s.index.u).toBeUndefined();
          s.delete(1000);
          // Writes during the build: distinct values in any encoding, deletes, replaces; and in one
          // run a duplicate by value in another encoding, which the write accepts and the build refuses.
          let settled = false;
          const build = s.createIndexAsync('u', { type: kind, parts: [[2, 'number']] }).finally(() => { settled = true; });
          build.catch(() => undefined);
          let next = 2000;
          let wroteDup = false;
          while (!settled) {
            const op = r.int(4);
            if (op === 0 && rows.size > 0) {
              const [id, v] = r.pick([...rows.entries()]);
              s.delete(id); rows.delete(id); values.delete(norm(v));
            } else if (op === 1 && rows.size > 0) {
              const [id, v] = r.pick([...rows.entries()]);
              const w = fresh();
              s.replace([id, w]); rows.set(id, w); values.delete(norm(v)); values.set(norm(w), w);
            } else if (dupDuring && !wroteDup && next > 2003 && rows.size > 0) {
              const [, v] = r.pick([...rows.entries()]);
              s.insert([next++, reencode(r, isIntegral(v) ? (typeof v === 'number' && Math.abs(v) < 2 ** 63 ? BigInt(v) : v) : v)]);
              wroteDup = true;
            } else {
              const w = fresh();
              s.insert([next, w]); rows.set(next++, w); values.set(norm(w), w);
            }
            await new Promise((resolve) => setImmediate(resolve));
          }
          expect(wroteDup).toBe(dupDuring);
          expect(next).toBeGreaterThan(2003);
          if (dupDuring) {
            await expect(build).rejects.toMatchObject({ code: 'ER_DUPLICATE_KEY' });
            expect(s.index.u).toBeUndefined();
          } else {
            await build;
            const idx = s.index.u;
            const want = [...rows.entries()].sort((x, y) => cmpVal(x[1], y[1])).map(([id]) => id);
            const got = idx.select().map((t) => t[0] as number);
            expect(kind === 'TREE' ? got : got.sort((x, y) => x - y)).toEqual(kind === 'TREE' ? want : want.sort((x, y) => x - y));
            for (const [id, v] of rows) expect(idx.get(reencode(r, v) as never)?.[0]).toBe(id);
          }
          s.checkIntegrity();
          s.drop();
        }
      }
    } finally {
      setBuildSlice(before);
    }
  });

  test('single-part hints: huge neighbours that round to one double stay ordered and distinct', () => {
    const s = new Space('single');
    s.createIndex('pk', { parts: [[1, 'integer']] });
    s.createIndex('m', { parts: [[2, 'number'], [3, 'string']] });
    const values: Num[] = [];
    for (const c of [2n ** 53n, 2n ** 63n, 2n ** 64n - 1024n, -(2n ** 53n), I64 + 1024n]) {
      for (let d = -3n; d <= 3n; d++) if (c + d < U64 && c + d >= I64) values.push(c + d);
    }
    values.push(2n ** 64n - 1n, I64);
    const r = rng(SEED + 77);
    const shuffled = [...values].sort(() => r.next() - 0.5);
    shuffled.forEach((v, i) => s.insert([v, v, String(i % 2)]));
    // Numbers that equal some of them by value are duplicates.
    for (const v of values) if (BigInt(Number(v)) === v) expect(codeOf(() => s.insert([Number(v), 0, 'x']))).toBe('ER_DUPLICATE_KEY');
    const sorted = [...values].sort((x, y) => cmpVal(x, y));
    expect(s.select().map((t) => BigInt(t[0] as Num))).toEqual(sorted);
    for (const v of values) {
      expect(s.get(v as never)?.[0]).toBe(v);
      expect(s.select(v as never, { iterator: 'GT' }).map((t) => BigInt(t[0] as Num))).toEqual(sorted.filter((x) => x > v));
      expect(s.select(v as never, { iterator: 'LT' }).map((t) => BigInt(t[0] as Num))).toEqual(sorted.filter((x) => x < v).reverse());
      expect(s.index.m.count(v as never)).toBe(1);
      expect(s.index.m.count(Number(v) as never, { iterator: 'LE' })).toBe(sorted.filter((x) => x <= Number(v)).length);
    }
    s.checkIntegrity();
    s.drop();
  });

  test('subnormals, infinities and -0 in number parts', () => {
    const s = new Space('tiny');
    s.createIndex('pk', { parts: [[1, 'number']] });
    s.createIndex('h', { type: 'HASH', parts: [[2, 'number']] });
    const vals = [-Infinity, -1e308, -5e-324, 0, 5e-324, 1e-323, 2.2250738585072014e-308, 1, Infinity];
    vals.forEach((v, i) => s.insert([v, v, i]));
    expect(s.select().map((t) => t[2])).toEqual(vals.map((_, i) => i));
    expect(codeOf(() => s.insert([-0, 7, 0]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.insert([7, -0, 0]))).toBe('ER_DUPLICATE_KEY');
    expect(s.get(-0)?.[2]).toBe(3);
    expect(s.index.h.get(-0)?.[2]).toBe(3);
    expect(s.index.h.get(5e-324)?.[2]).toBe(4);
    expect(s.index.h.get(-Infinity)?.[2]).toBe(0);
    expect(s.select(0, { iterator: 'GT' }).map((t) => t[2])).toEqual([4, 5, 6, 7, 8]);
    expect(s.select(-0, { iterator: 'LT' }).map((t) => t[2])).toEqual([2, 1, 0]);
    expect(s.count(Infinity, { iterator: 'GE' })).toBe(1);
    s.drop();
  });

  test('unsigned/integer refuse non-integral, out-of-range and NaN values, in tuples and keys, changing nothing', () => {
    const s = new Space('types');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('i', { unique: false, parts: [[2, 'integer']] });
    s.createIndex('n', { type: 'HASH', parts: [[3, 'number']] });
    s.insert([1, -5, 0.5]);
    for (const bad of [-1, 0.5, 2 ** 64, Infinity, NaN, -(2n ** 10n), 'x', true, null]) {
      expect(codeOf(() => s.insert([bad, 0, 9])), `pk ${String(bad)}`).toBe('ER_FIELD_TYPE');
      if (bad !== null) expect(codeOf(() => s.select(bad as never, { iterator: 'GE' })), `pk key ${String(bad)}`).toBe('ER_KEY_TYPE');
      expect(codeOf(() => s.get(bad as never)), `pk get ${String(bad)}`).toBe(bad === null ? 'ER_KEY_PART_COUNT' : 'ER_KEY_TYPE');
    }
    for (const bad of [0.5, 2 ** 64, -(2 ** 64), -Infinity, NaN, 'x']) {
      expect(codeOf(() => s.insert([2, bad, 9])), `i ${String(bad)}`).toBe('ER_FIELD_TYPE');
      expect(codeOf(() => s.index.i.select(bad as never, { iterator: 'LT' })), `i key ${String(bad)}`).toBe('ER_KEY_TYPE');
      expect(codeOf(() => s.index.i.count(bad as never))).toBe('ER_KEY_TYPE');
    }
    expect(codeOf(() => s.insert([2, 0, NaN]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.index.n.get(NaN))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.update(1, [['=', 2, 0.5]]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.update(1, [['=', 3, NaN]]))).toBe('ER_FIELD_TYPE');
    // Out of int64/uint64 range as a BigInt cannot be encoded at all.
    expect(codeOf(() => s.insert([2n ** 64n, 0, 0]))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.get(2n ** 64n as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.index.i.select(-(2n ** 63n) - 1n as never, { iterator: 'GE' }))).toBe('ER_KEY_TYPE');
    expect(s.select()).toEqual([[1, -5, 0.5]]);
    s.checkIntegrity();
    s.drop();
  });

  test('string and boolean parts: bytewise UTF-8 order (not UTF-16), false < true, and what they refuse', () => {
    const s = new Space('strbool');
    s.createIndex('pk', { parts: [[1, 'string']] });
    s.createIndex('b', { unique: false, parts: [[2, 'boolean'], [1, 'string']] });
    s.createIndex('h', { type: 'HASH', parts: [[2, 'boolean'], [1, 'string']] });
    const strs = ['', '\0', 'a', 'a\0', 'a\0b', 'abcdefgh', 'abcdefgh\0', 'abcdefgh\u0080', 'x'.repeat(300), 'x'.repeat(70000),
      '\u007f', '\u0080', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff', '\u{10000}', '\u{1F600}', '\u{10FFFF}'];
    strs.forEach((v, i) => s.insert([v, i % 2 === 0, i]));
    const bytewise = [...strs].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(s.select().map((t) => t[0])).toEqual(bytewise);
    expect(s.index.b.select().map((t) => t[0])).toEqual([...bytewise.filter((x) => strs.indexOf(x) % 2 === 1), ...bytewise.filter((x) => strs.indexOf(x) % 2 === 0)]);
    expect(s.index.b.count(false)).toBe(10);
    expect(s.index.b.select(true, { iterator: 'LT' }).length).toBe(10);
    expect(s.index.b.select([false, '\uffff'], { iterator: 'GT' }).map((t) => t[0])).toEqual(
      [...bytewise.filter((x) => strs.indexOf(x) % 2 === 1 && Buffer.compare(Buffer.from(x), Buffer.from('\uffff')) > 0),
        ...bytewise.filter((x) => strs.indexOf(x) % 2 === 0)]);
    for (const [i, v] of strs.entries()) {
      expect(s.get(v)?.[2]).toBe(i);
      expect(s.index.h.get([i % 2 === 0, v])?.[2]).toBe(i);
      expect(s.index.h.get([i % 2 !== 0, v])).toBeUndefined();
    }
    expect(codeOf(() => s.insert(['x'.repeat(70000), true, 0]))).toBe('ER_DUPLICATE_KEY');
    const n = s.len();
    for (const bad of [Buffer.from('a'), 1, null, ['a'], { a: 1 }, true]) expect(codeOf(() => s.insert([bad, true, 0])), String(bad)).toBe('ER_FIELD_TYPE');
    for (const bad of [0, 1, 'true', null, [true]]) expect(codeOf(() => s.insert(['new', bad, 0])), String(bad)).toBe('ER_FIELD_TYPE');
    // eslint-disable-next-line no-sparse-arrays
    expect(codeOf(() => s.insert(['new', , 0]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.insert(['\ud800', true, 0]))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.get('\udfff'))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.index.b.select(1 as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.index.b.select([true, 1] as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.index.h.get(['a', true] as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.get(1 as never))).toBe('ER_KEY_TYPE');
    // A non-unique index's key is its own parts: the primary key parts it is ordered by are not part of it.
    expect(codeOf(() => s.index.b.select([true, 'a', 'b'] as never))).toBe('ER_KEY_PART_COUNT');
    expect(s.len()).toBe(n);
    s.checkIntegrity();
    s.drop();
  });

  test('hostile key arguments: Proxies, getters, sparse arrays, long keys, wrong types get a coded error and change nothing', () => {
    const s = new Space('hostile');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('two', { parts: [[2, 'string'], [3, 'unsigned']] });
    s.createIndex('h', { type: 'HASH', parts: [[2, 'string'], [3, 'unsigned']] });
    for (let i = 0; i < 10; i++) s.insert([i, `k${i}`, i]);
    const snapshot = JSON.stringify(s.select());
    const codes = (fn: () => unknown): string => {
      const c = codeOf(fn);
      expect(JSON.stringify(s.select())).toBe(snapshot);
      return c;
    };
    // A getter that answers a number to the check, then something else to the packer.
    const flip = (first: unknown, then: unknown): unknown[] => {
      let n = 0;
      const a: unknown[] = [];
      Object.defineProperty(a, 0, { enumerable: true, get: () => (n++ === 0 ? first : then) });
      return a;
    };
    expect(codes(() => s.select(flip(1, { x: 1 }) as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, 'one') as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, [1]) as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, undefined) as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, Symbol('s')) as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.update(flip(1, 1.5) as never, [['=', 2, 'zz']]))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, 2n ** 70n) as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(flip(1, '\ud800') as never))).toBe('ER_KEY_TYPE');
    // A Proxy that hides its elements from every() (has() false) and lies about its length.
    const hiding = new Proxy([{ evil: true }], { has: () => false });
    expect(codes(() => s.delete(hiding as never))).toBe('ER_KEY_TYPE');
    let reads = 0;
    const growing = new Proxy([1], { get: (t, p) => (p === 'length' ? (reads++ === 0 ? 1 : 3) : p === '1' || p === '2' ? 7 : Reflect.get(t, p)) });
    expect(codes(() => s.delete(growing as never))).toBe('ER_KEY_PART_COUNT');
    const throwing = new Proxy([1], { get: (t, p) => { if (p === '0') throw new Error('trap'); return Reflect.get(t, p); } });
    expect(() => s.delete(throwing as never)).toThrow();
    expect(JSON.stringify(s.select())).toBe(snapshot);
    // Sparse arrays: a hole is not a part value.
    // eslint-disable-next-line no-sparse-arrays
    expect(codes(() => s.index.two.select([, 3] as never))).toBe('ER_KEY_TYPE');
    // eslint-disable-next-line no-sparse-arrays
    expect(codes(() => s.index.two.select(['k1', ,] as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete(new Array(1) as never))).toBe('ER_KEY_TYPE');
    // Longer than the index, partial where a full key is needed, wrong part types.
    expect(codes(() => s.get([1, 2] as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.select([1, 2] as never, { iterator: 'GE' }))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.index.two.count(['k1', 1, 1] as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.index.two.get(['k1'] as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.index.h.select(['k1'] as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.index.h.get('k1' as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.index.two.select([1, 'k1'] as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.index.two.select(['k1', -1] as never, { iterator: 'GE' }))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.index.two.min(['k1', 'x'] as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.index.h.get([true, 1] as never))).toBe('ER_KEY_TYPE');
    expect(codes(() => s.delete([] as never))).toBe('ER_KEY_PART_COUNT');
    expect(codes(() => s.delete(undefined as never))).toBe('ER_KEY_PART_COUNT');
    for (const bad of [{}, () => 1, Symbol('k'), new Date(0), Buffer.from([0x91, 1]), new Uint8Array([0x91, 1]), [[1]], [{ a: 1 }], [null]]) {
      expect(codes(() => s.select(bad as never)), `select ${String(typeof bad)}`).toBe('ER_KEY_TYPE');
      expect(codes(() => s.delete(bad as never))).toBe('ER_KEY_TYPE');
    }
    expect(codes(() => s.select(1, { iterator: 'EQUAL' as never }))).toBe('ER_ITERATOR_TYPE');
    expect(codes(() => s.index.h.select(['k1', 1], { iterator: 'GE' }))).toBe('ER_ITERATOR_TYPE');
    expect(codes(() => s.index.h.min())).toBe('ER_UNSUPPORTED');
    // A Proxy over a valid key works like the key.
    expect(s.get(new Proxy([3], {}) as never)?.[1]).toBe('k3');
    expect(s.index.two.select(new Proxy(['k3'], {}) as never).map((t) => t[0])).toEqual([3]);
    s.checkIntegrity();
    s.drop();
  });

  test('a key getter that calls the space while the key is packed is refused, nothing changes', () => {
    const s = new Space('reentrant');
    s.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
    s.insert([1, 'a']);
    const key: unknown[] = [1];
    Object.defineProperty(key, 1, { enumerable: true, get: () => { s.insert([2, 'b']); return 'a'; } });
    // The getter runs once in checkKey (which may insert) and once while packing (refused).
    const err = (() => { try { s.delete(key as never); } catch (e) { return e; } return undefined; })();
    expect(err).toBeInstanceOf(CappedError);
    expect(s.get([1, 'a'])).toEqual([1, 'a']);
    s.checkIntegrity();
    s.drop();
  });
});

describe('bugs', () => {
  // README "Errors": bad input throws a CappedError with a stable code and changes nothing.
  // A revoked Proxy passed as a key (or a tuple) escapes as V8's TypeError from Array.isArray()
  // in checkKey()/checkTuple() (src/space/args.ts, src/validate.ts), with no code.
  test('a revoked Proxy as a key or a tuple gets a CappedError with a code, not a bare TypeError', () => {
    const s = new Space('revoked');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([1, 'a']);
    const { proxy, revoke } = Proxy.revocable([1], {});
    revoke();
    expect(codeOf(() => s.get(proxy as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.select(proxy as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.delete(proxy as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.index.pk.count(proxy as never))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.insert(proxy as never))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.replace(proxy as never))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.insertMany(proxy as never))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.update(1, proxy as never))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.update(1, [proxy] as never))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.upsert([2, 'b'], proxy as never))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.createIndex('x', { parts: proxy as never }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => s.select(undefined, proxy as never))).toBe('ER_ILLEGAL_PARAMS');
    // A key part whose getter throws on the first read: the same code as on the second.
    const key: unknown[] = [];
    Object.defineProperty(key, 0, { get() { throw new Error('no'); }, enumerable: true });
    expect(codeOf(() => s.get(key as never))).toBe('ER_KEY_TYPE');
    expect(s.select()).toEqual([[1, 'a']]);
    s.drop();
  });
});
