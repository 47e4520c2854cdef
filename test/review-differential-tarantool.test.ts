// Review: randomized differential testing against Tarantool 2.6 (memtx).
//
// How the expected values were produced (2026-11-27): a seeded generator (/tmp/difffuzz/gen.mjs,
// not part of the repository) wrote ~16,000 random op sequences (~560,000 ops) over spaces with a
// TREE or HASH primary (one or two parts of unsigned/integer/number/string/boolean) and up to two
// secondary TREE indexes: insert, replace, delete, get, update and upsert with every operator
// (valid and invalid arguments, fields in and out of range, negative fields), select on every index
// with every iterator, partial keys, limit and offset, min/max/count/len, truncate, bulk loads of up
// to 150 tuples, and box.begin()/box.commit()/box.rollback() groups. Each sequence ran in Tarantool
// 2.6.0-0-g47aa4e01e (Debian package, memtx, `tarantool tt.lua`, one pcall per op) and in our
// Space; results were compared op by op (numbers by value, HASH results as sets).
//
// Outcome: no divergence that is a bug. What differed was either documented in README ("Porting
// from Tarantool": double update of one field, malformed update ops on an absent key, TREE ALL
// with a key, HASH EQ with an empty key; "HASH supports 'ALL' and 'EQ'"; "an integral float64
// counts as an integer"), or an artifact of the harness (Lua writes an integral number as a
// MessagePack integer where msgpackr writes a float64, so 2^63 + 1 is exact there and rounds here).
// One undocumented divergence is recorded at the end of this file.
//
// The sequences below are minimized ones on which both sides agreed; every literal was read from
// Tarantool's output. Nothing here needs Tarantool at test time.
import { describe, expect, test } from 'vitest';
import { Space, type Tuple, type UpdateOp } from '../src/index.js';
import { codeOf, codeOrUndefined } from './support/errors.js';

const ids = (tuples: Tuple[]) => tuples.map((t) => t[0]);

describe('differential sequences on which we agree with Tarantool 2.6', () => {
  test('a number index orders and deduplicates doubles, int64, uint64 and BigInts by exact value', () => {
    // Tarantool: values tagged "double" were sent as ffi.cast('double', x) (MP_DOUBLE); BigInts as
    // tonumber64 (MP_INT/MP_UINT). s:create_index('pk', {parts = {{1, 'number'}}}).
    const s = new Space('diff-numbers');
    s.createIndex('pk', { parts: [[1, 'number']] });
    s.insert([2 ** 63]);                    // double
    s.insert([9223372036854775807n]);       // int64 max
    s.insert([18446744073709551615n]);      // uint64 max
    s.insert([2 ** 64]);                    // double, above every uint64
    s.insert([9007199254740993n]);          // 2^53 + 1, not a double
    s.insert([2 ** 53 + 2]);
    s.insert([2 ** 53]);
    expect(codeOf(() => s.insert([9223372036854775808n]))).toBe('ER_DUPLICATE_KEY');   // == 2^63 double
    s.insert([-(2 ** 63)]);                 // double
    expect(codeOf(() => s.insert([-9223372036854775808n]))).toBe('ER_DUPLICATE_KEY');  // == -2^63 double
    expect(codeOf(() => s.insert(['abcdefgh\0']))).toBe('ER_FIELD_TYPE');
    s.insert([5e-324]);
    expect(ids(s.select())).toEqual([
      -(2 ** 63), 5e-324, 2 ** 53, 9007199254740993n, 2 ** 53 + 2, 9223372036854775807n, 2 ** 63,
      18446744073709551615n, 2 ** 64,
    ]);
    expect(ids(s.select([9223372036854775807n], { iterator: 'GT' }))).toEqual([2 ** 63, 18446744073709551615n, 2 ** 64]);
    expect(ids(s.select([2 ** 63], { iterator: 'LT' }))).toEqual([
      9223372036854775807n, 2 ** 53 + 2, 9007199254740993n, 2 ** 53, 5e-324, -(2 ** 63),
    ]);
  });

  test('strings that share long prefixes compare bytewise, on a unique and a two-part index', () => {
    // pk {1,'string'}; sk {unique=false, parts={{2,'string'},{1,'string'}}}; inserted in this order.
    const words = ['abcdefgh', 'abcdefghi', 'abcdefgg', 'abcdefgh\0', 'abcdefghé', 'abcdefghabcdefgh1', 'abcdefghabcdefgh2',
      '\uffff', '\u{10ffff}', 'z'.repeat(40), 'z'.repeat(41), 'abcdefg', '', 'é', 'E'];
    const s = new Space('diff-strings');
    s.createIndex('pk', { parts: [[1, 'string']] });
    s.createIndex('sk', { unique: false, parts: [[2, 'string'], [1, 'string']] });
    words.forEach((w, i) => s.insert([w, ['p', 'q', 'pp'][i % 3]]));
    expect(ids(s.select())).toEqual(['', 'E', 'abcdefg', 'abcdefgg', 'abcdefgh', 'abcdefgh\0', 'abcdefghabcdefgh1',
      'abcdefghabcdefgh2', 'abcdefghi', 'abcdefghé', 'z'.repeat(40), 'z'.repeat(41), 'é', '\uffff', '\u{10ffff}']);
    expect(ids(s.select(['abcdefgh'], { iterator: 'GT' }))).toEqual(['abcdefgh\0', 'abcdefghabcdefgh1', 'abcdefghabcdefgh2',
      'abcdefghi', 'abcdefghé', 'z'.repeat(40), 'z'.repeat(41), 'é', '\uffff', '\u{10ffff}']);
    expect(ids(s.select(['abcdefgh\0'], { iterator: 'LT', limit: 3 }))).toEqual(['abcdefgh', 'abcdefgg', 'abcdefg']);
    expect(ids(s.select(['z'.repeat(40)], { iterator: 'LE', limit: 2 }))).toEqual(['z'.repeat(40), 'abcdefghé']);
    const sk = s.index.sk;
    expect(ids(sk.select(['p'], { iterator: 'REQ' }))).toEqual(['z'.repeat(40), 'abcdefghabcdefgh2', 'abcdefgh\0', 'abcdefgh', '']);
    expect(ids(sk.select(['pp', 'abcdefgh'], { iterator: 'GE', limit: 3 }))).toEqual(['abcdefghabcdefgh1', '\u{10ffff}', 'abcdefghi']);
    expect(ids(sk.select(['q', 'abcdefghabcdefgh1'], { iterator: 'LT', limit: 2 }))).toEqual(['\u{10ffff}', 'abcdefghabcdefgh1']);
    expect(sk.count(['p'], { iterator: 'GT' })).toBe(10);
    expect(sk.min(['q'])).toEqual(['abcdefghi', 'q']);
    expect(sk.max(['q'])).toEqual(['\uffff', 'q']);
  });

  test('update and upsert against secondary indexes: field shifts, missing fields, negative fields, dropped pk changes', () => {
    // pk {1,'integer'}; s {unique, {2,'unsigned'}}; t {unique=false, {3,'string'}}.
    const s = new Space('diff-updates');
    s.createIndex('pk', { parts: [[1, 'integer']] });
    s.createIndex('s', { parts: [[2, 'unsigned']] });
    s.createIndex('t', { unique: false, parts: [[3, 'string']] });
    s.insert([-2, 10, 'a']);
    s.insert([5, 11, 'b', 'tail']);
    expect(codeOf(() => s.update(-2, [['#', 3, 1]]))).toBe('ER_FIELD_MISSING');   // FIELD_MISSING
    expect(codeOf(() => s.update(-2, [['!', 2, 12]]))).toBe('ER_FIELD_TYPE');     // 10 shifts into the string field
    expect(s.update(5, [['!', 2, 12], ['#', 3, 1]])).toEqual([5, 12, 'b', 'tail']);
    expect(s.index.s.update(11, [['=', 2, 10]])).toBeUndefined();                 // 11 is gone
    expect(s.update(5, [['=', 5, 'x']])).toEqual([5, 12, 'b', 'tail', 'x']);
    expect(s.update(5, [['=', 6, 'x']])).toEqual([5, 12, 'b', 'tail', 'x', 'x']);
    expect(s.update(5, [['!', -1, 'end'], [':', 3, -1, 1, 'Z']])).toEqual([5, 12, 'bZ', 'tail', 'x', 'x', 'end']);
    // upsert on a stored tuple: a result that breaks an index raises (FIELD_TYPE), as in memtx
    expect(codeOf(() => s.upsert([-2, 0, 'q'], [['=', 2, 'x'], ['=', 3, 'c']]))).toBe('ER_FIELD_TYPE');
    s.upsert([-2, 0, 'q'], [['=', 2, 13]]);
    s.upsert([-2, 0, 'q'], [['+', 2, 5], ['=', 3, 'd']]);
    s.upsert([-2, 0, 'q'], [['=', 1, 7], ['=', 3, 'e']]);   // a pk change drops the whole upsert
    s.upsert([9, 14, 'n'], [['=', 3, 'never']]);            // absent: inserted as given
    expect(s.index.t.select()).toEqual([[5, 12, 'bZ', 'tail', 'x', 'x', 'end'], [-2, 18, 'd'], [9, 14, 'n']]);
    expect(ids(s.select())).toEqual([-2, 5, 9]);
    expect(ids(s.index.s.select())).toEqual([5, 9, -2]);
  });

  test('a transaction that throws undoes what box.rollback() undoes; one that returns keeps what box.commit() keeps', () => {
    // pk {HASH, {1,'unsigned'}}; u {unique, {2,'string'}}; n {unique=false, {{3,'integer'},{2,'string'}}}.
    const s = new Space('diff-txn');
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.createIndex('u', { parts: [[2, 'string']] });
    s.createIndex('n', { unique: false, parts: [[3, 'integer'], [2, 'string']] });
    s.insert([1, 'a', 5]);
    s.insert([2, 'b', -5]);
    s.insert([3, 'c', 5]);
    const seen: unknown[] = [];
    const body = (rollback: boolean, second: () => void) => () => {
      seen.push(s.index.u.update('a', [['=', 2, 'z'], ['+', 3, 1]]));
      seen.push(codeOrUndefined(() => s.insert([4, 'z', 0])));
      seen.push(s.delete(2));
      second();
      s.upsert([5, 'e', 9], [['+', 3, 1]]);
      seen.push(s.index.n.select());
      if (rollback) throw new Error('rollback');
    };
    expect(() => s.transaction(body(true, () => seen.push(s.replace([3, 'b', 1]))))).toThrow('rollback');
    expect(seen).toEqual([[1, 'z', 6], 'ER_DUPLICATE_KEY', [2, 'b', -5], [3, 'b', 1], [[3, 'b', 1], [1, 'z', 6], [5, 'e', 9]]]);
    expect(s.index.u.select()).toEqual([[1, 'a', 5], [2, 'b', -5], [3, 'c', 5]]);
    expect(ids(s.index.n.select())).toEqual([2, 1, 3]);
    seen.length = 0;
    s.transaction(body(false, () => s.upsert([3, 'x', 0], [['-', 3, 10]])));
    expect(s.index.u.select()).toEqual([[3, 'c', -5], [5, 'e', 9], [1, 'z', 6]]);
    expect(ids(s.index.n.select())).toEqual([3, 1, 5]);
    expect(ids(s.select()).sort()).toEqual([1, 3, 5]);
  });

  test('301 tuples with every third deleted: iterators, limit and offset across many leaves', () => {
    // pk {1,'unsigned'}; sk {unique=false, {{2,'string'},{3,'unsigned'}}}; inserted in the order
    // id = i * 37 % 301, then s:delete(id) for id = 0, 3, 6, ..., 300.
    const s = new Space('diff-many');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const sk = s.createIndex('sk', { unique: false, parts: [[2, 'string'], [3, 'unsigned']] });
    for (let i = 0; i < 301; i++) {
      const id = (i * 37) % 301;
      s.insert([id, `g${id % 5}`, id % 4]);
    }
    for (let id = 0; id < 301; id += 3) s.delete(id);
    expect(ids(sk.select(['g2'], { iterator: 'REQ', limit: 5, offset: 7 }))).toEqual([67, 47, 7, 262, 242]);
    expect(ids(sk.select(['g1', 2], { iterator: 'LT', limit: 6 }))).toEqual([281, 241, 221, 181, 161, 121]);
    expect(ids(sk.select(['g3'], { iterator: 'LE', limit: 4, offset: 40 }))).toEqual([287, 247, 227, 187]);
    expect(ids(sk.select(['g3', 1], { iterator: 'GT', limit: 4, offset: 30 }))).toEqual([29, 49, 89, 109]);
    expect(ids(sk.select(['g0', 3], { iterator: 'EQ', limit: 4, offset: 5 }))).toEqual([175, 215, 235, 275]);
    expect(sk.count(['g4'], { iterator: 'GT' })).toBe(0);
    expect(sk.count(['g2', 1], { iterator: 'LE' })).toBe(100);
    expect(sk.count(['g2', 1], { iterator: 'EQ' })).toBe(10);
    expect(ids(s.select([150], { iterator: 'LT', limit: 5, offset: 31 }))).toEqual([103, 101, 100, 98, 97]);
    expect(ids(s.select([151], { iterator: 'REQ' }))).toEqual([151]);
    expect(ids(s.select([], { iterator: 'REQ', limit: 3, offset: 62 }))).toEqual([206, 205, 203]);
    expect(sk.min(['g0', 1])?.[0]).toBe(5);
    expect(sk.max(['g0', 1])?.[0]).toBe(265);
    expect(sk.max(['g4'])?.[0]).toBe(299);
    expect(sk.len()).toBe(200);
  });
});

describe('a splice that cuts a UTF-8 character: a documented divergence', () => {
  // Tarantool splices bytes and stores what results, well-formed or not:
  //   s:insert{1, '日本'}; s:update(1, {{':', 2, 2, 2, ''}}) -> {1, '\xe6Xé'} after the edits below;
  //   s:upsert({1, 'x'}, {{':', 2, 1, 1, 'X'}, {'=', 3, 5}}) on {1, '日本'} stores {1, 'X\x97\xa5本', 5}.
  // We splice bytes too, and the final tuple decides (test/review-fixes-28.test.ts: a later
  // operation may mend a character an earlier one cut); a tuple with a string that is not
  // well-formed UTF-8 is refused (README, "Strings must be well-formed"), so such an update or
  // upsert throws ER_TUPLE_FORMAT and changes nothing, the upsert's other operations included.
  // Documented since this review (README, "Porting from Tarantool"). (A per-operation refusal,
  // tried after it, broke the mending: reverted.)
  test('splices on character boundaries agree with Tarantool; one inside a character is refused', () => {
    const s = new Space('diff-splice');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([1, '日本']);
    expect(s.update(1, [[':', 2, 4, 3, 'X']])).toEqual([1, '日X']);   // Tarantool: {1, '日X'}
    expect(s.update(1, [[':', 2, -1, 0, 'é']])).toEqual([1, '日Xé']); // Tarantool: {1, '日Xé'}
    expect(codeOf(() => s.update(1, [[':', 2, 2, 2, '']]))).toBe('ER_TUPLE_FORMAT');
    const ops: UpdateOp[] = [[':', 2, 1, 1, 'X'], ['=', 3, 5]];
    expect(codeOf(() => s.upsert([1, 'x'], ops))).toBe('ER_TUPLE_FORMAT');
    expect(s.get(1)).toEqual([1, '日Xé']);
  });
});
