// Adversarial review of the interplay of TTL-aware spaces, capped spaces and the writes that
// change a stored tuple (update through any unique index, upsert, replace, insert over an expired
// key, insertMany), against a plain JavaScript model of the README's rules ("TTL-aware spaces":
// reads hide a tuple whose TTL is a number <= now, update/upsert/replace/delete act on what is
// stored, insert replaces an expired primary key; "Capped spaces": refuse / evictExpiring in the
// TTL index's order, never the replaced tuple, one statement, onEvict once per statement after
// the outermost commit). Beyond review-capped-adversarial and review-ttl-adversarial: onFull
// 'refuse' in the model, an 'unsigned' TTL index holding Date.now()-sized values (float64 on the
// wire) mixed with uint32 ones, a clock that steps back and returns floats, the visible reads
// (get on both unique indexes, count, min, max, select on the TTL index) and pairs() walks that
// stay open across writes, all checked after every statement.
//   REVIEW_SEED=<n> REVIEW_STEPS=<n> npx vitest run test/review-ttl-capped-update.test.ts
import { afterEach, describe, expect, test, vi } from 'vitest';
import { Space, atomic, CappedError, type SpaceOptions, type Tuple } from '../src/index.js';
import { pack } from '../src/native/codec.js';
import { mulberry32 } from '../bench/lib/random.js';
import { codeOrUndefined as codeOf } from './support/errors.js';
import { EvictionFrames, applyAssignments, evictUntilFits, randomAssignments, type Assignment } from './support/capped-model.js';

let clock = 100;
afterEach(() => {
  clock = 100;
  vi.restoreAllMocks();
});
const size = (t: Tuple): number => pack(t).length;
/** Every stored tuple, expired ones too, in primary order (reads at a clock of -Infinity hide nothing). */
const stored = (s: Space): Tuple[] => {
  const saved = clock;
  clock = -Infinity;
  try {
    return s.select();
  } finally {
    clock = saved;
  }
};
const storedIds = (s: Space): number[] => stored(s).map((t) => t[0] as number).sort((a, b) => a - b);

/** [id, name, exp, ...]: pk on id, a non-unique TREE on exp (the eviction index), a unique TREE on name. */
function make(options: SpaceOptions = {}, name = 'x', pk: 'TREE' | 'HASH' = 'TREE', expType: 'number' | 'unsigned' = 'number') {
  const reports: Tuple[][] = [];
  const evict = options.onFull === 'evictExpiring';
  const s = new Space(name, { ttl: { field: 3, now: () => clock }, ...(evict ? { onEvict: (t: Tuple[]) => reports.push(t) } : {}), ...options });
  s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, expType]] });
  s.createIndex('name', { parts: [[2, 'string']] });
  return { s, reports };
}

// ---------------------------------------------------------------------------------------------
// Targeted: update / upsert / replace / insert / delete / get on a stored but expired key
// ---------------------------------------------------------------------------------------------
describe('writes on a stored, expired key act on what is stored (README "TTL-aware spaces", Writes)', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    test(`${pk}: update, index.update, upsert see the expired tuple; get hides it until an update makes it live`, () => {
      const { s } = make({}, 'exp-writes', pk);
      s.insert([1, 'a', 50]);
      s.insert([2, 'b', 500]);
      expect(s.get(1)).toBeUndefined();
      expect(s.index.name.get('a')).toBeUndefined();
      // update returns the new tuple, which is still expired, and stays hidden
      expect(s.update(1, [['=', 4, 'p']])).toEqual([1, 'a', 50, 'p']);
      expect(s.get(1)).toBeUndefined();
      // through the secondary unique index too
      expect(s.index.name.update('a', [['=', 2, 'a2']])).toEqual([1, 'a2', 50, 'p']);
      expect(s.index.name.get('a2')).toBeUndefined();
      expect(s.index.name.update('a', [['=', 4, 'q']])).toBeUndefined();  // the old name is gone
      // upsert applies its ops to the expired tuple, does not insert its tuple
      s.upsert([1, 'fresh', 900], [['=', 4, 'u']]);
      expect(stored(s).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([[1, 'a2', 50, 'u'], [2, 'b', 500]]);
      expect(s.get(1)).toBeUndefined();
      // an update of the TTL field makes it live for every read
      expect(s.update(1, [['=', 3, 200]])).toEqual([1, 'a2', 200, 'u']);
      expect(s.get(1)).toEqual([1, 'a2', 200, 'u']);
      expect(s.index.name.get('a2')).toEqual([1, 'a2', 200, 'u']);
      expect(s.count()).toBe(2);
      expect(s.index.exp.min()).toEqual([1, 'a2', 200, 'u']);
      // and live -> expired hides it again, min/max/count follow
      expect(s.update(2, [['=', 3, 100]])).toEqual([2, 'b', 100]);  // TTL == now: expired
      expect(s.get(2)).toBeUndefined();
      expect(s.index.exp.max()).toEqual([1, 'a2', 200, 'u']);
      expect(s.count()).toBe(1);
      expect(s.index.exp.count(150, { iterator: 'LT' })).toBe(0);
      // now an insert over 2 replaces it (it has expired), over 1 is refused
      expect(codeOf(() => s.insert([1, 'n', 300]))).toBe('ER_DUPLICATE_KEY');
      expect(s.insert([2, 'n', 300])).toEqual([2, 'n', 300]);
      // delete of an expired tuple removes and returns it
      s.update(1, [['=', 3, 10]]);
      expect(s.delete(1)).toEqual([1, 'a2', 10, 'u']);
      expect(s.len()).toBe(1);
      s.checkIntegrity();
    });
  }

  test('an insert over an expired key whose tuple holds the same secondary unique key replaces it; another expired holder blocks', () => {
    const { s } = make({}, 'sec');
    s.insert([1, 'a', 50]);
    s.insert([2, 'b', 60]);
    expect(s.insert([1, 'a', 500])).toEqual([1, 'a', 500]);             // its own old name: fine
    expect(codeOf(() => s.insert([3, 'b', 500]))).toBe('ER_DUPLICATE_KEY');  // held by expired 2
    expect(codeOf(() => s.upsert([3, 'b', 500], [['=', 4, 'x']]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.update(1, [['=', 2, 'b']]))).toBe('ER_DUPLICATE_KEY');
    expect(stored(s)).toEqual([[1, 'a', 500], [2, 'b', 60]]);
  });

  test('update that fails (bad field, overflow, pk change) on an expired tuple changes nothing', () => {
    const { s } = make({}, 'fail');
    s.insert([1, 'a', 50, 2 ** 62]);
    expect(codeOf(() => s.update(1, [['=', 3, 'soon']]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.update(1, [['=', 1, 2]]))).toBe('ER_CANT_UPDATE_PRIMARY_KEY');
    expect(codeOf(() => s.update(1, [['=', 3, NaN]]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.update(1, [['+', 9, 1]]))).toBe('ER_UPDATE_FIELD');
    expect(stored(s)).toEqual([[1, 'a', 50, 2 ** 62]]);
    s.checkIntegrity();
  });
});

// ---------------------------------------------------------------------------------------------
// Targeted: caps
// ---------------------------------------------------------------------------------------------
describe('caps under writes that change a stored tuple', () => {
  test("'refuse': update/upsert/replace that grow past maxBytes throw ER_SPACE_FULL and change nothing; shrinking passes", () => {
    const { s } = make({ maxBytes: 60 }, 'refuse-bytes');
    s.insert([1, 'a', 200, 'x'.repeat(10)]);
    s.insert([2, 'b', 300, 'y'.repeat(10)]);
    const before = stored(s);
    const b = s.bsize();
    expect(b).toBe(size(before[0]) + size(before[1]));
    // the longest payload of tuple 1 that fits exactly (string headers grow at 32 bytes)
    let n = 10;
    while (b - size(before[0]) + size([1, 'a', 200, 'x'.repeat(n + 1)]) <= 60) n++;
    expect(b - size(before[0]) + size([1, 'a', 200, 'x'.repeat(n)])).toBe(60);
    const big = 'x'.repeat(n + 1);
    expect(codeOf(() => s.update(1, [['=', 4, big]]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.index.name.update('a', [['=', 4, big]]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.upsert([1, 'a', 1], [['=', 4, big]]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.replace([1, 'a', 200, big]))).toBe('ER_SPACE_FULL');
    expect(stored(s)).toEqual(before);
    expect(s.bsize()).toBe(b);
    // exactly at the cap: accepted
    expect(s.update(1, [['=', 4, 'x'.repeat(n)]])).toEqual([1, 'a', 200, 'x'.repeat(n)]);
    expect(s.bsize()).toBe(60);
    expect(s.update(2, [['=', 4, '']])).toEqual([2, 'b', 300, '']);
    s.checkIntegrity();
  });

  test("'refuse' at maxTuples: upsert/insert/insertMany over expired keys add no tuple and pass; a new key is refused and the batch undone", () => {
    const { s } = make({ maxTuples: 2 }, 'refuse-count');
    s.insert([1, 'a', 50]);
    s.insert([2, 'b', 60]);
    s.upsert([1, 'a', 500], [['=', 4, 'u']]);           // ops on the expired tuple
    expect(stored(s)).toEqual([[1, 'a', 50, 'u'], [2, 'b', 60]]);
    expect(codeOf(() => s.upsert([3, 'c', 500], [['=', 4, 'u']]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.insertMany([[1, 'a', 500], [2, 'b', 600], [3, 'c', 700]]))).toBe('ER_SPACE_FULL');
    expect(stored(s)).toEqual([[1, 'a', 50, 'u'], [2, 'b', 60]]);
    expect(s.insertMany([[1, 'a', 500], [2, 'b', 600]])).toBe(2);
    expect(s.select()).toEqual([[1, 'a', 500], [2, 'b', 600]]);
    s.checkIntegrity();
  });

  test("'refuse' maxBytes: an insert over an expired key is checked as a replacement (old bytes given back)", () => {
    const { s } = make({ maxBytes: 40 }, 'refuse-over-expired');
    s.insert([1, 'a', 50, 'x'.repeat(10)]);
    s.insert([2, 'b', 500, 'y'.repeat(10)]);
    const other = size([2, 'b', 500, 'y'.repeat(10)]);
    let n = 10;
    while (other + size([1, 'a', 500, 'z'.repeat(n + 1)]) <= 40) n++;
    const fits: Tuple = [1, 'a', 500, 'z'.repeat(n)];
    expect(other + size(fits)).toBe(40);
    expect(codeOf(() => s.insert([1, 'a', 500, 'z'.repeat(n + 1)]))).toBe('ER_SPACE_FULL');
    expect(s.insert(fits)).toEqual(fits);
    expect(s.bsize()).toBe(40);
  });

  for (const pk of ['TREE', 'HASH'] as const) {
    test(`${pk} evictExpiring: an update that grows the expired, smallest-TTL tuple evicts others, never itself`, () => {
      clock = 30;
      const each = size([1, 'a', 20, '']);  // every TTL below 128: the four tuples have one size
      const { s, reports } = make({ maxBytes: 4 * each, onFull: 'evictExpiring' }, 'grow', pk);
      s.insertMany([[1, 'a', 20, ''], [2, 'b', 90, ''], [3, 'c', 70, ''], [4, 'd', 110, '']]);
      expect(reports).toEqual([]);
      // grow 1 (expired, the smallest TTL) by exactly two tuples' worth: 3 (TTL 70) then 2 (TTL 90) go
      const grown = s.update(1, [['=', 4, 'p'.repeat(2 * each)]]) as Tuple;
      expect(size(grown)).toBe(3 * each);
      expect(grown).toEqual([1, 'a', 20, 'p'.repeat(2 * each)]);
      expect(reports).toEqual([[[3, 'c', 70, ''], [2, 'b', 90, '']]]);
      expect(storedIds(s)).toEqual([1, 4]);
      expect(s.bsize()).toBe(4 * each);
      s.checkIntegrity();
    });
  }

  test('evictExpiring: an update that moves a TTL changes the eviction order at once', () => {
    const { s, reports } = make({ maxTuples: 3, onFull: 'evictExpiring' }, 'order');
    s.insertMany([[1, 'a', 150], [2, 'b', 250], [3, 'c', 350]]);
    s.update(1, [['=', 3, 1000]]);          // 1 is now the latest
    s.index.name.update('c', [['=', 3, 40]]); // 3 is now expired: first to go
    s.insert([4, 'd', 500]);
    s.insert([5, 'e', 500]);
    expect(reports).toEqual([[[3, 'c', 40]], [[2, 'b', 250]]]);
    s.upsert([1, 'a', 0], [['=', 3, 10]]);   // 1 expired now
    s.insert([6, 'f', 600]);
    expect(reports[2]).toEqual([[1, 'a', 10]]);
    expect(s.select().map((t) => t[0])).toEqual([4, 5, 6]);
  });

  test('evictExpiring at maxTuples: insert and insertMany over an expired key replace it, evict nothing, report nothing', () => {
    const { s, reports } = make({ maxTuples: 2, onFull: 'evictExpiring' }, 'over-expired');
    s.insert([1, 'a', 50]);
    s.insert([2, 'b', 500]);
    s.insert([1, 'a', 600]);
    expect(reports).toEqual([]);
    expect(stored(s)).toEqual([[1, 'a', 600], [2, 'b', 500]]);
    s.update(2, [['=', 3, 5]]);
    expect(s.insertMany([[2, 'b2', 700]])).toBe(1);
    expect(reports).toEqual([]);
    expect(stored(s)).toEqual([[1, 'a', 600], [2, 'b2', 700]]);
  });

  test('evictExpiring maxBytes: an insert over an expired key, bigger than it, evicts others but not the one it replaces', () => {
    const { s, reports } = make({ maxBytes: 50, onFull: 'evictExpiring' }, 'over-expired-bytes');
    s.insertMany([[1, 'a', 50, ''], [2, 'b', 300, ''], [3, 'c', 200, '']]);
    const each = size([1, 'a', 50, '']);
    const room = 50 - 3 * each;
    s.insert([1, 'a', 900, 'q'.repeat(room + 1)]);  // needs one more tuple's room: 3 (TTL 200) goes, not 1 (TTL 50, replaced)
    expect(reports).toEqual([[[3, 'c', 200, '']]]);
    expect(storedIds(s)).toEqual([1, 2]);
  });

  test('insertMany that evicts its own tuples and then fails on a duplicate: everything back, nothing reported', () => {
    const { s, reports } = make({ maxTuples: 2, onFull: 'evictExpiring' }, 'batch-fail');
    s.insertMany([[1, 'a', 300], [2, 'b', 400]]);
    expect(codeOf(() => s.insertMany([[3, 'c', 100], [4, 'd', 500], [5, 'e', 600], [6, 'd', 700]]))).toBe('ER_DUPLICATE_KEY');
    expect(stored(s)).toEqual([[1, 'a', 300], [2, 'b', 400]]);
    expect(reports).toEqual([]);
    expect(s.insertMany([[3, 'c', 100], [4, 'd', 500], [5, 'e', 600]])).toBe(3);
    expect(reports).toEqual([[[1, 'a', 300], [3, 'c', 100], [2, 'b', 400]]]);  // the new tuple is never its own victim
    s.checkIntegrity();
  });

  test('evictions of updates inside nested atomic(): an inner rollback undoes its evictions, the outer commit reports the rest once, in order', () => {
    const { s, reports } = make({ maxBytes: 60, onFull: 'evictExpiring' }, 'nested');
    s.insertMany([[1, 'a', 150, ''], [2, 'b', 250, ''], [3, 'c', 350, ''], [4, 'd', 450, '']]);
    const each = size([1, 'a', 150, '']);
    atomic(() => {
      s.update(4, [['=', 4, 'x'.repeat(60 - 4 * each + 1)]]);   // evicts 1
      try {
        atomic(() => {
          s.upsert([4, 'd', 0], [['=', 4, 'x'.repeat(60 - 3 * each + 1)]]);  // evicts 2 (then rolled back)
          expect(storedIds(s)).toEqual([3, 4]);
          throw new Error('undo');
        });
      } catch { /* */ }
      expect(storedIds(s)).toEqual([2, 3, 4]);
      s.index.name.update('c', [['=', 3, 10]]);                 // 3 expired now: no eviction (no growth)
      s.replace([5, 'e', 900, '']);                              // evicts 3 (smallest TTL)
      expect(reports).toEqual([]);
    });
    expect(reports).toEqual([[[1, 'a', 150, '']], [[3, 'c', 10, '']]]);
    expect(storedIds(s)).toEqual([2, 4, 5]);
    s.checkIntegrity();
  });
});

// ---------------------------------------------------------------------------------------------
// Targeted: TTL encodings, clocks
// ---------------------------------------------------------------------------------------------
describe('TTL encodings and clocks', () => {
  test("an 'unsigned' TTL index with Date.now()-sized (float64) and uint32 values: hidden, ordered and evicted by value", () => {
    const t0 = 1_700_000_000_000;
    clock = t0;
    const { s, reports } = make({ maxTuples: 4, onFull: 'evictExpiring' }, 'unsigned-ms', 'HASH', 'unsigned');
    s.insertMany([[1, 'a', t0 + 5000], [2, 'b', 2 ** 32 - 1], [3, 'c', 2 ** 32], [4, 'd', t0 + 1]]);
    expect(s.select().map((t) => t[0]).sort()).toEqual([1, 4]);
    expect(s.index.exp.select(undefined).map((t) => t[0])).toEqual([4, 1]);
    expect(s.index.exp.select(2 ** 32, { iterator: 'GE' }).map((t) => t[0])).toEqual([4, 1]);
    s.insert([5, 'e', t0 + 3000]);
    s.insert([6, 'f', t0 + 2000]);
    expect(reports).toEqual([[[2, 'b', 2 ** 32 - 1]], [[3, 'c', 2 ** 32]]]);
    // '+' on a float64-encoded integral TTL keeps it integral: still a valid 'unsigned'
    expect(s.update(4, [['+', 3, 10_000]])).toEqual([4, 'd', t0 + 10_001]);
    expect(s.index.exp.max()).toEqual([4, 'd', t0 + 10_001]);
    expect(codeOf(() => s.update(4, [['+', 3, 0.5]]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.update(4, [['-', 3, t0 * 2]]))).toBe('ER_FIELD_TYPE');
    expect(s.get(4)).toEqual([4, 'd', t0 + 10_001]);
    clock = t0 + 2000;
    expect(s.select().map((t) => t[0]).sort()).toEqual([1, 4, 5]);
    s.insert([7, 'g', t0 + 9000]);
    expect(reports[2]).toEqual([[6, 'f', t0 + 2000]]);  // expired at now: goes first
    s.checkIntegrity();
  });

  test("unit 'ms' vs 's': the same TTL value is compared with now in the space's unit", () => {
    const nowMs = 1_700_000_000_000;
    vi.spyOn(Date, 'now').mockReturnValue(nowMs);
    const ms = new Space('ms', { ttl: { field: 3, unit: 'ms' } });
    const sec = new Space('sec', { ttl: { field: 3, unit: 's' } });
    for (const s of [ms, sec]) {
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.insert([1, 'sec-ttl', nowMs / 1000 + 60]);   // a TTL in seconds
      s.insert([2, 'ms-ttl', nowMs + 60_000]);        // a TTL in ms
      s.insert([3, 'float', nowMs / 1000 + 0.001]);
    }
    expect(ms.select().map((t) => t[0])).toEqual([2]);           // seconds look long past in ms
    expect(sec.select().map((t) => t[0])).toEqual([1, 2, 3]);
    vi.spyOn(Date, 'now').mockReturnValue(nowMs + 1);
    expect(sec.select().map((t) => t[0])).toEqual([1, 2]);        // nowMs/1000 + 0.001 <= (nowMs + 1) / 1000
    ms.drop();
    sec.drop();
  });

  test('missing, string, NaN and huge TTLs in a TTL space (no TTL index): never expire or expire by value; refuse caps count them', () => {
    const s = new Space('odd', { ttl: { field: 3, now: () => clock }, maxTuples: 5 });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insertMany([[1, 'missing'], [2, 's', '50'], [3, 'n', NaN], [4, 'h', 1e308], [5, 'i', -Infinity]]);
    expect(s.select().map((t) => t[0])).toEqual([1, 2, 3, 4]);
    expect(codeOf(() => s.insert([6, 'x', 500]))).toBe('ER_SPACE_FULL');
    expect(s.insert([5, 'over expired', 500])).toEqual([5, 'over expired', 500]);
    expect(codeOf(() => s.insert([3, 'over NaN', 500]))).toBe('ER_DUPLICATE_KEY');
    expect(s.update(1, [['!', 3, 90]])).toEqual([1, 'missing', 90]);   // gains a TTL: now expired
    expect(s.get(1)).toBeUndefined();
    expect(s.update(2, [['=', 3, 100.5]])).toEqual([2, 's', 100.5]);
    expect(s.get(2)).toEqual([2, 's', 100.5]);
    clock = 100.5;
    expect(s.get(2)).toBeUndefined();
    expect(s.update(4, [['#', 3, 1]])).toEqual([4, 'h']);                // loses its TTL: never expires
    clock = Infinity;
    expect(s.select().map((t) => t[0])).toEqual([3, 4]);
    expect(s.insert([1, 'again', 1])).toEqual([1, 'again', 1]);           // over an expired key
  });

  test('a clock that steps back makes expired tuples visible again and blocks the insert they allowed', () => {
    const { s } = make({}, 'back');
    s.insert([1, 'a', 150]);
    clock = 200;
    expect(s.get(1)).toBeUndefined();
    clock = 149.5;
    expect(s.get(1)).toEqual([1, 'a', 150]);
    expect(codeOf(() => s.insert([1, 'a', 900]))).toBe('ER_DUPLICATE_KEY');
    const it = s.pairs();
    clock = 150;
    expect(it.next().done).toBe(true);
  });

  test('a clock that throws or returns a non-number: the insert/insertMany of a capped evicting space changes nothing and reports nothing', () => {
    let mode: 'ok' | 'throw' | 'nan' | 'string' = 'ok';
    const reports: Tuple[][] = [];
    const s = new Space('bad-clock', {
      ttl: { field: 3, now: () => { if (mode === 'throw') throw new CappedError('clock down', 'ER_ILLEGAL_PARAMS'); return (mode === 'nan' ? NaN : mode === 'string' ? '100' : clock) as number; } },
      maxTuples: 2, onFull: 'evictExpiring', onEvict: (t) => reports.push(t),
    });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    s.insertMany([[1, 'a', 50], [2, 'b', 500]]);
    for (mode of ['throw', 'nan', 'string'] as const) {
      expect(codeOf(() => s.insert([3, 'c', 600])), mode).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => s.insert([1, 'c', 600])), mode).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => s.insertMany([[3, 'c', 600], [4, 'd', 700]])), mode).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => atomic(() => s.insert([3, 'c', 600]))), mode).toBe('ER_ILLEGAL_PARAMS');
    }
    mode = 'ok';
    expect(reports).toEqual([]);
    expect(stored(s)).toEqual([[1, 'a', 50], [2, 'b', 500]]);
    s.checkIntegrity();
  });
});

describe('TTL encodings: ties and exact values in the eviction index', () => {
  for (const expType of ['unsigned', 'number'] as const) {
    test(`${expType}: an int and a float64 of one value tie (by primary key); uint64 vs float64 near 2^53 by exact value`, () => {
      clock = 0;
      const { s, reports } = make({ maxTuples: 4, onFull: 'evictExpiring' }, `enc-${expType}`, 'TREE', expType);
      s.insert([5, 'a', 100]);                       // positive fixint
      s.insert([2, 'b', 99]);
      s.update(2, [['+', 3, 0.5], ['+', 3, 0.5]]);   // a fraction on one side: a float64 100.0 (README)
      expect(s.bsize()).toBe(size([5, 'a', 100]) + size([2, 'b', 100]) + 8);
      s.insert([3, 'c', 2n ** 53n + 1n]);            // uint64
      s.insert([4, 'd', 2 ** 53]);                   // float64
      expect(s.index.exp.select().map((t) => t[0])).toEqual([2, 5, 4, 3]);
      expect([s.index.exp.count(100), s.index.exp.count(2 ** 53), s.index.exp.count(2n ** 53n)]).toEqual([2, 1, 1]);
      s.insert([6, 'e', 2n ** 53n]);                 // uint64 equal to 4's float64
      s.insert([7, 'f', 2n ** 60n]);
      s.insert([8, 'g', 2n ** 60n]);
      s.insert([9, 'h', 2n ** 60n]);
      expect(reports.map((r) => r.map((t) => t[0]))).toEqual([[2], [5], [4], [6]]);
      s.checkIntegrity();
    });
  }

  test('a TTL-led primary is the eviction index; an insert over an expired key (same TTL and id) replaces it', () => {
    const reports: Tuple[][] = [];
    const s = new Space('ttl-pk', { ttl: { field: 3, now: () => clock }, maxTuples: 2, onFull: 'evictExpiring', onEvict: (t) => reports.push(t) });
    s.createIndex('pk', { parts: [[3, 'number'], [1, 'unsigned']] });
    s.insert([1, 'a', 50]);
    s.insert([2, 'b', 500]);
    expect(s.insert([1, 'c', 50])).toEqual([1, 'c', 50]);
    expect(reports).toEqual([]);
    expect(codeOf(() => s.insert([2, 'd', 500]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.update([500, 2], [['=', 3, 600]]))).toBe('ER_CANT_UPDATE_PRIMARY_KEY');
    s.insert([3, 'd', 600]);
    expect(reports).toEqual([[[1, 'c', 50]]]);
    expect(stored(s)).toEqual([[2, 'b', 500], [3, 'd', 600]]);
  });

  test("the wall clock in 'ms' (read by the addon) with Date.now() TTLs in an 'unsigned' eviction index", () => {
    const reports: Tuple[][] = [];
    const s = new Space('wall-ms', { ttl: { field: 3, unit: 'ms' }, maxTuples: 2, onFull: 'evictExpiring', onEvict: (t) => reports.push(t) });
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    const t = Date.now();
    s.insertMany([[1, 'a', t - 1], [2, 'b', t + 3_600_000]]);
    expect(s.get(1)).toBeUndefined();
    expect(s.get(2)).toEqual([2, 'b', t + 3_600_000]);
    expect(s.insert([1, 'a2', t + 7_200_000])).toEqual([1, 'a2', t + 7_200_000]);   // over the expired key
    expect(reports).toEqual([]);
    expect(s.update(2, [['-', 3, 3_600_001]])).toEqual([2, 'b', t - 1]);           // now expired
    expect(s.get(2)).toBeUndefined();
    s.insert([3, 'c', t + 60_000]);
    expect(reports).toEqual([[[2, 'b', t - 1]]]);
    expect(s.index.exp.select().map((x) => x[0])).toEqual([3, 1]);
    s.drop();
  });

  test("a float clock over an 'unsigned' TTL: insert over TTL 100 at now 100.5 replaces, over 101 is refused", () => {
    clock = 100.5;
    const { s } = make({ maxTuples: 2, onFull: 'evictExpiring' }, 'float-clock', 'HASH', 'unsigned');
    s.insertMany([[1, 'a', 100], [2, 'b', 101]]);
    expect(s.select().map((t) => t[0])).toEqual([2]);
    expect(s.insert([1, 'a', 300])).toEqual([1, 'a', 300]);
    expect(codeOf(() => s.insert([2, 'b', 300]))).toBe('ER_DUPLICATE_KEY');
  });

  test('evictExpiring maxBytes: an update that cannot fit even after evicting every other tuple is ER_SPACE_FULL, all back, nothing reported', () => {
    clock = 30;
    const each = size([1, 'a', 20, '']);
    const { s, reports } = make({ maxBytes: 3 * each, onFull: 'evictExpiring' }, 'cannot-fit');
    s.insertMany([[1, 'a', 20, ''], [2, 'b', 90, ''], [3, 'c', 70, '']]);
    // 1 grown by three tuples' worth: 4 * each, larger than maxBytes on its own: refused
    expect(codeOf(() => s.update(1, [['=', 4, 'p'.repeat(3 * each)]]))).toBe('ER_SPACE_FULL');
    // 1 grown to exactly maxBytes: fits after evicting both others
    expect(s.update(1, [['=', 4, 'p'.repeat(2 * each)]])).toEqual([1, 'a', 20, 'p'.repeat(2 * each)]);
    expect(reports).toEqual([[[3, 'c', 70, ''], [2, 'b', 90, '']]]);
    // alone, it cannot grow by one more byte: refused, nothing changed
    expect(codeOf(() => s.upsert([1, 'z', 1], [['=', 4, 'p'.repeat(2 * each + 1)]]))).toBe('ER_SPACE_FULL');
    expect(stored(s)).toEqual([[1, 'a', 20, 'p'.repeat(2 * each)]]);
    expect(reports.length).toBe(1);
    s.checkIntegrity();
  });
});

// ---------------------------------------------------------------------------------------------
// pairs() walks that stay open across updates of the TTL field
// ---------------------------------------------------------------------------------------------
describe('pairs() across TTL updates', () => {
  for (const pk of ['TREE', 'HASH'] as const) {
    test(`${pk} primary walk: a tuple made expired ahead is skipped, one made live ahead is yielded`, () => {
      const { s } = make({}, 'walk', pk);
      for (let i = 1; i <= 6; i++) s.insert([i, `n${i}`, i % 2 === 0 ? 50 : 500]);  // even ids expired
      const order = stored(s).map((t) => t[0] as number);   // slot order of a HASH (what pairs() walks)
      const seen: number[] = [];
      const it = s.pairs();
      const first = it.next().value as Tuple;
      const after = order.slice(order.indexOf(first[0] as number) + 1);
      seen.push(first[0] as number);
      for (let i = 1; i <= 6; i++) {
        if (i === first[0]) continue;
        s.update(i, [['=', 3, i % 2 === 0 ? 500 : 50]]);   // flip every other tuple
      }
      for (const t of it) seen.push(t[0] as number);
      // everything after the first: exactly the now-live (even) ids, each once
      expect(seen.slice(1)).toEqual(after.filter((i) => i % 2 === 0));
      expect(new Set(seen).size).toBe(seen.length);
    });
  }

  test('TTL-index walk: a tuple whose TTL is raised past the cursor is yielded again (memtx re-seek), never an expired one', () => {
    const { s } = make({}, 'walk-exp');
    s.insertMany([[1, 'a', 200], [2, 'b', 300], [3, 'c', 400]]);
    const it = s.index.exp.pairs();
    expect(it.next().value).toEqual([1, 'a', 200]);
    s.update(1, [['=', 3, 350]]);
    s.update(3, [['=', 3, 90]]);
    expect([...it]).toEqual([[2, 'b', 300], [1, 'a', 350]]);
  });
});

// ---------------------------------------------------------------------------------------------
// Seeded model: TTL + caps (refuse and evict) + update/upsert/replace/insert/insertMany/delete,
// clocks that move both ways, visible reads and open iterators checked after every statement.
// ---------------------------------------------------------------------------------------------
type Row = [number, string, number, string];

interface Cfg { pk: 'TREE' | 'HASH'; onFull: 'refuse' | 'evictExpiring'; maxTuples?: number; maxBytes?: number; unsignedMs: boolean }

function runModel(seed: number, steps: number, cfg: Cfg): void {
  const next = mulberry32(seed);
  const int = (n: number): number => Math.floor(next() * n);
  const base = cfg.unsignedMs ? 1_700_000_000_000 : 100;
  const unit = cfg.unsignedMs ? 1000 : 1;
  clock = base;
  const calls: Tuple[][] = [];
  const s = new Space<Row>(`model-${seed}`, {
    ttl: { field: 3, unit: cfg.unsignedMs ? 'ms' : 's', now: () => clock },
    maxTuples: cfg.maxTuples, maxBytes: cfg.maxBytes, onFull: cfg.onFull,
    ...(cfg.onFull === 'evictExpiring' ? { onEvict: (t: Row[]) => calls.push(t as Tuple[]) } : {}),
  });
  s.createIndex('pk', { type: cfg.pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, cfg.unsignedMs ? 'unsigned' : 'number']] });
  s.createIndex('name', { type: cfg.pk, parts: [[2, 'string']] });   // a unique HASH secondary with a HASH primary
  let model = new Map<number, Row>();
  const evictions = new EvictionFrames();
  const live = (t: Row): boolean => !(t[2] <= clock);
  const bytes = (m: Map<number, Row>): number => { let n = 0; for (const t of m.values()) n += size(t); return n; };
  const over = (m: Map<number, Row>): boolean =>
    (cfg.maxTuples !== undefined && m.size > cfg.maxTuples) || (cfg.maxBytes !== undefined && bytes(m) > cfg.maxBytes);
  const ttl = (): number => {
    const r = int(12);
    if (cfg.unsignedMs) {
      if (r === 0) return clock - 1 - int(40) * unit;                 // expired
      if (r === 1) return 2 ** 32 - 1 - int(3);                        // uint32 on the wire, long expired
      if (r === 2) return 2 ** 32 + int(3);                            // float64 on the wire, long expired
      if (r === 3) return clock;                                        // TTL == now: expired
      return Math.floor(clock) + int(120) * unit + int(unit);
    }
    if (r === 0) return clock - 1 - int(40);
    if (r === 1) return clock + int(50) + 0.5;
    if (r === 2) return 2 ** 33 + int(5);
    if (r === 3) return -int(1000) - 0.25;
    if (r === 4) return clock;
    return Math.floor(clock) + int(120);
  };
  const payload = (): string => {
    const r = int(40);
    if (r === 0) return 'Q'.repeat(800);                       // over every maxBytes here on its own
    return r < 3 ? 'P'.repeat(100 + int(200)) : 'p'.repeat(int(25));
  };
  const tuple = (): Row => [int(25), `n${int(20)}`, ttl(), payload()];
  type Outcome = 'ER_SPACE_FULL' | 'ER_DUPLICATE_KEY' | undefined;
  const store = (m: Map<number, Row>, t: Row, evicted: Tuple[]): Outcome => {
    for (const x of m.values()) if (x[1] === t[1] && x[0] !== t[0]) return 'ER_DUPLICATE_KEY';
    m.set(t[0], t);
    if (!over(m)) return undefined;
    if (cfg.onFull === 'refuse') return 'ER_SPACE_FULL';
    if (cfg.maxBytes !== undefined && size(t) > cfg.maxBytes) return 'ER_SPACE_FULL';
    return evictUntilFits(m, t[0], over, evicted) ? undefined : 'ER_SPACE_FULL';
  };
  const insertInto = (m: Map<number, Row>, t: Row, evicted: Tuple[]): Outcome => {
    const old = m.get(t[0]);
    if (old !== undefined && live(old)) return 'ER_DUPLICATE_KEY';
    return store(m, t, evicted);
  };
  const apply = (t: Row, ops: Assignment[]): Row => applyAssignments(t, ops);
  const randomOps = (): Assignment[] => randomAssignments(int, payload, ttl, 20);
  const run = (fn: () => unknown): { code: Outcome | 'ok'; value?: unknown } => {
    try {
      return { code: 'ok', value: fn() };
    } catch (e) {
      if (e instanceof CappedError) return { code: e.code as Outcome };
      throw e;
    }
  };
  // Open iterators: a TREE primary walk and a TTL-index walk, checked against the model at each step.
  let pkWalk: { it: Iterator<Row>; last: number } | undefined;
  let expWalk: { it: Iterator<Row>; last: [number, number] } | undefined;
  const byExp = (a: Row, b: Row): number => (a[2] - b[2]) || (a[0] - b[0]);
  const visible = (): Row[] => [...model.values()].filter(live);
  const check = (where: string): void => {
    expect(s.len(), where).toBe(model.size);
    expect(s.bsize(), where).toBe(bytes(model));
    if (cfg.maxTuples !== undefined) expect(s.len(), where).toBeLessThanOrEqual(cfg.maxTuples);
    if (cfg.maxBytes !== undefined) expect(s.bsize(), where).toBeLessThanOrEqual(cfg.maxBytes);
    const vis = visible();
    const sel = s.select();
    if (cfg.pk === 'TREE') expect(sel, `${where} select`).toEqual([...vis].sort((a, b) => a[0] - b[0]));
    else expect([...sel].sort((a, b) => a[0] - b[0]), `${where} select`).toEqual([...vis].sort((a, b) => a[0] - b[0]));
    expect(s.count(), `${where} count`).toBe(vis.length);
    const ordered = [...vis].sort(byExp);
    expect(s.index.exp.select(), `${where} exp select`).toEqual(ordered);
    expect(s.index.exp.min(), `${where} min`).toEqual(ordered[0]);
    expect(s.index.exp.max(), `${where} max`).toEqual(ordered[ordered.length - 1]);
    const probe = int(25);
    const m = model.get(probe);
    expect(s.get(probe), `${where} get ${probe}`).toEqual(m !== undefined && live(m) ? m : undefined);
    const name = `n${int(20)}`;
    const holder = [...model.values()].find((x) => x[1] === name);
    expect(s.index.name.get(name), `${where} name.get ${name}`).toEqual(holder !== undefined && live(holder) ? holder : undefined);
  };
  const stepWalks = (where: string): void => {
    if (pkWalk === undefined && int(5) === 0) pkWalk = { it: s.pairs(), last: -1 };
    if (expWalk === undefined && int(5) === 0) expWalk = { it: s.index.exp.pairs(), last: [-Infinity, -1] };
    if (pkWalk !== undefined && int(2) === 0) {
      const r = pkWalk.it.next();
      if (cfg.pk === 'TREE') {
        const want = visible().filter((t) => t[0] > (pkWalk as { last: number }).last).sort((a, b) => a[0] - b[0])[0];
        expect(r.done ? undefined : r.value, `${where} pk walk`).toEqual(want);
      } else if (!r.done) {
        expect(r.value, `${where} hash walk`).toEqual(model.get(r.value[0]));
        expect(live(r.value), `${where} hash walk yields a live tuple`).toBe(true);
      }
      if (r.done) pkWalk = undefined;
      else pkWalk.last = r.value[0];
    }
    if (expWalk !== undefined && int(2) === 0) {
      const r = expWalk.it.next();
      const [lt, lid] = expWalk.last;
      const want = visible().filter((t) => t[2] > lt || (t[2] === lt && t[0] > lid)).sort(byExp)[0];
      expect(r.done ? undefined : r.value, `${where} exp walk`).toEqual(want);
      if (r.done) expWalk = undefined;
      else expWalk.last = [r.value[2], r.value[0]];
    }
  };
  const seen = { ok: 0, evicted: 0, ER_SPACE_FULL: 0, ER_DUPLICATE_KEY: 0 };
  const statement = (where: string): void => {
    const op = int(9);
    const work = new Map(model);
    const evicted: Tuple[] = [];
    let expected: Outcome;
    let fn: () => unknown;
    let result: unknown = 'skip';
    if (op === 0) {
      const id = int(25);
      result = work.get(id);
      work.delete(id);
      fn = () => s.delete(id);
    } else if (op === 1) {
      const t = tuple();
      expected = insertInto(work, t, evicted);
      result = t;
      fn = () => s.insert(t);
    } else if (op === 2) {
      const t = tuple();
      expected = store(work, t, evicted);
      result = t;
      fn = () => s.replace(t);
    } else if (op === 3) {
      const t = tuple();
      const ops = randomOps();
      const old = model.get(t[0]);                 // stored, expired or not: README, upsert acts on what is stored
      expected = old === undefined ? insertInto(work, t, evicted) : store(work, apply(old, ops), evicted);
      result = undefined;
      fn = () => s.upsert(t, ops as never);
    } else if (op === 4 || op === 5) {
      const id = int(25);
      const ops = randomOps();
      const old = model.get(id);
      const nt = old === undefined ? undefined : apply(old, ops);
      expected = nt === undefined ? undefined : store(work, nt, evicted);
      result = nt;
      fn = () => s.update(id, ops as never);
    } else if (op === 6) {
      const name = `n${int(20)}`;
      const ops = randomOps();
      const old = [...model.values()].find((x) => x[1] === name);
      const nt = old === undefined ? undefined : apply(old, ops);
      expected = nt === undefined ? undefined : store(work, nt, evicted);
      result = nt;
      fn = () => s.index.name.update(name, ops as never);
    } else {
      const batch = Array.from({ length: 1 + int(op === 8 ? 8 : 3) }, tuple);
      for (const t of batch) expected ??= insertInto(work, t, evicted);
      result = batch.length;
      fn = () => s.insertMany(batch);
    }
    const got = run(fn);
    seen[expected ?? (evicted.length > 0 ? 'evicted' : 'ok')]++;
    expect(got.code, `${where}: op ${op}`).toBe(expected ?? 'ok');
    if (expected === undefined) {
      if (result !== 'skip') expect(got.value, `${where}: op ${op} result`).toEqual(result);
      model = work;
      evictions.evicted(evicted);
    }
  };
  const frames = {
    space: s, int, maxDepth: 2, calls, statement,
    save: () => {
      const snapshot = new Map(model);
      return () => {
        model = snapshot;
      };
    },
  };
  for (let step = 0; step < steps; step++) {
    const where = `seed ${seed} step ${step}`;
    const c = int(12);
    if (c === 0) clock += 7 * unit;
    else if (c === 1) clock -= 3 * unit;                       // steps back
    else if (c === 2) clock += cfg.unsignedMs ? 1 : 0.5;        // a float clock in 's'
    if (int(7) === 0) evictions.randomFrame(frames, where);
    else statement(where);
    evictions.expectReported(calls, where);
    check(where);
    stepWalks(where);
  }
  // the sequence reached every outcome it is meant to test
  expect(seen.ER_DUPLICATE_KEY, JSON.stringify(seen)).toBeGreaterThan(20);
  expect(seen.ER_SPACE_FULL, JSON.stringify(seen)).toBeGreaterThan(cfg.onFull === 'refuse' || cfg.maxBytes !== undefined ? 5 : -1);
  if (cfg.onFull === 'evictExpiring') expect(seen.evicted, JSON.stringify(seen)).toBeGreaterThan(50);
  s.checkIntegrity();
  expect(stored(s as unknown as Space).sort((a, b) => (a[0] as number) - (b[0] as number)))
    .toEqual([...model.values()].sort((a, b) => a[0] - b[0]));
  s.drop();
}

describe('seeded model: TTL + caps + update/upsert/replace/insertMany', () => {
  const STEPS = Number(process.env.REVIEW_STEPS) || 1200;
  const base = Number(process.env.REVIEW_SEED) || 4242;
  const cfgs: Array<[string, Cfg]> = [
    ['TREE pk, evict, maxTuples + maxBytes, number TTL', { pk: 'TREE', onFull: 'evictExpiring', maxTuples: 8, maxBytes: 600, unsignedMs: false }],
    ['HASH pk, evict, maxBytes, number TTL', { pk: 'HASH', onFull: 'evictExpiring', maxBytes: 300, unsignedMs: false }],
    ['TREE pk, evict, maxTuples, unsigned ms TTL (float64 on the wire)', { pk: 'TREE', onFull: 'evictExpiring', maxTuples: 6, unsignedMs: true }],
    ['HASH pk, evict, maxTuples + maxBytes, unsigned ms TTL', { pk: 'HASH', onFull: 'evictExpiring', maxTuples: 7, maxBytes: 450, unsignedMs: true }],
    ['TREE pk, refuse, maxTuples + maxBytes, number TTL', { pk: 'TREE', onFull: 'refuse', maxTuples: 10, maxBytes: 700, unsignedMs: false }],
    ['HASH pk, refuse, maxTuples, unsigned ms TTL', { pk: 'HASH', onFull: 'refuse', maxTuples: 9, unsignedMs: true }],
  ];
  cfgs.forEach(([name, cfg], i) => {
    test(name, () => runModel(base + i, STEPS, cfg));
  });
});

