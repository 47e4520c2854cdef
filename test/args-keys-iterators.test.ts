// Key and iterator arguments (src/space/args.ts; issue 14: mutants the other tests did not see):
// a key array with a part that is not a scalar is refused with ER_KEY_TYPE before anything is
// read, and iterator names are case-insensitive.
import { describe, expect, test } from 'vitest';
import { Space } from '../src/index.js';
import { codeOf } from './support/errors.js';

function makeSpace(): Space {
  const space = new Space('args');
  space.createIndex('primary', { type: 'TREE', parts: [[1, 'unsigned'], [2, 'string']] });
  for (let id = 1; id <= 5; id++) space.insert([id, `s${id}`]);
  return space;
}

describe('checkKey', () => {
  test.each([
    ['an object part', [1, { a: 1 }]],
    ['a nested array', [1, ['s1']]],
    ['a null part', [1, null]],
    ['an undefined part', [1, undefined]],
    ['a function part', [() => 1]],
  ])('a key array with %s is refused with ER_KEY_TYPE', (_name, key) => {
    const space = makeSpace();
    for (const call of [() => space.select(key as never), () => space.get(key as never), () => space.delete(key as never),
      () => space.index.primary.count(key as never)]) {
      expect(codeOf(call)).toBe('ER_KEY_TYPE');
      expect(call).toThrow(/a key is a number, string, boolean or an array of them/);
    }
    expect(space.len()).toBe(5);
  });

  test('a key array of scalars is accepted', () => {
    const space = makeSpace();
    expect(space.get([2, 's2'])).toEqual([2, 's2']);
    expect(space.select([3])).toEqual([[3, 's3']]);
  });
});

describe('iterator names', () => {
  test.each(['ge', 'Ge', 'gE'])('%s is GE', (name) => {
    const space = makeSpace();
    expect(space.select([3], { iterator: name as never })).toEqual(space.select([3], { iterator: 'GE' }));
    expect(space.select([3], { iterator: name as never })).toEqual([[3, 's3'], [4, 's4'], [5, 's5']]);
    expect(space.index.primary.count([3], { iterator: name as never })).toBe(3);
  });

  test.each([['lt', [[2, 's2'], [1, 's1']]], ['eq', [[3, 's3']]], ['all', null]])('%s works as its upper-case name', (name, expected) => {
    const space = makeSpace();
    const upper = name.toUpperCase();
    const key = name === 'all' ? undefined : [3];
    expect(space.select(key, { iterator: name as never })).toEqual(space.select(key, { iterator: upper as never }));
    if (expected !== null) expect(space.select(key, { iterator: name as never })).toEqual(expected);
  });

  test('an unknown name is refused with ER_ITERATOR_TYPE', () => {
    const space = makeSpace();
    expect(codeOf(() => space.select([3], { iterator: 'gte' as never }))).toBe('ER_ITERATOR_TYPE');
  });
});
