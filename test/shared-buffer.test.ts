// A Buffer over a SharedArrayBuffer, mutated by another thread while the addon reads it, never
// leaves a stored tuple that is not valid MessagePack: the addon must validate the bytes it stores
// (its own copy), not the caller's bytes, which may change between the check and the copy.
//
// A worker (test/fixtures/sab-writer.cjs) flips bytes of the tuples without pause between their
// valid value and one that makes the tuple invalid: an array header claiming one more element, a
// str32 length one past the end, a byte that is not UTF-8 in the middle of the string, and a
// last field (an indexed unsigned) turned into a string header running past the end. Meanwhile
// this thread inserts large tuples (so that validating one takes long) through the raw handle,
// which passes the bytes straight to the addon: insert(), insert(replace, start, end) and
// insertMany(). Every insert must either store exactly the valid tuple or throw a CappedError
// with a code, and change nothing; afterwards every stored tuple is read back byte by byte,
// through select and get, decoded by msgpackr, iterated with pairs() on two indexes, and the
// space passes checkIntegrity().
//
// Seeded (mulberry32 from bench/lib/random.ts): SAB_SEED=<seed> replays the schedule (the
// writer's timing still differs from run to run; what is asserted holds for any).
// SAB_INSERTS=<n> sets the inserts (default 6000, 1500 under test:asan).
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import './support/no-concurrent-jit.cjs';  // a Node 20 deadlock at worker exit (nodejs/node#54918)
import { Unpackr } from 'msgpackr';
import { describe, expect, test } from 'vitest';
import { mulberry32 } from '../bench/lib/random.js';
import { CappedError, Space } from '../src/index.js';
import { Iter, type NativeResult } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';

const SANITIZED = process.env.CAPPED_EXPIRATIOND_ADDON !== undefined;
const SEED = process.env.SAB_SEED === undefined ? 909 : Number(process.env.SAB_SEED);
const INSERTS = process.env.SAB_INSERTS === undefined ? (SANITIZED ? 1500 : 6000) : Number(process.env.SAB_INSERTS);
const PER_ROUND = 500;  // inserts into one space, which is then checked and dropped

// A tuple is [id, payload, tag]: 0x93, 0xce + uint32 id, 0xdb + uint32 length + ASCII payload,
// a positive fixint tag. Payload lengths are multiples of 256 (the length's low byte is 0) and
// of 8 (a tuple's native block, 4 + size, then ends exactly at the tuple's last byte).
const BIG = 256 * 1024;   // the payload of a single insert
const SMALL = 32 * 1024;  // the payload of each tuple of an insertMany batch
const BATCH = 8;
const PAD = 64;           // the single tuple sits at PAD in a larger Buffer, for start/end
const TAG_SINGLE = 9;
const sizeOf = (payload: number) => 12 + payload;
const letter = (i: number) => 0x61 + (i % 26);

interface Layout {
  payload: number;
  tag: number;
}
const SINGLE: Layout = { payload: BIG, tag: TAG_SINGLE };
const SLOTS: Layout[] = Array.from({ length: BATCH }, (_, j) => ({ payload: SMALL, tag: j + 1 }));

function writeTuple(bytes: Uint8Array, at: number, layout: Layout): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  bytes[at] = 0x93;
  bytes[at + 1] = 0xce;
  view.setUint32(at + 2, 0);
  bytes[at + 6] = 0xdb;
  view.setUint32(at + 7, layout.payload);
  for (let i = 0; i < layout.payload; i++) bytes[at + 11 + i] = letter(i);
  bytes[at + 11 + layout.payload] = layout.tag;
}

/** The four bytes the writer flips in a tuple at `at`: [offset, valid, invalid]. */
function sitesOf(at: number, layout: Layout): Array<[number, number, number]> {
  const middle = at + 11 + layout.payload / 2;
  return [
    [at, 0x93, 0x94],                                 // one more element than there is
    [at + 10, 0x00, 0x01],                            // the string runs one byte past the end
    [middle, letter(layout.payload / 2), 0xff],       // not UTF-8
    [at + 11 + layout.payload, layout.tag, 0xa1],     // the tag becomes a string past the end
  ];
}

const payloadText = new Map<number, string>();
/** Whether a decoded tuple is [id, payload, tag] of this layout. */
function same(tuple: unknown[], id: number, layout: Layout): boolean {
  let text = payloadText.get(layout.payload);
  if (text === undefined) {
    text = Buffer.from(Array.from({ length: layout.payload }, (_, i) => letter(i))).toString('latin1');
    payloadText.set(layout.payload, text);
  }
  return tuple.length === 3 && tuple[0] === id && tuple[1] === text && tuple[2] === layout.tag;
}

/** Why `bytes` is not exactly the valid tuple `id` of this layout, or '' when it is. */
function mismatch(bytes: Buffer, id: number, layout: Layout, template: Buffer): string {
  if (bytes.length !== sizeOf(layout.payload)) return `${bytes.length} bytes instead of ${sizeOf(layout.payload)}`;
  if (bytes[0] !== 0x93 || bytes[1] !== 0xce || bytes.readUInt32BE(2) !== id) {
    return `head ${bytes.subarray(0, 6).toString('hex')}`;
  }
  if (!bytes.subarray(6).equals(template.subarray(6))) {
    let i = 6;
    while (bytes[i] === template[i]) i++;
    return `byte ${i} is 0x${bytes[i].toString(16)} instead of 0x${template[i].toString(16)}`;
  }
  return '';
}

const unpackr = new Unpackr({ useRecords: false });

describe('a tuple Buffer over a SharedArrayBuffer that another thread mutates during inserts', () => {
  test(`${INSERTS} inserts of 32-256 KiB tuples through insert(), insert(replace, start, end) and insertMany(): every stored tuple is valid`, async () => {
    const next = mulberry32(SEED);
    // Shared bytes: the single tuple at PAD (with PAD bytes of slack after it), and a batch.
    const single = new SharedArrayBuffer(PAD + sizeOf(BIG) + PAD);
    const singleBytes = new Uint8Array(single);
    writeTuple(singleBytes, PAD, SINGLE);
    const slotAt = SLOTS.map((_, j) => 3 + j * sizeOf(SMALL));
    const batch = new SharedArrayBuffer(3 + BATCH * sizeOf(SMALL));
    const batchBytes = new Uint8Array(batch);
    batchBytes[0] = 0xdc;
    batchBytes[1] = 0;
    batchBytes[2] = BATCH;
    SLOTS.forEach((layout, j) => writeTuple(batchBytes, slotAt[j], layout));
    // Valid copies, to compare stored tuples with (their id bytes are compared separately).
    const singleTemplate = Buffer.from(single.slice(PAD, PAD + sizeOf(BIG)));
    const slotTemplate = SLOTS.map((_, j) => Buffer.from(batch.slice(slotAt[j], slotAt[j] + sizeOf(SMALL))));
    const templateOf = (layout: Layout) => (layout === SINGLE ? singleTemplate : slotTemplate[layout.tag - 1]);

    // The writer flips all four bytes of the single tuple, the head of the batch's first tuple,
    // the middle of its middle one and the tag of its last one.
    const sites: Array<[number, number, number, number]> = [
      ...sitesOf(PAD, SINGLE).map(([at, ok, bad]) => [0, at, ok, bad] as [number, number, number, number]),
      [1, ...sitesOf(slotAt[0], SLOTS[0])[0]],
      [1, ...sitesOf(slotAt[BATCH / 2], SLOTS[BATCH / 2])[2]],
      [1, ...sitesOf(slotAt[BATCH - 1], SLOTS[BATCH - 1])[3]],
    ];
    // Half-periods from a few nanoseconds to about 100 us, log-uniform.
    const spins = Array.from({ length: 257 }, () => Math.floor(10 * Math.pow(2e4, next())));
    const control = new SharedArrayBuffer(8);
    const ctl = new Int32Array(control);
    const writer = new Worker(path.join(__dirname, 'fixtures', 'sab-writer.cjs'), {
      workerData: { buffers: [single, batch], sites, spins, control },
    });
    const writerExit = new Promise<number>((resolve) => writer.once('exit', resolve));
    await new Promise((resolve, reject) => {
      writer.once('message', resolve);
      writer.once('error', reject);
    });

    const scratch = Buffer.allocUnsafeSlow(64 * 1024);
    const bytesOf = (result: NativeResult | number | Buffer): Buffer | null =>
      result === null ? null : typeof result === 'number' ? Buffer.from(scratch.subarray(0, result)) : result;
    const stats = { inserts: 0, stored: 0, refused: 0, invalid: 0, codes: {} as Record<string, number> };
    const summary = () => `seed ${SEED}; so far ${JSON.stringify(stats)}`;

    try {
      for (let round = 0; stats.inserts < INSERTS; round++) {
        const space = new Space(`shared-${round}`, { maxTupleSize: 1024 * 1024 });
        space.createIndex('pk', { type: 'HASH', parts: [[1, 'unsigned']] });
        space.createIndex('tree', { parts: [[1, 'unsigned']] });
        space.createIndex('tag', { unique: false, parts: [[3, 'unsigned']] });
        const h = handleOf(space);
        const stored = new Map<number, Layout>();
        const problems: string[] = [];
        const problem = (text: string) => {
          if (problems.length < 12) problems.push(text);
        };
        let id = round * 1_000_000;

        for (let k = 0; k < PER_ROUND && stats.inserts < INSERTS; k++, stats.inserts++) {
          const r = next();
          const ids: number[] = [];
          const layouts: Layout[] = [];
          let call: () => void;
          let what: string;
          if (r < 0.6) {
            // A new id, or (with replace) one already stored.
            const replace = r >= 0.4;
            const existing = [...stored.keys()];
            const target = replace && existing.length > 0 && next() < 0.5 ? existing[Math.floor(next() * existing.length)] : ++id;
            singleBytes[PAD + 2] = target >>> 24;
            singleBytes[PAD + 3] = (target >>> 16) & 0xff;
            singleBytes[PAD + 4] = (target >>> 8) & 0xff;
            singleBytes[PAD + 5] = target & 0xff;
            ids.push(target);
            layouts.push(SINGLE);
            if (replace) {
              what = `insert(whole, replace, ${PAD}, ${PAD + sizeOf(BIG)}) of ${target}`;
              call = () => h.insert(Buffer.from(single), true, PAD, PAD + sizeOf(BIG));
            } else {
              what = `insert(tuple) of ${target}`;
              call = () => h.insert(Buffer.from(single, PAD, sizeOf(BIG)), false);
            }
          } else {
            for (let j = 0; j < BATCH; j++) {
              ids.push(++id);
              layouts.push(SLOTS[j]);
              new DataView(batch).setUint32(slotAt[j] + 2, id);
            }
            what = `insertMany() of ${ids[0]}..${ids[BATCH - 1]}`;
            call = () => h.insertMany(Buffer.from(batch));
          }
          const before = ids.map((i) => stored.has(i));
          let ok = true;
          try {
            call();
          } catch (error) {
            ok = false;
            const code = (error as CappedError).code;
            if (!(error instanceof CappedError) || typeof code !== 'string' || !code.startsWith('ER_')) {
              problem(`${what} threw ${String(error)} (code ${String(code)}), not a CappedError with a code`);
            }
            stats.refused++;
            stats.codes[code] = (stats.codes[code] ?? 0) + 1;
          }
          if (ok) stats.stored++;
          // Each id now holds its valid tuple if the insert succeeded or it was stored before,
          // and nothing otherwise.
          ids.forEach((i, j) => {
            const bytes = bytesOf(h.get(0, i, scratch));
            if (ok || before[j]) {
              const layout = ok ? layouts[j] : (stored.get(i) as Layout);
              const why = bytes === null ? 'absent' : mismatch(bytes, i, layout, templateOf(layout));
              if (why !== '') {
                stats.invalid++;
                problem(`${what} ${ok ? 'succeeded' : 'failed'}, and tuple ${i} is invalid: ${why}`);
              }
              stored.set(i, layout);
            } else if (bytes !== null) {
              problem(`${what} failed, yet tuple ${i} is stored`);
            }
          });
        }

        // Everything stored, read back every way.
        if (h.len() !== stored.size) problem(`len() is ${h.len()}, ${stored.size} tuples were stored`);
        const all = bytesOf(h.select(0, undefined, Iter.ALL, Infinity, 0, scratch)) ?? Buffer.alloc(0);
        let seen = 0;
        for (let at = 0; at < all.length; seen++) {
          const layout = all[at + 1] === 0xce ? stored.get(all.readUInt32BE(at + 2)) : undefined;
          if (layout === undefined) {
            problem(`select(): an unknown tuple at byte ${at}: ${all.subarray(at, at + 12).toString('hex')}`);
            break;
          }
          const bytes = all.subarray(at, at + sizeOf(layout.payload));
          const why = mismatch(bytes, bytes.readUInt32BE(2), layout, templateOf(layout));
          if (why !== '') problem(`select(): tuple ${bytes.readUInt32BE(2)} is invalid: ${why}`);
          at += sizeOf(layout.payload);
        }
        if (seen !== stored.size) problem(`select() returned ${seen} tuples, ${stored.size} were stored`);
        for (const [i, layout] of stored) {
          const bytes = bytesOf(h.get(0, i, scratch));
          try {
            if (!same(unpackr.unpack(bytes as Buffer) as unknown[], i, layout)) problem(`tuple ${i} decodes to another tuple`);
          } catch (error) {
            problem(`tuple ${i} does not decode: ${(error as Error).message.slice(0, 200)}`);
          }
        }
        for (const [name, iterator] of [['pk', space.pairs()], ['tag', space.index.tag.pairs()]] as const) {
          let count = 0;
          try {
            for (const tuple of iterator) {
              const layout = stored.get(tuple[0] as number);
              if (layout === undefined) problem(`${name}.pairs(): an unknown tuple ${String(tuple[0])}`);
              else if (!same(tuple, tuple[0] as number, layout)) problem(`${name}.pairs(): tuple ${String(tuple[0])} is another tuple`);
              count++;
            }
          } catch (error) {
            problem(`${name}.pairs() failed after ${count} tuples: ${(error as Error).message.slice(0, 200)}`);
          }
          if (count !== stored.size) problem(`${name}.pairs() gave ${count} tuples, ${stored.size} were stored`);
        }
        try {
          space.checkIntegrity();
        } catch (error) {
          problem(`checkIntegrity(): ${(error as Error).message}`);
        }
        space.drop();
        expect(problems, `round ${round}: ${summary()}`).toEqual([]);
      }
    } finally {
      Atomics.store(ctl, 0, 1);
      await writerExit;
    }

    // The writer really raced the inserts: some were refused, some went through.
    expect(Atomics.load(ctl, 1), summary()).toBeGreaterThan(0);
    expect(stats.refused, summary()).toBeGreaterThan(0);
    expect(stats.stored, summary()).toBeGreaterThan(0);
  }, 120_000);
});
