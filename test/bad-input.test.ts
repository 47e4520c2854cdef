// Bad input: every refused call throws a CappedError with a stable code and changes nothing
// (len(), every index's select() and checkIntegrity() are as before). Malformed MessagePack is fed
// to the internal native handle directly, the one place the tests reach past the public API.
import { afterEach, describe, expect, it } from 'vitest';
import { CappedError, Space, expirationd, type ErrorCode, type Key, type Tuple } from '../src/index.js';
import { handleOf } from '../src/space/space.js';

function state(space: Space): unknown {
  return {
    len: space.len(),
    indexes: space.indexes.map((index) => {
      const rows = index.select();
      return index.type === 'HASH' ? rows.map((t) => JSON.stringify(t)).sort() : rows;
    }),
  };
}

// Runs fn, expects a CappedError with `code`, and that the space did not change.
function refused(space: Space, code: ErrorCode, fn: () => unknown): void {
  const before = state(space);
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error, `expected ${code}`).toBeInstanceOf(CappedError);
  expect((error as CappedError).code, (error as Error).message).toBe(code);
  expect((error as Error).message.length).toBeGreaterThan(10);
  expect(state(space)).toEqual(before);
  space.checkIntegrity();
}

// pk TREE unsigned (field 1), unique TREE string (field 2), non-unique TREE number (field 3),
// unique HASH [integer, boolean] (fields 4, 5).
function fixture(options?: { maxTupleSize?: number }): Space {
  const space = new Space('bad', options);
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('name', { parts: [[2, 'string']] });
  space.createIndex('score', { unique: false, parts: [[3, 'number']] });
  space.createIndex('pair', { type: 'HASH', parts: [[4, 'integer'], [5, 'boolean']] });
  for (let i = 1; i <= 10; i++) space.insert([i, `n${i}`, i / 2, -i, i % 2 === 0, 'payload']);
  return space;
}

const row = (id: number, over: Record<number, unknown> = {}): unknown[] => {
  const t: unknown[] = [id, `new${id}`, 1.25, 100 + id, true];
  for (const [k, v] of Object.entries(over)) t[Number(k)] = v;
  return t;
};

afterEach(() => {
  expirationd.killAll();
});

describe('tuples of the wrong shape', () => {
  it('an object graph that is not a tree is refused at once, not walked path by path', () => {
    const space = fixture();
    // A cycle (twice back to itself: every path through it was walked before), in an object, an
    // array and a Map, and in a key.
    const o: Record<string, unknown> = {};
    o.a = o;
    o.b = o;
    const a: unknown[] = [];
    a.push(a, a);
    const m = new Map<string, unknown>();
    m.set('self', m);
    for (const value of [o, a, m]) {
      refused(space, 'ER_TUPLE_FORMAT', () => space.insert(row(11, { 5: value })));
      refused(space, 'ER_TUPLE_FORMAT', () => space.replace(row(1, { 5: value })));
      refused(space, 'ER_TUPLE_FORMAT', () => space.insertMany([row(11), row(12, { 5: value })]));
      refused(space, 'ER_KEY_TYPE', () => space.get([value as never]));
    }
    // Shared references 30 levels deep: 2^30 paths, so more than 4 GiB encoded; refused before
    // msgpackr expands it. At 20 levels (2^20 paths) msgpackr encodes it and the size refuses it.
    let dag: unknown = { leaf: 1 };
    for (let i = 0; i < 30; i++) dag = { a: dag, b: dag };
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.insert(row(11, { 5: dag })));
    dag = { leaf: 1 };
    for (let i = 0; i < 20; i++) dag = { a: dag, b: dag };
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.insert(row(11, { 5: dag })));
    // A shared object that is not a cycle, and 40 levels of arrays (deeper than the 32 stored),
    // are the addon's to judge as before: the first is stored, the second refused.
    const shared = { x: 1 };
    space.insert(row(11, { 5: [shared, shared] }));
    expect(space.get(11)![5]).toEqual([{ x: 1 }, { x: 1 }]);
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    refused(space, 'ER_TUPLE_FORMAT', () => space.insert(row(12, { 5: deep })));
  });

  it('a non-array tuple is ER_TUPLE_FORMAT for insert, replace and insertMany', () => {
    const space = fixture();
    for (const bad of [5, 'x', null, undefined, {}, { 0: 1, length: 1 }, new Uint8Array([1]), true]) {
      refused(space, 'ER_TUPLE_FORMAT', () => space.insert(bad as unknown as Tuple));
      refused(space, 'ER_TUPLE_FORMAT', () => space.replace(bad as unknown as Tuple));
      refused(space, 'ER_TUPLE_FORMAT', () => space.insertMany([row(100), bad as unknown as Tuple]));
    }
    refused(space, 'ER_TUPLE_FORMAT', () => space.insertMany('x' as unknown as Tuple[]));
    refused(space, 'ER_TUPLE_FORMAT', () => space.insertMany(row(100) as unknown as Tuple[]));
  });

  it('a missing indexed field is ER_FIELD_MISSING, in any index', () => {
    const space = fixture();
    refused(space, 'ER_FIELD_MISSING', () => space.insert([]));
    refused(space, 'ER_FIELD_MISSING', () => space.insert([100]));
    refused(space, 'ER_FIELD_MISSING', () => space.insert([100, 'x', 1]));
    refused(space, 'ER_FIELD_MISSING', () => space.insert([100, 'x', 1, 5]));
    refused(space, 'ER_FIELD_MISSING', () => space.replace([1, 'n1', 0.5, -1]));
    refused(space, 'ER_FIELD_MISSING', () => space.insertMany([row(100), [101, 'y']]));
  });

  it('a wrongly typed indexed field is ER_FIELD_TYPE, in any index', () => {
    const space = fixture();
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 0: 'str' })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 0: -5 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 0: null })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 1: 7 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 2: 'x' })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 3: 1.5 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 4: 1 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 4: [true] })));
    refused(space, 'ER_FIELD_TYPE', () => space.replace(row(1, { 4: 'yes' })));
    refused(space, 'ER_FIELD_TYPE', () => space.insertMany([row(100), row(101, { 2: {} })]));
  });

  it('NaN in a number part is ER_FIELD_TYPE in a tuple and ER_KEY_TYPE in a key', () => {
    const space = fixture();
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 2: NaN })));
    refused(space, 'ER_FIELD_TYPE', () => space.replace(row(1, { 2: NaN })));
    refused(space, 'ER_KEY_TYPE', () => space.index.score.select(NaN));
    refused(space, 'ER_KEY_TYPE', () => space.index.score.select(NaN, { iterator: 'GE' }));
    refused(space, 'ER_KEY_TYPE', () => space.index.score.count(NaN, { iterator: 'LT' }));
    refused(space, 'ER_KEY_TYPE', () => space.index.score.pairs(NaN));
    refused(space, 'ER_KEY_TYPE', () => space.get(NaN));
    refused(space, 'ER_KEY_TYPE', () => space.delete(NaN));
  });

  it('an out-of-range integer is refused', () => {
    const space = fixture();
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 3: 2 ** 64 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 3: -(2 ** 63) - 1e4 })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(100, { 3: Infinity })));
    refused(space, 'ER_FIELD_TYPE', () => space.insert(row(2 ** 64)));
    refused(space, 'ER_KEY_TYPE', () => space.index.pair.select([2 ** 64, true]));
    refused(space, 'ER_KEY_TYPE', () => space.index.pair.get([-(2 ** 63) - 1e4, true]));
    refused(space, 'ER_KEY_TYPE', () => space.get(2 ** 64));
  });

  it('a value that cannot be encoded is a CappedError, not an encoder exception', () => {
    const space = fixture();
    const circular: unknown[] = [100, 'c', 1, 1, true];
    circular.push(circular);
    refused(space, 'ER_TUPLE_FORMAT', () => space.insert(row(100, { 5: Symbol('s') })));
    refused(space, 'ER_TUPLE_FORMAT', () => space.insert(circular));
    refused(space, 'ER_TUPLE_FORMAT', () => space.insert(row(100, { 5: 2n ** 64n })));
    refused(space, 'ER_TUPLE_FORMAT', () => space.insertMany([row(100), row(101, { 5: Symbol('s') })]));
    refused(space, 'ER_KEY_TYPE', () => space.get(2n ** 64n));
    refused(space, 'ER_KEY_TYPE', () => space.index.pair.select([-(2n ** 64n), true]));
  });

  it('a tuple over maxTupleSize is ER_TUPLE_TOO_LARGE', () => {
    const space = fixture({ maxTupleSize: 128 });
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.insert(row(100, { 5: 'x'.repeat(200) })));
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.replace(row(1, { 5: 'x'.repeat(200) })));
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.insertMany([row(100), row(101, { 5: 'x'.repeat(200) })]));
    space.insert(row(100, { 5: 'x'.repeat(60) }));
    expect(space.len()).toBe(11);
  });

  it('the default maxTupleSize is 1 MiB', () => {
    const space = fixture();
    space.insert(row(100, { 5: 'x'.repeat(1024 * 1024 - 100) }));
    refused(space, 'ER_TUPLE_TOO_LARGE', () => space.insert(row(101, { 5: 'x'.repeat(1024 * 1024 + 1) })));
    space.delete(100);
  });
});

describe('keys of the wrong shape', () => {
  it('a key with more parts than the index is ER_KEY_PART_COUNT', () => {
    const space = fixture();
    refused(space, 'ER_KEY_PART_COUNT', () => space.select([1, 2]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.get([1, 2]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.delete([1, 2]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.count([1, 2], { iterator: 'GE' }));
    refused(space, 'ER_KEY_PART_COUNT', () => space.pairs([1, 2]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.select([1, true, 3]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.score.min([1, 2]));
  });

  it('a key longer than maxTupleSize is ER_KEY_TOO_LARGE', () => {
    const space = fixture({ maxTupleSize: 128 });
    refused(space, 'ER_KEY_TOO_LARGE', () => space.index.name.select('x'.repeat(500)));
    refused(space, 'ER_KEY_TOO_LARGE', () => space.index.name.get(['x'.repeat(500)]));
  });

  it('a key of the wrong type is ER_KEY_TYPE', () => {
    const space = fixture();
    refused(space, 'ER_KEY_TYPE', () => space.get('1'));
    refused(space, 'ER_KEY_TYPE', () => space.get(-1));
    refused(space, 'ER_KEY_TYPE', () => space.get(1.5));
    refused(space, 'ER_KEY_TYPE', () => space.select({} as unknown as Key));
    refused(space, 'ER_KEY_TYPE', () => space.select([{}] as unknown as Key));
    refused(space, 'ER_KEY_TYPE', () => space.select([[1]] as unknown as Key));
    refused(space, 'ER_KEY_TYPE', () => space.index.name.select(5));
    refused(space, 'ER_KEY_TYPE', () => space.index.pair.get([1, 1]));
    refused(space, 'ER_KEY_TYPE', () => space.delete(true));
  });

  it('a partial key on HASH is ER_KEY_PART_COUNT', () => {
    const space = fixture();
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.select([-1]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.select(-1));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.get([-1]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.count([-1]));
    refused(space, 'ER_KEY_PART_COUNT', () => space.index.pair.pairs([-1]));
  });

  it('get on a unique TREE needs the full key', () => {
    const space = new Space('m');
    space.createIndex('pk', { parts: [[1, 'unsigned'], [2, 'string']] });
    space.insert([1, 'a']);
    refused(space, 'ER_KEY_PART_COUNT', () => space.get(1));
    refused(space, 'ER_KEY_PART_COUNT', () => space.get([]));
  });
});

describe('duplicates', () => {
  it('a duplicate key in any unique index is ER_DUPLICATE_KEY', () => {
    const space = fixture();
    refused(space, 'ER_DUPLICATE_KEY', () => space.insert(row(1)));
    refused(space, 'ER_DUPLICATE_KEY', () => space.insert(row(100, { 1: 'n3' })));
    refused(space, 'ER_DUPLICATE_KEY', () => space.insert(row(100, { 3: -4, 4: true })));
    refused(space, 'ER_DUPLICATE_KEY', () => space.replace(row(1, { 1: 'n3' })));
    refused(space, 'ER_DUPLICATE_KEY', () => space.insertMany([row(100), row(101), row(100)]));
    refused(space, 'ER_DUPLICATE_KEY', () => space.insertMany([row(100), row(101, { 1: 'n5' })]));
    space.insert(row(100, { 3: -4, 4: false }));
  });
});

describe('indexes and iterators', () => {
  it('an unknown index is ER_NO_SUCH_INDEX', () => {
    const space = fixture();
    expect(space.index.nope).toBeUndefined();
    refused(space, 'ER_NO_SUCH_INDEX', () => expirationd.start('t', space, { rmIndex: 'nope', field: 3 }));
    refused(space, 'ER_NO_SUCH_INDEX', () => expirationd.start('t', space, { itIndex: 'nope', field: 3 }));
    const scratch = Buffer.alloc(1024);
    refused(space, 'ER_NO_SUCH_INDEX', () => handleOf(space).get(4, 1, scratch));
    refused(space, 'ER_NO_SUCH_INDEX', () => handleOf(space).select(99, undefined, 2, Infinity, 0, scratch));
    refused(space, 'ER_NO_SUCH_INDEX', () => handleOf(space).cursor(99, undefined, 2));
  });

  it('an unknown iterator is ER_ITERATOR_TYPE', () => {
    const space = fixture();
    for (const bad of ['XX', '', 'GTE', 5, null, {}]) {
      const opts = { iterator: bad } as unknown as { iterator: 'EQ' };
      refused(space, 'ER_ITERATOR_TYPE', () => space.select(1, opts));
      refused(space, 'ER_ITERATOR_TYPE', () => space.pairs(1, opts));
      refused(space, 'ER_ITERATOR_TYPE', () => space.count(1, opts));
      refused(space, 'ER_ITERATOR_TYPE', () => space.index.score.select(1, opts));
    }
    refused(space, 'ER_ITERATOR_TYPE', () => handleOf(space).select(0, undefined, 99, Infinity, 0, Buffer.alloc(64)));
  });

  it('a HASH iterator other than ALL and EQ is ER_ITERATOR_TYPE', () => {
    const space = fixture();
    const pair = space.index.pair;
    for (const iterator of ['GE', 'GT', 'LE', 'LT', 'REQ'] as const) {
      refused(space, 'ER_ITERATOR_TYPE', () => pair.select([-1, false], { iterator }));
      refused(space, 'ER_ITERATOR_TYPE', () => pair.select(undefined, { iterator }));
      refused(space, 'ER_ITERATOR_TYPE', () => pair.pairs([-1, false], { iterator }));
      refused(space, 'ER_ITERATOR_TYPE', () => pair.count([-1, false], { iterator }));
    }
  });

  it('get on a non-unique index is ER_UNSUPPORTED, min/max on HASH too', () => {
    const space = fixture();
    refused(space, 'ER_UNSUPPORTED', () => space.index.score.get(1));
    refused(space, 'ER_UNSUPPORTED', () => space.index.pair.min());
    refused(space, 'ER_UNSUPPORTED', () => space.index.pair.max([-1, false]));
  });

  it('a non-unique primary, a non-unique HASH, and a duplicate index name are refused', () => {
    const space = new Space('ix');
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('pk', { unique: false, parts: [[1, 'unsigned']] }));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('pk', { type: 'HASH', unique: false, parts: [[1, 'unsigned']] }));
    expect(space.indexes.length).toBe(0);
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1, 'a']);
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('h', { type: 'HASH', unique: false, parts: [[2, 'string']] }));
    refused(space, 'ER_INDEX_EXISTS', () => space.createIndex('pk', { parts: [[2, 'string']] }));
    space.createIndex('sec', { unique: false, parts: [[2, 'string']] });
    refused(space, 'ER_INDEX_EXISTS', () => space.createIndex('sec', { parts: [[2, 'string']] }));
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'sec']);
  });

  it('bad index definitions are ER_ILLEGAL_PARAMS', () => {
    const space = fixture();
    const bad: unknown[] = [
      undefined, {}, { parts: [] }, { parts: 'x' }, { parts: [[0, 'unsigned']] }, { parts: [[1.5, 'unsigned']] },
      { parts: [[1, 'float']] }, { parts: [{ field: 1 }] }, { parts: [null] }, { type: 'BITSET', parts: [[1, 'unsigned']] },
      { unique: 'yes', parts: [[1, 'unsigned']] }, { parts: [[70000, 'unsigned']] },
    ];
    for (const options of bad) {
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('x', options as never));
    }
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('', { parts: [[1, 'unsigned']] }));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('7', { parts: [[1, 'unsigned']] }));
    expect(space.indexes.length).toBe(4);
  });
});

describe('options', () => {
  it('unknown option names are ER_ILLEGAL_PARAMS', () => {
    const space = fixture();
    expect(() => new Space('x', { maxSize: 1 } as never)).toThrow(expect.objectContaining({ code: 'ER_ILLEGAL_PARAMS' }));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('x', { parts: [[2, 'string']], uniq: false } as never));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(1, { limt: 1 } as never));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(1, { iterator: 'GE', Limit: 1 } as never));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.pairs(1, { limit: 1 } as never));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.count(1, { offset: 1 } as never));
    refused(space, 'ER_ILLEGAL_PARAMS', () => space.index.score.select(1, { iter: 'GE' } as never));
  });

  it('options that are not objects, and bad limit/offset values, are ER_ILLEGAL_PARAMS', () => {
    const space = fixture();
    for (const bad of [5, 'GE', null, [1]]) {
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(1, bad as never));
    }
    for (const bad of [-1, 1.5, NaN, '1', -Infinity]) {
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(undefined, { limit: bad as number }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(undefined, { offset: bad as number }));
    }
    expect(space.select(undefined, { offset: Infinity })).toEqual([]);
  });

  it('values that cannot be printed (String() throws) still get the documented code, not a TypeError', () => {
    const space = fixture();
    const unprintable = (): unknown[] => {
      const revoked = Proxy.revocable({}, {});
      revoked.revoke();
      return [Object.create(null), revoked.proxy, { toString() { throw new Error('no'); } }];
    };
    for (const bad of unprintable()) {
      refused(space, 'ER_ITERATOR_TYPE', () => space.select(1, { iterator: bad as never }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.select(undefined, { limit: bad as never }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('x', { parts: [[bad as never, 'string']] }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('x', { parts: [[2, bad as never]] }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => space.createIndex('x', { type: bad as never, parts: [[2, 'string']] }));
      refused(space, 'ER_ILLEGAL_PARAMS', () => expirationd.start('x', space, { field: 3, scanSize: bad as never }));
      const thrower = [1, 'a', 1, 1, true];
      Object.defineProperty(thrower, 3, { get() { throw bad; }, enumerable: true });
      refused(space, 'ER_TUPLE_FORMAT', () => space.insert(thrower));
    }
  });
});

describe('a space without a primary index', () => {
  it('refuses data operations with ER_NO_PRIMARY_INDEX', () => {
    const space = new Space('empty');
    const ops: Array<() => unknown> = [
      () => space.insert([1]), () => space.replace([1]), () => space.insertMany([[1]]), () => space.get(1),
      () => space.delete(1), () => space.select(), () => space.select(1), () => space.pairs(), () => space.count(),
    ];
    for (const op of ops) refused(space, 'ER_NO_PRIMARY_INDEX', op);
    expect(space.len()).toBe(0);
    space.createIndex('pk', { parts: [[1, 'unsigned']] });
    space.insert([1]);
    expect(space.select()).toEqual([[1]]);
  });
});

describe('after drop()', () => {
  function dropped(): { space: Space; iterators: Array<Iterator<Tuple>> } {
    const space = fixture();
    const iterators = [space.pairs(), space.index.score.pairs(2, { iterator: 'GE' }), space.index.pair.pairs()];
    for (const it of iterators) it.next();
    space.drop();
    return { space, iterators };
  }

  function code(fn: () => unknown): string | undefined {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(CappedError);
      return (error as CappedError).code;
    }
    return undefined;
  }

  it('every call throws ER_SPACE_DROPPED', () => {
    const { space } = dropped();
    const idx = space.indexes;
    const ops: Array<[string, () => unknown]> = [
      ['insert', () => space.insert(row(100))], ['replace', () => space.replace(row(1))],
      ['insertMany', () => space.insertMany([row(100)])], ['get', () => space.get(1)], ['delete', () => space.delete(1)],
      ['select', () => space.select()], ['pairs', () => space.pairs()], ['count', () => space.count()],
      ['len', () => space.len()], ['memory', () => space.memory()], ['truncate', () => space.truncate()],
      ['createIndex', () => space.createIndex('x', { unique: false, parts: [[3, 'number']] })],
      ['transaction', () => space.transaction(() => 1)], ['checkIntegrity', () => space.checkIntegrity()],
      ['index.get', () => idx[1].get('n1')], ['index.select', () => idx[2].select(1)], ['index.pairs', () => idx[2].pairs()],
      ['index.min', () => idx[2].min()], ['index.max', () => idx[0].max()], ['index.count', () => idx[3].count()],
      ['index.len', () => idx[3].len()],
      ['expirationd.start', () => expirationd.start('dropped', space, { field: 3 })],
    ];
    for (const [name, op] of ops) expect(code(op), name).toBe('ER_SPACE_DROPPED');
    expect(space.dropped).toBe(true);
  });

  it('iterators created before drop throw ER_SPACE_DROPPED', () => {
    const { iterators } = dropped();
    for (const it of iterators) expect(code(() => it.next())).toBe('ER_SPACE_DROPPED');
  });

  it('drop inside a transaction ends the space cleanly', () => {
    const space = fixture();
    expect(space.transaction(() => {
      space.insert(row(100));
      space.drop();
      return 'ok';
    })).toBe('ok');
    expect(code(() => space.len())).toBe('ER_SPACE_DROPPED');
    const other = fixture();
    expect(() => other.transaction(() => {
      other.drop();
      throw new Error('after drop');
    })).toThrow('after drop');
    expect(code(() => other.select())).toBe('ER_SPACE_DROPPED');
  });
});

describe('malformed MessagePack reaching the native layer', () => {
  const B = (bytes: number[]) => Buffer.from(bytes);
  const malformed: Record<string, number[]> = {
    'an empty buffer': [],
    'the never-used byte 0xc1': [0xc1],
    'a truncated array': [0x93, 0x01],
    'an array whose element is missing': [0x91],
    'a huge declared array32 length': [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01],
    'a truncated array16 header': [0xdc, 0xff],
    'a huge declared str32 length': [0x95, 0x05, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61],
    'a truncated fixstr': [0x95, 0x05, 0xa5, 0x61],
    'a huge declared bin32 length': [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, 0xc6, 0xff, 0xff, 0xff, 0xff],
    'a huge declared map32 length': [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, 0xdf, 0xff, 0xff, 0xff, 0xff],
    'a huge declared ext32 length': [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01],
    'a truncated float64': [0x95, 0xcb, 0x40, 0x00],
    'a truncated uint64': [0x95, 0xcf, 0x00, 0x00, 0x00],
    '0xc1 inside the tuple': [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, 0xc1],
    'trailing bytes': [0x95, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, 0x00],
    'a scalar instead of an array': [0x05],
    'a map instead of an array': [0x81, 0x01, 0x01],
    'nesting deeper than the limit': [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, ...Array(100).fill(0x91), 0x01],
  };

  it('valid bytes through the handle are accepted (the baseline)', () => {
    const space = fixture();
    handleOf(space).insert(B([0x95, 0x32, 0xa1, 0x7a, 0x01, 0x01, 0xc3]), false);
    expect(space.get(50)).toEqual([50, 'z', 1, 1, true]);
    space.checkIntegrity();
  });

  it('a tuple given as a range of a larger Buffer is that range, which must lie inside it', () => {
    const space = fixture();
    const framed = B([0xff, 0xc1, 0x95, 0x33, 0xa1, 0x79, 0x01, 0x02, 0xc2, 0xc1]);
    handleOf(space).insert(framed, false, 2, 9);
    expect(space.get(51)).toEqual([51, 'y', 1, 2, false]);
    refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insert(framed, false, 2, 10));
    refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insert(framed, false, 0, 9));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insert(framed, false, 9, 2));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insert(framed, false, 2, 11));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insert(framed, false, -1, 9));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insert(framed, false, 2, undefined));
  });

  for (const [what, bytes] of Object.entries(malformed)) {
    it(`insert refuses ${what} with ER_TUPLE_FORMAT`, () => {
      const space = fixture();
      refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insert(B(bytes), false));
      refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insert(B(bytes), true));
    });
  }

  it('insert refuses a million levels of nesting without overflowing the stack', () => {
    const space = fixture();
    const deep = [0x96, 0x05, 0xa1, 0x61, 0x01, 0x01, 0xc3, ...Array(1_000_000).fill(0x91), 0x01];
    refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insert(B(deep), false));
  });

  it('insertMany refuses a batch with malformed bytes anywhere and inserts nothing', () => {
    const space = fixture();
    const good = [0x95, 0x32, 0xa1, 0x7a, 0x01, 0x01, 0xc3];
    const good2 = [0x95, 0x33, 0xa1, 0x79, 0x01, 0x02, 0xc3];
    const batches: Record<string, number[]> = {
      'a missing second tuple': [0x92, ...good],
      'trailing bytes after the batch': [0x91, ...good, 0x00],
      '0xc1 as the second tuple': [0x92, ...good, 0xc1],
      'a scalar as the second tuple': [0x92, ...good, 0x05],
      'a truncated third tuple': [0x93, ...good, ...good2, 0x95, 0x34],
      'a huge declared batch length': [0xdd, 0xff, 0xff, 0xff, 0xff, ...good],
      'a scalar instead of a batch': [0x05],
      'an empty buffer': [],
    };
    for (const [what, bytes] of Object.entries(batches)) {
      let error: unknown;
      const before = state(space);
      try {
        handleOf(space).insertMany(B(bytes));
      } catch (e) {
        error = e;
      }
      expect(error, what).toBeInstanceOf(CappedError);
      expect((error as CappedError).code, what).toBe('ER_TUPLE_FORMAT');
      expect(state(space), what).toEqual(before);
      space.checkIntegrity();
    }
    expect(handleOf(space).insertMany(B([0x92, ...good, ...good2]))).toBe(2);
    expect(space.len()).toBe(12);
  });

  // insertMany validates the whole batch, then inserts while it reads 8 tuples ahead. A batch
  // that declares millions of tuples over millions of bytes gets a large, never written table of
  // tuple spans: a look-ahead past the last valid tuple would read an empty span there.
  it('insertMany refuses valid tuples followed by malformed bytes in a batch declaring millions', () => {
    const space = fixture();
    for (const n of [8, 9, 10, 17]) {
      const declared = [0xdd, 0x00, 0x3d, 0x09, 0x00];  // 4,000,000 tuples
      const tuples = Array.from({ length: n }, (_, j) => [0x95, 50 + j, 0xa2, 0x61, 0x61 + j, 0x01, j, 0xc3]).flat();
      const batch = Buffer.concat([B([...declared, ...tuples]), Buffer.alloc(4_000_000, 0xc1)]);
      refused(space, 'ER_TUPLE_FORMAT', () => handleOf(space).insertMany(batch));
      // The same tuples as a batch of their own go in.
      expect(handleOf(space).insertMany(B([0xdc, 0x00, n, ...tuples]))).toBe(n);
      for (let j = 0; j < n; j++) expect(space.get(50 + j)).toEqual([50 + j, `a${String.fromCharCode(0x61 + j)}`, 1, j, true]);
      for (let j = 0; j < n; j++) space.delete(50 + j);
    }
  });

  it('a malformed key buffer is ER_KEY_TYPE for every read and delete', () => {
    const space = fixture();
    const scratch = Buffer.alloc(1024);
    for (const bytes of [[0xc1], [0x92, 0x01], [0x01], [0x91, 0x01, 0x01], [0xdd, 0xff, 0xff, 0xff, 0xff]]) {
      refused(space, 'ER_KEY_TYPE', () => handleOf(space).select(0, B(bytes), 0, Infinity, 0, scratch));
      refused(space, 'ER_KEY_TYPE', () => handleOf(space).get(0, B(bytes), scratch));
      refused(space, 'ER_KEY_TYPE', () => handleOf(space).delete(B(bytes), scratch));
      refused(space, 'ER_KEY_TYPE', () => handleOf(space).count(2, B(bytes), 3));
      refused(space, 'ER_KEY_TYPE', () => handleOf(space).cursor(0, B(bytes), 3));
    }
  });

  it('arguments of the wrong JavaScript type are ER_ILLEGAL_PARAMS', () => {
    const space = fixture();
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insert('x' as unknown as Buffer, false));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).insertMany([1] as unknown as Buffer));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).get(-1, 1, Buffer.alloc(8)));
    refused(space, 'ER_ILLEGAL_PARAMS', () => handleOf(space).count(1.5, 1, 0));
  });
});
