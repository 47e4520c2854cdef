// Review (adversarial): every callback × every thing a careless user or an attacker does in it,
// the first time it runs (throw, return a rejecting promise, stop, stop+start, kill, restart,
// kill+start, drop the space, wake, write to the space, nested atomic that throws, expirationd.start
// of the same name). Whatever happens: no crash, no unhandled rejection, nothing live deleted,
// nothing deleted twice; a killed task holds no timer, a stopped one holds none either and finishes
// the job after start(), a running one finishes it.
import { describe, expect, test, vi } from 'vitest';
import { Space, atomic, expirationd, type Task, type TaskOptions, type Tuple } from '../src/index.js';
import { useTaskTimers } from './support/task-timers.js';
import { watchUnhandledRejections } from './support/rejections.js';

useTaskTimers();

const NOW = 1000;
const EXPIRED = 23;
const LIVE = 3;

watchUnhandledRejections();

const flush = async () => {
  for (let i = 0; i < 8; i++) await Promise.resolve();
};

type Where = 'now' | 'isExpired' | 'onExpired' | 'async onExpired' | 'processExpired' | 'onFullScanStart' |
  'onFullScanSuccess' | 'onFullScanComplete' | "'expired'" | "'fullScan'";
const wheres: Where[] = ['now', 'isExpired', 'onExpired', 'async onExpired', 'processExpired', 'onFullScanStart',
  'onFullScanSuccess', 'onFullScanComplete', "'expired'", "'fullScan'"];

type Action = 'throw' | 'reject' | 'stop' | 'stop+start' | 'kill' | 'restart' | 'kill+start' | 'drop' | 'wake' |
  'write' | 'nested atomic' | 'start same name';
const actions: Action[] = ['throw', 'reject', 'stop', 'stop+start', 'kill', 'restart', 'kill+start', 'drop', 'wake',
  'write', 'nested atomic', 'start same name'];

const cases = wheres.flatMap((where) => actions.map((action) => [where, action] as const));

describe.each(['TREE full scan', 'early break'] as const)('%s', (shape) => {
  test.each(cases)('%s: %s', async (where, action) => {
    const space = new Space('m');
    space.createIndex('primary', { parts: [[1, 'unsigned']] });
    space.createIndex('exp', { unique: false, parts: [[3, 'number']] });
    for (let id = 0; id < EXPIRED; id++) space.insert([id, 'e', NOW - 1 - id]);
    for (let id = EXPIRED; id < EXPIRED + LIVE; id++) space.insert([id, 'l', NOW + 100]);
    const other = new Space('other');
    other.createIndex('primary', { parts: [[1, 'unsigned']] });
    const problems: string[] = [];
    const gone = new Set<number>();
    let task: Task | undefined;
    let current: Task | undefined;
    let fired = false;
    let next = 1000;

    // The action, the first time the callback runs; returns what the callback should return.
    const act = (): unknown => {
      if (fired) return undefined;
      fired = true;
      const t = current as Task;
      switch (action) {
        case 'throw': throw new Error('boom');
        case 'reject': return Promise.reject(new Error('rejected'));
        case 'stop': t.stop(); break;
        case 'stop+start': t.stop(); t.start(); break;
        case 'kill': t.kill(); break;
        case 'restart': t.restart(); break;
        case 'kill+start': t.kill(); t.start(); break;
        case 'drop': space.drop(); break;
        case 'wake': t.wake(); break;
        case 'write': space.insert([next++, 'w', NOW + 500]); other.insert([next++]); break;
        case 'nested atomic':
          try {
            atomic(() => {
              other.insert([next++]);
              atomic(() => space.insert([next++, 'n', NOW - 5]));
              throw new Error('inner');
            });
          } catch { /* undone */ }
          break;
        case 'start same name': current = begin(); break;
      }
      return undefined;
    };

    const record = (tuples: Tuple[]) => {
      for (const t of tuples) {
        const id = t[0] as number;
        if ((t[2] as number) > NOW) problems.push(`live ${id} deleted`);
        if (gone.has(id)) problems.push(`${id} deleted twice`);
        gone.add(id);
      }
    };

    function begin(): Task {
      const options: TaskOptions = {
        field: 3,
        scanSize: 4,
        now: () => {
          // A promise from now() (the 'reject' action) is the task's to refuse and handle.
          const r = where === 'now' ? act() : undefined;
          return (r ?? NOW) as number;
        },
        ...(shape === 'early break' ? { itIndex: 'exp' } : {}),
        onFullScanStart: () => (where === 'onFullScanStart' ? act() : undefined),
        onFullScanSuccess: () => (where === 'onFullScanSuccess' ? act() : undefined),
        onFullScanComplete: () => (where === 'onFullScanComplete' ? act() : undefined),
      };
      if (where === 'isExpired') {
        options.isExpired = (t, now) => {
          const r = act();
          return r === undefined ? (t[2] as number) <= now : r as boolean;
        };
      }
      if (where === 'onExpired') options.onExpired = () => act();
      if (where === 'async onExpired') {
        options.onExpired = (tuples) => {
          const r = act();
          return r ?? new Promise<void>((resolve) => setTimeout(resolve, 1)).then(() => tuples.length);
        };
      }
      if (where === 'processExpired') {
        options.processExpired = (tuples) => {
          const r = act();
          for (const t of tuples) if (!space.dropped) space.delete(t[0] as number);
          return r;  // a rejecting promise: the call is rolled back, and its rejection handled
        };
      }
      const t = expirationd.start('m', space, options);
      t.on('expired', record);  // after the commit (with processExpired: the tuples it deleted)
      // EventEmitter ignores what a listener returns: its rejection is the listener's own to handle.
      const listen = () => (act() as Promise<unknown> | undefined)?.catch(() => {});
      if (where === "'expired'") t.on('expired', listen);
      if (where === "'fullScan'") t.on('fullScan', listen);
      t.on('error', () => {});
      current = t;
      return t;
    }
    task = begin();

    for (let i = 0; i < 300 && vi.getTimerCount() > 0; i++) {
      vi.advanceTimersToNextTimer();
      await flush();
    }
    await flush();
    expect(problems).toEqual([]);
    const t = current as Task;
    if (space.dropped) {
      expect(t.state).toBe('killed');
      expect(task.state).toBe('killed');
      expect(vi.getTimerCount()).toBe(0);
      expect(expirationd.tasks()).toEqual([]);
      return;
    }
    if (t.state === 'killed') {
      expect(vi.getTimerCount()).toBe(0);
      expect(expirationd.tasks()).toEqual([]);
      t.start();
    }
    if (t.state === 'stopped') {
      expect(vi.getTimerCount()).toBe(0);
      expect(expirationd.task('m')).toBe(t);
      t.start();
    }
    expect(t.state).toBe('running');
    for (let i = 0; i < 300 && [...space.pairs()].some((x) => (x[2] as number) <= NOW); i++) {
      vi.advanceTimersToNextTimer();
      await flush();
    }
    expect(problems).toEqual([]);
    const left = space.select().filter((x) => (x[2] as number) <= NOW).map((x) => x[0]);
    // A poison tuple (throw/reject on its first call) is skipped for one pass only.
    expect(left).toEqual([]);
    expect(space.select().filter((x) => (x[2] as number) > NOW).length).toBeGreaterThanOrEqual(LIVE);
    // Only one task of that name, and it is the one running.
    expect(expirationd.tasks()).toEqual(['m']);
    if (task !== t) expect(task.state).toBe('killed');
  });
});
