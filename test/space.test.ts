// Space: construction, indexes (including building one on a non-empty space), and the data
// operations insert/replace/get/delete/len/truncate/drop/memory.
import { describe, expect, it } from 'vitest';
import { Space, expirationd } from '../src/index.js';
import { codeOf } from './support/errors.js';

function users(): Space {
  const space = new Space('users');
  space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
  return space;
}

describe('new Space()', () => {
  it('creates an empty space without indexes', () => {
    const space = new Space('tester');
    expect(space.name).toBe('tester');
    expect(space.indexes).toEqual([]);
    expect(space.len()).toBe(0);
    expect(space.dropped).toBe(false);
  });

  it('accepts maxTupleSize and refuses tuples over it', () => {
    const space = new Space('small', { maxTupleSize: 32 });
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1, 'x'.repeat(20)]);
    expect(codeOf(() => space.insert([2, 'x'.repeat(40)]))).toBe('ER_TUPLE_TOO_LARGE');
    expect(space.len()).toBe(1);
  });

  it('refuses an empty or non-string name and a bad maxTupleSize', () => {
    expect(codeOf(() => new Space(''))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => new Space(5 as unknown as string))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => new Space('x', { maxTupleSize: -1 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => new Space('x', { maxTupleSize: 0 }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => new Space('x', { maxTupleSize: 1.5 }))).toBe('ER_ILLEGAL_PARAMS');
  });
});

describe('createIndex', () => {
  it('makes the first index the primary and fills in defaults', () => {
    const space = new Space('s');
    const pk = space.createIndex('primary', { parts: [[1, 'unsigned']] });
    expect(pk.name).toBe('primary');
    expect(pk.id).toBe(0);
    expect(pk.type).toBe('TREE');
    expect(pk.unique).toBe(true);
    expect(pk.parts).toEqual([{ field: 1, type: 'unsigned' }]);
    expect(pk.space).toBe(space);
    expect(space.index.primary).toBe(pk);
    expect(space.index[0]).toBe(pk);
    expect(space.indexes).toEqual([pk]);
  });

  it('accepts both part notations and keeps the declared order of parts', () => {
    const space = new Space('s');
    space.createIndex('pk', { type: 'HASH', parts: [{ field: 2, type: 'string' }, [1, 'integer']] });
    const exp = space.createIndex('exp', { type: 'TREE', unique: false, parts: [{ field: 3, type: 'number' }] });
    expect(space.index.pk.parts).toEqual([{ field: 2, type: 'string' }, { field: 1, type: 'integer' }]);
    expect(space.index.pk.type).toBe('HASH');
    expect(exp.id).toBe(1);
    expect(exp.unique).toBe(false);
    expect(space.index[1]).toBe(exp);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp']);
    space.insert([7, 'seven', 1.5]);
    expect(space.get(['seven', 7])).toEqual([7, 'seven', 1.5]);
  });

  it('builds a secondary index from the tuples already in the space', () => {
    const space = users();
    for (let i = 0; i < 1000; i++) space.insert([i, `name${i % 10}`, 1000 - i]);
    const byAge = space.createIndex('age', { parts: [[3, 'unsigned']] });
    const byName = space.createIndex('name', { unique: false, parts: [[2, 'string']] });
    expect(byAge.len()).toBe(1000);
    expect(byName.len()).toBe(1000);
    expect(byAge.get(1)).toEqual([999, 'name9', 1]);
    expect(byAge.select(undefined, { limit: 3 })).toEqual([[999, 'name9', 1], [998, 'name8', 2], [997, 'name7', 3]]);
    const named3 = byName.select('name3');
    expect(named3.length).toBe(100);
    expect(named3.map((t) => t[0])).toEqual(Array.from({ length: 100 }, (_, k) => 3 + 10 * k));
    space.checkIntegrity();
    // The new indexes are maintained from now on.
    space.insert([5000, 'name3', 5000]);
    expect(byName.count('name3')).toBe(101);
    expect(byAge.max()).toEqual([5000, 'name3', 5000]);
    space.checkIntegrity();
  });

  it('fails without a change when the existing tuples cannot be indexed', () => {
    const space = users();
    space.insert([1, 'a', 10]);
    space.insert([2, 'b', 10]);
    space.insert([3, 'c']);
    const before = space.select();
    expect(codeOf(() => space.createIndex('v', { parts: [[3, 'unsigned']] }))).toBe('ER_FIELD_MISSING');
    expect(codeOf(() => space.createIndex('v', { parts: [[2, 'unsigned']] }))).toBe('ER_FIELD_TYPE');
    space.replace([3, 'c', 11]);
    expect(codeOf(() => space.createIndex('v', { parts: [[3, 'unsigned']] }))).toBe('ER_DUPLICATE_KEY');
    expect(space.indexes.length).toBe(1);
    expect(space.index.v).toBeUndefined();
    expect(space.index[1]).toBeUndefined();
    expect(space.select()).toEqual([[1, 'a', 10], [2, 'b', 10], [3, 'c', 11]]);
    expect(before.length).toBe(3);
    space.checkIntegrity();
    // The failed attempts left nothing behind: the same name works once the data allows it.
    space.replace([2, 'b', 12]);
    const v = space.createIndex('v', { parts: [[3, 'unsigned']] });
    expect(v.id).toBe(1);
    expect(v.select()).toEqual([[1, 'a', 10], [3, 'c', 11], [2, 'b', 12]]);
    space.insert([4, 'd', 13]);
    expect(v.get(13)).toEqual([4, 'd', 13]);
    space.checkIntegrity();
  });

  it('keeps a failed build from disturbing the indexes that exist', () => {
    const space = users();
    space.createIndex('name', { unique: false, parts: [[2, 'string']] });
    for (let i = 0; i < 500; i++) space.insert([i, `n${i % 7}`, i % 250]);
    expect(codeOf(() => space.createIndex('mod', { parts: [[3, 'unsigned']] }))).toBe('ER_DUPLICATE_KEY');
    expect(space.indexes.map((i) => i.name)).toEqual(['primary', 'name']);
    expect(space.index.name.count('n0')).toBe(72);
    space.checkIntegrity();
    space.insert([1000, 'n0', 0]);
    expect(space.index.name.count('n0')).toBe(73);
    space.checkIntegrity();
  });
});

describe('data operations', () => {
  it('insert returns the tuple and stores a copy', () => {
    const space = users();
    const tuple = [1, 'ann', { tags: ['a', 'b'] }];
    expect(space.insert(tuple)).toBe(tuple);
    tuple[1] = 'changed';
    expect(space.get(1)).toEqual([1, 'ann', { tags: ['a', 'b'] }]);
    const got = space.get(1)!;
    got[1] = 'mutated';
    expect(space.get(1)).toEqual([1, 'ann', { tags: ['a', 'b'] }]);
  });

  it('stores any MessagePack value in fields that are not indexed', () => {
    const space = users();
    const tuple = [1, null, true, -3, 1.25, 'ü€😀', Buffer.from([0, 1, 255]), { a: 1, b: [1, { c: 'd' }] }, [], ''];
    space.insert(tuple);
    expect(space.get(1)).toEqual(tuple);
    expect(space.select()).toEqual([tuple]);
  });

  it('insert refuses a duplicate primary key and keeps the first tuple', () => {
    const space = users();
    space.insert([1, 'first']);
    expect(codeOf(() => space.insert([1, 'second']))).toBe('ER_DUPLICATE_KEY');
    expect(space.get(1)).toEqual([1, 'first']);
    expect(space.len()).toBe(1);
  });

  it('replace inserts a new tuple or replaces the one with the same primary key', () => {
    const space = users();
    const byName = space.createIndex('name', { unique: false, parts: [[2, 'string']] });
    expect(space.replace([1, 'a'])).toEqual([1, 'a']);
    expect(space.len()).toBe(1);
    space.replace([1, 'b']);
    expect(space.len()).toBe(1);
    expect(space.get(1)).toEqual([1, 'b']);
    expect(byName.select('a')).toEqual([]);
    expect(byName.select('b')).toEqual([[1, 'b']]);
    space.checkIntegrity();
  });

  it('replace keeps unique secondary keys unique, but may keep its own', () => {
    const space = users();
    const email = space.createIndex('email', { parts: [[2, 'string']] });
    space.insert([1, 'a@x']);
    space.insert([2, 'b@x']);
    expect(codeOf(() => space.replace([1, 'b@x']))).toBe('ER_DUPLICATE_KEY');
    expect(space.select()).toEqual([[1, 'a@x'], [2, 'b@x']]);
    space.replace([1, 'a@x', 'more']);
    expect(email.get('a@x')).toEqual([1, 'a@x', 'more']);
    space.replace([2, 'c@x']);
    expect(email.get('b@x')).toBeUndefined();
    expect(email.get('c@x')).toEqual([2, 'c@x']);
    space.checkIntegrity();
  });

  it('get and delete take a scalar or an array key and return undefined when absent', () => {
    const space = users();
    space.insert([1, 'a']);
    space.insert([2, 'b']);
    expect(space.get(1)).toEqual([1, 'a']);
    expect(space.get([2])).toEqual([2, 'b']);
    expect(space.get(3)).toBeUndefined();
    expect(space.delete(3)).toBeUndefined();
    expect(space.delete([1])).toEqual([1, 'a']);
    expect(space.delete(1)).toBeUndefined();
    expect(space.get(1)).toBeUndefined();
    expect(space.len()).toBe(1);
  });

  it('delete removes the tuple from every index', () => {
    const space = users();
    const byName = space.createIndex('name', { unique: false, parts: [[2, 'string']] });
    const email = space.createIndex('email', { type: 'TREE', parts: [[3, 'string']] });
    space.insert([1, 'ann', 'ann@x']);
    space.insert([2, 'ann', 'ann2@x']);
    expect(space.delete(1)).toEqual([1, 'ann', 'ann@x']);
    expect(byName.select('ann')).toEqual([[2, 'ann', 'ann2@x']]);
    expect(email.get('ann@x')).toBeUndefined();
    expect(byName.len()).toBe(1);
    expect(email.len()).toBe(1);
    space.insert([3, 'bob', 'ann@x']);
    expect(email.get('ann@x')).toEqual([3, 'bob', 'ann@x']);
    space.checkIntegrity();
  });

  it('delete on a multipart primary key needs the full key', () => {
    const space = new Space('m');
    space.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
    space.insert([1, 'a']);
    space.insert([1, 'b']);
    expect(space.delete([1, 'a'])).toEqual([1, 'a']);
    expect(space.select()).toEqual([[1, 'b']]);
    expect(codeOf(() => space.delete(1))).toBe('ER_KEY_PART_COUNT');
    expect(space.len()).toBe(1);
  });

  it('len counts tuples on the space and on every index', () => {
    const space = users();
    const sec = space.createIndex('sec', { unique: false, parts: [[2, 'unsigned']] });
    for (let i = 0; i < 100; i++) space.insert([i, i % 3]);
    expect(space.len()).toBe(100);
    expect(space.index.primary.len()).toBe(100);
    expect(sec.len()).toBe(100);
    for (let i = 0; i < 100; i += 2) space.delete(i);
    expect(space.len()).toBe(50);
    expect(sec.len()).toBe(50);
  });

  it('truncate removes every tuple and keeps the indexes working', () => {
    const space = users();
    const sec = space.createIndex('sec', { unique: false, parts: [[2, 'unsigned']] });
    for (let i = 0; i < 1000; i++) space.insert([i, i % 3]);
    space.truncate();
    expect(space.len()).toBe(0);
    expect(sec.len()).toBe(0);
    expect(space.select()).toEqual([]);
    expect(sec.select(1)).toEqual([]);
    expect(space.indexes.map((i) => i.name)).toEqual(['primary', 'sec']);
    space.insert([1, 1]);
    expect(sec.select(1)).toEqual([[1, 1]]);
    space.checkIntegrity();
  });

  it('memory reports native bytes that grow with data and shrink after truncate', () => {
    const space = users();
    space.createIndex('sec', { unique: false, parts: [[2, 'unsigned']] });
    const empty = space.memory();
    expect(empty.total).toBe(empty.tuples + empty.indexes);
    for (let i = 0; i < 20000; i++) space.insert([i, i % 100, 'payload'.repeat(4)]);
    const full = space.memory();
    expect(full.total).toBe(full.tuples + full.indexes);
    expect(full.tuples).toBeGreaterThan(20000 * 30);
    expect(full.indexes).toBeGreaterThan(empty.indexes);
    space.truncate();
    const after = space.memory();
    expect(after.tuples).toBeLessThan(full.tuples);
    expect(after.indexes).toBeLessThan(full.indexes);
  });

  it('drop frees the space: every later call throws ER_SPACE_DROPPED, a second drop() too', () => {
    const space = users();
    const sec = space.createIndex('sec', { unique: false, parts: [[2, 'unsigned']] });
    space.insert([1, 1]);
    space.drop();
    expect(space.dropped).toBe(true);
    expect(codeOf(() => space.drop())).toBe('ER_SPACE_DROPPED');
    expect(space.dropped).toBe(true);
    expect(codeOf(() => space.len())).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => space.get(1))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => space.insert([2, 2]))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => sec.select(1))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => space.memory())).toBe('ER_SPACE_DROPPED');
  });

  it('JSON.stringify of a space, an index and a task: their definitions, no tuples, no user code run', () => {
    let clockCalls = 0;
    const space = new Space('json', { ttl: { field: 3, now: () => ++clockCalls } });
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    const task = expirationd.start('json', space, { itIndex: 'exp', now: () => ++clockCalls });
    clockCalls = 0;
    expect(JSON.parse(JSON.stringify({ space, task }))).toEqual({
      space: {
        name: 'json', dropped: false, ttl: { field: 3, unit: 's' },
        indexes: [
          { space: 'json', name: 'pk', type: 'HASH', unique: true, parts: [{ field: 1, type: 'unsigned' }] },
          { space: 'json', name: 'exp', type: 'TREE', unique: false, parts: [{ field: 3, type: 'number' }] },
        ],
      },
      task: { name: 'json', state: 'running', space: 'json' },
    });
    expect(clockCalls).toBe(0);
    task.kill();
    space.drop();
    expect(JSON.parse(JSON.stringify([space, task]))).toMatchObject([{ name: 'json', dropped: true }, { state: 'killed' }]);
  });

  it('the index list and map cannot be changed from outside: a sort for display, a freeze, a fake index', () => {
    const space = users();
    space.createIndex('name', { unique: false, parts: [[2, 'string']] });
    space.insert([2, 'a']);
    space.insert([1, 'b']);
    expect(() => (space.indexes as unknown as unknown[]).reverse()).toThrow(TypeError);
    expect(() => {
      (space.index as Record<string, unknown>).fake = {};
    }).toThrow(TypeError);
    expect(space.indexes.map((i) => i.name)).toEqual(['primary', 'name']);
    expect(space.select()).toEqual([[1, 'b'], [2, 'a']]);
    // Frozen by the user as well: createIndex still applies whole.
    Object.freeze(space.index);
    Object.freeze(space);
    const byId = space.createIndex('again', { unique: false, parts: [[2, 'string']] });
    expect(space.index.again).toBe(byId);
    expect(space.indexes.map((i) => i.name)).toEqual(['primary', 'name', 'again']);
    space.drop();
    expect(space.dropped).toBe(true);
  });

  it('spaces are independent of each other', () => {
    const a = users();
    const b = users();
    a.insert([1, 'a']);
    b.insert([1, 'b']);
    expect(a.get(1)).toEqual([1, 'a']);
    expect(b.get(1)).toEqual([1, 'b']);
    a.drop();
    expect(b.select()).toEqual([[1, 'b']]);
  });
});
