// transaction(fn), insertMany and single statements are atomic: a failure undoes every change in
// every index; nested transactions undo only their own changes.
import { describe, expect, it } from 'vitest';
import { CappedError, Space, type Tuple } from '../src/index.js';
import { codeOf } from './support/errors.js';

// pk TREE on field 1, a unique TREE on field 2, a unique HASH on field 3, a non-unique TREE on field 4.
function accounts(): Space {
  const space = new Space('accounts');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('email', { parts: [[2, 'string']] });
  space.createIndex('phone', { type: 'HASH', parts: [[3, 'unsigned']] });
  space.createIndex('city', { unique: false, parts: [[4, 'string']] });
  for (let i = 1; i <= 20; i++) space.insert([i, `u${i}@x`, 5550000 + i, i % 2 ? 'oslo' : 'rome']);
  return space;
}

function snapshot(space: Space): unknown {
  return space.indexes.map((index) => {
    const rows = index.select();
    return index.type === 'HASH' ? rows.map((t) => JSON.stringify(t)).sort() : rows;
  });
}

class Boom extends Error {}

describe('transaction', () => {
  it('commits and returns what fn returns', () => {
    const space = accounts();
    const result = space.transaction(() => {
      space.insert([100, 'new@x', 1, 'oslo']);
      space.delete(1);
      return 'done';
    });
    expect(result).toBe('done');
    expect(space.get(100)).toEqual([100, 'new@x', 1, 'oslo']);
    expect(space.get(1)).toBeUndefined();
    expect(space.len()).toBe(20);
    space.checkIntegrity();
  });

  it('rolls back inserts, replaces, deletes and insertMany in every index when fn throws', () => {
    const space = accounts();
    const before = snapshot(space);
    const boom = new Boom('boom');
    let caught: unknown;
    try {
      space.transaction(() => {
        space.insert([100, 'new@x', 1, 'paris']);
        space.replace([2, 'changed@x', 2, 'paris']);
        space.delete(3);
        space.delete(100);
        space.insert([100, 'again@x', 3, 'paris']);
        space.insertMany([[101, 'a@x', 4, 'paris'], [102, 'b@x', 5, 'oslo']]);
        space.replace([3, 'u3@x', 5550003, 'berlin']);
        expect(space.len()).toBe(23);
        expect(space.index.city.count('paris')).toBe(3);
        throw boom;
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBe(boom);
    expect(snapshot(space)).toEqual(before);
    expect(space.index.email.get('u2@x')).toEqual([2, 'u2@x', 5550002, 'rome']);
    expect(space.index.email.get('changed@x')).toBeUndefined();
    expect(space.index.phone.get(5550003)).toEqual([3, 'u3@x', 5550003, 'oslo']);
    expect(space.index.city.select('paris')).toEqual([]);
    expect(space.index.city.select('berlin')).toEqual([]);
    space.checkIntegrity();
  });

  it('rolls back a truncate', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(() => space.transaction(() => {
      space.truncate();
      space.insert([1, 'only@x', 1, 'oslo']);
      throw new Boom();
    })).toThrow(Boom);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('rolls back large changes that reshape the indexes', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(() => space.transaction(() => {
      for (let i = 1000; i < 6000; i++) space.insert([i, `m${i}@x`, i, `c${i % 17}`]);
      for (let i = 1; i <= 20; i += 2) space.delete(i);
      for (let i = 1000; i < 6000; i += 3) space.delete(i);
      throw new Boom();
    })).toThrow(Boom);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('an inner transaction that throws undoes only its own changes', () => {
    const space = accounts();
    space.transaction(() => {
      space.insert([100, 'outer@x', 1, 'oslo']);
      expect(() => space.transaction(() => {
        space.insert([101, 'inner@x', 2, 'oslo']);
        space.delete(100);
        space.delete(1);
        throw new Boom();
      })).toThrow(Boom);
      expect(space.get(100)).toEqual([100, 'outer@x', 1, 'oslo']);
      expect(space.get(1)).toBeDefined();
      space.insert([102, 'outer2@x', 3, 'oslo']);
    });
    expect(space.get(100)).toBeDefined();
    expect(space.get(101)).toBeUndefined();
    expect(space.get(102)).toBeDefined();
    expect(space.get(1)).toBeDefined();
    expect(space.len()).toBe(22);
    space.checkIntegrity();
  });

  it('an outer transaction that throws undoes the inner committed ones too', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(() => space.transaction(() => {
      space.transaction(() => {
        space.insert([100, 'a@x', 1, 'oslo']);
        space.transaction(() => space.delete(5));
      });
      space.transaction(() => space.replace([6, 'six@x', 6, 'rome']));
      expect(space.get(100)).toBeDefined();
      throw new Boom();
    })).toThrow(Boom);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('deeply nested transactions each undo their own level', () => {
    const space = accounts();
    const depth = 50;
    const nest = (level: number): void => {
      space.insert([1000 + level, `l${level}@x`, 1000 + level, 'deep']);
      if (level === depth) throw new Boom();
      try {
        space.transaction(() => nest(level + 1));
      } catch (error) {
        if (!(error instanceof Boom) || level !== 10) throw error;
      }
    };
    // The deepest level throws; every level lets it through up to level 10, which swallows it.
    space.transaction(() => nest(1));
    const kept = space.index.city.select('deep').map((t) => (t[0] as number) - 1000);
    expect(kept).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    space.checkIntegrity();
  });

  it('refuses a fn that returns a promise and undoes its synchronous changes', async () => {
    const space = accounts();
    const before = snapshot(space);
    let code = '';
    try {
      space.transaction(() => {
        space.insert([100, 'p@x', 1, 'oslo']);
        return Promise.resolve(1);
      });
    } catch (error) {
      code = (error as CappedError).code;
    }
    expect(code).toBe('ER_TRANSACTION');
    expect(snapshot(space)).toEqual(before);
    let code2 = '';
    try {
      space.transaction(async () => {
        space.insert([101, 'q@x', 2, 'oslo']);
      });
    } catch (error) {
      code2 = (error as CappedError).code;
    }
    expect(code2).toBe('ER_TRANSACTION');
    await Promise.resolve();
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('refuses createIndex inside a transaction', () => {
    const space = accounts();
    space.transaction(() => {
      expect(codeOf(() => space.createIndex('x', { unique: false, parts: [[4, 'string']] }))).toBe('ER_TRANSACTION');
    });
    expect(space.indexes.length).toBe(4);
    space.checkIntegrity();
  });

  it('a failed statement inside a transaction does not abort it', () => {
    const space = accounts();
    space.transaction(() => {
      space.insert([100, 'a@x', 1, 'oslo']);
      expect(codeOf(() => space.insert([101, 'a@x', 2, 'oslo']))).toBe('ER_DUPLICATE_KEY');
      space.insert([102, 'b@x', 3, 'oslo']);
    });
    expect(space.get(100)).toBeDefined();
    expect(space.get(101)).toBeUndefined();
    expect(space.get(102)).toBeDefined();
    space.checkIntegrity();
  });

  it('refuses a non-function', () => {
    const space = accounts();
    expect(codeOf(() => space.transaction(5 as unknown as () => void))).toBe('ER_ILLEGAL_PARAMS');
  });
});

describe('insertMany', () => {
  it('inserts every tuple and returns the count', () => {
    const space = accounts();
    const batch: Tuple[] = [];
    for (let i = 100; i < 1100; i++) batch.push([i, `b${i}@x`, i, 'x']);
    expect(space.insertMany(batch)).toBe(1000);
    expect(space.len()).toBe(1020);
    expect(space.index.city.count('x')).toBe(1000);
    expect(space.insertMany([])).toBe(0);
    space.checkIntegrity();
  });

  it('is all or nothing: a duplicate inside the batch or against the space inserts nothing', () => {
    const space = accounts();
    const before = snapshot(space);
    const batch = (extra: Tuple): Tuple[] => [[100, 'a@x', 1, 'n'], [101, 'b@x', 2, 'n'], [102, 'c@x', 3, 'n'], extra];
    expect(codeOf(() => space.insertMany(batch([101, 'd@x', 4, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([103, 'b@x', 4, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([103, 'd@x', 3, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([5, 'd@x', 4, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([103, 'u7@x', 4, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([103, 'd@x', 5550009, 'n'])))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => space.insertMany(batch([103, 'd@x', 4])))).toBe('ER_FIELD_MISSING');
    expect(codeOf(() => space.insertMany(batch([103, 'd@x', -4, 'n'])))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => space.insertMany([...batch([103, 'd@x', 4, 'n']), 'nope' as unknown as Tuple]))).toBe('ER_TUPLE_FORMAT');
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('a failure late in a large batch inserts nothing', () => {
    const space = accounts();
    const before = snapshot(space);
    const batch: Tuple[] = [];
    for (let i = 100; i < 20100; i++) batch.push([i, `b${i}@x`, i, `c${i % 10}`]);
    batch.push([20100, 'b100@x', 20100, 'c']);
    expect(codeOf(() => space.insertMany(batch))).toBe('ER_DUPLICATE_KEY');
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('is undone with the transaction around it', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(() => space.transaction(() => {
      space.insertMany([[100, 'a@x', 1, 'n'], [101, 'b@x', 2, 'n']]);
      throw new Boom();
    })).toThrow(Boom);
    expect(snapshot(space)).toEqual(before);
  });
});

describe('single statements are atomic', () => {
  it('a duplicate in the second unique index leaves the first untouched', () => {
    const space = accounts();
    const before = snapshot(space);
    // email (index 1) would accept it; phone (index 2) holds 5550004 already.
    expect(codeOf(() => space.insert([100, 'fresh@x', 5550004, 'oslo']))).toBe('ER_DUPLICATE_KEY');
    expect(space.index.email.get('fresh@x')).toBeUndefined();
    expect(snapshot(space)).toEqual(before);
    // The same for replace of an existing tuple: its old entries stay, no new ones appear.
    expect(codeOf(() => space.replace([1, 'fresh@x', 5550004, 'paris']))).toBe('ER_DUPLICATE_KEY');
    expect(space.index.email.get('fresh@x')).toBeUndefined();
    expect(space.index.email.get('u1@x')).toEqual([1, 'u1@x', 5550001, 'oslo']);
    expect(space.index.city.select('paris')).toEqual([]);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
    // The key that was refused is still free for a valid tuple.
    space.insert([100, 'fresh@x', 1, 'oslo']);
    expect(space.index.email.get('fresh@x')).toEqual([100, 'fresh@x', 1, 'oslo']);
    space.checkIntegrity();
  });

  it('a type error in a later index leaves the earlier ones untouched', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(codeOf(() => space.insert([100, 'fresh@x', 1, 42]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => space.replace([1, 'fresh@x', 1]))).toBe('ER_FIELD_MISSING');
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });

  it('a failed statement inside a transaction that later throws leaves nothing behind', () => {
    const space = accounts();
    const before = snapshot(space);
    expect(() => space.transaction(() => {
      space.insert([100, 'a@x', 1, 'n']);
      expect(codeOf(() => space.insert([101, 'b@x', 1, 'n']))).toBe('ER_DUPLICATE_KEY');
      throw new Boom();
    })).toThrow(Boom);
    expect(snapshot(space)).toEqual(before);
    space.checkIntegrity();
  });
});
