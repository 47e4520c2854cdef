// Type tests of Space<T> and Index: tuples, typed keys, reads and writes. Checked by
// `npm run test:types` (test/types.test.ts); never run. Each @ts-expect-error line must fail to
// compile, or the check fails.
import { Space, type Index, type IndexOptions, type Key, type Tuple } from '../../src/index.js';
import { expectType, type Equal } from './assert.js';

type Session = [id: string, user: string, exp: number];

export function sessions(): void {
  const s = new Space<Session>('sessions', { ttl: { field: 3 } });
  const pk = s.createIndex('primary', { type: 'HASH', parts: [{ field: 1, type: 'string' }] });
  const exp = s.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });

  // Reads return the tuple type.
  expectType<Equal<ReturnType<typeof s.get>, Session | undefined>>();
  const user: string | undefined = s.get('a')?.[1];
  expectType<Equal<typeof user, string | undefined>>();
  expectType<Equal<ReturnType<typeof s.select>, Session[]>>();
  for (const t of s.pairs()) expectType<Equal<typeof t, Session>>();
  expectType<Equal<ReturnType<typeof exp.min>, Session | undefined>>();
  expectType<Equal<ReturnType<typeof s.update>, Session | undefined>>();
  expectType<Equal<ReturnType<typeof s.upsert>, void>>();
  expectType<Equal<ReturnType<typeof s.delete>, Session | undefined>>();
  expectType<Equal<(typeof s.index)['exp'], Index<Session>>>();

  // Writes take it.
  s.insert(['s-1', 'ada', 1800]);
  s.replace(['s-1', 'ada', 3600]);
  s.insertMany([['s-2', 'b', 1], ['s-3', 'c', 2]]);
  s.upsert(['s-4', 'd', 60], [['=', 3, 120]]);
  // @ts-expect-error the user field is a string
  s.insert(['s-1', 42, 1800]);
  // @ts-expect-error a field is missing
  s.replace(['s-1', 'ada']);
  // @ts-expect-error one tuple of the batch has the wrong shape
  s.insertMany([['s-2', 'b', 1], ['s-3', 'c']]);
  // @ts-expect-error upsert's tuple is a whole tuple
  s.upsert(['s-4'], [['+', 3, 1]]);

  // Keys of single-part indexes, from the parts given to createIndex().
  expectType<Equal<Parameters<typeof pk.get>[0], string | [string]>>();
  expectType<Equal<Parameters<typeof exp.get>[0], number | [number]>>();
  pk.get('s-1');
  pk.get(['s-1']);
  pk.update('s-1', [['=', 3, 7200]]);
  exp.select(100, { iterator: 'GE' });
  exp.count([100], { iterator: 'LT' });
  // @ts-expect-error the primary index is over a string field
  pk.get(1);
  // @ts-expect-error the TTL index is over a number field
  exp.select('soon', { iterator: 'GE' });
  // @ts-expect-error one part: a one-element key at most
  exp.select([1, 2]);

  // Update operations keep their own checks.
  // @ts-expect-error '+' takes a number
  s.update('s-1', [['+', 3, 'one']]);
  // @ts-expect-error no '*' operator
  s.update('s-1', [['*', 3, 2]]);
}

// The primary key of the space's own methods is typed when given as the second parameter.
export function primaryKey(): void {
  const s = new Space<[id: number, name: string], number>('users');
  s.createIndex('pk', { parts: [[1, 'unsigned']] });
  s.get(1);
  s.delete(2);
  s.update(3, [['=', 2, 'x']]);
  // @ts-expect-error the primary key is a number
  s.get('1');
  // @ts-expect-error the primary key is a number
  s.delete([1]);
}

// A multi-part TREE index takes a prefix in reads and the full key in get/update; a HASH index
// only the full key. The tuple type narrows a part's value: here, a template literal.
export function multipart(): void {
  const s = new Space<[tenant: `t-${number}`, seq: number, body: string]>('events');
  const pk = s.createIndex('pk', { parts: [[1, 'string'], [2, 'unsigned']] });
  const byBody = s.createIndex('body', { type: 'HASH', parts: [[3, 'string'], [1, 'string']] });
  pk.select('t-1');
  pk.select(['t-1']);
  pk.select(['t-1', 5], { iterator: 'GE' });
  pk.get(['t-1', 5]);
  byBody.get(['hello', 't-1']);
  byBody.select(['hello', 't-1']);
  // @ts-expect-error get() needs the full key
  pk.get(['t-1']);
  // @ts-expect-error the tenant field is `t-${number}`
  pk.select('tenant-1');
  // @ts-expect-error the second part is a number
  pk.select(['t-1', 'five']);
  // @ts-expect-error a HASH index takes only full keys
  byBody.select(['hello']);
}

// Parts that are not literals, and untyped spaces, keep the untyped Key: existing code compiles.
export function untyped(parts: Array<[number, 'string' | 'unsigned']>, key: Key): void {
  const typed = new Space<[string, number]>('typed');
  const dynamic = typed.createIndex('dyn', { parts });
  expectType<Equal<Parameters<typeof dynamic.get>[0], Key>>();

  const options: IndexOptions = { type: 'TREE', parts: [[2, 'string'], { field: 3, type: 'unsigned' }] };
  expectType<Equal<Parameters<ReturnType<typeof typed.createIndex<IndexOptions['parts']>>['get']>[0], Key>>();
  typed.createIndex('opts', options);

  const s = new Space('plain');
  expectType<Equal<typeof s, Space<unknown[]>>>();
  const pk = s.createIndex('pk', { parts: [[1, 'unsigned']] });
  const sec = s.createIndex('sec', { parts: [[2, 'string'], [3, 'unsigned']] });
  expectType<Equal<Parameters<typeof pk.get>[0], Key>>();
  pk.get(key);
  sec.select([key as string]);
  const t: Tuple | undefined = s.get(1);
  s.insert([1, 'any', { shape: true }]);
  const index: Index = pk;
  const anyIndex: Index = s.index.pk;
  const plain: Space = typed;  // a typed space is a Space
  void [t, index, anyIndex, plain];
}

// Capped spaces: onEvict receives the space's tuples.
{
  type Entry = [key: string, value: number, exp: number];
  const cache = new Space<Entry>('capped-typed', {
    ttl: { field: 3 }, maxTuples: 10, onFull: 'evictExpiring',
    onEvict: (tuples) => {
      expectType<Equal<typeof tuples, Entry[]>>();
      // @ts-expect-error the value field is a number
      const v: string = tuples[0]![1];
      void v;
    },
  });
  // @ts-expect-error onFull is 'evictExpiring' or 'refuse'
  new Space<Entry>('capped-bad', { maxTuples: 10, onFull: 'lru' });
  void cache;
}
