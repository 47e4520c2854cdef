// The default clock of a TTL-aware space (issue 15): with no `now` option the addon reads the
// wall clock itself, and must see exactly the number Date.now() (unit 'ms') or Date.now() / 1000
// (unit 's') gives at that instant, so that `ttl <= now` decides as it did when JavaScript
// passed Date.now(). While Date.now is replaced (fake timers, a spy), reads follow the fake.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { Space } from '../src/index.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

function space(name: string, unit: 's' | 'ms'): Space {
  const s = new Space(name, { ttl: { field: 2, unit } });
  s.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
  return s;
}

interface Seen { get: number[]; select: number[]; pairs: number[]; count: number; min: number | undefined }

/**
 * Stores [id, ttl(ms)] for each id, then reads them all inside one millisecond of Date.now()
 * (retrying until Date.now() reads the same before and after): returns what each read saw and
 * that millisecond.
 */
function readWithinOneMs(s: Space, ttls: (ms: number) => Array<[number, number]>): { seen: Seen } {
  for (let attempt = 0; attempt < 200; attempt++) {
    const ms = Date.now();
    for (const t of ttls(ms)) s.replace(t);
    const ids = ttls(ms).map(([id]) => id);
    const seen: Seen = {
      get: ids.filter((id) => s.get(id) !== undefined),
      select: s.index.exp.select().map((t) => t[0] as number).sort((a, b) => a - b),
      pairs: [...s.index.pk.pairs()].map((t) => t[0] as number).sort((a, b) => a - b),
      count: s.index.exp.count(),
      min: s.index.exp.min()?.[0] as number | undefined,
    };
    if (Date.now() === ms) return { seen };
  }
  throw new Error('Date.now() never stayed on one millisecond across the reads');
}

function expectOnly(seen: Seen, live: number[], min: number): void {
  expect(seen.get).toEqual(live);
  expect(seen.select).toEqual(live);
  expect(seen.pairs).toEqual(live);
  expect(seen.count).toBe(live.length);
  expect(seen.min).toBe(min);
}

describe('the native default clock agrees with Date.now() at the unit boundary', () => {
  test("unit 'ms': a TTL of Date.now() is expired, Date.now() + 1 is not; float TTLs half a ms either side", () => {
    const s = space('clock-ms', 'ms');
    const { seen } = readWithinOneMs(s, (ms) => [[1, ms - 1], [2, ms], [3, ms + 1], [4, ms - 0.5], [5, ms + 0.5], [6, ms + 60_000]]);
    expectOnly(seen, [3, 5, 6], 5);
    s.drop();
  });

  test("unit 's': Date.now() / 1000 is expired, (Date.now() + 1) / 1000 is not; integer seconds on either side", () => {
    const s = space('clock-s', 's');
    const { seen } = readWithinOneMs(s, (now) => [
      [1, (now - 1) / 1000], [2, now / 1000], [3, (now + 1) / 1000],
      [4, Math.floor(now / 1000)], [5, Math.floor(now / 1000) + 1], [6, now / 1000 + 60],
    ]);
    expectOnly(seen, [3, 5, 6], 3);
    s.drop();
  });

  test('an insert over an expired key uses the same clock', () => {
    const s = space('clock-insert', 'ms');
    for (let attempt = 0; attempt < 200; attempt++) {
      const ms = Date.now();
      s.replace([1, ms]);
      s.replace([2, ms + 1]);
      const codeOf = (tuple: [number, number]): string | undefined => {
        try {
          s.insert(tuple);
          return undefined;
        } catch (e) {
          return (e as { code?: string }).code;
        }
      };
      const expired = codeOf([1, ms + 60_000]);  // over [1, ms]: expired at ms, replaced
      const live = codeOf([2, ms + 60_000]);     // over [2, ms + 1]: live, refused
      if (Date.now() !== ms) continue;
      expect(expired).toBeUndefined();
      expect(live).toBe('ER_DUPLICATE_KEY');
      expect(s.get(1)).toEqual([1, ms + 60_000]);
      s.drop();
      return;
    }
    throw new Error('Date.now() never stayed on one millisecond');
  });
});

describe('a replaced Date.now governs the default clock, as before', () => {
  test('vi.spyOn(Date, "now"): reads follow it in both units, and the wall clock is back after mockRestore()', () => {
    const ms = space('spy-ms', 'ms');
    const sec = space('spy-s', 's');
    const t = 1_000_000_000_000;  // 2001, long past
    ms.insert([1, t]);
    ms.insert([2, t + 1]);
    sec.insert([1, t / 1000]);
    sec.insert([2, t / 1000 + 0.001]);
    const spy = vi.spyOn(Date, 'now').mockReturnValue(t);
    expect(ms.select().map((x) => x[0])).toEqual([2]);
    expect(sec.select().map((x) => x[0])).toEqual([2]);
    expect(ms.get(2)).toEqual([2, t + 1]);
    expect([...ms.pairs()].map((x) => x[0])).toEqual([2]);
    spy.mockReturnValue(t - 1);
    expect(ms.count()).toBe(2);
    expect(sec.index.exp.min()).toEqual([1, t / 1000]);
    spy.mockRestore();
    expect(ms.count()).toBe(0);
    expect(sec.get(2)).toBeUndefined();
    ms.drop();
    sec.drop();
  });

  test("vi.useFakeTimers({ toFake: ['Date'] }): the fake clock moves the reads", () => {
    const s = space('fake-date', 's');
    vi.useFakeTimers({ toFake: ['Date'], now: 5_000_000 });
    s.insert([1, 5_000 + 10]);
    expect(s.get(1)).toEqual([1, 5_010]);
    vi.advanceTimersByTime(9_999);
    expect(s.get(1)).toEqual([1, 5_010]);
    vi.advanceTimersByTime(1);
    expect(s.get(1)).toBeUndefined();
    vi.useRealTimers();
    expect(s.len()).toBe(1);
    expect(s.get(1)).toBeUndefined();
    s.drop();
  });
});
