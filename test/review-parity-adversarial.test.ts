// Review probes (adversarial): update/upsert operators at their edges, operations that are
// Proxies or carry getters (and re-enter the space while they are read), atomic() frames, and
// capped spaces with expirationd.
import { describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, CappedError, type Tuple, type UpdateOp } from '../src/index.js';
import { handleOf } from '../src/space/space.js';
import { pack, scratchBuffer } from '../src/native/codec.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

function plain(name = 'p', type: 'HASH' | 'TREE' = 'TREE'): Space {
  const s = new Space(name);
  s.createIndex('pk', { type, parts: [[1, 'unsigned']] });
  return s;
}

/** 'ok' when fn returns; the CappedError's code when it throws one; the error itself otherwise. */
function outcome(fn: () => unknown): unknown {
  try {
    fn();
    return 'ok';
  } catch (error) {
    return error instanceof CappedError ? error.code : error;
  }
}

describe('update operations read while they are packed', () => {
  // The getter's second read is packOpsFast's: the nested update is refused as a nested encode
  // is, its error goes through the getter, and neither space changes. (It used to overwrite the
  // outer call's packed operations, which then applied the inner call's.)
  test.each(['update', 'upsert'] as const)('a getter in %s operations that updates another space is refused, changing nothing', (method) => {
    const a = plain(`reentry-${method}-a`);
    const b = plain(`reentry-${method}-b`);
    a.insert([1, 'o', 'o']);
    b.insert([1, 'o', 'o']);
    let reads = 0;
    const second: unknown[] = ['=', 3, 'v'];
    Object.defineProperty(second, 2, {
      get() {
        if (++reads === 2) b.update(1, [['=', 2, 'X'], ['=', 3, 'Y']]);
        return 'v';
      },
    });
    const ops = [['=', 2, 'a'], second as UpdateOp] as UpdateOp[];
    const call = () => (method === 'update' ? a.update(1, ops) : a.upsert([1, 'n', 'n'], ops));
    expect(outcome(call)).toBe('ER_ILLEGAL_PARAMS');
    expect(a.get(1)).toEqual([1, 'o', 'o']);
    expect(b.get(1)).toEqual([1, 'o', 'o']);
    // Without the getter calling the space, the same operations apply as given.
    reads = 2;
    call();
    expect(a.get(1)).toEqual([1, 'a', 'v']);
  });

  test('an operator that a getter changes after the check is refused (ER_UPDATE_OP), not applied as a no-op', () => {
    const s = plain('nul-op');
    s.insert([1, 10, 'x']);
    let reads = 0;
    const op = new Proxy(['+', 2, 1], {
      get: (target, key, receiver) => (key === '0' ? (reads++ === 0 ? '+' : '\0') : Reflect.get(target, key, receiver)),
    });
    const result = outcome(() => s.update(1, [op as unknown as UpdateOp, ['=', 3, 'y']]));
    // Reading each operation once would apply '+'; otherwise the changed operator must be refused.
    if (result === 'ok') expect(s.get(1)).toEqual([1, 11, 'y']);
    else {
      expect(result).toBe('ER_UPDATE_OP');
      expect(s.get(1)).toEqual([1, 10, 'x']);
    }
  });

  test('the addon refuses an operator named "\\0" (ER_UPDATE_OP)', () => {
    const s = plain('nul-native');
    s.insert([1, 'a', 5]);
    const ops = pack([['\0', 3, 1], ['+', 3, 1]]);
    expect(codeOf(() => handleOf(s).update(0, 1, ops, 0, ops.length, scratchBuffer()))).toBe('ER_UPDATE_OP');
    expect(s.get(1)).toEqual([1, 'a', 5]);
  });

  test('an operator getter that returns a non-string on its second read gives a CappedError, not a TypeError', () => {
    const s = plain('typeerror');
    s.insert([1, 10]);
    let reads = 0;
    const op = new Proxy(['+', 2, 1], {
      get: (target, key, receiver) => (key === '0' ? (reads++ === 0 ? '+' : {}) : Reflect.get(target, key, receiver)),
    });
    const result = outcome(() => s.update(1, [op as unknown as UpdateOp]));
    expect(result === 'ok' || typeof result === 'string' ? 'ok or a code' : result).toBe('ok or a code');
  });

  test('a getter that throws inside the operations changes nothing and its error reaches the caller', () => {
    const s = plain('throwing-getter');
    s.insert([1, 10]);
    const op = new Proxy(['+', 2, 1], {
      get: (target, key, receiver) => {
        if (key === '2') throw new Error('boom');
        return Reflect.get(target, key, receiver);
      },
    });
    expect(() => s.update(1, [op as unknown as UpdateOp])).toThrow('boom');
    expect(() => s.upsert([1, 0], [op as unknown as UpdateOp])).toThrow('boom');
    expect(s.get(1)).toEqual([1, 10]);
  });
});

describe('splice arguments at the int64 edges', () => {
  test('a splice position of -2^63 is refused with an update code, not ER_INTERNAL, and changes nothing', () => {
    const s = plain('splice-min');
    s.insert([1, 'hello', 5]);
    const code = codeOf(() => s.update(1, [[':', 2, -(2n ** 63n) as unknown as number, 1, 'x']]));
    expect(['ER_UPDATE_OP', 'ER_UPDATE_FIELD']).toContain(code);
    expect(s.get(1)).toEqual([1, 'hello', 5]);
  });

  test('upsert with a splice position of -2^63 does not fail with ER_INTERNAL', () => {
    const s = plain('splice-min-upsert');
    s.insert([1, 'hello', 5]);
    const result = outcome(() => s.upsert([1, 'x', 0], [[':', 2, -(2n ** 63n) as unknown as number, 1, 'x'], ['+', 3, 1]]));
    // As an op that fails on the stored tuple it is skipped (README); as a malformed op, ER_UPDATE_OP.
    if (result === 'ok') expect(s.get(1)).toEqual([1, 'hello', 6]);
    else {
      expect(result).toBe('ER_UPDATE_OP');
      expect(s.get(1)).toEqual([1, 'hello', 5]);
    }
  });

  test('a splice length of -2^63 behaves as any other negative length past the start', () => {
    const s = plain('splice-len-min');
    const t = plain('splice-len-ref');
    s.insert([1, 'hello']);
    t.insert([1, 'hello']);
    const reference = outcome(() => t.update(1, [[':', 2, 1, -(2 ** 40), 'x']]));
    expect(reference).toBe('ok');
    expect(outcome(() => s.update(1, [[':', 2, 1, -(2n ** 63n) as unknown as number, 'x']]))).toBe('ok');
    expect(s.get(1)).toEqual(t.get(1));
  });
});

describe('update edges that hold', () => {
  test('BigInt arguments at the int64 edges overflow with ER_UPDATE_INTEGER_OVERFLOW; uint64 bitwise works', () => {
    const s = plain('bigint-args');
    s.insert([1, -1, 18446744073709551615n, 2 ** 64]);
    expect(codeOf(() => s.update(1, [['+', 2, -(2n ** 63n)]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
    expect(codeOf(() => s.update(1, [['-', 2, 2n ** 63n]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
    expect(codeOf(() => s.update(1, [['+', 2, 2n ** 64n]]))).toBe('ER_UPDATE_OP');
    expect(s.update(1, [['^', 3, 18446744073709551615n]])?.[2]).toBe(0);
    // 2^64 is stored as an integral float64 outside the unsigned range: not a bitwise operand.
    expect(codeOf(() => s.update(1, [['|', 4, 1]]))).toBe('ER_UPDATE_FIELD');
    expect(codeOf(() => s.update(1, [['&', 2, 1]]))).toBe('ER_UPDATE_FIELD');
    expect(s.get(1)).toEqual([1, -1, 0, 2 ** 64]);
  });

  test('an update through a secondary unique index that collides in a third index changes nothing', () => {
    const s = new Space('secondary');
    s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    s.createIndex('nick', { parts: [[3, 'string']] });
    s.insert([1, 'a@x', 'a']);
    s.insert([2, 'b@x', 'b']);
    expect(codeOf(() => s.index.email.update('a@x', [['=', 2, 'z@x'], ['=', 3, 'b']]))).toBe('ER_DUPLICATE_KEY');
    expect(codeOf(() => s.index.email.update('a@x', [['=', 1, 5]]))).toBe('ER_CANT_UPDATE_PRIMARY_KEY');
    expect(s.index.nick.update('a', [['=', 3, 'a2'], ['=', 2, 'a2@x']])).toEqual([1, 'a2@x', 'a2']);
    expect(s.index.email.get('a@x')).toBeUndefined();
    expect(s.index.nick.get('a2')).toEqual([1, 'a2@x', 'a2']);
    s.checkIntegrity();
  });
});

describe('atomic edges that hold', () => {
  test('an inner transaction refused for returning a promise undoes only itself; the outer one commits', () => {
    const s = plain('inner-promise');
    s.transaction(() => {
      s.insert([2]);
      expect(codeOf(() => s.transaction(() => {
        s.insert([3]);
        return Promise.resolve(1);
      }))).toBe('ER_TRANSACTION');
      s.insert([4]);
    });
    expect(s.select()).toEqual([[2], [4]]);
  });

  test('a space dropped in an inner frame is skipped when the outer frame rolls back the others', () => {
    const a = plain('drop-a');
    const b = plain('drop-b', 'HASH');
    expect(() => atomic(() => {
      a.insert([1]);
      b.insert([1]);
      atomic(() => {
        b.insert([2]);
        b.drop();
      });
      a.insert([2]);
      throw new Error('undo');
    })).toThrow('undo');
    expect(a.select()).toEqual([]);
    expect(b.dropped).toBe(true);
  });
});

describe('capped spaces with expirationd', () => {
  useTaskTimers();

  // README, Capped spaces: a synchronous onExpired sees tuples already deleted, so a tuple is
  // expired or evicted, never both; an asynchronous one is handed tuples that stay stored until
  // its promise settles, and one evicted meanwhile goes to onEvict too.
  test('a tuple handed to a synchronous onExpired is never evicted as well', async () => {
    let clock = 100;
    const evicted: Tuple[] = [];
    const expired: Tuple[] = [];
    const s = new Space('sync-evict', {
      ttl: { field: 3, now: () => clock }, maxTuples: 3, onFull: 'evictExpiring', onEvict: (t) => evicted.push(...t),
    });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    s.insertMany([[1, 'a', 105], [2, 'b', 300], [3, 'c', 310]]);
    const task = expirationd.start('sync-evict', s, { itIndex: 'exp', scanSize: 16, onExpired: (tuples) => { expired.push(...tuples); } });
    task.on('error', () => {});
    clock = 110;
    await vi.advanceTimersByTimeAsync(10);
    expect(expired).toEqual([[1, 'a', 105]]);
    s.insert([4, 'd', 400]);  // room was made by the task: nothing to evict
    s.insert([5, 'e', 500]);  // full: evicts the smallest TTL, [2, 'b', 300]
    await vi.advanceTimersByTimeAsync(5000);
    expect(evicted).toEqual([[2, 'b', 300]]);
  });

  test('a tuple handed to an asynchronous onExpired and then evicted is reported to onEvict too', async () => {
    let clock = 100;
    const evicted: Tuple[] = [];
    const expired: Tuple[] = [];
    const s = new Space('async-evict', {
      ttl: { field: 3, now: () => clock }, maxTuples: 3, onFull: 'evictExpiring', onEvict: (t) => evicted.push(...t),
    });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    s.insertMany([[1, 'a', 105], [2, 'b', 300], [3, 'c', 310]]);
    let resolve: (() => void) | undefined;
    const task = expirationd.start('async-evict', s, {
      itIndex: 'exp', scanSize: 16,
      onExpired: (tuples) => {
        expired.push(...tuples);
        return new Promise<void>((r) => { resolve = r; });
      },
    });
    task.on('error', () => {});
    clock = 110;
    await vi.advanceTimersByTimeAsync(10);
    expect(expired).toEqual([[1, 'a', 105]]);
    s.insert([4, 'd', 400]);       // full: evicts the smallest TTL, [1, 'a', 105]
    resolve?.();
    await vi.advanceTimersByTimeAsync(5000);
    expect(evicted).toEqual([[1, 'a', 105]]);
    expect(s.get(1)).toBeUndefined();
  });
});
