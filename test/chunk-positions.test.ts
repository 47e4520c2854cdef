// deleteVisited() takes positions among the tuples the last scanChunk() visited: one at or past
// their count is refused, exactly, with nothing deleted. A bound one too loose (found by mutation
// testing, issue 14: scripts/mutants/native.json, pr-position-bound) read past the visited
// tuples' offsets.
import { expect, test } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import { Iter } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';

function scanned(n: number, visit: number) {
  const space = new Space('positions');
  space.createIndex('primary', { type: 'TREE', parts: [{ field: 1, type: 'unsigned' }] });
  for (let id = 0; id < n; id++) space.insert([id, `v${id}`]);
  const h = handleOf(space);
  const cursor = h.cursor(0, undefined, Iter.ALL, true);
  const out = new Float64Array(5);
  h.scanChunk(cursor, visit, out, Buffer.alloc(64 * 1024));
  return { space, h, cursor, out };
}

test.each([[10, 4], [10, 10], [3, 16]])('after visiting min(%i, %i) tuples, each visited position deletes its tuple and the next one is refused', (n, visit) => {
  const visited = Math.min(n, visit);
  for (const bad of [visited, visited + 1, 1000]) {
    const { space, h, cursor, out } = scanned(n, visit);
    let error: unknown;
    try {
      h.deleteVisited(cursor, new Uint32Array([0, bad]), false, out, Buffer.alloc(64 * 1024));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CappedError);
    expect(error).toMatchObject({ code: 'ER_ILLEGAL_PARAMS', message: `delete_visited(): position ${bad} was not visited` });
    expect(space.len()).toBe(n);
  }
  const { space, h, cursor, out } = scanned(n, visit);
  h.deleteVisited(cursor, new Uint32Array(Array.from({ length: visited }, (_, i) => i)), false, out, Buffer.alloc(64 * 1024));
  expect(space.len()).toBe(n - visited);
  expect(space.select().map((t) => t[0])).toEqual(Array.from({ length: n - visited }, (_, i) => visited + i));
});
