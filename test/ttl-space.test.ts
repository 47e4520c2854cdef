// TTL-aware spaces (issue 15): new Space(name, { ttl: { field, unit?, now? } }) hides every tuple
// whose TTL field is a number <= now from get, select, pairs, count, min and max, on every index
// and iterator, natively; len() and memory() count what is stored; an insert is not blocked by an
// expired primary-key duplicate; an expirationd task takes field, unit and now from the space.
//
// The reference for "hides" is a plain twin space holding only the visible tuples: every read
// on the TTL space must answer exactly as the same read on the twin.
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, type IteratorType, type Key, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

type IndexSpec = { name: string; type: 'TREE' | 'HASH'; unique: boolean; parts: [number, 'unsigned' | 'number' | 'string'][] };

const LAYOUTS: Record<string, IndexSpec[]> = {
  'TREE primary, TTL TREE, unique TREE and HASH secondaries': [
    { name: 'pk', type: 'TREE', unique: true, parts: [[1, 'unsigned']] },
    { name: 'exp', type: 'TREE', unique: false, parts: [[3, 'number']] },
    { name: 'name', type: 'TREE', unique: true, parts: [[2, 'string']] },
    { name: 'byName', type: 'HASH', unique: true, parts: [[2, 'string']] },
  ],
  'HASH primary, TREE on (group, id)': [
    { name: 'pk', type: 'HASH', unique: true, parts: [[1, 'unsigned']] },
    { name: 'group', type: 'TREE', unique: false, parts: [[4, 'unsigned']] },
    { name: 'pair', type: 'TREE', unique: true, parts: [[4, 'unsigned'], [1, 'unsigned']] },
  ],
};

function makeSpace(name: string, specs: IndexSpec[], ttl?: ConstructorParameters<typeof Space>[1]): Space {
  const space = new Space(name, ttl);
  for (const s of specs) space.createIndex(s.name, { type: s.type, unique: s.unique, parts: s.parts });
  return space;
}

// Tuples [id, name, ttl, group]: TTLs of every encoding msgpackr writes, ties, and values that
// never expire (missing, string, NaN are only possible where no index types field 3).
function tuples(n: number): Tuple[] {
  const out: Tuple[] = [];
  for (let id = 1; id <= n; id++) {
    const ttl = id % 7 === 0 ? 100 : id % 5 === 0 ? 100.5 + id : id % 3 === 0 ? -id : id * 10;
    out.push([id, `n${id}`, ttl, id % 4]);
  }
  return out;
}

const isExpired = (t: Tuple, now: number): boolean => typeof t[2] === 'number' && !Number.isNaN(t[2]) && t[2] <= now;

function keysOf(spec: IndexSpec, sample: Tuple[]): Array<Key | undefined> {
  const keys: Array<Key | undefined> = [undefined];
  for (const t of sample) {
    const full = spec.parts.map(([f]) => t[f - 1]) as Key[];
    keys.push(full.length === 1 ? full[0] : (full as Key));
    if (full.length > 1 && spec.type === 'TREE') keys.push([full[0]] as Key);
  }
  keys.push(spec.parts[0][1] === 'string' ? 'zzz' : 999_999);
  return keys;
}

/** Every read API of every index of `ttlSpace` answers as on `twin` (which holds the visible tuples). */
function expectSameReads(ttlSpace: Space, twin: Space, specs: IndexSpec[], sample: Tuple[]): void {
  for (const spec of specs) {
    const a = ttlSpace.index[spec.name];
    const b = twin.index[spec.name];
    const iterators: IteratorType[] = spec.type === 'HASH' ? ['EQ', 'ALL'] : ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'];
    for (const key of keysOf(spec, sample)) {
      const full = key !== undefined && (Array.isArray(key) ? key.length : 1) === spec.parts.length;
      if (spec.type === 'HASH' && key !== undefined && !full) continue;
      const where = `${spec.name} key ${JSON.stringify(key)}`;
      if (spec.unique && full) expect(a.get(key as Key), `get ${where}`).toEqual(b.get(key as Key));
      for (const iterator of iterators) {
        if (spec.type === 'HASH' && iterator === 'ALL' && key !== undefined) continue;
        const w = `${where} ${iterator}`;
        // A HASH walk's order depends on the table's history, which differs from the twin's.
        const unordered = spec.type === 'HASH' && key === undefined;
        const norm = (ts: Tuple[]): Tuple[] => (unordered ? [...ts].sort((x, y) => (x[0] as number) - (y[0] as number)) : ts);
        expect(norm(a.select(key, { iterator })), `select ${w}`).toEqual(norm(b.select(key, { iterator })));
        const page = a.select(key, { iterator, limit: 2, offset: 1 });
        if (unordered) {
          expect(page.length, `select limit/offset ${w}`).toBe(b.select(key, { iterator, limit: 2, offset: 1 }).length);
          for (const t of page) expect(b.get(spec.parts.map(([f]) => t[f - 1]) as Key)).toEqual(t);
        } else {
          expect(page, `select limit/offset ${w}`).toEqual(b.select(key, { iterator, limit: 2, offset: 1 }));
        }
        expect(norm([...a.pairs(key, { iterator })]), `pairs ${w}`).toEqual(norm([...b.pairs(key, { iterator })]));
        expect(a.count(key, { iterator }), `count ${w}`).toBe(b.count(key, { iterator }));
      }
      if (spec.type === 'TREE') {
        expect(a.min(key), `min ${where}`).toEqual(b.min(key));
        expect(a.max(key), `max ${where}`).toEqual(b.max(key));
      }
    }
  }
}

describe('reads hide expired tuples', () => {
  for (const [layout, specs] of Object.entries(LAYOUTS)) {
    test(`every read on every index and iterator, as the clock moves: ${layout}`, () => {
      let now = -10;
      const all = tuples(40);
      const space = makeSpace('ttl', specs, { ttl: { field: 3, now: () => now } });
      space.insertMany(all);
      for (now of [-10, 0, 100, 100.5, 150, 250, 1000]) {
        const twin = makeSpace('twin', specs);
        twin.insertMany(all.filter((t) => !isExpired(t, now)));
        expectSameReads(space, twin, specs, all.slice(0, 12));
        expect(space.len()).toBe(all.length);
        for (const spec of specs) expect(space.index[spec.name].len()).toBe(all.length);
        twin.drop();
      }
    });
  }

  test('a TTL equal to now is expired; compared by value whatever the encoding', () => {
    let now = 1_700_000_000_000;  // a Date.now()-sized value: msgpackr writes it as float64
    const space = new Space('enc', { ttl: { field: 2, unit: 'ms', now: () => now } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1, now]);             // float64
    space.insert([2, 5]);               // fixint
    space.insert([3, 2 ** 31 + 1]);     // uint32
    space.insert([4, -(2 ** 40)]);      // negative int64 as float64
    space.insert([5, 1.5]);             // float
    space.insert([6, now + 1]);
    expect(space.select().map((t) => t[0])).toEqual([6]);
    now = 4;
    expect(space.select().map((t) => t[0])).toEqual([1, 2, 3, 6]);
    now = 5;
    expect(space.get(2)).toBeUndefined();
  });

  test('a missing, non-numeric or NaN TTL never expires', () => {
    const space = new Space('odd', { ttl: { field: 3, now: () => Infinity } });
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.insertMany([[1, 'no ttl'], [2, 'string', '0'], [3, 'nan', NaN], [4, 'bool', false], [5, 'null', null], [6, 'live', 1e300]]);
    expect(space.select().map((t) => t[0]).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(space.count()).toBe(5);
  });

  test('pairs() reads the clock at every step: a tuple that expired meanwhile is never yielded', () => {
    let now = 0;
    const space = new Space('iter', { ttl: { field: 2, now: () => now } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { type: 'TREE', unique: false, parts: [[2, 'unsigned']] });
    for (let i = 1; i <= 10; i++) space.insert([i, i * 10]);
    const it = space.pairs();
    const got: number[] = [];
    for (const t of it) {
      got.push(t[0] as number);
      now += 25;  // the clock runs ahead of the walk: tuples expire while we iterate
    }
    expect(got).toEqual([1, 3, 6, 8]);
    now = 0;
    const byExp = space.index.exp.pairs(30, { iterator: 'GE' });
    expect(byExp.next().value).toEqual([3, 30]);
    now = 75;
    expect(byExp.next().value).toEqual([8, 80]);
  });

  test('count() on a TTL space counts only visible tuples, ALL included; len() and memory() count what is stored', () => {
    let now = 0;
    const space = new Space('len', { ttl: { field: 2, now: () => now } });
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    for (let i = 1; i <= 100; i++) space.insert([i, i]);
    const memory = space.memory();
    now = 60;
    expect(space.count()).toBe(40);
    expect(space.len()).toBe(100);
    expect(space.index.pk.len()).toBe(100);
    expect(space.memory()).toEqual(memory);
  });

  test('a space without ttl returns what is stored; space.ttl is undefined', () => {
    const space = new Space('plain');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1, 'x', 0]);
    expect(space.ttl).toBeUndefined();
    expect(space.get(1)).toEqual([1, 'x', 0]);
    expect(space.count()).toBe(1);
  });

  test('space.ttl is the frozen declaration with its defaults; the wall clock is the default now', () => {
    const space = new Space('decl', { ttl: { field: 3 } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(space.ttl).toEqual({ field: 3, unit: 's', now: undefined });
    expect(Object.isFrozen(space.ttl)).toBe(true);
    const sec = Date.now() / 1000;
    space.insert([1, 'past', sec - 10]);
    space.insert([2, 'future', sec + 3600]);
    expect(space.select().map((t) => t[0])).toEqual([2]);
    const ms = new Space('decl-ms', { ttl: { field: 2, unit: 'ms' } });
    ms.createIndex('pk', { parts: [[1, 'unsigned']] });
    ms.insert([1, Date.now() - 10]);
    ms.insert([2, Date.now() + 60_000]);
    ms.insert([3, sec + 10]);  // seconds in an 'ms' space: long past
    expect(ms.select().map((t) => t[0])).toEqual([2]);
  });
  test('on the wall clock (which the addon reads, no now passed) every read and iterator hides expired tuples', () => {
    for (const unit of ['s', 'ms'] as const) {
      const scale = unit === 's' ? 1 : 1000;
      const space = new Space(`wall-${unit}`, { ttl: { field: 3, unit } });
      space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
      space.createIndex('exp', { type: 'TREE', unique: false, parts: [[3, 'number']] });
      space.createIndex('name', { type: 'TREE', parts: [[2, 'string']] });
      const now = Date.now() / 1000;
      // Whole and fractional TTLs, past and future, near now and beyond the coarse clock's margin.
      const ttls = [now - 3600, Math.floor(now) - 2, now - 1, now + 3600, Math.floor(now) + 7200, now + 120];
      ttls.forEach((t, i) => space.insert([i + 1, `n${i + 1}`, unit === 's' ? t : Math.round(t * scale)]));
      const live = [4, 5, 6];
      const dead = [1, 2, 3];
      for (const id of live) expect(space.get(id)?.[0], `${unit} get ${id}`).toBe(id);
      for (const id of dead) expect(space.get(id), `${unit} get ${id}`).toBeUndefined();
      for (const id of dead) expect(space.index.name.get(`n${id}`), `${unit} name ${id}`).toBeUndefined();
      expect(space.select().map((t) => t[0]).sort(), unit).toEqual(live);
      expect(space.index.exp.select().map((t) => t[0]), unit).toEqual([6, 4, 5]);
      expect(space.count(), unit).toBe(3);
      expect(space.index.exp.count(), unit).toBe(3);
      expect(space.index.exp.min()?.[0], unit).toBe(6);
      expect(space.index.exp.max()?.[0], unit).toBe(5);
      expect([...space.index.name.pairs()].map((t) => t[0]), unit).toEqual(live);
      expect([...space.pairs()].map((t) => t[0]).sort(), unit).toEqual(live);
      expect(space.len(), unit).toBe(6);  // len() counts what is stored
      space.drop();
    }
  });
});

describe('writes on a TTL space', () => {
  function session(now: () => number): Space {
    const space = new Space('sessions', { ttl: { field: 3, now } });
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'string']] });
    space.createIndex('user', { type: 'TREE', unique: true, parts: [[2, 'string']] });
    return space;
  }

  test('insert over an expired primary key replaces it; over a live one it is ER_DUPLICATE_KEY', () => {
    let now = 100;
    const space = session(() => now);
    space.insert(['tok', 'ann', 150]);
    expect(codeOf(() => space.insert(['tok', 'bob', 300]))).toBe('ER_DUPLICATE_KEY');
    now = 150;
    expect(space.insert(['tok', 'bob', 300])).toEqual(['tok', 'bob', 300]);
    expect(space.get('tok')).toEqual(['tok', 'bob', 300]);
    expect(space.index.user.get('bob')).toEqual(['tok', 'bob', 300]);
    expect(space.len()).toBe(1);
    space.checkIntegrity();
  });

  test('insertMany over expired keys replaces them, all or nothing', () => {
    let now = 0;
    const space = session(() => now);
    space.insertMany([['a', 'ann', 10], ['b', 'bob', 20]]);
    now = 15;
    expect(codeOf(() => space.insertMany([['a', 'amy', 100], ['b', 'ben', 100]]))).toBe('ER_DUPLICATE_KEY');
    expect(space.len()).toBe(2);
    expect(space.index.user.select().map((t) => t[1])).toEqual(['bob']);
    now = 25;
    expect(space.insertMany([['a', 'amy', 100], ['b', 'ben', 100]])).toBe(2);
    expect(space.select().map((t) => t[1]).sort()).toEqual(['amy', 'ben']);
    space.checkIntegrity();
  });

  test('a transaction that inserted over an expired key and throws puts the expired tuple back', () => {
    let now = 0;
    const space = session(() => now);
    space.insert(['tok', 'ann', 10]);
    now = 20;
    expect(() => space.transaction(() => {
      space.insert(['tok', 'bob', 100]);
      throw new Error('undo');
    })).toThrow('undo');
    expect(space.len()).toBe(1);
    now = 0;
    expect(space.get('tok')).toEqual(['tok', 'ann', 10]);
    space.checkIntegrity();
  });

  test('an expired tuple still holds its secondary unique key, and delete/replace see what is stored', () => {
    let now = 0;
    const space = session(() => now);
    space.insert(['old', 'ann', 10]);
    now = 20;
    expect(codeOf(() => space.insert(['new', 'ann', 100]))).toBe('ER_DUPLICATE_KEY');
    expect(space.delete('old')).toEqual(['old', 'ann', 10]);
    space.insert(['new', 'ann', 100]);
    space.insert(['x', 'xavier', 5]);
    expect(space.replace(['x', 'xena', 200])).toEqual(['x', 'xena', 200]);
    expect(space.get('x')).toEqual(['x', 'xena', 200]);
  });
});

describe('the clock', () => {
  test('ttl.now() must return a number: a read with a broken clock throws ER_ILLEGAL_PARAMS and changes nothing', () => {
    let value: unknown = 5;
    const space = new Space('clock', { ttl: { field: 2, now: () => value as number } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1, 10]);
    for (value of ['5', NaN, undefined, null, 5n]) {
      expect(codeOf(() => space.get(1))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.select())).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.count())).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.index.pk.min())).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.pairs().next())).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.insert([2, 1]))).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(space.len()).toBe(1);
  });

  test('a clock that throws propagates its error', () => {
    const space = new Space('throws', { ttl: { field: 2, now: () => { throw new Error('clock down'); } } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(() => space.get(1)).toThrow('clock down');
  });
});

describe('bad ttl options', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['not an object', 3, /ttl: options must be an object/],
    ['null', null, /ttl: options must be an object/],
    ['an unknown key', { field: 1, units: 'ms' }, /unknown option 'units'/],
    ['no field', {}, /ttl.field must be a 1-based field number/],
    ['field 0', { field: 0 }, /ttl.field must be a 1-based field number.*got 0/],
    ['a fractional field', { field: 1.5 }, /got 1.5/],
    ['a string field', { field: '3' }, /got '3'/],
    ['a field past 65535', { field: 65536 }, /got 65536/],
    ['a bad unit', { field: 1, unit: 'h' }, /ttl.unit must be 's' or 'ms', got 'h'/],
    ['now not a function', { field: 1, now: 5 }, /ttl.now must be a function/],
  ];
  for (const [what, ttl, message] of cases) {
    test(`ER_ILLEGAL_PARAMS for ${what}`, () => {
      expect(codeOf(() => new Space('bad', { ttl } as never))).toBe('ER_ILLEGAL_PARAMS');
      expect(() => new Space('bad', { ttl } as never)).toThrow(message);
    });
  }
});

describe('expirationd on a TTL space', () => {
  useTaskTimers();

  function ttlTree(now: () => number, unit: 's' | 'ms' = 's'): Space {
    const space = new Space('daemon', { ttl: { field: 3, unit, now } });
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    return space;
  }

  test('a task takes field and now from the space and removes what reads already hide', () => {
    let now = 0;
    const space = ttlTree(() => now);
    for (let i = 1; i <= 50; i++) space.insert([i, 'x', i]);
    now = 20;
    expect(space.count()).toBe(30);
    expect(space.len()).toBe(50);
    const task = expirationd.start('ttl-defaults', space, { itIndex: 'exp' });
    for (let i = 0; i < 100 && space.len() > 30; i++) vi.advanceTimersToNextTimer();
    expect(space.len()).toBe(30);
    expect(space.index.exp.min()).toEqual([21, 'x', 21]);
    expect(task.stats().expired).toBe(20);
  });

  test('the unit comes from the space; explicit options win', () => {
    let nowMs = 5_000;
    const space = ttlTree(() => nowMs, 'ms');
    space.insertMany([[1, 'a', 1_000], [2, 'b', 4_000], [3, 'c', 9_000]]);
    let seen: number[] = [];
    expirationd.start('ttl-unit', space, { isExpired: (_t, now) => { seen.push(now); return false; } });
    vi.advanceTimersToNextTimer();
    expect(seen[0]).toBe(5_000);
    seen = [];
    const own = expirationd.start('ttl-own', space, { field: 3, now: () => 2_000 });
    for (let i = 0; i < 20 && own.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(space.len()).toBe(2);  // the task's own clock: only TTL 1000 was due at 2000
    expect(space.select().map((t) => t[0])).toEqual([3]);  // the space's clock (5000) hides TTL 4000
    nowMs = 3_000;
    expect(space.count()).toBe(2);
  });

  test('an explicit unit other than the space\'s takes the wall clock in that unit', () => {
    const space = ttlTree(() => 0, 'ms');
    space.insertMany([[1, 'past', Date.now() / 1000 - 100], [2, 'future', Date.now() / 1000 + 3600]]);
    const task = expirationd.start('ttl-seconds', space, { unit: 's' });
    for (let i = 0; i < 20 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(space.select().map((t) => t[0])).toEqual([2]);
  });

  test('a task with its own isExpired does not take the space\'s TTL field: the TTL index is refused as its itIndex, the pk walk works', () => {
    const space = ttlTree(() => 20);
    space.insertMany([[1, 'a', 10], [2, 'b', 30]]);
    const isExpired = (t: unknown[]): boolean => t[0] === 2;
    // isExpired decides alone: no TTL field, so no early break on the TTL tree.
    expect(codeOf(() => expirationd.start('ttl-pred-tree', space, { itIndex: 'exp', isExpired }))).toBe('ER_ILLEGAL_PARAMS');
    expect(() => expirationd.start('ttl-pred-tree', space, { itIndex: 'exp', isExpired })).toThrow(/not the TTL field \(none given: with isExpired, field is not taken from the space\)/);
    const task = expirationd.start('ttl-pred', space, { isExpired });
    for (let i = 0; i < 20 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(space.len()).toBe(1);   // 2 went by the predicate although its TTL is live; 1 is stored, hidden
    expect(space.select()).toEqual([]);
  });

  test('a task may expire by another field than the space declares', () => {
    const space = new Space('other', { ttl: { field: 3, now: () => 10 } });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insertMany([[1, 5, 100], [2, 50, 1]]);
    expect(space.select()).toEqual([[1, 5, 100]]);
    const task = expirationd.start('ttl-field', space, { field: 2 });
    for (let i = 0; i < 20 && task.stats().fullScans < 1; i++) vi.advanceTimersToNextTimer();
    expect(space.len()).toBe(1);
    expect(space.select()).toEqual([]);
  });
});
