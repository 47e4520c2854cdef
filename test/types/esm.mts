// Type tests of the ESM entry: its class aliases carry the type parameters. Checked by
// `npm run test:types`; never run.
import { Space, expirationd, type Index, type Task } from '../../src/index.mjs';
import { expectType, type Equal } from './assert.js';

type Token = [token: string, owner: string, exp: number];

export function esm(): void {
  const s: Space<Token> = new Space<Token>('esm');
  const pk: Index<Token, string | [string]> = s.createIndex('pk', { parts: [[1, 'string']] });
  expectType<Equal<ReturnType<typeof s.get>, Token | undefined>>();
  const task: Task<Token> = expirationd.start('esm', s, { field: 3 });
  task.on('expired', (tuples) => expectType<Equal<typeof tuples, Token[]>>());
  // @ts-expect-error no event 'expird'
  task.on('expird', () => {});
  // @ts-expect-error the key is a string
  pk.get(1);
  const plain: Space = new Space('plain');
  void plain;
}
