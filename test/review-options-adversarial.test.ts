// Review probes against option and definition objects as an attacker builds them (README
// "Space", "TTL-aware spaces", "Capped spaces", "Index", "expirationd", "Errors"): getters that
// answer differently on each read (time of check vs time of use), getters and Proxy traps that
// throw, revoked Proxies, getters that re-enter the library while the options are read,
// inherited properties, Object.create(null), class instances, frozen objects, arrays and symbol
// keys. The tests under 'bugs' assert the documented behaviour for what the review found (now
// fixed: options are read once into a snapshot, validate.ts checkOptions; parts once into fresh
// objects, args.ts checkParts; createIndexAsync on an empty space creates the checked
// definition; a start that fails leaves the running task of its name alone; functions that
// cannot be inspected are refused); the rest are attacks that were handled.
//
// The rule the tests hold the library to: the value that is used is the value that was checked
// (test/capped-space.test.ts: "each option is read once"), bad input gets a CappedError with a
// code, and a failed call changes nothing (README "Errors").
import { describe, expect, test, vi } from 'vitest';
import { Space, expirationd, CappedError, type TaskOptions } from '../src/index.js';
import { codeOf, thrownBy } from './support/errors.js';
import { useTaskTimers } from './support/task-timers.js';

useTaskTimers();

function makeSpace(name = 's'): Space {
  const space = new Space(name);
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
  return space;
}

const thrown = thrownBy;

/** A getter's answers, one per read; the last answer repeats. */
function answers<V>(...values: V[]): { reads: number; get: () => V } {
  const state = {
    reads: 0,
    get: (): V => values[Math.min(state.reads++, values.length - 1)],
  };
  return state;
}

function revoked<T extends object>(target: T): T {
  const r = Proxy.revocable(target, {});
  r.revoke();
  return r.proxy;
}

describe('bugs', () => {
  test("new Space(): a ttl.unit getter that answers undefined (checked) and then 'bogus' is refused or used as checked", () => {
    // checkTtl (src/space/ttl.ts) reads o.unit up to four times: the check sees undefined (or 's'
    // twice), `o.unit ?? 's'` takes the next answer.
    const unit = answers<unknown>(undefined, 'bogus');
    const base = Date.now() / 1000;
    let space: Space | undefined;
    const error = thrown(() => {
      space = new Space('ttl-unit', { ttl: { field: 3, get unit() { return unit.get(); } } as never });
    });
    if (error !== undefined) {
      expect(error).toBeInstanceOf(CappedError);
      expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
      return;
    }
    const s = space as Space;
    expect(['s', 'ms']).toContain(s.ttl?.unit);
    expect(s.ttl?.unit).toBe('s');  // the value checked: undefined, so the default
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.insert([1, 'live', base + 3600]);
    expect(s.get(1)).toEqual([1, 'live', base + 3600]);  // an hour ahead in seconds: visible
  });

  test('new Space(): a ttl.now getter that answers a function (checked) and then 42 is refused or used as checked', () => {
    // checkTtl reads o.now three times: `o.now !== undefined && typeof o.now !== 'function'`, then
    // `o.now as ...`. The stored 42 makes every insert and read throw a TypeError without a code.
    const now = answers<unknown>(() => 100, () => 100, 42);
    let space: Space | undefined;
    const error = thrown(() => {
      space = new Space('ttl-now', { ttl: { field: 3, get now() { return now.get(); } } as never });
    });
    if (error !== undefined) {
      expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
      return;
    }
    const s = space as Space;
    expect(typeof s.ttl?.now).toBe('function');
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    expect(() => s.insert([1, 'a', 200])).not.toThrow();
    expect(s.get(1)).toEqual([1, 'a', 200]);
  });

  test("expirationd.start: a unit getter that answers undefined (checked) and then 'minutes' does not delete live tuples", () => {
    // configure (src/expirationd/options.ts) reads o.unit in the check and again in
    // `o.unit ?? ttl?.unit ?? 's'`: 'minutes' becomes unitSeconds 0.001 and the default clock
    // Date.now() in ms, so a TTL an hour ahead in seconds reads as long past.
    const space = makeSpace('unit');
    const base = Date.now() / 1000;
    space.insert([1, 'live', base + 3600]);
    const unit = answers<unknown>(undefined, 'minutes');
    const error = thrown(() => expirationd.start('unit', space, { field: 3, get unit() { return unit.get(); } } as never));
    if (error !== undefined) {
      expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
      expect(expirationd.tasks()).toEqual([]);
    }
    vi.advanceTimersByTime(5000);
    expect(space.select()).toEqual([[1, 'live', base + 3600]]);
  });

  test("expirationd.start: a keepAlive getter that answers undefined (checked) and then 'yes' does not keep timers ref'd", () => {
    // `o.keepAlive !== undefined && typeof o.keepAlive !== 'boolean'`, then `o.keepAlive ?? false`:
    // 'yes', which the README refuses, is used (truthy: the timers are not unref'd).
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    const space = makeSpace('alive');
    for (let id = 0; id < 30; id++) space.insert([id, 'x', 10 ** 9]);
    const keepAlive = answers<unknown>(undefined, 'yes');
    const error = thrown(() => expirationd.start('alive', space, {
      field: 3, now: () => 0, scanSize: 10, fullScanDelay: 60, get keepAlive() { return keepAlive.get(); },
    } as never));
    if (error !== undefined) {
      expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
      return;
    }
    vi.advanceTimersByTime(3000);
    const refs = timeout.mock.results.map((r) => (r.value as { hasRef(): boolean }).hasRef());
    expect(refs.length).toBeGreaterThan(0);
    expect(refs).toEqual(refs.map(() => false));  // the checked value: undefined, the default false
  });

  test('expirationd.start: a getter that drops the space fails the start and leaves the running task of that name alone', () => {
    // start() kills tasks.get(name) after configure() and before Task#begin finds the space dropped.
    const a = makeSpace('a');
    const old = expirationd.start('same', a, { field: 3, now: () => 0 });
    const b = makeSpace('b');
    expect(codeOf(() => expirationd.start('same', b, { field: 3, now: () => 0, get scanSize() { b.drop(); return 10; } })))
      .toBe('ER_SPACE_DROPPED');
    expect(old.state).toBe('running');
    expect(expirationd.tasks()).toEqual(['same']);
    expect(expirationd.task('same')).toBe(old);
  });

  test('expirationd.start: a revoked Proxy as onExpired gets ER_ILLEGAL_PARAMS and leaves the running task of that name alone', () => {
    // configure() accepts it (typeof 'function'); new Task() calls Object.prototype.toString on it
    // (isAsyncFunction, src/expirationd/task.ts), after start() has killed the old task.
    const space = makeSpace('rev');
    const old = expirationd.start('same', space, { field: 3, now: () => 0 });
    const error = thrown(() => expirationd.start('same', space, { field: 3, now: () => 0, onExpired: revoked(() => {}) }));
    expect(error).toBeInstanceOf(CappedError);
    expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
    expect(old.state).toBe('running');
    expect(expirationd.tasks()).toEqual(['same']);
  });

  test('expirationd.start: an onExpired Proxy whose get trap throws is refused with a code, or runs; the old task is not lost', () => {
    const space = makeSpace('trap');
    const old = expirationd.start('same', space, { field: 3, now: () => 0 });
    const trap = new Proxy(() => {}, { get() { throw new Error('trap'); } });
    const error = thrown(() => expirationd.start('same', space, { field: 3, now: () => 0, onExpired: trap }));
    if (error !== undefined) {
      expect(error).toBeInstanceOf(CappedError);
      expect(old.state).toBe('running');
      expect(expirationd.task('same')).toBe(old);
    } else {
      expect(old.state).toBe('killed');
      expect(expirationd.task('same').isRunning).toBe(true);
    }
  });

  test('expirationd.start: a revoked Proxy as processExpired gets a CappedError, not a TypeError', () => {
    // configure()'s async check: Object.prototype.toString.call(processExpired) throws.
    const space = makeSpace('revp');
    const error = thrown(() => expirationd.start('revp', space, { field: 3, now: () => 0, processExpired: revoked(() => {}) }));
    expect(error).toBeInstanceOf(CappedError);
    expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
    expect(expirationd.tasks()).toEqual([]);
  });

  test('createIndex: a revoked Proxy as a parts entry gets ER_ILLEGAL_PARAMS, not a TypeError', () => {
    // checkParts (src/space/args.ts): isArray(p) is false, typeof p is 'object', so p.field is read.
    const space = makeSpace('revparts');
    const error = thrown(() => space.createIndex('x', { parts: [revoked({ field: 2, type: 'string' })] } as never));
    expect(error).toBeInstanceOf(CappedError);
    expect((error as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp']);
    const asyncError = space.createIndexAsync('y', { parts: [revoked({ field: 2, type: 'string' })] } as never);
    return expect(asyncError).rejects.toBeInstanceOf(CappedError);
  });

  test('createIndexAsync on an empty space creates the index it checked, not what the options say a turn later', async () => {
    // run() (src/space/build.ts) calls space.createIndex(name, options) on an empty space, which
    // reads the caller's object again after the promise was returned.
    const space = new Space('async-empty');
    const def = { parts: [[1, 'unsigned']] as Array<[number, 'unsigned' | 'string']> };
    const pending = space.createIndexAsync('pk', def);
    def.parts = [[2, 'string']];  // the caller reuses its object
    const index = await pending;
    expect(index.parts).toEqual([{ field: 1, type: 'unsigned' }]);
    expect(() => space.insert([1, 2])).not.toThrow();  // field 2 is not a string: only an index on it refuses this
  });

  test('createIndexAsync on an empty space reads each option once: a getter that throws on a second read does not reject', async () => {
    const space = new Space('async-twice');
    let reads = 0;
    const pending = space.createIndexAsync('pk', {
      get parts(): Array<[number, 'unsigned']> {
        if (++reads > 1) throw new Error('second read');
        return [[1, 'unsigned']];
      },
    });
    await expect(pending).resolves.toBeDefined();
    expect(reads).toBe(1);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk']);
  });

  test('createIndex: index.parts is what the engine indexes (a parts Proxy whose species adds an unchecked entry)', () => {
    // checkParts returns parts.map(...): on a Proxy of an array, map() builds its result through
    // the `constructor`'s Symbol.species, which may hand back an array with extra entries that
    // were never checked; createIndex reads their fields once for the addon and Index reads them
    // again for index.parts.
    let reads = 0;
    const extra = { get field() { return ++reads === 1 ? 2 : 3; }, type: 'string' };
    class Species { static get [Symbol.species]() { return function make() { return [undefined, extra]; }; } }
    const parts = new Proxy([[1, 'unsigned']], { get: (t, k, r) => (k === 'constructor' ? Species : Reflect.get(t, k, r)) });
    const space = new Space('species');
    const error = thrown(() => space.createIndex('pk', { parts } as never));
    if (error !== undefined) {
      expect(error).toBeInstanceOf(CappedError);
      expect(space.indexes).toEqual([]);
      return;
    }
    // Only the part given (field 1) was checked: the index must be that one.
    expect(space.indexes[0].parts).toEqual([{ field: 1, type: 'unsigned' }]);
  });

  test("a getter that throws while options are read gets ER_ILLEGAL_PARAMS (cause: the user's error), as an ownKeys trap does", () => {
    // checkOptions (src/validate.ts) wraps a throw from Object.keys; keys and tuples wrap a throwing
    // getter too (ER_KEY_TYPE, ER_TUPLE_FORMAT, with the cause). A throwing option getter escapes raw.
    const boom = new Error('boom');
    const space = makeSpace('throwing');
    const ownKeysTrap = new Proxy({}, { ownKeys() { throw boom; } });
    const viaOwnKeys = thrown(() => space.select(1, ownKeysTrap));
    expect((viaOwnKeys as CappedError).code).toBe('ER_ILLEGAL_PARAMS');
    expect((viaOwnKeys as CappedError).cause).toBe(boom);
    const calls: Array<[string, () => unknown]> = [
      ['new Space', () => new Space('x', { get maxTupleSize(): number { throw boom; } })],
      ['new Space ttl', () => new Space('x', { ttl: { get field(): number { throw boom; } } })],
      ['createIndex', () => space.createIndex('x', { get parts(): never { throw boom; } })],
      ['select', () => space.select(1, { get iterator(): 'GE' { throw boom; } })],
      ['count', () => space.count(1, { get iterator(): 'GE' { throw boom; } })],
      ['start', () => expirationd.start('x', space, { field: 3, get scanSize(): number { throw boom; } })],
    ];
    for (const [what, call] of calls) {
      const error = thrown(call);
      expect(error, what).toBeInstanceOf(CappedError);
      expect((error as CappedError).code, what).toBe('ER_ILLEGAL_PARAMS');
      expect((error as CappedError).cause, what).toBe(boom);
    }
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp']);
    expect(expirationd.tasks()).toEqual([]);
  });
});

describe('handled attacks', () => {
  test('select/count/pairs read iterator, limit and offset once: a getter answering GE then XX, 2 then -1', () => {
    const space = makeSpace('reads');
    space.insertMany([[1, 'a', 1], [2, 'b', 2], [3, 'c', 3], [4, 'd', 4]]);
    const iterator = answers('GE', 'XX');
    const limit = answers(2, -1);
    const offset = answers(1, NaN);
    expect(space.select(1, {
      get iterator() { return iterator.get() as 'GE'; }, get limit() { return limit.get(); }, get offset() { return offset.get(); },
    })).toEqual([[2, 'b', 2], [3, 'c', 3]]);
    expect([iterator.reads, limit.reads, offset.reads]).toEqual([1, 1, 1]);
    const it2 = answers('GT', 'XX');
    expect(space.count(2, { get iterator() { return it2.get() as 'GT'; } })).toBe(2);
    const it3 = answers('LT', 'XX');
    expect([...space.pairs(3, { get iterator() { return it3.get() as 'LT'; } })].map((t) => t[0])).toEqual([2, 1]);
    expect([it2.reads, it3.reads]).toEqual([1, 1]);
  });

  test('expirationd.start reads each numeric option once: 1024 then -1 (or NaN) never reaches the task', () => {
    const space = makeSpace('numeric');
    for (let id = 1; id <= 30; id++) space.insert([id, 'x', 10 ** 9]);
    const getters = {
      scanSize: answers(10, -1), scanTime: answers(30, NaN), iterationDelay: answers(1, -5),
      fullScanDelay: answers(0, NaN), maxCpuShare: answers(0.5, 7), field: answers(3, 3, 0),  // field: checked as read the second time
    };
    const options: Record<string, unknown> = { now: () => 0 };
    for (const [key, g] of Object.entries(getters)) Object.defineProperty(options, key, { get: g.get, enumerable: true });
    const task = expirationd.start('numeric', space, options as TaskOptions);
    expect(Number.isFinite(task.chunkDelay) && task.chunkDelay > 0).toBe(true);
    vi.advanceTimersByTime(0);
    vi.advanceTimersToNextTimer();
    const stats = task.stats();
    expect(stats.chunks).toBeGreaterThan(0);
    expect(stats.checked).toBe(10 * stats.chunks);  // scanSize 10 per chunk, not -1
    expect(task.lastError).toBeUndefined();
    for (const [key, g] of Object.entries(getters)) expect(g.reads, key).toBeLessThanOrEqual(2);
    expect(getters.scanSize.reads).toBe(1);
  });

  test('createIndex reads type, unique and parts once: a unique getter answering undefined then "yes" gives the default it was checked as', () => {
    const space = makeSpace('def');
    space.insert([1, 'a', 1]);
    const before = space.memory();
    const type = answers<unknown>('TREE', 'BOGUS');
    const parts = answers<unknown>([[2, 'string']], 'nope');
    const index = space.createIndex('name', { get type() { return type.get() as 'TREE'; }, get parts() { return parts.get() as never; } });
    expect([type.reads, parts.reads]).toEqual([1, 1]);
    expect(index.parts).toEqual([{ field: 2, type: 'string' }]);
    const unique = answers<unknown>(undefined, 'yes');
    const u = space.createIndex('u', { get unique() { return unique.get() as boolean; }, parts: [[2, 'string']] });
    expect([unique.reads, u.unique]).toEqual([1, true]);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp', 'name', 'u']);
    expect(space.memory().tuples).toBe(before.tuples);
    space.checkIntegrity();
  });

  test('parts: a Proxy whose length answers 1 then 0, and array entries with getters, are read once and used as checked', () => {
    const space = makeSpace('parts');
    let lengthReads = 0;
    const lying = new Proxy([[2, 'string']], {
      get: (t, k, r) => (k === 'length' ? (++lengthReads === 1 ? 1 : 0) : Reflect.get(t, k, r)),
    });
    expect(space.createIndex('x', { unique: false, parts: lying } as never).parts).toEqual([{ field: 2, type: 'string' }]);
    expect(lengthReads).toBe(1);
    const entry: unknown[] = [2, 'string'];
    const field = answers(2, 0);
    Object.defineProperty(entry, 0, { get: field.get, enumerable: true });
    const index = space.createIndex('y', { unique: false, parts: [entry as [number, 'string']] });
    expect(field.reads).toBe(1);
    expect(index.parts).toEqual([{ field: 2, type: 'string' }]);
    const obj = { get field() { return field.get(); }, type: 'string' as const };
    field.reads = 0;
    expect(space.createIndex('z', { unique: false, parts: [obj] }).parts).toEqual([{ field: 2, type: 'string' }]);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp', 'x', 'y', 'z']);
  });

  test('re-entrant getters in createIndex: one that creates the same index, one that drops the space', () => {
    const space = makeSpace('reenter');
    expect(codeOf(() => space.createIndex('n', {
      unique: false,
      get parts() { space.createIndex('n', { unique: false, parts: [[2, 'string']] }); return [[2, 'string']] as Array<[number, 'string']>; },
    }))).toBe('ER_INDEX_EXISTS');
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp', 'n']);
    space.checkIntegrity();
    const other = makeSpace('reenter2');
    expect(codeOf(() => other.createIndex('n', { get unique() { other.drop(); return false; }, parts: [[2, 'string']] })))
      .toBe('ER_SPACE_DROPPED');
    expect(other.index.n).toBeUndefined();
    expect(other.indexes.map((i) => i.name)).toEqual(['pk', 'exp']);
  });

  test('re-entrant getters in start: one that starts the same name (one task stays), one that drops the space (nothing registered)', () => {
    const space = makeSpace('restart');
    let inner: ReturnType<typeof expirationd.start> | undefined;
    const outer = expirationd.start('same', space, {
      field: 3, now: () => 0,
      get scanSize() { inner = expirationd.start('same', space, { field: 3, now: () => 0 }); return 5; },
    });
    expect(inner?.state).toBe('killed');
    expect(expirationd.tasks()).toEqual(['same']);
    expect(expirationd.task('same')).toBe(outer);
    const other = makeSpace('dropper');
    expect(codeOf(() => expirationd.start('dropper', other, { field: 3, get scanTime() { other.drop(); return 10; } })))
      .toBe('ER_SPACE_DROPPED');
    expect(expirationd.tasks()).toEqual(['same']);
  });

  test('a getter that drops the space during select/count/pairs gets ER_SPACE_DROPPED', () => {
    for (const read of [
      (s: Space) => s.select(1, { get limit() { s.drop(); return 1; } }),
      (s: Space) => s.count(1, { get iterator() { s.drop(); return 'GE' as const; } }),
      (s: Space) => s.pairs(1, { get iterator() { s.drop(); return 'GE' as const; } }).next(),
    ]) {
      const space = makeSpace('dropread');
      space.insert([1, 'a', 1]);
      expect(codeOf(() => read(space))).toBe('ER_SPACE_DROPPED');
    }
  });

  test('revoked Proxies and throwing ownKeys traps as options get ER_ILLEGAL_PARAMS and change nothing', () => {
    const space = makeSpace('proxies');
    const old = expirationd.start('same', space, { field: 3, now: () => 0 });
    const bad = [revoked({}), new Proxy({}, { ownKeys() { throw new Error('keys'); } }),
      new Proxy({}, { ownKeys: () => ['field', 'field'] })];
    for (const options of bad) {
      expect(codeOf(() => new Space('x', options as never))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => new Space('x', { ttl: options as never }))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.createIndex('x', options as never))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => space.select(1, options as never))).toBe('ER_ILLEGAL_PARAMS');
      expect(codeOf(() => expirationd.start('same', space, options as never))).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(codeOf(() => space.createIndex('x', { parts: revoked([[2, 'string']]) } as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => space.update(1, revoked([]) as never))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => space.update(1, [revoked(['=', 2, 'x'])] as never))).toBe('ER_UPDATE_OP');
    expect(old.state).toBe('running');
    expect(expirationd.task('same')).toBe(old);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'exp']);
  });

  test('Object.create(null), class instances with prototype getters, frozen and sealed objects are accepted and honoured', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { maxTuples: 2 });
    expect(new Space('bare', bare).maxTuples).toBe(2);
    class Def { get parts() { return [[1, 'unsigned']] as Array<[number, 'unsigned']>; } readonly type = 'HASH' as const; }
    const space = new Space('cls');
    const pk = space.createIndex('pk', new Def());
    expect([pk.type, pk.parts]).toEqual(['HASH', [{ field: 1, type: 'unsigned' }]]);
    space.createIndex('exp', Object.freeze({ unique: false, parts: Object.freeze([Object.freeze([3, 'number'] as const)]) }));
    space.insertMany([[1, 'a', 5], [2, 'b', 50]]);
    class Opts { field = 3; get now() { return () => 10; } }
    const frozen = Object.freeze(Object.seal(new Opts()));
    const task = expirationd.start('cls', space, frozen as TaskOptions);
    vi.advanceTimersByTime(0);
    vi.advanceTimersToNextTimer();
    expect(task.stats().expired).toBe(1);
    expect(space.select()).toEqual([[2, 'b', 50]]);
    expect(Object.keys(frozen)).toEqual(['field']);  // nothing written into the caller's object
  });

  test('arrays where objects are expected are refused; symbol keys are ignored', () => {
    const space = makeSpace('arrays');
    expect(codeOf(() => new Space('x', [] as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => new Space('x', { ttl: [3] as never }))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => space.createIndex('x', [[2, 'string']] as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => space.select(1, ['GE'] as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => expirationd.start('x', space, [] as never))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => space.createIndex('x', { parts: [{ 0: 2, 1: 'string', length: 2 }] } as never))).toBe('ER_ILLEGAL_PARAMS');
    const sym = Symbol('extra');
    expect(space.select(1, { [sym]: 'GE', limit: 1 } as never)).toEqual([]);
    const task = expirationd.start('sym', space, { field: 3, now: () => 0, [sym]: 1 } as never);
    expect(task.isRunning).toBe(true);
    expect(expirationd.tasks()).toEqual(['sym']);
  });

  test('update/upsert ops read twice: a getter that answers "+" then "?" gets ER_UPDATE_OP and changes nothing', () => {
    const space = makeSpace('ops');
    space.insert([1, 'a', 1]);
    const op: unknown[] = ['+', 3, 1];
    const name = answers('+', '?');
    Object.defineProperty(op, 0, { get: name.get, enumerable: true });
    expect(codeOf(() => space.update(1, [op] as never))).toBe('ER_UPDATE_OP');
    const op2: unknown[] = ['=', 2, 'b'];
    const field = answers(2, 0);
    Object.defineProperty(op2, 1, { get: field.get, enumerable: true });
    expect(codeOf(() => space.upsert([1, 'x', 1], [op2] as never))).toBe('ER_UPDATE_OP');
    expect(space.select()).toEqual([[1, 'a', 1]]);
  });
});
