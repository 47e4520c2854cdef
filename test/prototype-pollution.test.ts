// Prototype pollution: a property that some other code put on Object.prototype (a deep merge of
// request data, `__proto__` in JSON) reaches every options object of the process. Options are
// read from the caller's object and its own prototypes, never from Object.prototype itself:
// a polluted `isExpired` would otherwise delete every live tuple, a polluted `maxTuples` cap
// every space. Each test pollutes only around the call it checks, and cleans up at once (vitest
// reads options objects too).
import { afterEach, describe, expect, it } from 'vitest';
import { Space, expirationd } from '../src/index.js';

const proto = Object.prototype as unknown as Record<string, unknown>;
const polluted: string[] = [];
const spaces: Space[] = [];

function pollute(values: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(values)) {
    proto[key] = value;
    polluted.push(key);
  }
}
function clean(): void {
  for (const key of polluted.splice(0)) delete proto[key];
}

afterEach(() => {
  clean();
  for (const name of expirationd.tasks()) expirationd.kill(name);
  for (const s of spaces.splice(0)) if (!s.dropped) s.drop();
});

function space(name: string): Space {
  const s = new Space(name);
  spaces.push(s);
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  for (let i = 1; i <= 20; i++) s.insert([i, 'live', 4e9 + i]);
  return s;
}

describe('options never come from Object.prototype', () => {
  it('a polluted isExpired, processExpired or now does not reach a task: nothing live is deleted', async () => {
    const s = space('pp-task');
    const calls: string[] = [];
    pollute({
      isExpired: () => { calls.push('isExpired'); return true; },
      processExpired: () => { calls.push('processExpired'); },
      now: () => 1e12,
      unit: 'ms',
      fullScanDelay: 1e9,
    });
    const task = expirationd.start('pp-task', s, { field: 3, scanTime: 0.01, keepAlive: true });
    clean();
    await new Promise((resolve) => task.once('fullScan', resolve));
    task.kill();
    expect(s.len()).toBe(20);
    expect(calls).toEqual([]);
  });

  it('a polluted maxTuples, onFull or ttl does not reach a space, nor type or unique an index', () => {
    pollute({ maxTuples: 1, onFull: 'refuse', ttl: { field: 3, now: () => 1e12 }, type: 'HASH', unique: true });
    const s = new Space('pp-space', {});
    spaces.push(s);
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('second', { parts: [[2, 'string']], unique: false });
    clean();
    expect(s.ttl).toBeUndefined();
    expect(s.index.pk.type).toBe('TREE');
    expect(s.index.second.type).toBe('TREE');
    s.insert([1, 'a', 5]);
    s.insert([2, 'a', 6]);
    expect(s.len()).toBe(2);
    expect(s.get(1)).toEqual([1, 'a', 5]);
  });

  it('a polluted field or type does not complete an index part', () => {
    const s = new Space('pp-parts');
    spaces.push(s);
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    pollute({ type: 'string', field: 2 });
    let error: unknown;
    try {
      s.createIndex('second', { parts: [{ field: 2 } as never] });
    } catch (e) {
      error = e;
    }
    clean();
    expect((error as { code?: string }).code).toBe('ER_ILLEGAL_PARAMS');
    expect(s.index.second).toBeUndefined();
  });

  it('a polluted iterator, limit or offset does not reach a read', () => {
    const s = space('pp-read');
    pollute({ iterator: 'GT', limit: 1, offset: 5 });
    const all = s.select(undefined, {});
    const counted = s.index.exp.count(undefined, {});
    clean();
    expect(all).toHaveLength(20);
    expect(counted).toBe(20);
  });

  it('options inherited from a class (its prototype, not Object.prototype) are still read', async () => {
    const s = space('pp-class');
    s.insert([99, 'old', 1]);
    class Options {
      get field(): number {
        return 3;
      }
      get scanTime(): number {
        return 0.01;
      }
      get keepAlive(): boolean {
        return true;
      }
    }
    pollute({ field: 2 });  // the class's field wins over Object.prototype's
    const task = expirationd.start('pp-class', s, new Options() as never);
    clean();
    await new Promise((resolve) => task.once('fullScan', resolve));
    task.kill();
    expect(s.get(99)).toBeUndefined();
    expect(s.len()).toBe(20);
  });
});
