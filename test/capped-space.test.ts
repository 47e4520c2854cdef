// Capped spaces: maxTuples and maxBytes (measured by bsize()), onFull 'refuse' (ER_SPACE_FULL,
// nothing changed) and 'evictExpiring' (the smallest TTLs go, in the same statement, reported
// through onEvict once committed), on every path that stores a tuple, inside atomic() with
// rollback, under random churn against a JavaScript model, and with expirationd running.
//
// The churn models are seeded; a failure names the seed and the step. Explore with
//   CAPPED_SEED=<seed> CAPPED_OPS=<n> npx vitest run test/capped-space.test.ts
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Space, atomic, expirationd, type SpaceOptions, type Tuple } from '../src/index.js';
import { pack } from '../src/native/codec.js';
import { mulberry32 } from '../bench/lib/random.js';
import { codeOf } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

const OPS = Number(process.env.CAPPED_OPS) || 3_000;
const SEED = process.env.CAPPED_SEED === undefined ? 20261123 : Number(process.env.CAPPED_SEED);

const size = (t: Tuple): number => pack(t).length;
const ids = (s: Space): number[] => s.select().map((t) => t[0] as number).sort((a, b) => a - b);

let clock = 100;
afterEach(() => {
  clock = 100;
});

/** A capped space over [id, payload, exp] with a TTL clock: a primary on id, a TREE on exp (the eviction index). */
function capped(options: SpaceOptions, name = 'capped', pk: 'TREE' | 'HASH' = 'TREE'): Space {
  const space = new Space(name, { ttl: { field: 3, now: () => clock }, ...options });
  space.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  return space;
}

/** An evicting space whose onEvict calls are recorded. */
function evicting(options: SpaceOptions = {}, name = 'evicting'): { space: Space; reports: Tuple[][] } {
  const reports: Tuple[][] = [];
  const space = capped({ onFull: 'evictExpiring', onEvict: (tuples) => reports.push(tuples), ...options }, name);
  return { space, reports };
}

describe('options', () => {
  it('caps are read-only getters; onFull defaults to refuse; an uncapped space has none', () => {
    const s = new Space('c', { maxTuples: 10, maxBytes: 1000 });
    expect([s.maxTuples, s.maxBytes, s.onFull]).toEqual([10, 1000, 'refuse']);
    expect(() => { (s as unknown as { maxTuples: number }).maxTuples = 5; }).toThrow(TypeError);
    const plain = new Space('p');
    expect([plain.maxTuples, plain.maxBytes, plain.onFull]).toEqual([undefined, undefined, undefined]);
    expect(capped({ maxBytes: 64, onFull: 'evictExpiring' }).onFull).toBe('evictExpiring');
  });

  it('bad options throw ER_ILLEGAL_PARAMS with a message naming the option', () => {
    const ttl = { field: 3 };
    const bad: Array<[SpaceOptions, RegExp]> = [
      [{ maxTuples: 0 }, /maxTuples must be a positive integer, got 0/],
      [{ maxTuples: -1 }, /maxTuples/],
      [{ maxTuples: 1.5 }, /maxTuples/],
      [{ maxTuples: NaN }, /maxTuples/],
      [{ maxTuples: Infinity }, /maxTuples/],
      [{ maxTuples: 2 ** 53 }, /maxTuples/],
      [{ maxTuples: '5' as unknown as number }, /maxTuples must be a positive integer, got '5'/],
      [{ maxBytes: 0 }, /maxBytes/],
      [{ maxBytes: 10n as unknown as number }, /maxBytes must be a positive integer, got bigint/],
      [{ maxTuples: 5, onFull: 'evict' as 'refuse' }, /onFull must be 'evictExpiring' or 'refuse', got 'evict'/],
      [{ maxTuples: 5, onFull: 'evictExpiring', ttl, onEvict: 'log' as unknown as () => void }, /onEvict must be a function/],
      [{ onFull: 'refuse' }, /give maxTuples or maxBytes/],
      [{ onEvict: () => {} }, /give maxTuples or maxBytes/],
      [{ maxTuples: 5, onEvict: () => {} }, /onEvict is called only with onFull 'evictExpiring'/],
      [{ maxTuples: 5, onFull: 'evictExpiring' }, /needs the ttl option/],
      [{ maxTuples: 5, maxTupleSize: 10, onFull: 'evictExpiring', maxBites: 3 } as SpaceOptions, /unknown option 'maxBites'/],
    ];
    for (const [options, message] of bad) {
      expect(codeOf(() => new Space('bad', options)), String(message)).toBe('ER_ILLEGAL_PARAMS');
      expect(() => new Space('bad', options)).toThrow(message);
    }
  });

  it('each option is read once (a getter), and a Proxy over the options works', () => {
    let reads = 0;
    const options = {
      get maxTuples(): number {
        reads++;
        return reads === 1 ? 2 : 0;  // a second read would see an invalid value
      },
    };
    const s = new Space('getter', options);
    expect(reads).toBe(1);
    expect(s.maxTuples).toBe(2);
    const proxied = new Space('proxy', new Proxy({ maxBytes: 50, onFull: 'refuse' as const }, {}));
    expect([proxied.maxBytes, proxied.onFull]).toEqual([50, 'refuse']);
  });

  it("evictExpiring needs a TREE index led by the TTL field: without one every write is refused", () => {
    const s = new Space('noindex', { ttl: { field: 3, now: () => 0 }, maxTuples: 2, onFull: 'evictExpiring' });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('exp_h', { type: 'HASH', parts: [[3, 'unsigned']] });
    expect(codeOf(() => s.insert([1, 'a', 5]))).toBe('ER_ILLEGAL_PARAMS');
    expect(() => s.insert([1, 'a', 5])).toThrow(/needs a TREE index whose first part is its TTL field \(field 3/);
    expect(codeOf(() => s.insertMany([[1, 'a', 5]]))).toBe('ER_ILLEGAL_PARAMS');
    expect(s.len()).toBe(0);
    s.createIndex('exp', { unique: false, parts: [[3, 'unsigned'], [1, 'unsigned']] });
    s.insertMany([[1, 'a', 5], [2, 'b', 4], [3, 'c', 6]]);
    expect(ids(s)).toEqual([1, 3]);
  });
});

describe("onFull 'refuse'", () => {
  it('refuses every insert path over maxTuples with ER_SPACE_FULL and changes nothing', () => {
    const s = capped({ maxTuples: 2 });
    s.insert([1, 'a', 500]);
    s.replace([2, 'b', 600]);
    const before = s.select();
    const bsize = s.bsize();
    expect(codeOf(() => s.insert([3, 'c', 700]))).toBe('ER_SPACE_FULL');
    expect(() => s.insert([3, 'c', 700])).toThrow("Space 'capped' is full: it holds 2 tuples, maxTuples is 2");
    expect(codeOf(() => s.replace([3, 'c', 700]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.upsert([3, 'c', 700], [['=', 2, 'x']]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.insertMany([[3, 'c', 700]]))).toBe('ER_SPACE_FULL');
    expect(s.select()).toEqual(before);
    expect(s.bsize()).toBe(bsize);
    // What does not add a tuple still works at the cap.
    s.replace([1, 'A', 501]);
    s.upsert([2, 'ignored', 0], [['=', 2, 'B']]);
    expect(s.update(1, [['=', 2, 'AA']])).toEqual([1, 'AA', 501]);
    expect(s.select()).toEqual([[1, 'AA', 501], [2, 'B', 600]]);
    s.checkIntegrity();
  });

  it('insertMany is all or nothing at the cap', () => {
    const s = capped({ maxTuples: 3 });
    s.insert([1, 'a', 500]);
    expect(codeOf(() => s.insertMany([[2, 'b', 601], [3, 'c', 602], [4, 'd', 603]]))).toBe('ER_SPACE_FULL');
    expect(ids(s)).toEqual([1]);
    expect(s.insertMany([[2, 'b', 601], [3, 'c', 602]])).toBe(2);
    expect(ids(s)).toEqual([1, 2, 3]);
  });

  it('maxBytes caps bsize(), the sum of the tuples\' MessagePack sizes, on inserts and on growth', () => {
    const a: Tuple = [1, 'x'.repeat(10), 500];
    const max = 2 * size(a) + 4;
    const s = capped({ maxBytes: max });
    s.insert(a);
    expect(s.bsize()).toBe(size(a));
    s.insert([2, 'y'.repeat(10), 500]);
    expect(s.bsize()).toBe(2 * size(a));
    expect(size([3, 'ab', 1])).toBe(6);
    expect(codeOf(() => s.insert([3, 'ab', 1]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.replace([1, 'x'.repeat(15), 500]))).toBe('ER_SPACE_FULL');
    expect(() => s.replace([1, 'x'.repeat(15), 500])).toThrow(`its tuples take ${2 * size(a)} bytes, the new one ` +
      `${size(a) + 5} in place of ${size(a)}, maxBytes is ${max}`);
    expect(codeOf(() => s.update(2, [[':', 2, 1, 0, 'zzzzz']]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => s.upsert([2, '', 0], [['=', 2, 'w'.repeat(20)]]))).toBe('ER_SPACE_FULL');
    expect(s.bsize()).toBe(2 * size(a));
    s.replace([1, 'x'.repeat(14), 500]);  // grows by 4: exactly at the cap
    expect(s.bsize()).toBe(max);
    s.delete(2);
    expect(s.bsize()).toBe(size([1, 'x'.repeat(14), 500]));
    s.truncate();
    expect(s.bsize()).toBe(0);
  });

  it('expired tuples count until they are deleted; an insert over an expired duplicate replaces it', () => {
    const s = capped({ maxTuples: 2 });
    s.insert([1, 'a', 50]);
    s.insert([2, 'b', 60]);
    expect(s.select()).toEqual([]);  // both expired at 100: hidden, but stored
    expect(codeOf(() => s.insert([3, 'c', 700]))).toBe('ER_SPACE_FULL');
    s.insert([1, 'fresh', 700]);
    expect(s.get(1)).toEqual([1, 'fresh', 700]);
    expect(s.len()).toBe(2);
  });
});

describe("onFull 'evictExpiring'", () => {
  it('an insert evicts the stored tuple with the smallest TTL and reports it after the statement', () => {
    const { space: s, reports } = evicting({ maxTuples: 3 });
    s.insertMany([[1, 'a', 300], [2, 'b', 200], [3, 'c', 400]]);
    expect(reports).toEqual([]);
    let seen: number[] = [];
    const s2 = capped({ maxTuples: 3, onFull: 'evictExpiring', onEvict: () => { seen = ids(s2); } }, 'seen');
    s2.insertMany([[1, 'a', 300], [2, 'b', 200], [3, 'c', 400]]);
    s2.insert([4, 'd', 500]);
    expect(seen).toEqual([1, 3, 4]);  // onEvict runs once the insert is in
    expect(s.insert([4, 'd', 150])).toEqual([4, 'd', 150]);  // the new tuple stays, even with the smallest TTL
    expect(reports).toEqual([[[2, 'b', 200]]]);
    expect(ids(s)).toEqual([1, 3, 4]);
    s.checkIntegrity();
  });

  it('expired tuples go first, smallest TTL first, equal TTLs by primary key', () => {
    const { space: s, reports } = evicting({ maxTuples: 4 });
    s.insertMany([[7, 'live', 150], [5, 'old', 20], [3, 'older', 10], [4, 'old too', 20]]);
    s.insertMany([[8, 'x', 900], [9, 'y', 900], [10, 'z', 900]]);
    expect(reports).toEqual([[[3, 'older', 10], [4, 'old too', 20], [5, 'old', 20]]]);
    expect(ids(s)).toEqual([7, 8, 9, 10]);
  });

  it('every insert path evicts: insert, replace of a new key, upsert that inserts, insertMany, update that grows', () => {
    const { space: s, reports } = evicting({ maxTuples: 3, maxBytes: 64 });
    s.insertMany([[1, 'a', 101], [2, 'b', 102], [3, 'c', 103]]);
    s.replace([4, 'd', 200]);
    s.upsert([5, 'e', 300], [['=', 2, 'no']]);
    s.insert([6, 'f', 400]);
    expect(reports).toEqual([[[1, 'a', 101]], [[2, 'b', 102]], [[3, 'c', 103]]]);
    reports.length = 0;
    s.replace([4, 'd2', 200]);  // a stored key: nothing to evict
    s.upsert([4, '', 0], [['=', 2, 'd3']]);
    expect(reports).toEqual([]);
    expect(s.bsize()).toBeLessThanOrEqual(64);
    // Growing tuple 6 past maxBytes evicts the smallest TTLs other than itself.
    const grown = s.update(6, [['=', 2, 'f'.repeat(55)]]) as Tuple;
    expect(size(grown)).toBe(62);
    expect(reports).toEqual([[[4, 'd3', 200], [5, 'e', 300]]]);
    expect(s.select()).toEqual([grown]);
    expect(s.bsize()).toBe(size(grown));
    // An update through a secondary unique index evicts too.
    s.delete(6);
    s.createIndex('payload', { parts: [[2, 'string']] });
    s.insertMany([[7, 'g', 150], [8, 'h', 160]]);
    reports.length = 0;
    s.index.payload.update('h', [['=', 2, 'h'.repeat(55)]]);
    expect(reports).toEqual([[[7, 'g', 150]]]);
    expect(ids(s)).toEqual([8]);
    s.checkIntegrity();
  });

  it('the tuple a statement replaces is never evicted, however small its TTL', () => {
    const { space: s, reports } = evicting({ maxBytes: 40 });
    s.insert([1, 'a'.repeat(10), 105]);
    s.insert([2, 'b'.repeat(10), 500]);
    s.replace([1, 'a'.repeat(25), 105]);
    expect(reports).toEqual([[[2, 'b'.repeat(10), 500]]]);
    expect(ids(s)).toEqual([1]);
  });

  it('insertMany reports its evictions in one call, its own earlier tuples included', () => {
    const { space: s, reports } = evicting({ maxTuples: 2 });
    s.insert([1, 'a', 500]);
    expect(s.insertMany([[2, 'b', 50], [3, 'c', 60], [4, 'd', 700]])).toBe(3);
    expect(reports).toEqual([[[2, 'b', 50], [3, 'c', 60]]]);
    expect(ids(s)).toEqual([1, 4]);
  });

  it('a tuple larger than maxBytes is refused without evicting anything', () => {
    const { space: s, reports } = evicting({ maxBytes: 30 });
    s.insert([1, 'a', 500]);
    expect(codeOf(() => s.insert([2, 'x'.repeat(40), 600]))).toBe('ER_SPACE_FULL');
    expect(() => s.insert([2, 'x'.repeat(40), 600])).toThrow(/can never fit maxBytes \(30\)/);
    expect(ids(s)).toEqual([1]);
    expect(reports).toEqual([]);
  });

  it('a statement that fails after evicting restores the evicted tuples and reports nothing', () => {
    const { space: s, reports } = evicting({ maxTuples: 2 });
    s.createIndex('payload', { parts: [[2, 'string']] });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    // 3 evicts 1, 4 evicts 3 (of the same batch), then 5 duplicates 'b': all of it is undone.
    expect(codeOf(() => s.insertMany([[3, 'c', 100], [4, 'd', 400], [5, 'b', 500]]))).toBe('ER_DUPLICATE_KEY');
    expect(s.select()).toEqual([[1, 'a', 200], [2, 'b', 300]]);
    expect(reports).toEqual([]);
    s.checkIntegrity();
  });
});

describe('evictions inside atomic()', () => {
  it('are reported when the outermost frame commits, not before', () => {
    const { space: s, reports } = evicting({ maxTuples: 2 });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    const seenInside: number[] = [];
    atomic(() => {
      s.insert([3, 'c', 400]);
      s.transaction(() => s.insert([4, 'd', 500]));
      seenInside.push(reports.length);
    });
    expect(seenInside).toEqual([0]);
    expect(reports).toEqual([[[1, 'a', 200]], [[2, 'b', 300]]]);
    expect(ids(s)).toEqual([3, 4]);
  });

  it('a rolled-back frame restores what it evicted and reports nothing; a committed inner frame reports with its parent', () => {
    const { space: s, reports } = evicting({ maxTuples: 2 });
    const other = new Space('other');
    other.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    expect(() => atomic(() => {
      s.insert([3, 'c', 400]);
      other.insert([1]);
      throw new Error('undo');
    })).toThrow('undo');
    expect(s.select()).toEqual([[1, 'a', 200], [2, 'b', 300]]);
    expect(other.len()).toBe(0);
    expect(reports).toEqual([]);
    atomic(() => {
      s.insert([3, 'c', 400]);  // evicts 1: kept
      try {
        atomic(() => {
          s.insert([4, 'd', 500]);  // evicts 2: undone with the inner frame
          throw new Error('inner');
        });
      } catch {
        // the inner frame is undone
      }
      s.transaction(() => s.insert([5, 'e', 600]));  // evicts 2: kept
    });
    expect(reports).toEqual([[[1, 'a', 200]], [[2, 'b', 300]]]);
    expect(ids(s)).toEqual([3, 5]);
    s.checkIntegrity();
  });

  it('a synchronous onExpired that inserts into a capped space commits or rolls back its evictions with the chunk', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] });
    try {
      const { space: archive, reports } = evicting({ maxTuples: 2 }, 'archive');
      archive.insertMany([[100, 'old', 150], [101, 'older', 140]]);
      const src = new Space('src');
      src.createIndex('pk', { parts: [[1, 'unsigned']] });
      src.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
      src.insert([1, 'job', 10]);
      let fail = true;
      const task = expirationd.start('archiver', src, {
        itIndex: 'exp', field: 3, now: () => clock,
        onExpired: (tuples) => {
          for (const t of tuples) archive.insert([t[0], t[1], 1000]);
          if (fail) throw new Error('not yet');
        },
      });
      task.on('error', () => {});
      vi.advanceTimersByTime(10);
      expect(src.len()).toBe(1);
      expect(ids(archive)).toEqual([100, 101]);
      expect(reports).toEqual([]);
      fail = false;
      task.wake();
      vi.advanceTimersByTime(2000);
      expect(src.len()).toBe(0);
      expect(ids(archive)).toEqual([1, 100]);
      expect(reports).toEqual([[[101, 'older', 140]]]);
    } finally {
      expirationd.killAll();
      vi.useRealTimers();
    }
  });
});

describe('onEvict', () => {
  it('an onEvict that throws undoes nothing, loses no other report, and is kept in lastEvictError and warned about', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const reports: Tuple[][] = [];
      const s = capped({
        maxTuples: 1, onFull: 'evictExpiring',
        onEvict: (tuples) => {
          reports.push(tuples);
          if (tuples[0][0] === 1) throw new Error('boom');
        },
      });
      s.insert([1, 'a', 200]);
      expect(s.lastEvictError).toBeUndefined();
      atomic(() => {
        s.insert([2, 'b', 300]);  // evicts 1: its report throws
        s.insert([3, 'c', 400]);  // evicts 2: still reported
      });
      expect(ids(s)).toEqual([3]);
      expect(reports).toEqual([[[1, 'a', 200]], [[2, 'b', 300]]]);
      expect((s.lastEvictError as Error).message).toBe('boom');
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toMatch(/Space 'capped': onEvict threw .*boom/);
      expect(warn.mock.calls[0][1]).toEqual({ code: 'ER_EVICT_CALLBACK' });
      // A plain insert whose onEvict throws returns normally.
      expect(s.insert([1, 'again', 500])).toEqual([1, 'again', 500]);
      expect(s.get(1)).toEqual([1, 'again', 500]);
    } finally {
      warn.mockRestore();
    }
  });

  it('a rejected promise from onEvict is kept in lastEvictError', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const s = capped({ maxTuples: 1, onFull: 'evictExpiring', onEvict: async () => { throw new Error('later'); } });
      s.insert([1, 'a', 200]);
      s.insert([2, 'b', 300]);
      await new Promise((resolve) => setImmediate(resolve));
      expect((s.lastEvictError as Error).message).toBe('later');
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  it('an onEvict that writes to the space is not re-entered: its own evictions are reported after it returns', () => {
    const calls: Array<{ depth: number; tuples: Tuple[]; gone: boolean }> = [];
    let depth = 0;
    const s: Space = capped({
      maxTuples: 2, onFull: 'evictExpiring',
      onEvict: (tuples) => {
        depth++;
        const id = tuples[0][0] as number;
        calls.push({ depth, tuples, gone: s.get(id) === undefined });
        if (id < 10) s.insert([id + 10, 'requeued', 1000 + id]);
        depth--;
      },
    });
    s.insertMany([[1, 'a', 200], [2, 'b', 300]]);
    // 3 evicts 1; onEvict puts 11, which evicts 2; then 12 evicts 3, and 13 evicts 11.
    s.insert([3, 'c', 400]);
    expect(calls).toEqual([
      { depth: 1, tuples: [[1, 'a', 200]], gone: true },
      { depth: 1, tuples: [[2, 'b', 300]], gone: true },
      { depth: 1, tuples: [[3, 'c', 400]], gone: true },
      { depth: 1, tuples: [[11, 'requeued', 1001]], gone: true },
    ]);
    expect(ids(s)).toEqual([12, 13]);
    expect(s.lastEvictError).toBeUndefined();
    s.checkIntegrity();
  });

  it('an onEvict that drops its space ends nothing badly', () => {
    const s: Space = capped({ maxTuples: 1, onFull: 'evictExpiring', onEvict: () => s.drop() });
    s.insert([1, 'a', 200]);
    s.insert([2, 'b', 300]);
    expect(s.dropped).toBe(true);
    expect(codeOf(() => s.insert([3, 'c', 1]))).toBe('ER_SPACE_DROPPED');
  });

  it('without onEvict an evicting space still evicts', () => {
    const s = capped({ maxTuples: 1, onFull: 'evictExpiring' });
    s.insert([1, 'a', 200]);
    s.insert([2, 'b', 300]);
    expect(ids(s)).toEqual([2]);
  });
});

describe('caps under random churn, against a JavaScript model', () => {
  for (const [onFull, pk] of [['refuse', 'TREE'], ['evictExpiring', 'TREE'], ['evictExpiring', 'HASH']] as const) {
    it(`${onFull}, ${pk} primary: maxTuples and maxBytes hold after every statement, and match the model`, () => {
      const seed = SEED + (onFull === 'refuse' ? 0 : 1);
      const next = mulberry32(seed);
      const int = (n: number): number => Math.floor(next() * n);
      const maxTuples = 30;
      const maxBytes = 600;
      const reports: Tuple[][] = [];
      const s = capped({ maxTuples, maxBytes, onFull, ...(onFull === 'evictExpiring' ? { onEvict: (t) => reports.push(t) } : {}) },
        'churn', pk);
      let model = new Map<number, Tuple>();
      const bytes = (m: Map<number, Tuple>): number => [...m.values()].reduce((n, t) => n + size(t), 0);
      const over = (m: Map<number, Tuple>): boolean => m.size > maxTuples || bytes(m) > maxBytes;
      // TTLs around the clock: an insert over a stored tuple whose TTL has passed replaces it.
      const tuple = (id: number): Tuple => [id, 'p'.repeat(int(25)), 50 + int(150)];
      const dup = (m: Map<number, Tuple>, id: number): boolean => m.has(id) && (m.get(id) as Tuple)[2] as number > clock;
      // The model's store of t (replacing `keep`'s tuple when it is stored): evicts or refuses.
      const store = (m: Map<number, Tuple>, t: Tuple, evicted: Tuple[]): 'full' | undefined => {
        const id = t[0] as number;
        m.set(id, t);
        while (over(m)) {
          if (onFull === 'refuse' || size(t) > maxBytes) return 'full';
          const victim = [...m.values()].filter((x) => x[0] !== id)
            .sort((a, b) => (a[2] as number) - (b[2] as number) || (a[0] as number) - (b[0] as number))[0];
          evicted.push(victim);
          m.delete(victim[0] as number);
        }
        return undefined;
      };
      const expectSame = (step: number, what: string): void => {
        const where = `seed ${seed}, step ${step} (${what})`;
        expect(s.len(), where).toBe(model.size);
        expect(s.bsize(), where).toBe(bytes(model));
        expect(s.len(), where).toBeLessThanOrEqual(maxTuples);
        expect(s.bsize(), where).toBeLessThanOrEqual(maxBytes);
      };
      for (let step = 0; step < OPS; step++) {
        const op = int(8);
        const id = int(60);
        const where = `seed ${seed}, step ${step}, op ${op}`;
        const work = new Map(model);
        const evicted: Tuple[] = [];
        reports.length = 0;
        let expected: 'full' | 'dup' | undefined;
        let run: () => unknown;
        if (op === 0) {
          work.delete(id);
          run = () => s.delete(id);
        } else if (op === 1) {  // insert
          const t = tuple(id);
          expected = dup(model, id) ? 'dup' : store(work, t, evicted);
          run = () => s.insert(t);
        } else if (op === 2) {  // replace
          const t = tuple(id);
          expected = store(work, t, evicted);
          run = () => s.replace(t);
        } else if (op === 3) {  // upsert
          const t = tuple(id);
          const old = model.get(id);
          const grown: Tuple = old === undefined ? t : [id, `${old[1] as string}q`, old[2]];
          expected = store(work, grown, evicted);
          run = () => s.upsert(t, [['=', 2, `${old === undefined ? '' : old[1] as string}q`]]);
        } else if (op === 4) {  // update
          const old = model.get(id);
          const grown: Tuple | undefined = old === undefined ? undefined : [id, 'u'.repeat(int(30)), old[2]];
          expected = grown === undefined ? undefined : store(work, grown, evicted);
          run = () => s.update(id, [['=', 2, grown === undefined ? 'x' : grown[1]]]);
        } else if (op === 5) {  // insertMany: one tuple after another (an eviction may remove a would-be duplicate)
          const batch = [id, int(60), int(60)].map(tuple);
          for (const t of batch) expected ??= dup(work, t[0] as number) ? 'dup' : store(work, t, evicted);
          run = () => s.insertMany(batch);
        } else {  // a transaction of two inserts that rolls back, or commits
          const a = tuple(id);
          const b = tuple(int(60));
          const commit = op === 6;
          for (const t of [a, b]) expected ??= dup(work, t[0] as number) ? 'dup' : store(work, t, evicted);
          if (!commit && expected === undefined) {
            work.clear();
            for (const [k, v] of model) work.set(k, v);
            evicted.length = 0;
          }
          run = () => atomic(() => {
            s.insert(a);
            s.insert(b);
            if (!commit) throw new Error('rollback');
          });
          if (!commit && expected === undefined) {
            expect(run, where).toThrow('rollback');
            expect(reports, where).toEqual([]);
            expectSame(step, 'rolled back');
            continue;
          }
        }
        if (expected === 'full') expect(codeOf(run), where).toBe('ER_SPACE_FULL');
        else if (expected === 'dup') expect(codeOf(run), where).toBe('ER_DUPLICATE_KEY');
        else {
          run();
          model = work;
          expect(reports.flat(), where).toEqual(evicted);
        }
        if (expected !== undefined) expect(reports, where).toEqual([]);
        expectSame(step, 'statement');
      }
      const byId = (a: Tuple, b: Tuple): number => (a[0] as number) - (b[0] as number);
      clock = 0;  // every TTL is later: select() shows what is stored
      expect(s.select().sort(byId)).toEqual([...model.values()].sort(byId));
      s.checkIntegrity();
    });
  }
});

describe('with expirationd running on the space', () => {
  useTaskTimers();

  it('every tuple is stored, expired or evicted exactly once, and the cap holds throughout', () => {
    const next = mulberry32(SEED);
    const evicted: Tuple[] = [];
    const expired: Tuple[] = [];
    const { space: s } = { space: capped({ maxTuples: 50, onFull: 'evictExpiring', onEvict: (t) => evicted.push(...t) }, 'daemon') };
    const task = expirationd.start('capped-daemon', s, {
      itIndex: 'exp', scanSize: 16, onExpired: (tuples) => { expired.push(...tuples); },
    });
    let id = 0;
    for (let tick = 0; tick < 400; tick++) {
      clock += 1;
      const burst = Math.floor(next() * 8);
      for (let k = 0; k < burst; k++) s.insert([id++, 'x', clock + 1 + Math.floor(next() * 30)]);
      if (tick % 50 === 0) s.insertMany([[id++, 'a', clock + 40], [id++, 'b', clock - 5]]);
      expect(s.len()).toBeLessThanOrEqual(50);
      vi.advanceTimersByTime(1000);
    }
    const all = [...s.select(), ...expired, ...evicted].map((t) => t[0] as number);
    expect(new Set(all).size).toBe(all.length);
    // Stored tuples hidden because expired are not in select(): count what is stored instead.
    expect(s.len() + expired.length + evicted.length).toBe(id);
    expect(evicted.length).toBeGreaterThan(0);
    expect(expired.length).toBeGreaterThan(0);
    expect(task.stats().expired).toBe(expired.length);
    s.checkIntegrity();
  });

  it('processExpired that re-queues into the capped space: its evictions commit with the chunk, and a throw restores them unreported', () => {
    const evicted: Tuple[][] = [];
    const s = capped({ maxTuples: 4, onFull: 'evictExpiring', onEvict: (t) => evicted.push(t) }, 'requeue');
    s.insertMany([[1, 'due', 105], [2, 'later', 300], [3, 'later', 310], [4, 'later', 320]]);
    let fail = true;
    let calls = 0;
    const task = expirationd.start('requeue', s, {
      itIndex: 'exp', scanSize: 16,
      // Each due tuple is replaced by a follow-up under a new key: the space is full, so the
      // insert evicts the tuple with the smallest TTL (the due tuple itself, still stored).
      processExpired: (tuples) => {
        calls++;
        for (const t of tuples) s.insert([(t[0] as number) + 100, 'next', 1000]);
        if (fail) throw new Error('not yet');
      },
    });
    task.on('error', () => {});
    clock = 110;
    vi.advanceTimersByTime(10);
    expect(calls).toBeGreaterThan(0);
    expect(ids(s)).toEqual([2, 3, 4]);          // 1 is expired, so hidden, but still stored
    expect(s.len()).toBe(4);
    expect(evicted).toEqual([]);                // the eviction was rolled back with the chunk
    s.checkIntegrity();
    fail = false;
    task.wake();
    vi.advanceTimersByTime(2000);
    expect(ids(s)).toEqual([2, 3, 4, 101]);
    expect(s.len()).toBe(4);
    expect(evicted).toEqual([[[1, 'due', 105]]]);
    expect(task.stats().expired).toBe(1);
    s.checkIntegrity();
  });

  it('a stopped task whose cursor tuples are evicted resumes on start(): nothing is delivered twice or missed', () => {
    const evicted: Tuple[] = [];
    const expired: Tuple[] = [];
    const s = capped({ maxTuples: 64, onFull: 'evictExpiring', onEvict: (t) => evicted.push(...t) }, 'paused');
    for (let i = 0; i < 64; i++) s.insert([i, 'x', 101 + (i % 32)]);
    let paused = false;
    const task = expirationd.start('paused', s, {
      itIndex: 'exp', scanSize: 8,
      onExpired: (tuples) => {
        expired.push(...tuples);
        if (!paused) {
          paused = true;
          task.stop();                           // pause mid-pass, the cursor inside the expired run
        }
      },
    });
    clock = 120;                                 // exp <= now is expired: ids with exp 101..120, 40 tuples
    vi.advanceTimersByTime(10);
    expect(task.state).toBe('stopped');
    const seen = expired.length;
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(40);
    // While it is paused, new inserts evict the smallest TTLs: the tuples the cursor would visit next.
    // The space has room for the `seen` deleted tuples; 20 more inserts each evict one.
    for (let i = 0; i < seen + 20; i++) s.insert([1000 + i, 'new', 500]);
    expect(evicted).toHaveLength(20);
    expect(evicted.every((t) => (t[2] as number) <= 120)).toBe(true);
    vi.advanceTimersByTime(5000);
    expect(expired).toHaveLength(seen);          // stopped: nothing runs
    task.start();
    vi.advanceTimersByTime(5000);
    const delivered = [...expired, ...evicted].map((t) => t[0] as number);
    expect(new Set(delivered).size).toBe(delivered.length);
    const due = Array.from({ length: 64 }, (_, i) => i).filter((i) => 101 + (i % 32) <= 120);
    expect(delivered.filter((id) => id < 1000).sort((a, b) => a - b)).toEqual(due);
    expect(s.len() + expired.length + evicted.length).toBe(64 + seen + 20);
    expect(task.stats().expired).toBe(expired.length);
    s.checkIntegrity();
  });
});
