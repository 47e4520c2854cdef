// The binding under hostile JavaScript: user code that runs in the middle of a native call (a
// getter, a Proxy trap, valueOf, an inherited setter) and handles that are not what they claim.
// The native side converts every argument before it takes a reference to the space, never
// coerces an argument (so valueOf/toString/Proxy traps never run), builds its results without
// [[Set]] (so no inherited setter runs), and trusts only handles it registered. The outcome is
// always a CappedError with a stable code (ER_SPACE_DROPPED when user code dropped the space
// during the call) and a process that carries on: under scripts/test-asan.sh a dangling
// reference would be reported.
import { createGzip } from 'node:zlib';
import { pack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { native, type NativeCursor, type NativeSpace } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';
import { codeOf } from './support/errors.js';

const ALL = 2;
const GE = 3;

/** A space [id unsigned, ttl number] with a TREE pk and a non-unique TREE on the ttl, 20 tuples. */
function fixture(name = 'reentry'): { space: Space; h: NativeSpace } {
  const space = new Space(name);
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
  for (let i = 1; i <= 20; i++) space.insert([i, i]);
  return { space, h: handleOf(space) };
}

/** The space is intact: alive, consistent, and it still answers. */
function intact(space: Space, h: NativeSpace): void {
  expect(space.dropped).toBe(false);
  expect(h.checkIntegrity()).toBe('');
  expect(space.len()).toBeGreaterThan(0);
  expect(space.select(undefined, { limit: 1 })).toHaveLength(1);
}

/** The process still works: a new space takes writes and reads. */
function processAlive(): void {
  const other = new Space('alive');
  other.createIndex('pk', { parts: [[1, 'unsigned']] });
  other.insert([1, 'x']);
  expect(other.get(1)).toEqual([1, 'x']);
  other.drop();
}

/** Every way user code could be run on a value: coercion, property reads, Proxy traps. */
function hostile(target: object, onTrap: () => void): Record<string, unknown> {
  const trap = () => {
    onTrap();
  };
  const handler: ProxyHandler<object> = {
    get(t, k) { trap(); return Reflect.get(t, k); },
    has(t, k) { trap(); return Reflect.has(t, k); },
    ownKeys(t) { trap(); return Reflect.ownKeys(t); },
    getOwnPropertyDescriptor(t, k) { trap(); return Reflect.getOwnPropertyDescriptor(t, k); },
    getPrototypeOf(t) { trap(); return Reflect.getPrototypeOf(t); },
    set(t, k, v) { trap(); return Reflect.set(t, k, v); },
    defineProperty(t, k, d) { trap(); return Reflect.defineProperty(t, k, d); },
  };
  const coercible = {
    valueOf() { trap(); return 1; },
    toString() { trap(); return 'TREE'; },
    [Symbol.toPrimitive]() { trap(); return 1; },
    get length() { trap(); return 1; },
    get 0() { trap(); return 1; },
  };
  return {
    'an object with valueOf/toString/toPrimitive': coercible,
    'a Proxy over the right kind of value': new Proxy(target, handler),
    'a Proxy over a plain object': new Proxy({}, handler),
    'a boxed number': Object.assign(Object(1) as object, { valueOf() { trap(); return 1; } }),
  };
}

interface Call {
  name: string;
  /** Valid arguments, made on a fresh fixture (may set things up first: a cursor, an open chunk). */
  args(h: NativeSpace): unknown[];
  run(h: NativeSpace, args: unknown[]): unknown;
  /** Positions that are read as a scratch Buffer: anything else there just means a new Buffer. */
  scratch?: number[];
  /** The position passed as `this` to a cursor method (see refusedReceiver). */
  receiver?: number;
}

/**
 * The code a cursor method's refusal of `this` has: V8 itself refuses a receiver that is not a
 * CursorHandle instance (TypeError 'Illegal invocation', before any native code runs); the
 * binding refuses an instance it did not make and register with ER_ILLEGAL_PARAMS.
 */
function refusedReceiver(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof TypeError && /Illegal invocation/.test(error.message)) return 'ER_ILLEGAL_PARAMS';
    expect(error).toBeInstanceOf(CappedError);
    return (error as CappedError).code;
  }
  throw new Error('expected the call to throw');
}

const scratch = () => Buffer.alloc(4096);
const cursorMethods = () => native.CursorHandle.prototype as NativeCursor;
const call = (name: keyof NativeSpace) => (h: NativeSpace, args: unknown[]) =>
  (h[name] as (...a: unknown[]) => unknown).apply(h, args);

const CALLS: Call[] = [
  { name: 'createIndex', args: () => ['sec', 'TREE', false, [1, 0], ['number', 'unsigned']], run: call('createIndex') },
  { name: 'insert', args: () => { const b = pack([100, 1]); return [b, false, 0, b.length]; }, run: call('insert') },
  { name: 'insertMany', args: () => [pack([[101, 1], [102, 2]])], run: call('insertMany') },
  { name: 'get', args: () => [0, 5, scratch()], run: call('get'), scratch: [2] },
  { name: 'delete', args: () => [5, scratch()], run: call('delete'), scratch: [1] },
  { name: 'select', args: () => [1, 3, GE, 5, 1, scratch()], run: call('select'), scratch: [5] },
  { name: 'count', args: () => [1, 3, GE], run: call('count') },
  { name: 'minmax', args: () => [1, 3, true, scratch()], run: call('minmax'), scratch: [3] },
  { name: 'len', args: () => [1], run: call('len') },
  { name: 'commit', args: (h) => [h.begin()], run: call('commit') },
  { name: 'rollback', args: (h) => [h.begin()], run: call('rollback') },
  { name: 'cursor', args: () => [1, 3, GE, false], run: call('cursor') },
  {
    name: 'expireChunk',
    args: (h) => [h.cursor(1, undefined, ALL, true), 1, 10, 5, true, 1, new Float64Array(5), scratch()],
    run: call('expireChunk'),
    scratch: [7],
  },
  {
    name: 'rollbackChunk',
    args: (h) => {
      const cursor = h.cursor(1, undefined, ALL, true);
      const out = new Float64Array(5);
      h.expireChunk(cursor, 1, 10, 5, true, 2, out, scratch());
      return [cursor, out[4]];
    },
    run: call('rollbackChunk'),
  },
  {
    name: 'scanChunk',
    args: (h) => [h.cursor(0, undefined, ALL, true), 10, new Float64Array(5), scratch()],
    run: call('scanChunk'),
    scratch: [3],
  },
  {
    name: 'deleteVisited',
    args: (h) => {
      const cursor = h.cursor(0, undefined, ALL, true);
      h.scanChunk(cursor, 10, new Float64Array(5), scratch());
      return [cursor, Uint32Array.of(0, 2), false, new Float64Array(5), scratch()];
    },
    run: call('deleteVisited'),
    scratch: [4],
  },
  {
    name: 'cursor.next',
    args: (h) => [h.cursor(0, undefined, ALL), scratch()],
    // The prototype's next(), so that a hostile `this` is handed to native code as it is.
    run: (_h, [cursor, s]) => cursorMethods().next.call(cursor, s as Buffer),
    scratch: [1],
    receiver: 0,
  },
];

describe('no native function runs user code while it reads its arguments', () => {
  for (const c of CALLS) {
    it(`${c.name}: valid arguments work (the baseline of the cases below)`, () => {
      const { space, h } = fixture();
      c.run(h, c.args(h));
      intact(space, h);
    });

    it(`${c.name}: a hostile value in any position is refused (or, as a scratch Buffer, ignored) without running a trap`, () => {
      const { space, h } = fixture();
      const base = c.args(h);
      for (let i = 0; i < base.length; i++) {
        const target = typeof base[i] === 'object' && base[i] !== null ? (base[i] as object) : {};
        let trapped = 0;
        for (const [what, value] of Object.entries(hostile(target, () => { trapped++; space.drop(); }))) {
          const args = c.args(h);
          args[i] = value;
          const label = `${c.name} argument ${i}: ${what}`;
          if (c.scratch?.includes(i)) {
            c.run(h, args);
          } else if (c.receiver === i) {
            expect(refusedReceiver(() => c.run(h, args)), label).toBe('ER_ILLEGAL_PARAMS');
          } else {
            expect(['ER_ILLEGAL_PARAMS', 'ER_KEY_TYPE'], label).toContain(codeOf(() => c.run(h, args)));
          }
          expect(trapped, label).toBe(0);
        }
      }
      intact(space, h);
    });
  }
});

describe('createIndex reads its fields and types before it touches the space', () => {
  type Action = (space: Space, h: NativeSpace) => void;
  let nested = 0;  // a fresh index name for each call (deterministic, unlike a random one)
  const reentries: Record<string, Action> = {
    'inserts': (_s, h) => h.insert(pack([500, 5]), false),
    'deletes': (_s, h) => { h.delete(3, scratch()); },
    'creates and walks a cursor': (_s, h) => { h.cursor(0, undefined, ALL).next(scratch()); },
    'creates another index': (_s, h) => { h.createIndex(`nested${++nested}`, 'HASH', true, [0], ['unsigned']); },
    'runs a chunk': (_s, h) => { h.expireChunk(h.cursor(1, undefined, ALL, true), 1, 5, 2, true, 0, new Float64Array(5), scratch()); },
  };

  /** The arrays, with element k of `which` an accessor that runs `action` and then answers. */
  function arrays(which: 'fields' | 'types', k: number, action: () => void): [number[], string[]] {
    const fields = [1, 0];
    const types = ['number', 'unsigned'];
    const target: unknown[] = which === 'fields' ? fields : types;
    const value = target[k];
    Object.defineProperty(target, k, { get() { action(); return value; }, enumerable: true });
    return [fields, types];
  }

  for (const which of ['fields', 'types'] as const) {
    for (const k of [0, 1]) {
      it(`a getter on ${which}[${k}] that drops the space gets ER_SPACE_DROPPED`, () => {
        const { space, h } = fixture();
        const [fields, types] = arrays(which, k, () => space.drop());
        expect(codeOf(() => h.createIndex('sec', 'TREE', false, fields, types))).toBe('ER_SPACE_DROPPED');
        expect(space.dropped).toBe(true);
        expect(codeOf(() => space.len())).toBe('ER_SPACE_DROPPED');
        processAlive();
      });

      it(`a getter on ${which}[${k}] that drops the space through the handle gets ER_SPACE_DROPPED`, () => {
        const { h } = fixture();
        const [fields, types] = arrays(which, k, () => h.drop());
        expect(codeOf(() => h.createIndex('sec', 'TREE', false, fields, types))).toBe('ER_SPACE_DROPPED');
        expect(codeOf(() => h.len())).toBe('ER_SPACE_DROPPED');
        processAlive();
      });

      for (const [what, action] of Object.entries(reentries)) {
        it(`a getter on ${which}[${k}] that re-enters the binding (${what}) leaves a sound space and a working index`, () => {
          const { space, h } = fixture();
          const [fields, types] = arrays(which, k, () => action(space, h));
          const id = h.createIndex('sec', 'TREE', false, fields, types);
          expect(h.checkIntegrity()).toBe('');
          expect(h.len(id)).toBe(h.len());
          expect(h.count(id, undefined, ALL)).toBe(h.len());
          intact(space, h);
        });
      }

      it(`a getter on ${which}[${k}] that throws: its error comes out and no index is made`, () => {
        const { space, h } = fixture();
        const thrown = new Error('from the getter');
        const [fields, types] = arrays(which, k, () => { throw thrown; });
        expect(() => h.createIndex('sec', 'TREE', false, fields, types)).toThrow(thrown);
        expect(space.indexes).toHaveLength(2);
        expect(h.createIndex('sec', 'TREE', false, [1], ['number'])).toBe(2);
        intact(space, h);
      });
    }
  }

  it('a hole read through an inherited Array.prototype getter that drops the space gets ER_SPACE_DROPPED', () => {
    const { space, h } = fixture();
    // eslint-disable-next-line no-sparse-arrays
    const fields = [, 0] as number[];
    Object.defineProperty(Array.prototype, '0', { configurable: true, get() { space.drop(); return 1; } });
    let code: string | undefined;
    try {
      h.createIndex('sec', 'TREE', false, fields, ['number', 'unsigned']);
    } catch (error) {
      code = (error as CappedError).code;
    } finally {
      delete (Array.prototype as unknown as Record<string, unknown>)['0'];
    }
    expect(code).toBe('ER_SPACE_DROPPED');
    processAlive();
  });

  it('a getter that drops the space and creates a new one in its place: the old handle stays dropped', () => {
    const { space, h } = fixture();
    let replacement: Space | undefined;
    const [fields, types] = arrays('types', 1, () => {
      space.drop();
      replacement = fixture('replacement').space;
    });
    expect(codeOf(() => h.createIndex('sec', 'TREE', false, fields, types))).toBe('ER_SPACE_DROPPED');
    intact(replacement as Space, handleOf(replacement as Space));
    expect((replacement as Space).indexes).toHaveLength(2);
  });
});

describe('user code run by the public API during a call that drops the space gets ER_SPACE_DROPPED', () => {
  it('createIndex: a getter on a part', () => {
    const { space } = fixture();
    const part = { get field() { space.drop(); return 2; }, type: 'number' as const };
    expect(codeOf(() => space.createIndex('sec', { unique: false, parts: [part] }))).toBe('ER_SPACE_DROPPED');
    processAlive();
  });

  it('insert and replace: a getter inside the tuple', () => {
    for (const op of ['insert', 'replace'] as const) {
      const { space } = fixture();
      const tuple = [100, 1, { get x() { space.drop(); return 1; } }];
      expect(codeOf(() => space[op](tuple))).toBe('ER_SPACE_DROPPED');
    }
    processAlive();
  });

  it('insertMany: a getter inside the last tuple', () => {
    const { space } = fixture();
    const tuples = [[100, 1], [101, 1, { get x() { space.drop(); return 1; } }]];
    expect(codeOf(() => space.insertMany(tuples))).toBe('ER_SPACE_DROPPED');
    processAlive();
  });

  it('get, select, count, pairs, delete: a getter on a key part', () => {
    const ops: Array<(space: Space, key: number[]) => unknown> = [
      (s, key) => s.index.comp.get(key),
      (s, key) => s.index.comp.select(key),
      (s, key) => s.index.comp.count(key),
      (s, key) => s.index.comp.pairs(key).next(),
      (s, key) => s.index.comp.min(key),
    ];
    for (const op of ops) {
      const { space } = fixture();
      space.createIndex('comp', { parts: [[2, 'number'], [1, 'unsigned']] });
      const key = [3, 3];
      Object.defineProperty(key, 1, { get() { space.drop(); return 3; } });
      expect(codeOf(() => op(space, key))).toBe('ER_SPACE_DROPPED');
    }
    const { space } = fixture();
    const key = [3];
    Object.defineProperty(key, 0, { get() { space.drop(); return 3; } });
    expect(codeOf(() => space.delete(key))).toBe('ER_SPACE_DROPPED');
    processAlive();
  });

  it('select: a getter on an option', () => {
    const { space } = fixture();
    const options = { get limit() { space.drop(); return 5; } };
    expect(codeOf(() => space.select(undefined, options))).toBe('ER_SPACE_DROPPED');
    processAlive();
  });

  it('getters that re-enter (insert, delete, pairs) during createIndex and select leave a sound space', () => {
    const { space, h } = fixture();
    let next = 100;
    const reenter = () => { space.insert([next++, 7]); space.delete(4); space.pairs().next(); };
    const part = { get field() { reenter(); return 2; }, type: 'number' as const };
    const index = space.createIndex('sec', { unique: false, parts: [part] });
    expect(index.len()).toBe(space.len());
    const options = { get limit() { reenter(); return 100; } };
    expect(space.select(undefined, options)).toHaveLength(space.len());
    expect(space.get(4)).toBeUndefined();
    intact(space, h);
  });
});

describe('results are built without running inherited setters', () => {
  /** Runs fn with setters for '0' and '1' on Array.prototype and Object.prototype. */
  function withSetters<T>(onCall: () => void, fn: () => T): T {
    const protos = [Array.prototype, Object.prototype] as Array<Record<string, unknown>>;
    for (const proto of protos) {
      for (const key of ['0', '1']) Object.defineProperty(proto, key, { configurable: true, set() { onCall(); } });
    }
    try {
      return fn();
    } finally {
      for (const proto of protos) for (const key of ['0', '1']) delete proto[key];
    }
  }

  it('memory() through the handle and through the public API', () => {
    const { space, h } = fixture();
    let calls = 0;
    const [viaHandle, viaApi] = withSetters(() => { calls++; space.drop(); }, () => {
      const m = h.memory();
      return [[m[0], m[1]], space.memory()] as const;
    });
    expect(calls).toBe(0);
    expect(viaHandle[0]).toBeGreaterThan(0);
    expect(viaHandle[1]).toBeGreaterThan(0);
    expect(viaApi).toEqual({ tuples: viaHandle[0], indexes: viaHandle[1], total: viaHandle[0] + viaHandle[1] });
    intact(space, h);
  });

  for (const c of CALLS) {
    it(`${c.name}`, () => {
      const { space, h } = fixture();
      const args = c.args(h);
      let calls = 0;
      withSetters(() => { calls++; space.drop(); }, () => c.run(h, args));
      expect(calls).toBe(0);
      intact(space, h);
    });
  }

  it('len, begin, checkIntegrity, a miss, a select into a new Buffer', () => {
    const { space, h } = fixture();
    let calls = 0;
    const [len, sp, problems, miss, selected] = withSetters(() => { calls++; space.drop(); }, () =>
      [h.len(), h.begin(), h.checkIntegrity(), h.get(0, 999, scratch()), h.select(0, undefined, ALL, 3, 0, Buffer.alloc(0))]);
    expect(calls).toBe(0);
    expect([len, sp, problems, miss]).toEqual([20, 0, '', null]);
    expect(Buffer.isBuffer(selected)).toBe(true);
    intact(space, h);
  });
});

describe('handles that are not what they claim', () => {
  // A native object made outside Node-API (Node's own zlib binding: V8 internal fields, no wrap).
  const gzip = createGzip();
  afterAll(() => gzip.close());
  const raw = native.space as unknown as Record<string, (...args: unknown[]) => unknown>;

  function foreign(): Record<string, unknown> {
    const { h: other } = fixture('other');
    const otherCursor = other.cursor(0, undefined, ALL);
    const { space: gone, h: goneHandle } = fixture('gone');
    const goneCursor = goneHandle.cursor(0, undefined, ALL);
    gone.drop();
    const { h: live } = fixture('proxied');
    return {
      'a plain object': {},
      'an array': [],
      'null': null,
      'a number': 7,
      'a function': () => 1,
      'an empty CursorHandle made by JavaScript': new native.CursorHandle(),
      'an object that inherits from a real cursor': Object.create(live.cursor(0, undefined, ALL) as object),
      'a Proxy over a real cursor': new Proxy(live.cursor(0, undefined, ALL) as object, {}),
      'a native object made outside Node-API': (gzip as unknown as { _handle: object })._handle,
      'a space handle (an External of something else)': native.createSpace('external', 1024),
      'a cursor of another space': otherCursor,
      'a cursor of a dropped space': goneCursor,
    };
  }

  const chunkCalls: Array<[string, (h: NativeSpace, cursor: unknown) => unknown]> = [
    ['expireChunk', (h, c) => h.expireChunk(c as NativeCursor, 1, 10, 5, false, 1, new Float64Array(5), scratch())],
    ['rollbackChunk', (h, c) => h.rollbackChunk(c as NativeCursor, 0)],
    ['scanChunk', (h, c) => h.scanChunk(c as NativeCursor, 10, new Float64Array(5), scratch())],
    ['deleteVisited', (h, c) => h.deleteVisited(c as NativeCursor, Uint32Array.of(0), false, new Float64Array(5), scratch())],
  ];

  for (const [name, run] of chunkCalls) {
    it(`${name} refuses anything but a cursor of its own space with ER_ILLEGAL_PARAMS`, () => {
      const { space, h } = fixture();
      for (const [what, value] of Object.entries(foreign())) {
        expect(codeOf(() => run(h, value)), what).toBe('ER_ILLEGAL_PARAMS');
      }
      intact(space, h);
    });

    it(`${name} with its own cursor after the space was dropped gets ER_SPACE_DROPPED`, () => {
      const { space, h } = fixture();
      const cursor = h.cursor(1, undefined, ALL, true);
      space.drop();
      expect(codeOf(() => run(h, cursor))).toBe('ER_SPACE_DROPPED');
      processAlive();
    });
  }

  it('cursor methods refuse a `this` that is not a live cursor handle', () => {
    const { h } = fixture();
    const real = h.cursor(0, undefined, ALL);
    const { next, reset, restore } = Object.getPrototypeOf(real) as NativeCursor;
    for (const [what, value] of Object.entries(foreign())) {
      if (what.startsWith('a cursor of')) continue;  // those are real cursors, handled below
      expect(refusedReceiver(() => next.call(value, scratch())), what).toBe('ER_ILLEGAL_PARAMS');
      expect(refusedReceiver(() => reset.call(value)), what).toBe('ER_ILLEGAL_PARAMS');
      expect(refusedReceiver(() => restore.call(value)), what).toBe('ER_ILLEGAL_PARAMS');
    }
    // An instance that no space made reaches the binding, which refuses it.
    expect(codeOf(() => new native.CursorHandle().next(scratch()))).toBe('ER_ILLEGAL_PARAMS');
    expect(real.next(scratch())).toBeGreaterThan(0);
  });

  it('a cursor of a dropped space gets ER_SPACE_DROPPED from each of its methods', () => {
    const { space, h } = fixture();
    const cursor = h.cursor(0, undefined, ALL);
    cursor.next(scratch());
    space.drop();
    expect(codeOf(() => cursor.next(scratch()))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => cursor.reset())).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => cursor.restore())).toBe('ER_SPACE_DROPPED');
  });

  it('the space functions refuse anything but a space handle with ER_ILLEGAL_PARAMS', () => {
    const { h } = fixture();
    const values: Record<string, unknown> = {
      ...foreign(),
      'undefined': undefined,
      'a real cursor': h.cursor(0, undefined, ALL),
      'a SpaceHandle (the JavaScript wrapper, not the handle)': h,
    };
    delete values['a space handle (an External of something else)'];
    for (const [name, fn] of Object.entries(raw)) {
      for (const [what, value] of Object.entries(values)) {
        expect(codeOf(() => fn(value, 0, undefined, ALL, 1, 0, scratch())), `${name}: ${what}`).toBe('ER_ILLEGAL_PARAMS');
      }
    }
    expect(codeOf(() => raw.len())).toBe('ER_ILLEGAL_PARAMS');
  });

  it('memory() writes into a Float64Array and refuses anything else', () => {
    const ext = native.createSpace('raw', 1024);
    const out = new Float64Array(2);
    expect(raw.memory(ext, out)).toBeUndefined();
    expect(out[0]).toBeGreaterThanOrEqual(0);
    for (const bad of [undefined, [0, 0], new Float64Array(1), new Float32Array(2), Buffer.alloc(16), new Proxy(new Float64Array(2), {})]) {
      expect(codeOf(() => raw.memory(ext, bad))).toBe('ER_ILLEGAL_PARAMS');
    }
  });

  it('createSpace takes a wallClock only as a boolean and only with a ttlField', () => {
    const create = native.createSpace as (...args: unknown[]) => unknown;
    expect(codeOf(() => create('w', 1024, undefined, undefined, undefined, undefined, true))).toBe('ER_ILLEGAL_PARAMS');
    for (const bad of [1, 's', {}, null, new Proxy({}, {})]) {
      expect(codeOf(() => create('w', 1024, 1, undefined, undefined, undefined, bad)), String(bad)).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(create('w', 1024, 1, undefined, undefined, undefined, false)).toBeDefined();
    expect(create('w', 1024, 1, undefined, undefined, undefined, undefined)).toBeDefined();
  });

  it('a read or an insert refuses a now that is neither a number nor undefined, on plain and TTL spaces', () => {
    const plain = fixture().h;
    const wall = new Space('wall-now', { ttl: { field: 2 } });
    wall.createIndex('pk', { parts: [[1, 'unsigned']] });
    const ttl = handleOf(wall);
    for (const h of [plain, ttl]) {
      for (const bad of [true, false, '1', {}, null, 1n]) {
        const now = bad as unknown as number;
        expect(codeOf(() => h.get(0, 1, scratch(), now)), `get ${String(bad)}`).toBe('ER_ILLEGAL_PARAMS');
        expect(codeOf(() => h.count(0, undefined, ALL, now)), `count ${String(bad)}`).toBe('ER_ILLEGAL_PARAMS');
        expect(codeOf(() => h.insertMany(pack([]), now)), `insertMany ${String(bad)}`).toBe('ER_ILLEGAL_PARAMS');
      }
      expect(() => h.get(0, 1, scratch(), Number.NaN)).not.toThrow();  // NaN: a number, no TTL check
    }
  });

  it('the native handle is not reachable from a SpaceHandle', () => {
    const { h } = fixture();
    expect(Reflect.ownKeys(h)).toEqual([]);
    expect(JSON.stringify(h)).toBe('{}');
    expect((h as unknown as Record<string, unknown>).h).toBeUndefined();
  });

  it('a refused handle gets a CappedError that says what was expected', () => {
    const error = (() => { try { raw.len({}); } catch (e) { return e; } })();
    expect(error).toBeInstanceOf(CappedError);
    expect((error as CappedError).message).toMatch(/space handle/);
  });
});

describe('converting every argument first does not change which error a call reports', () => {
  it('a dropped space comes first, then the index argument, then ER_NO_SUCH_INDEX, then the other arguments', () => {
    const { space, h } = fixture();
    const bad = {} as unknown as number;
    expect(codeOf(() => h.select(bad, bad as unknown as Buffer, 99, -1, -1, scratch()))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.select(7, bad as unknown as Buffer, 99, -1, -1, scratch()))).toBe('ER_NO_SUCH_INDEX');
    expect(codeOf(() => h.select(0, bad as unknown as Buffer, 99, -1, -1, scratch()))).toBe('ER_KEY_TYPE');
    expect(codeOf(() => h.select(0, undefined, 99, -1, -1, scratch()))).toBe('ER_ITERATOR_TYPE');
    expect(codeOf(() => h.count(7, undefined, 99))).toBe('ER_NO_SUCH_INDEX');
    expect(codeOf(() => h.cursor(7, undefined, 99))).toBe('ER_NO_SUCH_INDEX');
    expect(codeOf(() => h.get(7, bad, scratch()))).toBe('ER_NO_SUCH_INDEX');
    space.drop();
    expect(codeOf(() => h.select(bad, bad as unknown as Buffer, 99, -1, -1, scratch()))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => h.insert(bad as unknown as Buffer, bad as unknown as boolean))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => h.createIndex('x', 'NOPE' as 'TREE', bad as unknown as boolean, [], []))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => h.expireChunk({} as NativeCursor, bad, 0, bad, false, 9 as 0, new Float64Array(0), scratch())))
      .toBe('ER_SPACE_DROPPED');
  });
});

describe('string arguments', () => {
  it('a string whose UTF-8 form crosses any short-string boundary arrives whole (keys and names)', () => {
    const space = new Space('strings');
    space.createIndex('pk', { parts: [[1, 'string']] });
    const h = handleOf(space);
    for (let n = 100; n < 300; n++) {
      for (const tail of ['€', '😀', 'é']) {
        const key = 'a'.repeat(n) + tail;
        space.insert([key, n]);
        const got = h.get(0, key, Buffer.alloc(1024));
        expect(got, `${n} + ${tail}`).toBeGreaterThan(0);
        expect(h.count(0, key, 0)).toBe(1);
        expect(h.delete(key, Buffer.alloc(1024))).toBeGreaterThan(0);
      }
    }
    const name = 'n'.repeat(125) + '€€';
    h.createIndex(name, 'TREE', false, [1], ['number']);
    expect(codeOf(() => h.createIndex(name, 'TREE', false, [1], ['number']))).toBe('ER_INDEX_EXISTS');
    const error = (() => { try { h.createIndex(name, 'TREE', false, [1], ['number']); } catch (e) { return e as Error; } })();
    expect(error?.message).toContain(name);
  });
});
