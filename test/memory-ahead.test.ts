// memory() counts what is committed, and memory held ahead of need is committed gradually (issue 12):
// the HASH index's next table is address space until the load nears 80%, then its 2 MiB pages are
// asked for in proportion to the inserts; while the table migrates, the old table's moved pages
// are given back. Loading 700k keys in batches of 1,000, memory().indexes therefore never rises
// by more than one 2 MiB page per batch (the whole next table at once did: 4-6 MiB here), and it
// falls by exactly one page at a time during a migration (not only by a whole table at its end).
import { describe, expect, test } from 'vitest';
import { Space, type Tuple } from '../src/index.js';
import { PER_TUPLE_MALLOC } from './support/sanitizer.js';

const PAGE = 2 * 1024 * 1024;
// The sanitizer build (CAPPED_EXPIRATIOND_ADDON, CE_TUPLE_MALLOC) and non-Linux builds take every
// table from calloc: no pages to ask for or give back, so only the load itself is checked there.
const PAGED = process.platform === 'linux' && !PER_TUPLE_MALLOC;
const keyOf = (i: number): number => Math.imul(i, 2654435761) >>> 0;

describe('memory held ahead', () => {
  test('a growing HASH index commits its next table gradually and gives back the moved pages', () => {
    const space = new Space('memory-ahead');
    space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
    let prev = space.memory().indexes;
    let maxRise = 0;
    let pageDrops = 0;
    for (let b = 0; b < 700; b++) {
      const batch: Tuple[] = [];
      for (let i = b * 1000; i < (b + 1) * 1000; i++) batch.push([keyOf(i), i]);
      space.insertMany(batch);
      const now = space.memory().indexes;
      if (now - prev > maxRise) maxRise = now - prev;
      if (prev - now === PAGE) pageDrops++;
      prev = now;
    }
    expect(space.len()).toBe(700_000);
    if (PAGED) {
      expect(maxRise).toBeLessThanOrEqual(PAGE);
      expect(pageDrops).toBeGreaterThanOrEqual(1);
    }
    space.drop();
  });
});
