// Review: the README's "Typed tuples" claims, as code the type checker judges (tsconfig.check.json
// includes this file: every `@ts-expect-error` line must be an error, every other line must
// compile). The body never runs a task; the test only checks that the file loads.
import { expect, expectTypeOf, test } from 'vitest';
import { Space, expirationd, type Index, type Task, type TaskState, type TaskStats } from '../src/index.js';

type Session = [token: string, user: string, exp: number];
type Tagged = [tag: `t-${number}`, n: number, exp: number];

export function claims(now: number): void {
  const s = new Space<Session>('sessions', { ttl: { field: 3 } });
  const token = s.createIndex('token', { type: 'HASH', parts: [[1, 'string']] });
  expectTypeOf(token).toEqualTypeOf<Index<Session, string | [string]>>();
  s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  s.insert(['tok', 'ada', now + 1800]);
  // @ts-expect-error the user is a string
  s.insert(['tok', 42, 0]);
  expectTypeOf(s.get('tok')?.[1]).toEqualTypeOf<string | undefined>();
  // @ts-expect-error the key is a string
  token.get(1);

  const task = expirationd.start('sessions', s, {
    itIndex: 'exp',
    onExpired: (tuples) => expectTypeOf(tuples).toEqualTypeOf<Session[]>(),
    onFullScanStart: (t) => expectTypeOf(t).toEqualTypeOf<Task<Session>>(),
  });
  expectTypeOf(task).toEqualTypeOf<Task<Session>>();
  task.on('expired', (tuples) => expectTypeOf(tuples).toEqualTypeOf<Session[]>());
  task.on('fullScan', (stats) => expectTypeOf(stats).toEqualTypeOf<TaskStats>());
  // @ts-expect-error no such event
  task.on('expird', () => {});
  // @ts-expect-error no such event
  task.once('expird', () => {});
  // @ts-expect-error no such event
  task.listenerCount('expird');
  expectTypeOf(task.state).toEqualTypeOf<TaskState>();
  expectTypeOf(task.stop()).toEqualTypeOf<Task<Session>>();
  expectTypeOf(task.start()).toEqualTypeOf<Task<Session>>();
  expectTypeOf(expirationd.stats('sessions').expired).toEqualTypeOf<number>();
  expectTypeOf(expirationd.stats()).toEqualTypeOf<Record<string, TaskStats>>();
  expectTypeOf(expirationd.task<Session>('sessions')).toEqualTypeOf<Task<Session>>();
  // A typed task is a Task.
  const untyped: Task = task;
  void untyped;

  // processExpired: typed by the space.
  expirationd.start('p', s, {
    processExpired: (tuples, t) => {
      expectTypeOf(tuples).toEqualTypeOf<Session[]>();
      expectTypeOf(t).toEqualTypeOf<Task<Session>>();
    },
  });
  // isExpired: the tuple is T
  expirationd.start('q', s, { isExpired: (tuple, n) => tuple[2] <= n });
  // @ts-expect-error isExpired's tuple is a Session: field 1 is a string
  expirationd.start('q', s, { isExpired: (tuple: [number, string, number]) => tuple[0] > 0 });

  // Keys narrowed by the tuple's field; TREE reads take prefixes, HASH only full keys.
  const tagged = new Space<Tagged>('tagged');
  const pk = tagged.createIndex('pk', { parts: [[1, 'string'], [2, 'unsigned']] });
  pk.select('t-1');
  pk.select(['t-1']);
  pk.select(['t-1', 5]);
  // @ts-expect-error the tag is `t-${number}`
  pk.select('x-1');
  expectTypeOf(pk.get(['t-1', 5])).toEqualTypeOf<Tagged | undefined>();
  const byTag = tagged.createIndex('byTag', { type: 'HASH', parts: [[1, 'string'], [2, 'unsigned']] });
  byTag.get(['t-1', 5]);
  // @ts-expect-error a HASH index takes only full keys
  byTag.select(['t-1']);

  // An untyped space compiles as before, with keys built at run time.
  const any = new Space('any');
  const key = Math.random() < 0.5 ? 'a' : ['a', 1];
  any.get(key);
  any.insert([1, 'x', { nested: true }]);
}

test('the type claims file loads (the checks are tsc -p tsconfig.check.json)', () => {
  expect(typeof claims).toBe('function');
});
