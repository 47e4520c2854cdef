// A user's msgpackr extension (msgpackr's addExtension() is global, so our packr and unpackr run
// it too) whose unpack throws, or reads the space, for a tuple that is stored.
// - Reads throw ER_TUPLE_FORMAT with the user's error as the cause, and change nothing.
// - An unpack that reads the space while a read is being decoded gets its own result, and the
//   outer read is not corrupted (they shared one scratch Buffer).
// - A delete, update or upsert whose tuple cannot be decoded stands, and its error says so.
// - The daemon loses nothing and never gets stuck: a tuple that cannot be decoded is skipped and
//   reported where a callback would have to be handed it, the rest of its chunk is delivered,
//   and no transaction stays open; it never throws out of a timer.
import { afterEach, describe, expect, it } from 'vitest';
import { addExtension } from 'msgpackr';
import { Space, atomic, expirationd, type Task } from '../src/index.js';

class Poison {
  constructor(readonly v: number) {}
}
class Ref {
  constructor(readonly id: number) {}
}

const boom = new Error('unpack boom');
let armed = false;
addExtension({
  Class: Poison, type: 101,
  pack: (p: Poison) => Buffer.from([p.v]),
  unpack: (b: Buffer) => {
    if (armed) throw boom;
    return new Poison(b[0]);
  },
});
let refSpace: Space | undefined;
addExtension({
  Class: Ref, type: 102,
  pack: (r: Ref) => Buffer.from([r.id]),
  unpack: (b: Buffer) => ({ ref: b[0], target: refSpace?.get(b[0]) }),
});

const spaces: Space[] = [];
afterEach(() => {
  armed = false;
  refSpace = undefined;
  for (const name of expirationd.tasks()) expirationd.kill(name);
  for (const s of spaces.splice(0)) if (!s.dropped) s.drop();
});

function space(options?: ConstructorParameters<typeof Space>[1], pk: 'TREE' | 'HASH' = 'TREE'): Space {
  const s = new Space(`ext-${spaces.length}`, options);
  spaces.push(s);
  s.createIndex('pk', { type: pk, parts: [[1, 'unsigned']] });
  s.createIndex('exp', { type: 'TREE', unique: false, parts: [[3, 'unsigned']] });
  return s;
}

function codeOf(f: () => unknown): { code?: string; message: string; cause?: unknown } {
  try {
    f();
  } catch (error) {
    return error as { code?: string; message: string; cause?: unknown };
  }
  throw new Error('did not throw');
}

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a task until its first pass ends; returns what it delivered and reported. */
async function onePass(s: Space, options: Record<string, unknown>, listen = false): Promise<{ task: Task; errors: unknown[]; expired: unknown[][] }> {
  const errors: unknown[] = [];
  const expired: unknown[][] = [];
  const task = expirationd.start('ext-task', s, { field: 3, scanSize: 4, scanTime: 0.01, keepAlive: true, ...options });
  task.on('error', (error) => errors.push(error));
  if (listen) task.on('expired', (tuples: unknown[][]) => expired.push(...tuples));
  await new Promise((resolve) => task.once('fullScan', resolve));
  await tick(5);
  task.kill();
  return { task, errors, expired };
}

describe('reads', () => {
  it('a throwing unpack makes get, select, min, max and pairs throw ER_TUPLE_FORMAT, with the user error as cause', () => {
    const s = space();
    s.insert([1, new Poison(7), 5]);
    s.insert([2, 'plain', 6]);
    armed = true;
    for (const read of [() => s.get(1), () => s.select(), () => s.index.exp.min(), () => s.index.pk.min(), () => [...s.pairs()]]) {
      const error = codeOf(read);
      expect(error.code).toBe('ER_TUPLE_FORMAT');
      expect(error.cause).toBe(boom);
      expect(error.message).toContain('unpack boom');
    }
    expect(s.get(2)).toEqual([2, 'plain', 6]);
    armed = false;
    expect(s.get(1)).toEqual([1, new Poison(7), 5]);
    expect(s.len()).toBe(2);
  });

  it('an unpack that reads the space while a tuple is decoded does not corrupt that tuple', () => {
    const s = space();
    refSpace = s;
    s.insert([2, 'two-two-two-two-two-two-two-two-two-two', 22, 'x'.repeat(40)]);
    s.insert([1, new Ref(2), 11, 'the tail of the first tuple, long enough', 'more']);
    expect(s.get(1)).toEqual([1, { ref: 2, target: [2, 'two-two-two-two-two-two-two-two-two-two', 22, 'x'.repeat(40)] },
      11, 'the tail of the first tuple, long enough', 'more']);
    expect(s.select().map((t) => t[0])).toEqual([1, 2]);
    expect(s.select()[0]).toEqual(s.get(1));
  });
});

describe('writes whose tuple cannot be decoded', () => {
  it('delete, update and upsert are applied, and their error says so', () => {
    const s = space();
    s.insert([1, new Poison(1), 5]);
    s.insert([2, new Poison(2), 5]);
    s.insert([3, new Poison(3), 5]);
    armed = true;
    const del = codeOf(() => s.delete(1));
    expect(del).toMatchObject({ code: 'ER_TUPLE_FORMAT' });
    expect(del.message).toMatch(/^the delete was applied, but its tuple cannot be decoded: .*unpack boom/);
    expect(del.cause).toBe(boom);
    const upd = codeOf(() => s.update(2, [['=', 3, 9]]));
    expect(upd.message).toMatch(/^the update was applied/);
    armed = false;
    expect(s.get(1)).toBeUndefined();
    expect(s.get(2)).toEqual([2, new Poison(2), 9]);
    expect(s.len()).toBe(2);
  });

  it('an eviction whose tuple cannot be decoded: the insert stands, the others go to onEvict, and the error says so', () => {
    const evicted: unknown[][] = [];
    const s = space({ ttl: { field: 3, now: () => 0 }, maxTuples: 2, onFull: 'evictExpiring', onEvict: (tuples) => evicted.push(...tuples) });
    s.insert([1, new Poison(1), 5]);
    s.insert([2, 'plain', 6]);
    armed = true;
    const error = codeOf(() => s.insert([3, 'new', 7]));
    expect(error).toMatchObject({ code: 'ER_TUPLE_FORMAT' });
    expect(error.message).toMatch(/^the write was applied, but 1 of the tuples it evicted cannot be decoded/);
    armed = false;
    expect(s.select().map((t) => t[0])).toEqual([2, 3]);
    s.insert([4, 'newer', 8]);
    expect(evicted).toEqual([[2, 'plain', 6]]);
  });
});

describe('the daemon', () => {
  const now = 100;
  function fill(s: Space): void {
    s.insert([1, 'expired', 10]);
    s.insert([2, new Poison(2), 20]);  // expired, cannot be decoded
    s.insert([3, 'expired', 30]);
    s.insert([4, new Poison(4), 1000]);  // live, cannot be decoded
    s.insert([5, 'live', 2000]);
    s.insert([6, 'expired', 40]);
  }
  const live = [4, 5];

  it('a plain task deletes an expired tuple that cannot be decoded (it never decodes)', async () => {
    const s = space();
    fill(s);
    armed = true;
    const { errors } = await onePass(s, { now: () => now });
    armed = false;
    expect(errors).toEqual([]);
    expect(s.select().map((t) => t[0])).toEqual(live);
  });

  it('with only an expired listener, the tuple is deleted as expired and the listener is told of the others', async () => {
    const s = space();
    fill(s);
    armed = true;
    const { errors, expired } = await onePass(s, { now: () => now, itIndex: 'pk' }, true);
    armed = false;
    expect(s.select().map((t) => t[0])).toEqual(live);
    expect(expired.map((t) => t[0]).sort()).toEqual([1, 3, 6]);
    expect(errors.length).toBeGreaterThan(0);
    expect((errors[0] as { code?: string }).code).toBe('ER_TUPLE_FORMAT');
  });

  for (const [kind, extra] of [
    ['sync onExpired, full scan', { itIndex: 'pk' }],
    ['sync onExpired, early break', { itIndex: 'exp' }],
    ['async onExpired', { itIndex: 'pk', async: true }],
    ['isExpired', { itIndex: 'pk', isExpired: true }],
    ['processExpired', { itIndex: 'pk', processExpired: true }],
  ] as const) {
    it(`${kind}: the tuple is skipped and reported, the rest of its chunk is delivered, nothing live is touched`, async () => {
      const s = space();
      fill(s);
      const handed: unknown[][] = [];
      const options: Record<string, unknown> = { now: () => now, itIndex: extra.itIndex };
      if ('processExpired' in extra) {
        options.processExpired = (tuples: unknown[][]) => {
          handed.push(...tuples);
          for (const t of tuples) s.delete(t[0] as number);
        };
      } else if ('async' in extra) {
        options.onExpired = async (tuples: unknown[][]) => {
          handed.push(...tuples);
        };
      } else {
        options.onExpired = (tuples: unknown[][]) => {
          handed.push(...tuples);
        };
      }
      if ('isExpired' in extra) options.isExpired = (t: unknown[]) => (t[2] as number) <= now;
      armed = true;
      const { task, errors } = await onePass(s, options);
      if ('async' in extra) {
        // The deletes follow the promises; a second pass finishes what the first handed.
        const again = expirationd.start('ext-task2', s, { ...options, field: 3, scanSize: 4, scanTime: 0.01, keepAlive: true });
        await new Promise((resolve) => again.once('fullScan', resolve));
        await tick(5);
        again.kill();
      }
      armed = false;
      // Nothing live is touched; the expired tuple that cannot be decoded stays (skipped).
      expect(s.select().map((t) => t[0])).toEqual([2, 4, 5]);
      expect(handed.map((t) => t[0]).sort()).toEqual([1, 3, 6]);
      const skipped = errors.filter((e) => (e as { code?: string }).code === 'ER_TUPLE_SKIPPED') as { key?: unknown; cause?: unknown; message: string }[];
      expect(skipped.map((e) => e.key)).toContain(2);
      expect(skipped.find((e) => e.key === 2)?.message).toMatch(/decoding failed on the tuple with key 2/);
      // A live one stays in the walk by the TTL rule; isExpired cannot be asked about it.
      if ('isExpired' in extra) expect(skipped.map((e) => e.key)).toContain(4);
      else expect(skipped.map((e) => e.key)).not.toContain(4);
      expect(task.stats().skipped).toBeGreaterThanOrEqual(1);
      // No transaction was left open: a frame rolls back exactly its own write.
      expect(() => atomic(() => {
        s.insert([7, 'x', 1]);
        throw new Error('undo');
      })).toThrow('undo');
      expect(s.get(7)).toBeUndefined();
      s.insert([8, 'y', 1]);
      expect(s.len()).toBe(4);
    });
  }

  it('an early-break task whose first live tuple cannot be decoded keeps running, and stats() reads its TTL', async () => {
    const s = space();
    let clock = 100;
    s.insert([1, 'expired', 10]);
    s.insert([4, new Poison(4), 150]);  // the first live tuple in TTL order
    s.insert([5, 'live', 2000]);
    armed = true;
    const errors: unknown[] = [];
    const task = expirationd.start('ext-eb', s, { field: 3, itIndex: 'exp', now: () => clock, scanSize: 4, scanTime: 0.01, keepAlive: true });
    task.on('error', (error) => errors.push(error));
    await new Promise((resolve) => task.once('fullScan', resolve));
    expect(s.len()).toBe(2);
    expect(task.stats().lag).toBe(0);
    clock = 160;  // the tuple that cannot be decoded is now expired and 10 past due
    expect(task.stats().lag).toBe(10);
    task.wake();
    await new Promise((resolve) => task.once('fullScan', resolve));
    await tick(5);
    task.kill();
    armed = false;
    expect(errors).toEqual([]);  // a plain task never decodes
    expect(s.select().map((t) => t[0])).toEqual([5]);
  });
});
