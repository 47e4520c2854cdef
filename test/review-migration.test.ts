// A migration review: pieces of production services that run today on lru-cache, @isaacs/ttlcache,
// node-cache and Redis (sliding sessions, one-time tokens, webhook dedupe keys, rate-limit
// windows, in-process locks, delayed jobs, a bounded cache), ported to this library using only
// what README.md documents, written in strict TypeScript. Each test asserts what a user would rely
// on: the README's word, or the replaced store's behaviour where the README promises parity.
// Tests marked `// Fixed:` failed on the reviewed code (each says what was wrong) and pass since their fixes.
//
// Clocks are injected (`now` options) or faked (vi fake timers); nothing waits in real time.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { CappedError, Space, atomic, expirationd, type Task } from '../src/index.js';
import { codeOrNone as codeOf } from './support/errors.js';

const TASK_TIMERS = ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] as const;
const spaces: Space<any, any>[] = [];
function track<S extends Space<any, any>>(s: S): S {
  spaces.push(s);
  return s;
}

afterEach(() => {
  try {
    expirationd.killAll();
    for (const s of spaces.splice(0)) if (!s.dropped) s.drop();
  } finally {
    vi.restoreAllMocks();
    vi.useRealTimers();
  }
});


// ---------------------------------------------------------------------------------------------
// 1. Sliding sessions (Redis `SET sess:<tok> … EX 1800` + `EXPIRE` on every request; ttlcache
//    with updateAgeOnGet). The default wall clock, under vi fake timers (Date faked too, as a
//    service's own test suite would do it): "While Date.now is replaced (fake timers, a spy),
//    reads call it".
// ---------------------------------------------------------------------------------------------
describe('sliding sessions, wall clock under fake timers', () => {
  type Session = [token: string, user: string, exp: number];
  const IDLE = 1800;

  function sessionStore(name: string) {
    const sessions = track(new Space<Session, string>(name, { ttl: { field: 3 } }));   // unit 's', wall clock
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    sessions.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    const nowS = (): number => Date.now() / 1000;   // the space's clock: the README's default, re-derived by hand
    return {
      sessions,
      login: (token: string, user: string) => sessions.replace([token, user, nowS() + IDLE]),
      /** GET + EXPIRE: the recipe (get first: update acts on what is stored). */
      touch(token: string): string | undefined {
        const s = sessions.get(token);
        if (s === undefined) return undefined;
        sessions.update(token, [['=', 3, nowS() + IDLE]]);
        return s[1];
      },
      /** Redis TTL / ttlcache getRemainingTTL, in seconds; undefined when absent or expired. */
      remaining(token: string): number | undefined {
        const s = sessions.get(token);
        return s === undefined ? undefined : s[2] - nowS();
      },
    };
  }

  test('a session lives IDLE seconds after its last request; the task deletes it and says so', () => {
    vi.useFakeTimers({ now: 1_800_000_000_000 });
    const { sessions, login, touch, remaining } = sessionStore('mig-sessions');
    const task = expirationd.start('mig-sessions', sessions, { itIndex: 'exp' });   // field, unit, now from the space
    const expired: string[] = [];
    task.on('expired', (tuples) => expired.push(...tuples.map(([token]) => token)));   // tuples: Session[]

    login('t1', 'ada');
    login('t2', 'grace');
    expect(remaining('t1')).toBe(IDLE);
    vi.advanceTimersByTime(1000 * 1000);
    expect(touch('t1')).toBe('ada');
    expect(remaining('t1')).toBe(IDLE);
    vi.advanceTimersByTime(1000 * 1000);   // t2: 2000 s idle; t1: 1000 s
    expect(touch('t2')).toBeUndefined();
    expect(touch('t1')).toBe('ada');
    // The task has deleted t2 by now (it woke at t2's due time): gone from storage too.
    expect(expired).toEqual(['t2']);
    expect(sessions.len()).toBe(1);
    expect(task.stats().expired).toBe(1);
  });

  test("update() of a session that expired but is still stored revives it (the README's warning): touch() must get() first", () => {
    let clock = 1_000_000;
    const sessions = track(new Space<Session, string>('mig-revive', { ttl: { field: 3, now: () => clock } }));
    sessions.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    sessions.insert(['t', 'ada', clock + 10]);
    clock += 11;
    expect(sessions.get('t')).toBeUndefined();
    // Redis: EXPIRE on an expired key returns 0 and does not bring it back. Here update() returns
    // the tuple, and the session is live again: what "update acts on what is stored" means.
    expect(sessions.update('t', [['=', 3, clock + 10]])).toEqual(['t', 'ada', clock + 10]);
    expect(sessions.get('t')?.[1]).toBe('ada');
  });
});

// ---------------------------------------------------------------------------------------------
// 2. One-time tokens (password reset, email confirmation): Redis GETDEL, node-cache take().
// ---------------------------------------------------------------------------------------------
describe('one-time tokens', () => {
  type Token = [token: string, userId: number, exp: number];
  let clock = 2_000_000_000;
  function tokenStore(name: string) {
    const tokens = track(new Space<Token, string>(name, { ttl: { field: 3, now: () => clock } }));
    tokens.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
    tokens.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
    return tokens;
  }

  test('delete() hands back an expired token (documented); consuming needs get() and delete() in a transaction', () => {
    const tokens = tokenStore('mig-tokens');
    tokens.insert(['reset-1', 42, clock + 900]);
    tokens.insert(['reset-2', 43, clock + 900]);
    clock += 901;
    // The naive port of GETDEL/take(): "delete of an expired tuple removes and returns it".
    expect(tokens.delete('reset-1')).toEqual(['reset-1', 42, clock - 1]);
    // The correct port:
    const consume = (t: string): number | undefined =>
      tokens.transaction(() => {
        const row = tokens.get(t);
        if (row === undefined) return undefined;
        tokens.delete(t);
        return row[1];
      });
    expect(consume('reset-2')).toBeUndefined();
    tokens.insert(['reset-3', 44, clock + 900]);
    expect(consume('reset-3')).toBe(44);
    expect(consume('reset-3')).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// 3. Webhook dedupe keys (Redis `SET dedupe:<id> 1 NX EX 86400`).
// ---------------------------------------------------------------------------------------------
describe('webhook dedupe keys', () => {
  type Seen = [deliveryId: string, exp: number];
  test('insert is SET NX: a live key throws ER_DUPLICATE_KEY, an expired one is replaced', () => {
    let clock = 1_000;
    const seen = track(new Space<Seen, string>('mig-dedupe', { ttl: { field: 2, now: () => clock } }));
    seen.createIndex('id', { type: 'HASH', parts: [[1, 'string']] });
    seen.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    const firstTime = (id: string): boolean => {
      try {
        seen.insert([id, clock + 86_400]);
        return true;
      } catch (error) {
        if (error instanceof CappedError && error.code === 'ER_DUPLICATE_KEY') return false;
        throw error;
      }
    };
    expect(firstTime('d-1')).toBe(true);
    expect(firstTime('d-1')).toBe(false);
    clock += 86_400;
    expect(firstTime('d-1')).toBe(true);   // over the expired key
    expect(seen.len()).toBe(1);

    // A redelivered batch: insertMany is all or nothing, so one duplicate refuses the whole batch
    // (Redis's pipelined SET NX answers per key).
    expect(codeOf(() => seen.insertMany([['d-2', clock + 10], ['d-1', clock + 10]]))).toBe('ER_DUPLICATE_KEY');
    expect(seen.get('d-2')).toBeUndefined();
  });

  test('a key replaced by insert over its expired tuple is reported to no one', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    let clock = 1_000;
    const seen = track(new Space<Seen, string>('mig-dedupe-ev', { ttl: { field: 2, now: () => clock } }));
    seen.createIndex('id', { type: 'HASH', parts: [[1, 'string']] });
    seen.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    const task = expirationd.start('mig-dedupe-ev', seen, { itIndex: 'exp' });
    const expired: string[] = [];
    task.on('expired', (t) => expired.push(...t.map(([id]) => id)));
    seen.insert(['d-1', clock + 10]);
    clock += 20;
    seen.insert(['d-1', clock + 10]);   // documented: "no onExpired runs for it"
    vi.advanceTimersByTime(2000);
    expect(expired).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// 4. Rate limiting (Redis INCR + EXPIRE; node-cache counters).
// ---------------------------------------------------------------------------------------------
describe('rate limits', () => {
  type Hits = [client: string, window: number, until: number, count: number];
  test('the fixed-window recipe, ported as the README writes it', () => {
    const WINDOW_MS = 1000;
    let clock = 1_700_000_000_000;
    const hits = track(new Space<Hits>('mig-hits', { ttl: { field: 3, unit: 'ms', now: () => clock } }));
    const counters = hits.createIndex('primary', { parts: [[1, 'string'], [2, 'unsigned']] });
    hits.createIndex('until', { unique: false, parts: [[3, 'unsigned']] });
    const allow = (client: string, limit: number): boolean => {
      const window = Math.floor(clock / WINDOW_MS);
      const counted = counters.update([client, window], [['+', 4, 1]]) ?? hits.insert([client, window, (window + 1) * WINDOW_MS, 1]);
      return counted[3] <= limit;
    };
    expect([1, 2, 3, 4].map(() => allow('ip', 3))).toEqual([true, true, true, false]);
    clock += WINDOW_MS;
    expect(allow('ip', 3)).toBe(true);
    expect(hits.count()).toBe(1);
    expect(hits.len()).toBe(2);
  });

  test('INCR on one key per client with upsert keeps counting into the expired window (documented)', () => {
    let clock = 100;
    type Counter = [key: string, count: number, exp: number];
    const c = track(new Space<Counter, string>('mig-incr', { ttl: { field: 3, now: () => clock } }));
    c.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    const incr = (key: string): void => c.upsert([key, 1, clock + 60], [['+', 2, 1]]);
    incr('ip');
    incr('ip');
    clock += 61;
    expect(c.get('ip')).toBeUndefined();
    incr('ip');   // Redis: a fresh counter at 1 here
    expect(c.get('ip')).toBeUndefined();   // still the old window: expired, hidden, counting
    // The README's fix: write the TTL in the ops too when the stored one has passed, or insert
    // when get() finds nothing. The second, as one helper:
    const incrFresh = (key: string): number =>
      c.transaction(() => (c.get(key) === undefined ? c.replace([key, 1, clock + 60]) : c.update(key, [['+', 2, 1]])!)[1]);
    expect(incrFresh('ip')).toBe(1);
    expect(incrFresh('ip')).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
// 5. Locks inside one process (Redis SET NX PX + compare-and-delete Lua script).
// ---------------------------------------------------------------------------------------------
describe('locks', () => {
  type Lock = [name: string, owner: string, expiresAt: number];
  test('the lock recipe on a monotonic ms clock', () => {
    let mono = 5_000;   // what performance.timeOrigin + performance.now() would give, injected
    const locks = track(new Space<Lock, string>('mig-locks', { ttl: { field: 3, unit: 'ms', now: () => mono } }));
    locks.createIndex('name', { type: 'HASH', parts: [[1, 'string']] });
    const acquire = (name: string, owner: string, ms: number): boolean => {
      try {
        locks.insert([name, owner, mono + ms]);
        return true;
      } catch (error) {
        if (error instanceof CappedError && error.code === 'ER_DUPLICATE_KEY') return false;
        throw error;
      }
    };
    const release = (name: string, owner: string): boolean =>
      locks.transaction(() => {
        if (locks.get(name)?.[1] !== owner) return false;
        locks.delete(name);
        return true;
      });
    expect(acquire('job:1', 'a', 100)).toBe(true);
    expect(acquire('job:1', 'b', 100)).toBe(false);
    mono += 100;
    expect(acquire('job:1', 'b', 100)).toBe(true);
    expect(release('job:1', 'a')).toBe(false);
    expect(release('job:1', 'b')).toBe(true);
    expect(locks.len()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// 6. A bounded cache (lru-cache `max`, node-cache `maxKeys`, Redis maxmemory).
// ---------------------------------------------------------------------------------------------
describe('bounded cache', () => {
  type Entry = [key: string, value: string, exp: number];

  function cache(name: string, clock: () => number, maxTuples: number, evicted: string[]) {
    const c = track(new Space<Entry, string>(name, {
      ttl: { field: 3, now: clock }, maxTuples, onFull: 'evictExpiring',
      onEvict: (tuples) => evicted.push(...tuples.map(([k]) => k)),   // typed: Entry[]
    }));
    c.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    c.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    return c;
  }

  test('eviction is by soonest TTL, not by recency: a hot entry is evicted (volatile-ttl, not LRU)', () => {
    const now = 1_000;
    const evicted: string[] = [];
    const c = cache('mig-cap', () => now, 3, evicted);
    c.replace(['hot', 'h', now + 60]);
    c.replace(['b', 'b', now + 120]);
    c.replace(['c', 'c', now + 120]);
    for (let i = 0; i < 10; i++) c.get('hot');
    c.replace(['d', 'd', now + 120]);
    expect(evicted).toEqual(['hot']);   // lru-cache would have evicted 'b'
  });

  test('LRU emulated: a sliding TTL refreshed on every read makes the least recently read go first', () => {
    let now = 1_000;
    const evicted: string[] = [];
    const c = cache('mig-lru', () => now, 3, evicted);
    const TTL = 3600;
    const set = (k: string, v: string) => c.replace([k, v, now + TTL]);
    const get = (k: string): string | undefined => {
      const e = c.get(k);
      if (e === undefined) return undefined;
      c.update(k, [['=', 3, now + TTL]]);
      return e[1];
    };
    set('a', '1'); now++;
    set('b', '2'); now++;
    set('c', '3'); now++;
    expect(get('a')).toBe('1'); now++;
    set('d', '4');
    expect(evicted).toEqual(['b']);
  });

  test('"no expiry" (node-cache ttl 0, Redis PERSIST) is Infinity in a number field; 0 means already expired', () => {
    const now = 1_000;
    const evicted: string[] = [];
    const c = cache('mig-forever', () => now, 2, evicted);
    c.replace(['config', 'x', Infinity]);
    c.replace(['zero', 'y', 0]);   // node-cache: set(k, v, 0) is "unlimited"; here: expired at once
    expect(c.get('config')?.[1]).toBe('x');
    expect(c.get('zero')).toBeUndefined();
    c.replace(['a', 'a', now + 10]);
    c.replace(['b', 'b', now + 10]);
    expect(evicted).toEqual(['zero', 'a']);
    expect(c.get('config')?.[1]).toBe('x');
  });

  test("'refuse' (the default) counts expired tuples until a task deletes them (documented)", () => {
    let now = 1_000;
    const c = track(new Space<Entry, string>('mig-refuse', { ttl: { field: 3, now: () => now }, maxTuples: 1 }));
    c.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    c.insert(['a', 'a', now + 1]);
    now += 2;
    expect(c.count()).toBe(0);
    expect(codeOf(() => c.insert(['b', 'b', now + 1]))).toBe('ER_SPACE_FULL');
    expect(codeOf(() => c.insert(['a', 'a2', now + 1]))).toBe('no error');   // same key: replaces the expired one
  });
});

// ---------------------------------------------------------------------------------------------
// 7. Delayed jobs (Redis sorted set + poller; setTimeout per job), with a reschedule.
// ---------------------------------------------------------------------------------------------
describe('delayed jobs', () => {
  type Job = [id: number, payload: string, runAt: number];
  test('processExpired moves due jobs; a job rescheduled sooner with update() runs at its new time', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    let clock = 10_000;   // ms
    const delayed = track(new Space<Job, number>('mig-delayed'));
    delayed.createIndex('id', { type: 'HASH', parts: [[1, 'unsigned']] });
    delayed.createIndex('runAt', { unique: false, parts: [[3, 'number']] });
    const ran: Array<[number, number]> = [];
    const task: Task<Job> = expirationd.start('mig-delayed', delayed, {
      itIndex: 'runAt', field: 3, unit: 'ms', now: () => clock,
      processExpired: (jobs) => {   // jobs: Job[]
        for (const [id] of jobs) {
          ran.push([id, clock]);
          delayed.delete(id);
        }
      },
    });
    delayed.insert([1, 'a', clock + 500]);
    delayed.insert([2, 'b', clock + 60_000]);
    const step = (ms: number): void => {
      for (let i = 0; i < ms; i += 10) {
        clock += 10;
        vi.advanceTimersByTime(10);
      }
    };
    step(600);
    expect(ran).toEqual([[1, 10_500]]);
    delayed.update(2, [['=', 3, clock + 200]]);   // run it sooner
    const due = clock + 200;
    step(300);
    expect(ran.length).toBe(2);
    expect(ran[1]![1] - due).toBeLessThanOrEqual(20);
    expect(task.stats().expired).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
// 8. What a value looks like after a round trip (lru-cache, ttlcache and node-cache without
//    clones keep the very object; Redis users serialize themselves).
// ---------------------------------------------------------------------------------------------
describe('round trips of cached values', () => {
  function blob(name: string) {
    const s = track(new Space<[id: number, value: unknown]>(name));
    s.createIndex('id', { parts: [[1, 'unsigned']] });
    return s;
  }

  test('what comes back: Dates and Buffers keep their type; Map, Set, class instances, functions do not', () => {
    const s = blob('mig-rt');
    const value = {
      at: new Date(1_700_000_000_123),
      raw: Buffer.from('hi'),
      big: 2n ** 60n,
      small: 5n,
      huge: 2 ** 60,
      negZero: -0,
      none: undefined,
      tags: new Set(['a']),
      byId: new Map([[1, 'x']]),
      fn: () => 1,
    };
    const inserted = s.insert([1, value]);
    expect(inserted[1]).toBe(value);   // insert returns the caller's own tuple, not what get() will return
    const got = s.get(1)![1] as Record<string, unknown>;
    expect(got.at).toEqual(new Date(1_700_000_000_123));
    expect(Buffer.isBuffer(got.raw)).toBe(true);
    expect(got.big).toBe(2n ** 60n);
    expect(got.small).toBe(5n);   // a BigInt stays a BigInt, however small
    expect(got.huge).toBe(2 ** 60);   // a number stays a number, even past 2^53
    expect(Object.is(got.negZero, 0)).toBe(true);
    expect('none' in got).toBe(true);
    expect(got.tags).toEqual(['a']);   // a Set comes back an array
    expect(got.byId).toEqual({ 1: 'x' });   // a Map comes back a plain object, its keys strings
    expect(got.fn).toBeUndefined();   // a function is dropped without an error
  });

  test("a JSON webhook body keeps its keys, '__proto__' included", () => {
    const s = blob('mig-proto');
    const body: unknown = JSON.parse('{"__proto__": {"admin": true}, "ok": 1}');
    s.insert([1, body]);
    // msgpackr renames the key to '__proto_' (its guard against prototype pollution).
    expect(Object.keys(s.get(1)![1] as object)).toEqual(['__proto_', 'ok']);
  });

  // Fixed (now refused with ER_TUPLE_FORMAT, codec.ts checkView): a typed array other than Uint8Array (a Float32Array embedding, a Float64Array of
  // samples) is stored as garbage: msgpackr 2.1.3's writeBuffer reserves byteLength bytes but
  // copies `length` elements converted to bytes (1.5 -> 1), so the rest of the stored bin is
  // whatever was left in the packer's buffer (other tuples, V8 heap strings). The README: "A tuple
  // is a JavaScript array, packed with msgpackr … Reads unpack it again." Expected: the array's
  // bytes come back, or the insert is refused (ER_TUPLE_FORMAT).
  test('a Float64Array comes back with its own bytes, or is refused', () => {
    const s = blob('mig-typed');
    const samples = new Float64Array([1.5, 2.5]);
    let code = 'no error';
    try {
      s.insert([1, samples]);
    } catch (error) {
      code = error instanceof CappedError ? error.code : String(error);
    }
    if (code === 'no error') {
      const got = s.get(1)![1] as Uint8Array;
      expect(Buffer.from(got)).toEqual(Buffer.from(samples.buffer));
    } else {
      expect(code).toBe('ER_TUPLE_FORMAT');
    }
  });

  // Fixed (refused): the same family: a DataView was stored as an empty bin (its bytes are lost without an
  // error), and a Float32Array written by update() keeps one byte per element.
  test('a DataView, and a Float32Array written by update(), come back with their bytes, or are refused', () => {
    const s = blob('mig-typed2');
    const view = new DataView(new Uint8Array([9, 8, 7]).buffer);
    const f32 = new Float32Array([1.5]);
    const stored = (write: () => unknown, bytes: Buffer): void => {
      const code = codeOf(write);
      if (code !== 'no error') {
        // Refused: as a tuple, or as an update operation's argument.
        expect(['ER_TUPLE_FORMAT', 'ER_UPDATE_OP']).toContain(code);
        expect(s.get(1)).toEqual([1, 'x']);
        return;
      }
      expect(Buffer.from(s.get(1)![1] as Uint8Array)).toEqual(bytes);
    };
    s.replace([1, 'x']);
    stored(() => s.replace([1, view]), Buffer.from([9, 8, 7]));
    stored(() => s.update(1, [['=', 2, f32]]), Buffer.from(f32.buffer));
  });
});

// ---------------------------------------------------------------------------------------------
// 9. Iteration, sizes, keys (Map/lru-cache keys(), ttlcache entries() in expiry order, DBSIZE).
// ---------------------------------------------------------------------------------------------
describe('iteration and sizes', () => {
  test('HASH order is not insertion order; the TTL index gives ttlcache\'s expiry order; len() vs count()', () => {
    let now = 100;
    const s = track(new Space<[key: string, exp: number], string>('mig-iter', { ttl: { field: 2, now: () => now } }));
    s.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    const byExp = s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];
    keys.forEach((k, i) => s.insert([k, 200 - i]));
    expect([...s.pairs()].map(([k]) => k).sort()).toEqual(keys);
    expect(byExp.select().map(([k]) => k)).toEqual([...keys].reverse());
    now = 196;   // k5..k8 expired (exp 196..193), still stored
    expect(s.len()).toBe(8);
    expect(s.count()).toBe(4);
    expect(byExp.select().map(([k]) => k)).toEqual(['k4', 'k3', 'k2', 'k1']);
    // has(): count(key) on a HASH reads no tuple into JavaScript
    expect(s.count('k1')).toBe(1);
    expect(s.count('k8')).toBe(0);
  });

  test('string keys order bytewise (UTF-8) on a TREE: not localeCompare, and not always JS sort order', () => {
    const s = track(new Space<[key: string]>('mig-str'));
    s.createIndex('key', { parts: [[1, 'string']] });
    const keys = ['b', 'a', 'B', 'é', '10', '9', '\uffff', '😀'];
    for (const k of keys) s.insert([k]);
    const order = s.select().map(([k]) => k);
    expect(order).toEqual(['10', '9', 'B', 'a', 'b', 'é', '\uffff', '😀']);
    expect([...keys].sort()).toEqual(['10', '9', 'B', 'a', 'b', 'é', '😀', '\uffff']);   // JS: UTF-16 units
  });
});

// ---------------------------------------------------------------------------------------------
// 10. Mistakes a migrating user makes, and what they get.
// ---------------------------------------------------------------------------------------------
describe('mistakes on the way in', () => {
  type Row = [key: string, value: string, exp: number];
  function ttlSpace(name: string, type: 'unsigned' | 'number') {
    const s = track(new Space<Row, string>(name, { ttl: { field: 3 } }));
    s.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    s.createIndex('exp', { unique: false, parts: [[3, type]] });
    return s;
  }

  test('a relative TTL (lru-cache `ttl: 60000`, node-cache `set(k, v, 60)`) is stored, silently already expired', () => {
    const s = ttlSpace('mig-rel', 'number');
    expect(codeOf(() => s.insert(['k', 'v', 60]))).toBe('no error');
    expect(s.get('k')).toBeUndefined();
  });

  test('a Date as the TTL, or fractional seconds in an unsigned field: ER_FIELD_TYPE', () => {
    const s = ttlSpace('mig-date', 'unsigned');
    expect(codeOf(() => s.insert(['k', 'v', new Date() as unknown as number]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.insert(['k', 'v', Date.now() / 1000 + 60]))).toBe('ER_FIELD_TYPE');
  });

  test('a Date as the TTL of a space with no TTL index is stored and never expires', () => {
    let now = 100;
    const s = track(new Space<Row, string>('mig-date-noidx', { ttl: { field: 3, now: () => now } }));
    s.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    s.insert(['k', 'v', new Date(0) as unknown as number]);
    now = 1e12;
    expect(s.get('k')?.[1]).toBe('v');   // "a missing, non-numeric or NaN TTL never expires"
  });

  test('a number key in a string index, an absent key', () => {
    const s = ttlSpace('mig-keys', 'number');
    expect(codeOf(() => s.insert([42 as unknown as string, 'v', 1e12]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.get(42 as unknown as string))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => s.get(undefined as unknown as string))).toBe('ER_KEY_PART_COUNT');
  });

  test('expirationd.start() without itIndex on a TTL space is a full scan, not the indexed walk', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    const s = ttlSpace('mig-noidx-task', 'number');
    expect(expirationd.start('mig-noidx-task', s).earlyBreak).toBe(false);
    expect(expirationd.start('mig-noidx-task', s, { itIndex: 'exp' }).earlyBreak).toBe(true);
  });

  test("a task whose unit differs from the space's deletes live tuples (documented: it uses the wall clock in that unit)", () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    const s = ttlSpace('mig-unit', 'number');
    s.insert(['live', 'v', Date.now() / 1000 + 3600]);
    const task = expirationd.start('mig-unit', s, { itIndex: 'exp', unit: 'ms' });   // copied from the delayed-jobs recipe
    task.wake();
    vi.advanceTimersByTime(10);
    expect(s.len()).toBe(0);   // a session with an hour to live is gone
  });

  test("node-cache's set(key, value, ttl) shape: the extra argument is ignored, and a tuple without its TTL field never expires", () => {
    let now = 100;
    const s = track(new Space<Row, string>('mig-extra-arg', { ttl: { field: 3, now: () => now } }));
    s.createIndex('key', { type: 'HASH', parts: [[1, 'string']] });
    const untyped = s as unknown as { replace(...args: unknown[]): unknown };   // a JavaScript caller
    expect(codeOf(() => untyped.replace(['k', 'v'], 60))).toBe('no error');
    now = 1e12;
    expect(s.get('k')).toEqual(['k', 'v']);
  });

  test('a unique secondary key (an email) held by an expired, hidden user blocks a new one with the same email', () => {
    let now = 100;
    type User = [id: string, email: string, exp: number];
    const s = track(new Space<User, string>('mig-email', { ttl: { field: 3, now: () => now } }));
    s.createIndex('id', { type: 'HASH', parts: [[1, 'string']] });
    const byEmail = s.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    s.insert(['u1', 'a@x', 150]);
    now = 200;
    expect(byEmail.get('a@x')).toBeUndefined();
    expect(codeOf(() => s.insert(['u2', 'a@x', 500]))).toBe('ER_DUPLICATE_KEY');   // documented; the message does not say why
  });

  test('Redis SCAN MATCH "user:*" on a TREE: a key prefix is a prefix of parts, not of a string; GE and stop', () => {
    const s = track(new Space<[key: string, v: number], string>('mig-prefix'));
    s.createIndex('key', { parts: [[1, 'string']] });
    for (const k of ['order:1', 'user:1', 'user:2', 'users', 'user;']) s.insert([k, 1]);
    expect(s.select('user:')).toEqual([]);   // EQ on the whole string
    const matched: string[] = [];
    for (const [k] of s.pairs('user:', { iterator: 'GE' })) {
      if (!k.startsWith('user:')) break;
      matched.push(k);
    }
    expect(matched).toEqual(['user:1', 'user:2']);
  });

  test('two libraries starting a task of the same name: the second kills the first', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    const a = ttlSpace('mig-name-a', 'number');
    const b = ttlSpace('mig-name-b', 'number');
    const ta = expirationd.start('cleanup', a, { itIndex: 'exp' });
    expirationd.start('cleanup', b, { itIndex: 'exp' });
    expect(ta.state).toBe('killed');
  });
});

// ---------------------------------------------------------------------------------------------
// 11. Watching expiry (what a dashboard of the old store showed: Redis expired_keys, ttlcache
//     purge lateness).
// ---------------------------------------------------------------------------------------------
describe('monitoring lag', () => {
  test('an early-break task: lag is how far past due the oldest stored expired tuple is (exact)', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    let now = 1_000;
    const s = track(new Space<[id: number, exp: number], number>('mig-lag-eb', { ttl: { field: 2, now: () => now } }));
    s.createIndex('id', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.createIndex('exp', { unique: false, parts: [[2, 'number']] });
    s.insert([1, 100]);
    const task = expirationd.start('mig-lag-eb', s, { itIndex: 'exp' });
    expect(task.stats().lag).toBe(900);
  });

  // Fixed (in the README): "`stats().lag` … an upper bound for full scans (the time since the last
  // completed pass started)" did not say what it is before the first pass completes: the time
  // since the task's first chunk (0 at start over a backlog 900 s past due), which knows nothing
  // of how long tuples were expired before the task started. The README says so now; once a pass
  // has completed, it is an upper bound.
  test('a full-scan task over a backlog: lag counts from its first chunk until a pass completes, then bounds the oldest', () => {
    vi.useFakeTimers({ toFake: [...TASK_TIMERS] });
    let now = 1_000;
    const s = track(new Space<[id: number, exp: number], number>('mig-lag-full', { ttl: { field: 2, now: () => now } }));
    s.createIndex('id', { type: 'HASH', parts: [[1, 'unsigned']] });
    s.insertMany(Array.from({ length: 2_000 }, (_, i): [number, number] => [i, i % 2 === 0 ? 100 : 1e9]));
    const task = expirationd.start('mig-lag-full', s, { scanSize: 100, scanTime: 100 });
    now += 5;
    vi.advanceTimersByTime(5_000);
    expect(s.count()).toBeLessThan(s.len());   // expired tuples 905 s past due are still stored
    expect(task.stats().fullScans).toBe(0);
    // Since the first chunk, as documented: not the 905 s the oldest stored tuple is past due.
    expect(task.stats().lag).toBeLessThanOrEqual(5);
    for (let i = 0; i < 400 && task.stats().fullScans === 0; i++) {
      now += 1;
      vi.advanceTimersByTime(1_000);
    }
    // A pass completed: every tuple 905 s past due is gone, and lag bounds what is left.
    expect(task.stats().fullScans).toBeGreaterThan(0);
    expect(s.len()).toBe(s.count());
    expect(task.stats().lag).toBeLessThan(905);
    task.kill();
  });
});

// ---------------------------------------------------------------------------------------------
// 12. atomic() across spaces, as a Redis MULTI would be used.
// ---------------------------------------------------------------------------------------------
describe('MULTI-like writes', () => {
  test('atomic() undoes writes in both spaces when the second fails', () => {
    const users = track(new Space<[id: number, email: string], number>('mig-users'));
    users.createIndex('id', { parts: [[1, 'unsigned']] });
    users.createIndex('email', { type: 'HASH', parts: [[2, 'string']] });
    const audit = track(new Space<[seq: number, text: string], number>('mig-audit'));
    audit.createIndex('seq', { parts: [[1, 'unsigned']] });
    users.insert([1, 'a@x']);
    expect(codeOf(() => atomic(() => {
      audit.insert([1, 'create user 2']);
      users.insert([2, 'a@x']);
    }))).toBe('ER_DUPLICATE_KEY');
    expect(audit.len()).toBe(0);
    expect(users.len()).toBe(1);
  });
});
