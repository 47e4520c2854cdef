// Type tests of expirationd over typed spaces: options' callbacks, Task<T>, its events, and the
// stats() overloads. Checked by `npm run test:types`; never run.
import { Space, expirationd, type Task, type TaskOptions, type TaskStats } from '../../src/index.js';
import { expectType, type Equal } from './assert.js';

type Token = [token: string, owner: string, exp: number];

export function typedTask(): void {
  const s = new Space<Token>('tokens');
  s.createIndex('pk', { type: 'HASH', parts: [[1, 'string']] });
  s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });

  const task = expirationd.start('tokens', s, {
    itIndex: 'exp',
    field: 3,
    isExpired: (tuple, now) => {
      expectType<Equal<typeof tuple, Token>>();
      return tuple[2] <= now;
    },
    onExpired: (tuples) => {
      expectType<Equal<typeof tuples, Token[]>>();
      const owners: string[] = tuples.map((t) => t[1]);
      void owners;
    },
    onFullScanComplete: (t) => expectType<Equal<typeof t, Task<Token>>>(),
  });
  expectType<Equal<typeof task, Task<Token>>>();
  const plain: Task = task;  // a typed task is a Task
  void plain;
  expectType<Equal<typeof task.space, Space<Token, any>>>();

  // Events: their names and payloads.
  task.on('expired', (tuples) => expectType<Equal<typeof tuples, Token[]>>());
  task.once('fullScan', (stats) => expectType<Equal<typeof stats, TaskStats>>());
  task.on('error', (error: Error) => void error.message);
  task.off('expired', () => {});
  // @ts-expect-error no event 'expird'
  task.on('expird', () => {});
  // @ts-expect-error no event 'expird'
  task.once('expird', () => {});
  // @ts-expect-error 'expired' gives tuples, not stats
  task.on('expired', (stats: TaskStats) => void stats);
  // @ts-expect-error 'fullScan' gives stats
  task.on('fullScan', (tuples: Token[]) => void tuples);

  // The callbacks see the space's tuple type: not another one.
  expirationd.start('tokens', s, {
    field: 3,
    // @ts-expect-error the owner is a string
    onExpired: (tuples) => tuples.map((t) => t[1] + 1).map((n: number) => n),
  });
  // @ts-expect-error isExpired takes Tokens (the error is reported at the call: start() has overloads)
  expirationd.start('tokens', s, { isExpired: (tuple: [number], now: number) => tuple[0] < now });
  const options: TaskOptions<Token> = { field: 3, onExpired: (tuples) => void tuples[0][0].toUpperCase() };
  expirationd.start('tokens', s, options);
  // The positional form.
  expectType<Equal<ReturnType<typeof expirationd.start<Token>>, Task<Token>>>();
  const positional = expirationd.start('tokens', s, 'pk', 'exp', 3, 1024, 3600);
  expectType<Equal<typeof positional, Task<Token>>>();
}

export function stats(): void {
  // One task's stats, or every task's by name.
  const one = expirationd.stats('tokens');
  expectType<Equal<typeof one, TaskStats>>();
  const expired: number = expirationd.stats('tokens').expired;
  const all = expirationd.stats();
  expectType<Equal<typeof all, Record<string, TaskStats>>>();
  // @ts-expect-error stats() is a record of stats, not one
  void expirationd.stats().expired.toFixed();
  const maybe: string | undefined = undefined as string | undefined;
  const either = expirationd.stats(maybe);
  expectType<Equal<typeof either, TaskStats | Record<string, TaskStats>>>();
  void expired;

  // Look-ups: untyped unless told.
  expectType<Equal<ReturnType<typeof expirationd.task>, Task>>();
  expectType<Equal<ReturnType<typeof expirationd.task<Token>>, Task<Token>>>();
}

// An untyped space and task, as before the type parameters: anything goes.
export function untypedTask(): void {
  const s = new Space('plain');
  const task: Task = expirationd.start('plain', s, {
    isExpired: (t) => (t[2] as number) < 5,
    onExpired: (tuples) => void tuples.length,
  });
  task.on('expired', (tuples) => expectType<Equal<typeof tuples, unknown[][]>>());
  task.on('error', (e: { code?: string }) => void e.code);
  // @ts-expect-error misspelled events fail on untyped tasks too
  task.on('fullscan', () => {});
}
