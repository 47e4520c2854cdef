// pairs(): a lazy iterator that stays valid while the space changes between steps (TREE re-seeks
// past the last returned tuple; HASH never skips a tuple that lives through the whole walk), and
// min/max/count/len.
import { describe, expect, it } from 'vitest';
import { Space, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';

function tree(n: number, step = 10): Space {
  const space = new Space('tree');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('grp', { unique: false, parts: [[2, 'unsigned']] });
  for (let i = 1; i <= n; i++) space.insert([i * step, i % 3]);
  return space;
}

const first = (it: Iterator<Tuple>) => it.next().value?.[0];

describe('pairs on TREE', () => {
  it('is lazy: it yields tuples one at a time, the same as select', () => {
    const space = tree(100);
    const it = space.pairs();
    expect(it.next()).toEqual({ done: false, value: [10, 1] });
    expect([...it].length).toBe(99);
    expect(it.next()).toEqual({ done: true, value: undefined });
    expect([...space.index.grp.pairs(1)]).toEqual(space.index.grp.select(1));
    expect([...space.pairs(500, { iterator: 'LT' })]).toEqual(space.select(500, { iterator: 'LT' }));
    expect([...space.pairs(505, { iterator: 'GE' })]).toEqual(space.select(505, { iterator: 'GE' }));
    expect([...space.pairs()]).toEqual(space.select());
  });

  it('sees tuples inserted ahead of it and not those inserted behind it', () => {
    const space = tree(5);
    const it = space.pairs();
    expect(first(it)).toBe(10);
    expect(first(it)).toBe(20);
    space.insert([15, 0]);
    space.insert([25, 0]);
    space.insert([1000, 0]);
    expect([...it].map((t) => t[0])).toEqual([25, 30, 40, 50, 1000]);
  });

  it('does not yield tuples deleted before it reaches them', () => {
    const space = tree(10);
    const it = space.pairs();
    expect(first(it)).toBe(10);
    space.delete(20);
    space.delete(40);
    expect(first(it)).toBe(30);
    space.delete(100);
    expect([...it].map((t) => t[0])).toEqual([50, 60, 70, 80, 90]);
  });

  it('continues after the tuple it just returned is deleted', () => {
    const space = tree(100);
    const seen: number[] = [];
    for (const t of space.pairs()) {
      seen.push(t[0] as number);
      space.delete(t[0] as number);
    }
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => (i + 1) * 10));
    expect(space.len()).toBe(0);
    space.checkIntegrity();
  });

  it('continues after the tuple it just returned is replaced', () => {
    const space = tree(10);
    const seen: Tuple[] = [];
    for (const t of space.pairs()) {
      seen.push(t);
      space.replace([t[0], t[1], 'updated']);
    }
    expect(seen.map((t) => t[0])).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(seen.every((t) => t.length === 2)).toBe(true);
    expect(space.select().every((t) => t[2] === 'updated')).toBe(true);
  });

  it('yields the replaced version of a tuple it has not reached yet', () => {
    const space = tree(5);
    const it = space.pairs();
    expect(first(it)).toBe(10);
    space.replace([30, 2, 'new']);
    expect(it.next().value).toEqual([20, 2]);
    expect(it.next().value).toEqual([30, 2, 'new']);
  });

  it('walks down (LE/LT/REQ) while the space changes', () => {
    const space = tree(10);
    const it = space.pairs(75, { iterator: 'LT' });
    expect(first(it)).toBe(70);
    space.delete(70);
    space.delete(60);
    space.insert([65, 0]);
    space.insert([72, 0]);
    expect(first(it)).toBe(65);
    space.insert([1, 0]);
    expect([...it].map((t) => t[0])).toEqual([50, 40, 30, 20, 10, 1]);
  });

  it('stays inside its key on EQ and REQ while the space changes', () => {
    const space = tree(30);
    const grp = space.index.grp;
    const it = grp.pairs(1);
    expect(first(it)).toBe(10);
    space.insert([11, 1]);
    space.insert([5, 1]);
    space.delete(40);
    space.insert([12, 2]);
    const rest = [...it].map((t) => t[0]);
    expect(rest[0]).toBe(11);
    expect(rest).toEqual(grp.select(1).map((t) => t[0]).filter((k) => (k as number) > 10));
    const down = grp.pairs(2, { iterator: 'REQ' });
    expect(first(down)).toBe(290);
    space.delete(260);
    space.insert([265, 2]);
    space.insert([295, 2]);
    expect(first(down)).toBe(265);
  });

  it('a non-unique index re-seeks by key and primary key among equal keys', () => {
    const space = new Space('nu');
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    const grp = space.createIndex('grp', { unique: false, parts: [[2, 'string']] });
    for (let i = 0; i < 50; i++) space.insert([i, 'same']);
    const seen: number[] = [];
    const it = grp.pairs('same');
    for (let step = 0; ; step++) {
      // The next tuple is always the first one still in the index past the last one returned.
      // (Every tuple has the key 'same', so primary key order is the index order.)
      const expected = seen.length === 0 ? space.select(undefined, { limit: 1 })[0]
        : space.select(seen[seen.length - 1], { iterator: 'GT', limit: 1 })[0];
      const r = it.next();
      expect(r.value).toEqual(expected);
      if (r.done) break;
      const id = r.value[0] as number;
      seen.push(id);
      space.delete(id);
      if (step % 5 === 0) space.insert([1000 + step, 'same']);
      if (step % 7 === 0) space.delete(id + 1);
    }
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThan(50);
    space.checkIntegrity();
  });

  it('ends after truncate, and sees tuples inserted after the truncate past its position', () => {
    const space = tree(10);
    const it = space.pairs();
    expect(first(it)).toBe(10);
    space.truncate();
    expect(it.next().done).toBe(true);

    const space2 = tree(10);
    const it2 = space2.pairs();
    expect(first(it2)).toBe(10);
    expect(first(it2)).toBe(20);
    space2.truncate();
    space2.insert([5, 0]);
    space2.insert([25, 0]);
    expect([...it2].map((t) => t[0])).toEqual([25]);
  });

  it('survives heavy churn that reshapes the tree between steps', () => {
    const space = tree(2000, 2);
    const it = space.pairs();
    let last = 0;
    let n = 0;
    for (;;) {
      // The next tuple is always the first one still in the index past the last one returned.
      const expected = space.select(last, { iterator: 'GT', limit: 1 })[0];
      const r = it.next();
      expect(r.value).toEqual(expected);
      if (r.done) break;
      const k = r.value[0] as number;
      expect(k).toBeGreaterThan(last);
      last = k;
      n++;
      // Delete a block right behind and ahead, and refill some odd keys ahead.
      for (let d = Math.max(0, k - 50); d < k + 20; d += 2) space.delete(d);
      if (k < 3000) for (let a = k + 41; a < k + 61; a += 2) if (space.get(a) === undefined) space.insert([a, 1]);
    }
    expect(n).toBeGreaterThan(100);
    space.checkIntegrity();
  });

  it('an early break (return) ends the iterator', () => {
    const space = tree(10);
    const it = space.pairs();
    for (const t of it) if (t[0] === 30) break;
    expect(it.next().done).toBe(true);
  });
});

describe('pairs on HASH', () => {
  function hash(n: number): Space {
    const space = new Space('hash');
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    for (let i = 0; i < n; i++) space.insert([i]);
    return space;
  }

  it('yields every tuple once when nothing changes', () => {
    const space = hash(1000);
    const ids = [...space.pairs()].map((t) => t[0] as number);
    expect(ids.length).toBe(1000);
    expect(new Set(ids).size).toBe(1000);
    expect([...space.pairs(5)]).toEqual([[5]]);
    expect([...space.pairs(5000)]).toEqual([]);
  });

  it('never skips a tuple that lives through the whole walk while inserts force rehashes', () => {
    const space = hash(100);
    const it = space.pairs();
    const seen = new Set<number>();
    let next = 100;
    for (let r = it.next(); !r.done; r = it.next()) {
      seen.add(r.value[0] as number);
      // Grow the table a lot between steps.
      for (let j = 0; j < 20 && next < 20000; j++) space.insert([next++]);
    }
    for (let i = 0; i < 100; i++) expect(seen.has(i), `tuple ${i}`).toBe(true);
    expect(space.len()).toBe(next);
  });

  it('never yields a tuple after it was deleted, and keeps the survivors', () => {
    const space = hash(3000);
    const it = space.pairs();
    const deleted = new Set<number>();
    const seen = new Set<number>();
    let step = 0;
    for (let r = it.next(); !r.done; r = it.next()) {
      const id = r.value[0] as number;
      expect(deleted.has(id), `deleted tuple ${id} yielded`).toBe(false);
      seen.add(id);
      // Delete a few tuples that may or may not have been seen yet, including the current one.
      for (const d of [id, (id * 7 + 3) % 3000, (step * 13) % 3000]) {
        if (d % 2 === 0 && space.delete(d) !== undefined) deleted.add(d);
      }
      step++;
    }
    for (let i = 1; i < 3000; i += 2) expect(seen.has(i), `odd tuple ${i}`).toBe(true);
  });

  it('sees a replaced tuple at most in its latest version and ends after truncate', () => {
    const space = hash(200);
    const it = space.pairs();
    const r = it.next();
    expect(r.done).toBe(false);
    for (let i = 0; i < 200; i++) space.replace([i, 'v2']);
    for (let x = it.next(); !x.done; x = it.next()) expect(x.value[1]).toBe('v2');
    const it2 = space.pairs();
    it2.next();
    space.truncate();
    expect(it2.next().done).toBe(true);
  });
});

describe('min, max, count and len', () => {
  it('min and max return the first and last tuples, or undefined when empty', () => {
    const space = tree(0);
    expect(space.index.pk.min()).toBeUndefined();
    expect(space.index.pk.max()).toBeUndefined();
    for (const k of [50, 10, 90, 30]) space.insert([k, k % 3]);
    expect(space.index.pk.min()).toEqual([10, 1]);
    expect(space.index.pk.max()).toEqual([90, 0]);
    expect(space.index.grp.min()).toEqual([30, 0]);
    expect(space.index.grp.max()).toEqual([50, 2]);
  });

  it('min and max with a key are the first and last tuples equal to it (prefix on multipart)', () => {
    const space = tree(30);
    const grp = space.index.grp;
    expect(grp.min(1)).toEqual([10, 1]);
    expect(grp.max(1)).toEqual([280, 1]);
    expect(grp.min(5)).toBeUndefined();
    expect(space.index.pk.min(200)).toEqual([200, 2]);
    expect(space.index.pk.max(205)).toBeUndefined();
    const m = new Space('m');
    const pk = m.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
    for (const a of [1, 2, 3]) for (const b of ['x', 'a', 'é']) m.insert([a, b]);
    expect(pk.min(2)).toEqual([2, 'a']);
    expect(pk.max(2)).toEqual([2, 'é']);
    expect(pk.min([2, 'x'])).toEqual([2, 'x']);
    expect(pk.max([4])).toBeUndefined();
  });

  it('min and max refuse HASH', () => {
    const space = new Space('h');
    const pk = space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.insert([1]);
    expect(codeOf(() => pk.min())).toBe('ER_UNSUPPORTED');
    expect(codeOf(() => pk.max())).toBe('ER_UNSUPPORTED');
  });

  it('count agrees with select for every iterator; len counts every tuple', () => {
    const space = tree(60);
    for (const index of [space.index.pk, space.index.grp]) {
      expect(index.len()).toBe(60);
      for (const iterator of ['EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'] as const) {
        for (const key of [undefined, 0, 1, 2, 3, 100, 105, 600, 601]) {
          expect(index.count(key, { iterator }), `${index.name} ${iterator} ${key}`)
            .toBe(index.select(key, { iterator }).length);
        }
      }
    }
    expect(space.count()).toBe(60);
    expect(space.count(1, { iterator: 'GE' })).toBe(60);
    expect(space.index.grp.count(1)).toBe(20);
    space.delete(10);
    expect(space.index.grp.count(1)).toBe(19);
    expect(space.index.grp.len()).toBe(59);
  });
});
