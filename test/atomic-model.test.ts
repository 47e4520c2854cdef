// atomic() across spaces, against a plain JavaScript model: random writes to three spaces (HASH
// and TREE primaries, a capped one, a unique secondary) inside nested atomic() frames that
// randomly throw, and whose throws are randomly caught by the enclosing frame. After every
// top-level frame, each space must hold exactly what the model holds: a frame that threw undid
// its own writes in every space, and nothing else. Seeded (ATOMIC_SEED, default 7), printed on
// failure.
import { describe, expect, test } from 'vitest';
import { Space, atomic, type Tuple } from '../src/index.js';
import { mulberry32 } from '../bench/lib/random.js';

const SEED = Number(process.env.ATOMIC_SEED ?? 7);

class Boom extends Error {}

type Model = Map<number, Tuple>;

interface Target {
  space: Space;
  model: Model;
  unique: boolean;  // a unique secondary on field 2
}

function makeTargets(): Target[] {
  const a = new Space('model-a');
  a.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
  const b = new Space('model-b');
  b.createIndex('pk', { parts: [[1, 'unsigned']] });
  b.createIndex('name', { parts: [[2, 'string']] });
  const c = new Space('model-c', { maxTuples: 40 });
  c.createIndex('pk', { parts: [[1, 'unsigned']] });
  return [
    { space: a, model: new Map(), unique: false },
    { space: b, model: new Map(), unique: true },
    { space: c, model: new Map(), unique: false },
  ];
}

function clone(models: Model[]): Model[] {
  return models.map((m) => new Map(m));
}

/** One write, applied to the space and, when it succeeds, to the model; a refused write changes neither. */
function write(t: Target, rnd: () => number): void {
  const id = Math.floor(rnd() * 60);
  const name = `n${Math.floor(rnd() * 50)}`;
  const tuple: Tuple = [id, name, Math.floor(rnd() * 100)];
  const op = Math.floor(rnd() * 5);
  const nameTaken = (except: number): boolean =>
    t.unique && [...t.model.values()].some((u) => u[1] === name && u[0] !== except);
  const full = (adds: boolean): boolean => t.space.maxTuples !== undefined && adds && t.model.size >= t.space.maxTuples;
  const expectRefused = (fn: () => void): void => {
    expect(fn).toThrow();
  };
  switch (op) {
    case 0: {  // insert
      if (t.model.has(id) || nameTaken(id) || full(true)) return expectRefused(() => t.space.insert(tuple));
      t.space.insert(tuple);
      t.model.set(id, tuple);
      return;
    }
    case 1: {  // replace
      if (nameTaken(id) || full(!t.model.has(id))) return expectRefused(() => t.space.replace(tuple));
      t.space.replace(tuple);
      t.model.set(id, tuple);
      return;
    }
    case 2: {  // delete
      const gone = t.space.delete(id);
      expect(gone).toEqual(t.model.get(id));
      t.model.delete(id);
      return;
    }
    case 3: {  // update: + on field 3
      const old = t.model.get(id);
      const result = t.space.update(id, [['+', 3, 1]]);
      if (old === undefined) {
        expect(result).toBeUndefined();
        return;
      }
      const next: Tuple = [old[0], old[1], (old[2] as number) + 1];
      expect(result).toEqual(next);
      t.model.set(id, next);
      return;
    }
    default: {  // upsert: insert, or = on field 3
      const old = t.model.get(id);
      if (old === undefined && (nameTaken(id) || full(true))) {
        return expectRefused(() => t.space.upsert(tuple, [['=', 3, 0]]));
      }
      t.space.upsert(tuple, [['=', 3, 0]]);
      t.model.set(id, old === undefined ? tuple : [old[0], old[1], 0]);
    }
  }
}

function expectAgree(targets: Target[], where: string): void {
  for (const t of targets) {
    const stored = t.space.select();
    const modelled = [...t.model.values()].sort((x, y) => (x[0] as number) - (y[0] as number));
    if (t.space.index.pk.type === 'HASH') stored.sort((x, y) => (x[0] as number) - (y[0] as number));
    expect(stored, `${t.space.name} ${where} (ATOMIC_SEED=${SEED})`).toEqual(modelled);
  }
}

/**
 * A frame: some writes, sometimes a nested frame (whose throw this frame catches or not), and
 * sometimes a throw at the end. Returns normally or throws Boom; the models follow.
 */
function frame(targets: Target[], rnd: () => number, depth: number): void {
  const saved = clone(targets.map((t) => t.model));
  const restore = (): void => targets.forEach((t, i) => {
    t.model = saved[i] as Model;
  });
  try {
    atomic(() => {
      const steps = 1 + Math.floor(rnd() * 6);
      for (let i = 0; i < steps; i++) {
        if (depth < 3 && rnd() < 0.25) {
          try {
            frame(targets, rnd, depth + 1);
          } catch (error) {
            if (!(error instanceof Boom)) throw error;
            if (rnd() < 0.5) throw error;  // not caught here: this frame fails too
          }
        } else {
          write(targets[Math.floor(rnd() * targets.length)] as Target, rnd);
        }
      }
      if (rnd() < 0.3) throw new Boom();
    });
  } catch (error) {
    restore();
    throw error;
  }
}

describe('atomic() across spaces agrees with a model', () => {
  test(`2000 random top-level frames with nesting and throws (seed ${SEED})`, () => {
    const rnd = mulberry32(SEED);
    const targets = makeTargets();
    let failed = 0;
    for (let round = 0; round < 2000; round++) {
      try {
        frame(targets, rnd, 0);
      } catch (error) {
        if (!(error instanceof Boom)) throw error;
        failed++;
      }
      if (round % 50 === 0) expectAgree(targets, `after frame ${round}`);
    }
    expectAgree(targets, 'at the end');
    for (const t of targets) t.space.checkIntegrity();
    // Both outcomes happened often enough for the test to mean something.
    expect(failed).toBeGreaterThan(200);
    expect(2000 - failed).toBeGreaterThan(200);
    for (const t of targets) expect(t.model.size).toBeGreaterThan(5);
  });
});
