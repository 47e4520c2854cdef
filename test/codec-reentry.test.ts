// Encoding is not re-entrant: a getter inside a tuple or key that calls the space while the tuple
// is being encoded is refused, and neither the outer nor the inner tuple is stored half-made.
import { afterEach, describe, expect, it } from 'vitest';
import { Space } from '../src/index.js';

let space: Space;

afterEach(() => space?.drop());

function makeSpace(): Space {
  space = new Space('codec-reentry');
  space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
  return space;
}

describe('a getter that re-enters the space while a tuple is encoded', () => {
  it('an insert from inside a tuple getter is refused and the outer insert stores exactly its own tuple', () => {
    const s = makeSpace();
    const inner: unknown[] = [];
    const tuple = [1, 'outer', {
      get x() {
        try {
          s.insert([2, 'inner']);
        } catch (error) {
          inner.push((error as { code?: string }).code);
        }
        return 'y';
      },
    }];
    s.insert(tuple);
    expect(inner.length).toBeGreaterThan(0);
    expect(inner.every((code) => code === 'ER_ILLEGAL_PARAMS')).toBe(true);
    expect(s.get(2)).toBeUndefined();
    expect(s.get(1)).toEqual([1, 'outer', { x: 'y' }]);
    expect(s.len()).toBe(1);
  });

  it('a key getter that inserts while the key is encoded is refused, and the look-up still answers', () => {
    const s = makeSpace();
    s.insert([7, 'seven']);
    const codes: unknown[] = [];
    const key = [7];
    Object.defineProperty(key, 0, {
      get() {
        try {
          s.insert([8, 'from key getter']);
        } catch (error) {
          codes.push((error as { code?: string }).code);
        }
        return 7;
      },
    });
    expect(s.select(key)).toEqual([[7, 'seven']]);
    // The key's checks read it before encoding (the insert then succeeds, whole); the encoder
    // reads it again, and that nested insert is refused.
    expect(codes).toContain('ER_ILLEGAL_PARAMS');
    expect(s.get(8)).toEqual([8, 'from key getter']);
    expect(s.len()).toBe(2);
  });

  it('encoding works again after a refused nested encode', () => {
    const s = makeSpace();
    expect(() => s.insert([1, { get bad() { throw new Error('getter failed'); } }])).toThrow();
    s.insert([3, 'after']);
    expect(s.get(3)).toEqual([3, 'after']);
  });
});
