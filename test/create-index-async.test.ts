// createIndexAsync (issue 12): an index built over a non-empty space in slices between which the
// event loop runs. The tests make slices small (64 tuples) so that writes interleave with many of
// them. Randomized runs are seeded; reproduce one with BUILD_SEED=<seed>.
import { afterEach, describe, expect, it } from 'vitest';
import { CappedError, Space, type Tuple } from '../src/index.js';
import { native } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';
import { mulberry32 } from '../bench/lib/random.js';
import { useBuildSlice } from './support/builds.js';

const SEED = Number(process.env.BUILD_SEED) || 20261123;
const ALL = 2;

type Row = [number, number, string];
type Def = { name: string; type: 'TREE' | 'HASH'; unique: boolean; parts: [number, 'unsigned' | 'string'][] };

useBuildSlice(64);
afterEach(() => {
  native.testing.failAllocationAfter(-1);
});

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function populated(pk: 'TREE' | 'HASH', n: number, email = (id: number) => `u${id}`): Space {
  const space = new Space('build');
  space.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  for (let id = 0; id < n; id++) space.insert([id, (id * 37) % 100, email(id)]);
  return space;
}

/** Settles p, counting the event-loop turns that ran meanwhile. */
async function withTurns<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; turns: number }> {
  let turns = 0;
  let settled = false;
  const tick = (): void => {
    if (settled) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const value = await p;
    return { value, turns };
  } catch (error) {
    return { error, turns };
  } finally {
    settled = true;
  }
}

function codeOf(e: unknown): string | undefined {
  return e instanceof CappedError ? e.code : undefined;
}

const bytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** What select() on an index of this definition returns for these rows (HASH: sorted by id). */
function expected(def: Def, rows: Row[]): Row[] {
  const r = [...rows];
  if (def.type === 'HASH') return r.sort((a, b) => a[0] - b[0]);
  const f = def.parts[0][0] - 1;
  return r.sort((a, b) => {
    const c = typeof a[f] === 'string' ? bytes(a[f] as string, b[f] as string) : (a[f] as number) - (b[f] as number);
    return c !== 0 || def.unique ? c : a[0] - b[0];
  });
}

/** The tuples of an index, sorted by id. */
function byId(space: Space, name: string): Tuple[] {
  return space.index[name].select().sort((a, b) => (a[0] as number) - (b[0] as number));
}

describe('createIndexAsync builds in slices', () => {
  it.each(['HASH', 'TREE'] as const)('over a %s primary: the index is invisible until built, then complete', async (pk) => {
    const space = populated(pk, 3000);
    const p = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    await turn();
    expect(space.indexes.map((i) => i.name)).toEqual(['pk']);
    expect(space.index.ttl).toBeUndefined();
    expect(space.index[1]).toBeUndefined();
    const { value, turns } = await withTurns(p);
    expect(turns).toBeGreaterThan(3000 / 64 / 2);  // the event loop ran between slices
    expect(value).toBe(space.index.ttl);
    expect(space.index[1]).toBe(value);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'ttl']);
    const rows = space.select() as Row[];
    expect(space.index.ttl.select()).toEqual(expected({ name: 'ttl', type: 'TREE', unique: false, parts: [[2, 'unsigned']] }, rows));
    expect(space.index.ttl.count()).toBe(3000);
    space.checkIntegrity();
    // the built index serves writes as any other
    space.insert([5000, 7, 'x']);
    expect(space.index.ttl.select(7).map((t) => t[0])).toContain(5000);
    space.checkIntegrity();
  });

  it('on an empty space, or for the primary, creates the index at once', async () => {
    const space = new Space('empty');
    const pk = await space.createIndexAsync('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    expect(space.indexes).toEqual([pk]);
    const ttl = await space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    expect(space.indexes).toEqual([pk, ttl]);
  });

  it('checks its arguments as createIndex does', async () => {
    const space = populated('HASH', 10);
    await expect(space.createIndexAsync('x', { type: 'BTREE' as 'TREE', parts: [[2, 'unsigned']] })).rejects.toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
    await expect(space.createIndexAsync('x', { parts: [] })).rejects.toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
    await expect(space.createIndexAsync('pk', { parts: [[2, 'unsigned']] })).rejects.toMatchObject({ code: 'ER_INDEX_EXISTS' });
    await expect(space.createIndexAsync('h', { type: 'HASH', unique: false, parts: [[2, 'unsigned']] })).rejects.toMatchObject({ code: 'ER_ILLEGAL_PARAMS' });
    await expect(space.createIndexAsync('s', { parts: [[2, 'string']] })).rejects.toMatchObject({ code: 'ER_FIELD_TYPE' });
    expect(space.indexes.length).toBe(1);
    space.checkIntegrity();
  });
});

describe('writes during a build are reflected in the new index (model-checked)', () => {
  const defs: Def[] = [
    { name: 'ttl', type: 'TREE', unique: false, parts: [[2, 'unsigned']] },
    { name: 'email', type: 'TREE', unique: true, parts: [[3, 'string']] },
    { name: 'emailH', type: 'HASH', unique: true, parts: [[3, 'string']] },
  ];
  const cases = (['HASH', 'TREE'] as const).flatMap((pk) => defs.map((def, i) => [pk, def.name, i] as const));

  it.each(cases)('%s primary, building %s', async (pk, _name, which) => {
    const def = defs[which];
    const seed = SEED + which * 7 + (pk === 'TREE' ? 100 : 0);
    const rand = mulberry32(seed);
    const int = (n: number): number => Math.floor(rand() * n);
    const N = 2500;
    const space = populated(pk, N);
    const h = handleOf(space);
    const model = new Map<number, Row>();
    for (const t of space.select() as Row[]) model.set(t[0], t);
    const row = (id: number, ttl = int(100)): Row => [id, ttl, `u${id}`];
    const scratch = Buffer.alloc(64 * 1024);
    const out = new Float64Array(5);
    let cursor = h.cursor(0, undefined, ALL, true);
    let ops = 0;

    // One random write against both the space and the model; the space must agree with the
    // model about whether it succeeds.
    const write = (m: Map<number, Row>): void => {
      const id = int(N * 2);
      const r = rand();
      ops++;
      if (r < 0.2) {
        const t = row(id);
        if (m.has(id)) expect(() => space.insert(t)).toThrow(CappedError);
        else { space.insert(t); m.set(id, t); }
      } else if (r < 0.32) {
        const t = row(id);
        space.replace(t);
        m.set(id, t);
      } else if (r < 0.5) {
        space.delete(id);
        m.delete(id);
      } else if (r < 0.6) {
        const ttl = int(100);
        space.update(id, [['=', 2, ttl]]);
        const old = m.get(id);
        if (old) m.set(id, [id, ttl, old[2]]);
      } else if (r < 0.7) {
        const t = row(id);
        space.upsert(t, [['+', 2, 1]]);
        const old = m.get(id);
        m.set(id, old ? [id, old[1] + 1, old[2]] : t);
      } else if (r < 0.8) {
        const ts = [row(id), row(id + 1), row(id + 2)];
        if (ts.some((t) => m.has(t[0]))) expect(() => space.insertMany(ts)).toThrow(CappedError);
        else { space.insertMany(ts); for (const t of ts) m.set(t[0], t); }
      } else if (r < 0.85) {
        // an expiry chunk over the primary: deletes stored tuples whose field 2 is <= 3
        h.expireChunk(cursor, 1, 40, 3, false, 0, out, scratch);
        if (out[2] === 1) cursor = h.cursor(0, undefined, ALL, true);
        for (const [k, t] of m) if (t[1] <= 3 && space.get(k) === undefined) m.delete(k);
      } else {
        // a transaction of several statements, committed or rolled back
        const copy = new Map(m);
        const commit = rand() < 0.5;
        try {
          space.transaction(() => {
            for (let k = 0; k < 4; k++) write(copy);
            if (!commit) throw new Error('roll back');
          });
        } catch (e) {
          if ((e as Error).message !== 'roll back') throw e;
        }
        if (commit) {
          m.clear();
          for (const [k, t] of copy) m.set(k, t);
        }
      }
    };

    const p = space.createIndexAsync(def.name, { type: def.type, unique: def.unique, parts: def.parts });
    for (let k = 0; k < 20; k++) write(model);  // before the first slice
    let done = false;
    let turns = 0;
    const writer = (): void => {
      if (done) return;
      turns++;
      for (let k = 0; k < 3; k++) write(model);
      setImmediate(writer);
    };
    setImmediate(writer);
    try {
      await p;
    } finally {
      done = true;
    }
    const context = `seed ${seed}, ${ops} writes, ${turns} turns`;
    expect(turns, context).toBeGreaterThan(10);
    expect(space.len(), context).toBe(model.size);
    if (def.type === 'TREE') expect(space.index[def.name].select(), context).toEqual(expected(def, [...model.values()]));
    expect(byId(space, def.name), context).toEqual(expected({ ...def, type: 'HASH' }, [...model.values()]));
    space.checkIntegrity();
    // and it goes on following writes
    for (let k = 0; k < 200; k++) write(model);
    expect(byId(space, def.name), context).toEqual(expected({ ...def, type: 'HASH' }, [...model.values()]));
    space.checkIntegrity();
  });
});

describe('a failed build changes nothing', () => {
  function snapshot(space: Space): unknown {
    return { names: space.indexes.map((i) => i.name), rows: space.select(), indexes: space.memory().indexes };
  }

  it.each(['TREE', 'HASH'] as const)('a unique %s index that meets a stored duplicate halfway rejects ER_DUPLICATE_KEY', async (type) => {
    const space = populated('TREE', 3000, (id) => (id === 2600 ? 'u10' : `u${id}`));
    const before = snapshot(space);
    const { error, turns } = await withTurns(space.createIndexAsync('email', { type, parts: [[3, 'string']] }));
    expect(codeOf(error)).toBe('ER_DUPLICATE_KEY');
    expect((error as Error).message).toContain("unique index 'email'");
    expect(turns).toBeGreaterThan(10);  // it failed halfway, after many slices
    expect(snapshot(space)).toEqual(before);
    expect(space.index.email).toBeUndefined();
    space.checkIntegrity();
    space.delete(2600);
    const email = await space.createIndexAsync('email', { type, parts: [[3, 'string']] });
    expect(email.get('u10')).toEqual([10, (10 * 37) % 100, 'u10']);
    space.checkIntegrity();
  });

  it.each([
    ['already walked', 5],
    ['not walked yet', 2990],
  ] as const)('a duplicate inserted during the build (of a tuple %s) fails the build, not the insert', async (_, dupOf) => {
    for (const type of ['TREE', 'HASH'] as const) {
      const space = populated('TREE', 3000);
      const p = space.createIndexAsync('email', { type, parts: [[3, 'string']] });
      for (let k = 0; k < 5; k++) await turn();
      space.insert([9000, 1, `u${dupOf}`]);  // succeeds: the build fails instead
      const { error } = await withTurns(p);
      expect(codeOf(error), type).toBe('ER_DUPLICATE_KEY');
      expect(space.get(9000)).toEqual([9000, 1, `u${dupOf}`]);
      expect(space.indexes.map((i) => i.name)).toEqual(['pk']);
      space.checkIntegrity();
    }
  });

  it('a tuple the new index cannot hold, written during the build, fails the build (ER_FIELD_MISSING)', async () => {
    const space = populated('HASH', 2000);
    const p = space.createIndexAsync('email', { parts: [[3, 'string']] });
    await turn();
    space.insert([9001, 1]);
    await expect(p).rejects.toMatchObject({ code: 'ER_FIELD_MISSING' });
    expect(space.get(9001)).toEqual([9001, 1]);
    expect(space.indexes.length).toBe(1);
    space.checkIntegrity();
  });

  it('a rolled-back transaction that would restore a duplicate fails the build', async () => {
    const space = populated('TREE', 3000);
    const p = space.createIndexAsync('email', { parts: [[3, 'string']] });
    await turn();
    // 2990 is not walked yet: its delete is a no-op in the new index, and u2990 is free there
    expect(() => space.transaction(() => {
      space.delete(2990);
      space.insert([9002, 1, 'u2990']);
      space.delete(9002);
      throw new Error('undo');
    })).toThrow('undo');
    space.insert([9003, 1, 'u2990b']);
    expect(await p).toBe(space.index.email);
    space.checkIntegrity();
    expect(space.index.email.get('u2990')).toEqual([2990, (2990 * 37) % 100, 'u2990']);
  });

  it('drop() during the build rejects ER_SPACE_DROPPED', async () => {
    const space = populated('HASH', 3000);
    const p = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    await turn();
    await turn();
    space.drop();
    await expect(p).rejects.toMatchObject({ code: 'ER_SPACE_DROPPED' });
    expect(space.dropped).toBe(true);
  });

  it('truncate() during the build rejects ER_INDEX_BUILD_ABORTED; the space is usable and can build again', async () => {
    const space = populated('HASH', 3000);
    const before = space.memory().indexes;
    const p = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    await turn();
    await turn();
    space.truncate();
    await expect(p).rejects.toMatchObject({ code: 'ER_INDEX_BUILD_ABORTED' });
    expect(space.indexes.length).toBe(1);
    expect(space.memory().indexes).toBeLessThanOrEqual(before);
    for (let id = 0; id < 1000; id++) space.insert([id, id % 10, `u${id}`]);
    const ttl = await space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    expect(ttl.count(3)).toBe(100);
    space.checkIntegrity();
  });

  it('an allocation failure at any point of the build rejects ER_MEMORY_ISSUE and changes nothing', async () => {
    for (const type of ['TREE', 'HASH'] as const) {
      let n = 0;
      for (; n < 500; n++) {
        const space = populated('HASH', 1500);
        const before = snapshot(space);
        const p = space.createIndexAsync('email', { type, parts: [[3, 'string']] });
        await turn();
        native.testing.failAllocationAfter(n);
        const { error } = await withTurns(p);
        const fired = native.testing.disarmAllocationFailure();
        if (error === undefined) {
          expect(fired, `${type} n=${n}`).toBe(false);
          expect(space.index.email.count()).toBe(1500);
          space.checkIntegrity();
          break;
        }
        expect(codeOf(error), `${type} n=${n}`).toBe('ER_MEMORY_ISSUE');
        expect(snapshot(space), `${type} n=${n}`).toEqual(before);
        space.checkIntegrity();
      }
      expect(n, type).toBeGreaterThan(0);  // some allocation of the build failed before one passed
      expect(n, type).toBeLessThan(500);
    }
  });

  it('an allocation failure in a write during the build fails either the write or the build, never half of one', async () => {
    for (let n = 0; n < 200; n++) {
      const space = populated('HASH', 1500);
      space.createIndex('ttl', { unique: false, parts: [[2, 'unsigned']] });
      const p = space.createIndexAsync('email', { parts: [[3, 'string']] });
      await turn();
      native.testing.failAllocationAfter(n);
      let wrote = true;
      try {
        space.insertMany(Array.from({ length: 300 }, (_, k): Row => [5000 + k, k % 100, `w${k}`]));
      } catch (e) {
        expect(codeOf(e)).toBe('ER_MEMORY_ISSUE');
        wrote = false;
      }
      native.testing.disarmAllocationFailure();
      expect(space.len()).toBe(wrote ? 1800 : 1500);
      const { error } = await withTurns(p);
      space.checkIntegrity();
      if (error !== undefined) {
        expect(codeOf(error), `n=${n}`).toBe('ER_MEMORY_ISSUE');
        expect(space.index.email).toBeUndefined();
      } else {
        expect(space.index.email.count()).toBe(space.len());
        if (wrote) break;
      }
    }
  });
});

describe('concurrent builds', () => {
  it('a second createIndexAsync waits for the first; both are built', async () => {
    const space = populated('HASH', 2000);
    const a = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    const b = space.createIndexAsync('email', { type: 'HASH', parts: [[3, 'string']] });
    space.insert([9000, 3, 'z']);
    const [ia, ib] = await Promise.all([a, b]);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'ttl', 'email']);
    expect([ia.id, ib.id]).toEqual([1, 2]);
    expect(ib.get('z')).toEqual([9000, 3, 'z']);
    space.checkIntegrity();
  });

  it('a failed first build does not stop the second', async () => {
    const space = populated('HASH', 2000, (id) => (id === 1500 ? 'u1' : `u${id}`));
    const a = space.createIndexAsync('email', { parts: [[3, 'string']] });
    const b = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    await expect(a).rejects.toMatchObject({ code: 'ER_DUPLICATE_KEY' });
    expect(await b).toBe(space.index.ttl);
    expect(space.indexes.map((i) => i.name)).toEqual(['pk', 'ttl']);
  });

  it('createIndex() during a build is refused with ER_UNSUPPORTED; the same name twice with ER_INDEX_EXISTS', async () => {
    const space = populated('HASH', 2000);
    const a = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    const b = space.createIndexAsync('ttl', { unique: false, parts: [[2, 'unsigned']] });
    await turn();
    expect(() => space.createIndex('other', { parts: [[3, 'string']] })).toThrow(expect.objectContaining({ code: 'ER_UNSUPPORTED' }));
    expect(() => space.createIndex('ttl', { parts: [[3, 'string']] })).toThrow(expect.objectContaining({ code: 'ER_INDEX_EXISTS' }));
    expect(await a).toBe(space.index.ttl);
    await expect(b).rejects.toMatchObject({ code: 'ER_INDEX_EXISTS' });
    expect(space.createIndex('other', { parts: [[3, 'string']] }).id).toBe(2);
  });
});
