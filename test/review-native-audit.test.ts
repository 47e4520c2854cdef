// Adversarial review of the native engine by reading it (native/engine/*.cc, *.h, native/napi/*.cc):
// undefined behaviour, unchecked lengths, size arithmetic, cursors and tuple pointers used after
// the index changed (delete, re-insert, truncate, rollback, drop, hash growth), MessagePack that
// lies about its lengths or nests too deep, and statements left half-applied when a check throws
// halfway. Each suspicion is attacked through the public API (Space, update, upsert) or, where
// only the binding reaches it, through the raw handle (handleOf). Attacks that could crash the
// process run in a child process, so that a crash fails an assertion instead of the runner.
//
// What held stays here as a regression guard. Tests marked `// Fixed:` failed on the reviewed
// code (each says what was wrong) and pass since their fixes.
//
// Run it under the sanitizers too: bash scripts/test-asan.sh test/review-native-audit.test.ts
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { pack, unpack, unpackMultiple } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { CappedError, Space } from '../src/index.js';
import type { NativeCursor, NativeSpace } from '../src/native/loader.js';
import { handleOf } from '../src/space/space.js';
import { codeOf } from './support/errors.js';

const ROOT = path.resolve(__dirname, '..');
const DIST = JSON.stringify(path.join(ROOT, 'dist', 'index.js'));

const EQ = 0;
const ALL = 2;
const GT = 4;

let seq = 0;
const uniq = (base: string): string => `audit-${base}-${++seq}`;

const spaces: Space<any, any>[] = [];
afterEach(() => {
  for (const s of spaces.splice(0)) if (!s.dropped) s.drop();
});

function track<S extends Space<any, any>>(s: S): S {
  spaces.push(s);
  return s;
}

/** A space [id unsigned, ...] with a TREE (or HASH) primary key on field 1. */
function plain(kind: 'TREE' | 'HASH' = 'TREE', options: Record<string, unknown> = {}): Space {
  const s = track(new Space(uniq('plain'), options));
  s.createIndex('pk', { type: kind, parts: [[1, 'unsigned']] });
  return s;
}

/** Runs `body` in a fresh node against dist/ (for what might crash, hang or eat memory). */
function child(body: string, timeout = 60_000): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const script = `'use strict'; const R = require(${DIST});\n${body}`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout, env: process.env });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const scratch = Buffer.alloc(64 * 1024);

/** What a native call that emits one tuple returned, decoded (null when none). */
function tupleOf(r: number | Buffer | null | undefined): unknown[] | null {
  if (r === null || r === undefined) return null;
  const bytes = typeof r === 'number' ? scratch.subarray(0, r) : r;
  return unpack(bytes) as unknown[];
}

/** The tuples a cursor walks from where it stands to its end. */
function drain(c: NativeCursor): unknown[][] {
  const out: unknown[][] = [];
  for (let t = tupleOf(c.next(scratch)); t !== null; t = tupleOf(c.next(scratch))) out.push(t);
  return out;
}

/** The tuples of a native call that emits several back to back (a chunk's deleted or visited ones). */
function manyOf(r: number | Buffer | undefined): unknown[][] {
  if (r === undefined || r === 0) return [];
  const bytes = typeof r === 'number' ? scratch.subarray(0, r) : r;
  return unpackMultiple(Buffer.from(bytes)) as unknown[][];
}

/** The space's native structure is sound and it still answers. */
function sound(s: Space): void {
  expect(handleOf(s).checkIntegrity()).toBe('');
  expect(s.select(undefined, { limit: 1 }).length).toBeLessThanOrEqual(1);
}

// ---------------------------------------------------------------------------------------------
// 1. update.cc: the splice's scratch store keeps every intermediate version of the field
// ---------------------------------------------------------------------------------------------
describe('update.cc: memory one update may take', () => {
  // Fixed: one update() of a 100 KB string field with 4000 one-byte splices (32 KB of operations)
  // peaked at ~390 MB of RSS and took ~0.6 s; at the default maxTupleSize (1 MiB) it asked for
  // ~4 GB (under `ulimit -v 3000000` it failed with ER_MEMORY_ISSUE after 1 GB of RSS; in a
  // container with a memory limit the OOM killer takes the process). UpdateOps::apply's ':' case
  // appended each spliced version of the field to its store and never reused the space of the
  // version it replaced (ops x field bytes), and each op also copied the field into a temporary
  // string. Now a replaced value that was the last thing stored is dropped in place, and the
  // store is compacted once it holds enough unused bytes (UpdateOps::replace_owned).
  it('4000 splices of a 100 KB field take memory in proportion to the tuple, not to ops x field', () => {
    const r = child(`
      const s = new R.Space('splice', { maxTupleSize: 1024 * 1024 });
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.insert([1, 'x'.repeat(100000)]);
      const ops = [];
      for (let i = 0; i < 4000; i++) ops.push([':', 2, 1, 1, 'y']);
      const before = process.resourceUsage().maxRSS;
      const t = s.update(1, ops);
      const grew = (process.resourceUsage().maxRSS - before) / 1024;
      console.log(JSON.stringify({ grew, len: t[1].length, head: t[1].slice(0, 2) }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { grew: number; len: number; head: string };
    expect(out.len).toBe(100000);
    expect(out.head).toBe('yx');
    expect(out.grew, `peak RSS grew by ${out.grew.toFixed(0)} MB for one update of a 100 KB tuple`).toBeLessThan(48);
  });

  // The same store serves upsert(): the splices of an upsert over a stored tuple.
  // Fixed: as above, through upsert() (the same apply(), with skip_failed).
  it('upsert with 4000 splices of a stored 100 KB field stays in proportion to the tuple', () => {
    const r = child(`
      const s = new R.Space('splice-upsert', { maxTupleSize: 1024 * 1024 });
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.insert([1, 'x'.repeat(100000)]);
      const ops = [];
      for (let i = 0; i < 4000; i++) ops.push([':', 2, -1, 0, 'z']);
      const before = process.resourceUsage().maxRSS;
      s.upsert([1, 'ignored'], ops);
      const grew = (process.resourceUsage().maxRSS - before) / 1024;
      const t = s.get(1);
      console.log(JSON.stringify({ grew, len: t[1].length, tail: t[1].slice(-3) }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { grew: number; len: number; tail: string };
    expect(out.len).toBe(104000);
    expect(out.tail).toBe('zzz');
    expect(out.grew, `peak RSS grew by ${out.grew.toFixed(0)} MB for one upsert of a 100 KB tuple`).toBeLessThan(48);
  });

  // Splices that alternate between fields leave the replaced value behind in the store (it is
  // not the last thing stored), so the store is compacted: the offsets of every other value the
  // tuple being built holds (the other string, '+' results, fields moved by '!' and '#') must
  // survive each compaction. A JavaScript model gives the expected tuple.
  function alternating(): { tuple: unknown[]; ops: unknown[]; expected: unknown[] } {
    const tuple: unknown[] = [1, 'a'.repeat(100_000), 5, 'b'.repeat(100_000), 'tail'];
    const model = [...tuple];
    const ops: unknown[] = [];
    for (let i = 0; ops.length < 3996; i++) {
      const sf = i % 2 === 0 ? 2 : 4;  // the two strings (1-based), alternating
      const c = String.fromCharCode(99 + (i % 20));
      ops.push([':', sf, 1 + (i % 50), 1, c]);
      const str = model[sf - 1] as string;
      const at = i % 50;
      model[sf - 1] = str.slice(0, at) + c + str.slice(at + 1);
      if (i % 97 === 0) {
        ops.push(['+', 3, 2]);
        model[2] = (model[2] as number) + 2;
      }
      if (i % 301 === 0) {
        ops.push(['!', -1, i]);  // appended after the last field
        model.push(i);
      }
      if (i % 603 === 602) {
        ops.push(['#', 6, 1]);  // the first field '!' appended
        model.splice(5, 1);
      }
    }
    return { tuple, ops, expected: model };
  }

  it('splices alternating between two 100 KB fields, with +, ! and # between them: the tuple a model gives', () => {
    const s = new Space(`splice-alt-${Math.random()}`, { maxTupleSize: 1024 * 1024 });
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    const { tuple, ops, expected } = alternating();
    s.insert(tuple);
    expect(s.update(1, ops as never)).toEqual(expected);
    expect(s.get(1)).toEqual(expected);
    s.drop();
  });

  it('splices alternating between two 100 KB fields take memory in proportion to the tuple', () => {
    const r = child(`
      const s = new R.Space('splice-alt', { maxTupleSize: 1024 * 1024 });
      s.createIndex('pk', { parts: [[1, 'unsigned']] });
      s.insert([1, 'a'.repeat(100000), 5, 'b'.repeat(100000)]);
      const ops = [];
      for (let i = 0; i < 4000; i++) ops.push([':', i % 2 === 0 ? 2 : 4, 1, 1, 'y']);
      const before = process.resourceUsage().maxRSS;
      const t = s.update(1, ops);
      const grew = (process.resourceUsage().maxRSS - before) / 1024;
      console.log(JSON.stringify({ grew, a: t[1].length, b: t[3].length }));
    `);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { grew: number; a: number; b: number };
    expect([out.a, out.b]).toEqual([100000, 100000]);
    expect(out.grew, `peak RSS grew by ${out.grew.toFixed(0)} MB for one update of a 200 KB tuple`).toBeLessThan(48);
  });

  it('a splice chain over a small field gives the exact string a JavaScript model gives', () => {
    const s = plain();
    s.insert([1, 'abcdef']);
    let model = 'abcdef';
    const ops: unknown[] = [];
    for (let i = 0; i < 50; i++) {
      ops.push([':', 2, 2, 1, String(i % 10)]);
      model = model.slice(0, 1) + String(i % 10) + model.slice(2);
    }
    expect(s.update(1, ops as never)).toEqual([1, model]);
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 2. update.cc: operands, field numbers and results at their bounds (held)
// ---------------------------------------------------------------------------------------------
describe('update.cc: operand and result bounds', () => {
  function fixture(): Space {
    const s = plain();
    s.createIndex('num', { unique: false, parts: [[3, 'number']] });
    s.insert([1, 5, 7, 'héllo', 1e20, 2 ** 40]);
    return s;
  }

  it('a bitwise operand of 2^64 (float64) is refused before any cast (read_uint: num_is_integral bound)', () => {
    const s = fixture();
    expect(codeOf(() => s.update(1, [['|', 2, 2 ** 64]]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.update(1, [['^', 2, 1e300]]))).toBe('ER_UPDATE_OP');
    // 2^63 as float64 is an integer in range: exact result, past 2^53 a BigInt.
    expect(s.update(1, [['|', 2, 2 ** 63]])![1]).toBe(2n ** 63n + 5n);
    expect(s.get(1)![1]).toBe(2n ** 63n + 5n);
    sound(s);
  });

  it('a bitwise op on a stored float64 beyond 2^64 fails as a field error, nothing changed', () => {
    const s = fixture();
    expect(codeOf(() => s.update(1, [['&', 5, 1]]))).toBe('ER_UPDATE_FIELD');
    expect(s.get(1)).toEqual([1, 5, 7, 'héllo', 1e20, 2 ** 40]);
    // 2^40 is stored as float64 by msgpackr and still takes part as an integer.
    expect(s.update(1, [['&', 6, 2 ** 40 + 1]])![5]).toBe(2 ** 40);
  });

  it('field numbers and counts outside int32 / uint32 are refused, not truncated', () => {
    const s = fixture();
    for (const field of [2 ** 31, -(2 ** 31), 2 ** 32 + 2, 1.5, -0.5]) {
      expect(codeOf(() => s.update(1, [['=', field, 0]])), String(field)).toBe('ER_UPDATE_OP');
    }
    expect(codeOf(() => s.update(1, [['=', 2 ** 31 - 1, 0]]))).toBe('ER_UPDATE_FIELD');
    expect(codeOf(() => s.update(1, [['=', -(2 ** 31 - 1), 0]]))).toBe('ER_UPDATE_FIELD');
    expect(codeOf(() => s.update(1, [['#', 2, 2 ** 32]]))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => s.update(1, [['#', 2, 0]]))).toBe('ER_UPDATE_OP');
    // The largest count deletes to the end (no idx + n overflow).
    expect(s.update(1, [['#', 4, 2 ** 32 - 1]])).toEqual([1, 5, 7]);
    sound(s);
  });

  it('splice positions and lengths at INT64_MIN/MAX neither negate nor overflow', () => {
    const s = fixture();
    const min = -(2n ** 63n);
    const max = 2n ** 63n - 1n;
    expect(codeOf(() => s.update(1, [[':', 4, min, 1, 'a']] as never))).toBe('ER_UPDATE_FIELD');
    expect(codeOf(() => s.update(1, [[':', 4, 0, 1, 'a']] as never))).toBe('ER_UPDATE_FIELD');
    // A position past the end clamps to the end; a huge length cuts to the end; a huge negative
    // length cuts nothing.
    expect(s.update(1, [[':', 4, max, max, '!']] as never)![3]).toBe('héllo!');
    expect(s.update(1, [[':', 4, 1, min, '<']] as never)![3]).toBe('<héllo!');
    expect(s.update(1, [[':', 4, 2, max, '']] as never)![3]).toBe('<');
    sound(s);
  });

  it('a splice that cuts a UTF-8 sequence in two is refused by the tuple check, nothing changed', () => {
    const s = fixture();
    // 'héllo': h, then é as two bytes: cutting one byte at position 3 leaves half a character.
    expect(codeOf(() => s.update(1, [[':', 4, 3, 1, '']]))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => s.upsert([1, 0, 0], [[':', 4, 3, 1, '']]))).toBe('ER_TUPLE_FORMAT');
    expect(s.get(1)![3]).toBe('héllo');
    sound(s);
  });

  it('integer overflow at both ends is an error; the float path stores Infinity; NaN cannot reach an index', () => {
    const s = fixture();
    s.update(1, [['=', 2, 2n ** 64n - 1n]]);
    expect(codeOf(() => s.update(1, [['+', 2, 1]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
    s.update(1, [['=', 2, -(2n ** 63n)]]);
    expect(codeOf(() => s.update(1, [['-', 2, 1]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
    expect(codeOf(() => s.update(1, [['-', 2, 2n ** 64n - 1n]]))).toBe('ER_UPDATE_INTEGER_OVERFLOW');
    expect(s.get(1)![1]).toBe(-(2n ** 63n));
    // Field 3 is indexed as 'number': Infinity is a number, Infinity + -Infinity (NaN) is not.
    expect(s.update(1, [['+', 3, Infinity]])![2]).toBe(Infinity);
    expect(codeOf(() => s.update(1, [['+', 3, -Infinity]]))).toBe('ER_FIELD_TYPE');
    expect(codeOf(() => s.update(1, [['+', 3, NaN]]))).toBe('ER_UPDATE_OP');
    expect(s.get(1)![2]).toBe(Infinity);
    sound(s);
  });

  it('updateNumber packs a JavaScript number as packOpsFast does: fractions, NaN and infinities included', () => {
    const s = fixture();
    const h = handleOf(s);
    const plus = '+'.charCodeAt(0);
    const set = '='.charCodeAt(0);
    for (const field of [NaN, Infinity, -Infinity, 1.5, 2 ** 31, -(2 ** 31)]) {
      expect(codeOf(() => h.updateNumber(0, 1, set, field, 1, scratch)), String(field)).toBe('ER_UPDATE_OP');
    }
    expect(codeOf(() => h.updateNumber(0, 1, plus, 2, NaN, scratch))).toBe('ER_UPDATE_OP');
    for (const op of [0, 0x80, 2 ** 32, -1, 1.5]) {
      expect(codeOf(() => h.updateNumber(0, 1, op, 2, 1, scratch)), String(op)).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(codeOf(() => h.updateNumber(0, 1, 'x'.charCodeAt(0), 2, 1, scratch))).toBe('ER_UPDATE_OP');
    expect(tupleOf(h.updateNumber(0, 1, plus, 2, 2 ** 40, scratch))![1]).toBe(2 ** 40 + 5);
    sound(s);
  });

  it('4000 operations (the limit) run; 4001 are refused before anything is applied', () => {
    const s = fixture();
    const ops = Array.from({ length: 4000 }, () => ['+', 2, 1] as const);
    expect(s.update(1, ops as never)![1]).toBe(4005);
    expect(codeOf(() => s.update(1, [...ops, ['+', 2, 1]] as never))).toBe('ER_UPDATE_OP');
    expect(s.get(1)![1]).toBe(4005);
    // 4000 inserts of a field at the front, then as many deletes: the fields vector's shifts.
    const bang = Array.from({ length: 4000 }, (_, i) => ['!', 2, i] as const);
    expect(s.update(1, bang as never)!.length).toBe(4006);
    expect(s.update(1, Array.from({ length: 4000 }, () => ['#', 2, 1]) as never)).toEqual([1, 4005, 7, 'héllo', 1e20, 2 ** 40]);
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 3. msgpack.h / key_def.cc: bytes that lie about their lengths or nest too deep (raw binding)
// ---------------------------------------------------------------------------------------------
describe('msgpack.h: hostile headers and depth through the raw binding', () => {
  /** [1, v] with v nested `depth` arrays deep. */
  function nested(depth: number): Buffer {
    const bytes = [0x92, 0x01];
    for (let i = 0; i < depth; i++) bytes.push(0x91);
    bytes.push(0x00);
    return Buffer.from(bytes);
  }

  it('headers that claim more bytes or elements than remain are refused at once', () => {
    const s = plain();
    s.insert([1, 'a']);
    const h = handleOf(s);
    const lies = [
      [0x92, 0x02, 0xdb, 0xff, 0xff, 0xff, 0xff], // str32 of 4 GiB
      [0x92, 0x02, 0xc6, 0xff, 0xff, 0xff, 0xff], // bin32
      [0x92, 0x02, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01], // ext32
      [0x92, 0x02, 0xdd, 0xff, 0xff, 0xff, 0xff], // array32 of 4G elements
      [0x92, 0x02, 0xdf, 0xff, 0xff, 0xff, 0xff], // map32: 8G elements (items * 2 in 64 bits)
      [0xdd, 0xff, 0xff, 0xff, 0xff, 0x03], // the tuple itself
      [0x92, 0x02, 0xd8, 0x01], // fixext16 cut short
      [0x92, 0x02, 0xc1], // never used
      [0x92, 0x02, 0xa3, 0xe2, 0x82], // a string whose last character is cut
    ];
    for (const bytes of lies) {
      expect(codeOf(() => h.insert(Buffer.from(bytes), false)), Buffer.from(bytes).toString('hex')).toBe('ER_TUPLE_FORMAT');
    }
    for (const key of [[0xdd, 0xff, 0xff, 0xff, 0xff], [0x91, 0xdb, 0x7f, 0xff, 0xff, 0xff], [0x91, 0xcf, 0x00]]) {
      expect(codeOf(() => h.get(0, Buffer.from(key), scratch)), Buffer.from(key).toString('hex')).toBe('ER_KEY_TYPE');
      expect(codeOf(() => h.delete(Buffer.from(key), scratch))).toBe('ER_KEY_TYPE');
      expect(codeOf(() => h.select(0, Buffer.from(key), GT, 10, 0, scratch))).toBe('ER_KEY_TYPE');
    }
    expect(codeOf(() => h.insertMany(Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x92, 0x05, 0x00])))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => h.insertMany(Buffer.from([0xdd, 0xff, 0xff])))).toBe('ER_TUPLE_FORMAT');
    expect(s.len()).toBe(1);
    sound(s);
  });

  it('nesting: 32 levels are stored, 33 refused, in tuples, keys, update operations and upserts', () => {
    const s = plain();
    const h = handleOf(s);
    h.insert(nested(31), false); // [1, v]: v's arrays make 32 levels with the tuple's own
    expect(s.len()).toBe(1);
    expect(codeOf(() => h.insert(nested(32), true))).toBe('ER_TUPLE_FORMAT');
    // A deep key part: refused as a key (not a scalar), never walked past the depth bound.
    const deepKey = Buffer.from([...Array(40).fill(0x91), 0x00]);
    expect(codeOf(() => h.get(0, deepKey, scratch))).toBe('ER_KEY_TYPE');
    // [['=', 2, v]] with v nested: the ops' own two levels count.
    const ops = (depth: number) => Buffer.from([0x91, 0x93, 0xa1, 0x3d, 0x02, ...Array(depth).fill(0x91), 0x00]);
    expect(codeOf(() => h.update(0, 1, ops(31), 0, ops(31).length, scratch))).toBe('ER_UPDATE_OP');
    // 30 levels in the operand fit the ops (32) and the new tuple (31).
    expect(tupleOf(h.update(0, 1, ops(30), 0, ops(30).length, scratch))).not.toBeNull();
    // '!' of a 31-deep operand fits the ops (2 + 30 ... ) but makes a 32-deep field in the tuple
    // only when it is inside the tuple's array: 1 + 30 + 1 levels.
    const bang = (depth: number) => Buffer.from([0x91, 0x93, 0xa1, 0x21, 0x02, ...Array(depth).fill(0x91), 0x00]);
    expect(tupleOf(h.update(0, 1, bang(30), 0, bang(30).length, scratch))).not.toBeNull();
    expect(codeOf(() => h.upsert(nested(32), ops(1), 0, ops(1).length, true, scratch))).toBe('ER_TUPLE_FORMAT');
    sound(s);
  });

  it('insert/update/upsert ranges [start, end) outside their Buffer are refused; an empty Buffer too', () => {
    const s = plain();
    s.insert([1, 'a']);
    const h = handleOf(s);
    const t = pack([2, 'b']);
    expect(codeOf(() => h.insert(t, false, 0, t.length + 1))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.insert(t, false, 3, 2))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.insert(t, false, 2 ** 32, 2 ** 32))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.insert(t, false, 1, t.length))).toBe('ER_TUPLE_FORMAT'); // starts mid-tuple
    expect(codeOf(() => h.insert(Buffer.alloc(0), false))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => h.insertMany(Buffer.alloc(0)))).toBe('ER_TUPLE_FORMAT');
    const ops = pack([['=', 2, 'z']]);
    expect(codeOf(() => h.update(0, 1, ops, 0, ops.length + 1, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.update(0, 1, ops, 0, 0, scratch))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => h.update(0, 1, ops, 0, ops.length - 1, scratch))).toBe('ER_UPDATE_OP');
    expect(codeOf(() => h.upsert(t, ops, 1, ops.length, false, scratch))).toBe('ER_UPDATE_OP');
    // A detached ArrayBuffer's view reads as empty.
    const detached = new Uint8Array(new ArrayBuffer(8));
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    expect(codeOf(() => h.insert(detached as Buffer, false))).toBe('ER_TUPLE_FORMAT');
    expect(codeOf(() => h.insert(detached as Buffer, false, 0, 1))).toBe('ER_ILLEGAL_PARAMS');
    expect(s.get(1)).toEqual([1, 'a']);
    expect(s.len()).toBe(1);
    sound(s);
  });

  it('every truncation and every single-byte change of a valid tuple is refused or stored whole, never half-read', () => {
    const s = plain();
    s.createIndex('name', { unique: false, parts: [[2, 'string']] });
    const h = handleOf(s);
    const good = pack([7, 'naïve', [1, { a: [2, 3] }], 1.5, -(2 ** 40), true, null]);
    for (let n = 0; n < good.length; n++) {
      expect(codeOf(() => h.insert(good.subarray(0, n), true)), `cut at ${n}`).toBe('ER_TUPLE_FORMAT');
    }
    for (let i = 0; i < good.length; i++) {
      for (const b of [0x00, 0x7f, 0x90, 0xa0, 0xc1, 0xcb, 0xd9, 0xdc, 0xdd, 0xdf, 0xff]) {
        const bytes = Buffer.from(good);
        bytes[i] = b;
        try {
          h.insert(bytes, true);
          // Stored: it must read back as the very bytes given.
          const key = unpack(bytes) as unknown[];
          expect(Buffer.compare(Buffer.from(pack(s.get(key[0] as number))), Buffer.from(pack(key)))).toBe(0);
        } catch (e) {
          expect(e).toBeInstanceOf(CappedError);
        }
      }
    }
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 4. tree_index.cc / hash_index.cc: cursors across changes (held)
// ---------------------------------------------------------------------------------------------
describe('cursors: the last tuple and the position survive deletes, re-inserts, truncate, rollback and drop', () => {
  for (const kind of ['TREE', 'HASH'] as const) {
    it(`${kind}: deleting the tuple the cursor stands on, then refilling, never returns freed bytes`, () => {
      const s = plain(kind);
      for (let i = 1; i <= 200; i++) s.insert([i, `v${i}`]);
      const h = handleOf(s);
      const c = h.cursor(0, undefined, ALL);
      const seen: unknown[][] = [];
      for (let k = 0; k < 50; k++) seen.push(tupleOf(c.next(scratch))!);
      // The tuple it stands on and its neighbours go; new tuples (which may reuse the freed
      // memory) arrive with other payloads.
      const last = seen[seen.length - 1][0] as number;
      for (const id of [last, last + 1, last - 1]) s.delete(id);
      for (let i = 1000; i < 1400; i++) s.insert([i, `w${i}`]);
      const rest = drain(c);
      for (const t of [...seen, ...rest]) {
        const id = t[0] as number;
        expect(t[1], `tuple ${id}`).toBe(id >= 1000 ? `w${id}` : `v${id}`);
      }
      // Every tuple that lived through the walk was returned (at least once).
      const ids = new Set([...seen, ...rest].map((t) => t[0] as number));
      for (let i = 1; i <= 200; i++) if (Math.abs(i - last) > 1) expect(ids.has(i), `id ${i}`).toBe(true);
      sound(s);
    });

    it(`${kind}: truncate() under a cursor frees every tuple; the cursor goes on over the new ones only`, () => {
      const s = plain(kind);
      for (let i = 1; i <= 100; i++) s.insert([i, 'x'.repeat(i)]);
      const h = handleOf(s);
      const c = h.cursor(0, undefined, ALL);
      for (let k = 0; k < 10; k++) c.next(scratch);
      s.truncate();
      for (let i = 1; i <= 300; i++) s.insert([i, `after${i}`]);
      const rest = drain(c);
      for (const t of rest) expect(t[1]).toBe(`after${t[0] as number}`);
      expect(new Set(rest.map((t) => t[0])).size).toBe(rest.length);
      sound(s);
    });

    it(`${kind}: a rollback that re-inserts what the cursor's walk deleted leaves it walking sound tuples`, () => {
      const s = plain(kind);
      for (let i = 1; i <= 300; i++) s.insert([i, i]);
      const h = handleOf(s);
      const c = h.cursor(0, undefined, ALL);
      for (let k = 0; k < 100; k++) c.next(scratch);
      const sp = h.begin();
      for (let i = 1; i <= 300; i += 2) s.delete(i);
      for (let i = 301; i <= 2000; i++) s.insert([i, i]); // a HASH table grows and migrates
      h.rollback(sp);
      const rest = drain(c);
      for (const t of rest) expect(t[1]).toBe(t[0]);
      for (const t of rest) expect(t[0] as number).toBeLessThanOrEqual(300);
      expect(s.len()).toBe(300);
      sound(s);
    });

    it(`${kind}: drop() under a live cursor: its next() throws ER_SPACE_DROPPED, restore and reset too`, () => {
      const s = plain(kind);
      for (let i = 1; i <= 20; i++) s.insert([i]);
      const h = handleOf(s);
      const c = h.cursor(0, undefined, ALL);
      c.next(scratch);
      s.drop();
      expect(codeOf(() => c.next(scratch))).toBe('ER_SPACE_DROPPED');
      expect(codeOf(() => c.restore())).toBe('ER_SPACE_DROPPED');
      expect(codeOf(() => c.reset())).toBe('ER_SPACE_DROPPED');
    });
  }

  it('TREE: reverse walks (LE, LT, REQ) across erases at a leaf edge and a rebuild by truncate', () => {
    const s = plain();
    for (let i = 1; i <= 500; i++) s.insert([i]);
    const h = handleOf(s);
    for (const [iter, key] of [[5, 400], [6, 400], [1, undefined]] as const) {
      const c = h.cursor(0, key, iter);
      const first = tupleOf(c.next(scratch))![0] as number;
      // Erase a run below it, across leaves (31 elements a leaf).
      for (let i = first - 1; i > first - 80 && i > 0; i--) s.delete(i);
      const rest = drain(c).map((t) => t[0] as number);
      for (let k = 1; k < rest.length; k++) expect(rest[k]).toBeLessThan(rest[k - 1]);
      expect(rest.every((id) => id < first && id <= first - 80)).toBe(true);
      for (let i = first - 1; i > first - 80 && i > 0; i--) s.insert([i]);
    }
    sound(s);
  });

  it('EQ on a non-unique TREE with composite hints, across deletes of the current tuple', () => {
    const s = plain();
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let i = 1; i <= 300; i++) s.insert([i, i % 3 === 0 ? 1e6 : i % 3 === 1 ? 2 ** 45 : 0.5]);
    const h = handleOf(s);
    const c = h.cursor(1, 2 ** 45, EQ);
    const ids: number[] = [];
    for (let t = tupleOf(c.next(scratch)); t !== null; t = tupleOf(c.next(scratch))) {
      ids.push(t[0] as number);
      s.delete(t[0] as number);
    }
    expect(ids).toEqual(Array.from({ length: 100 }, (_, k) => 3 * k + 1));
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 5. expiry/chunk.cc, predicate.cc: a chunk left open, and what user code does meanwhile (held)
// ---------------------------------------------------------------------------------------------
describe('expiry chunks: keep-open transactions and visited positions under hostile callers', () => {
  function ttlSpace(kind: 'TREE' | 'HASH' = 'TREE'): { s: Space; h: NativeSpace; c: NativeCursor } {
    const s = plain(kind);
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let i = 1; i <= 100; i++) s.insert([i, i <= 60 ? 10 : 1e12, `p${i}`]);
    const h = handleOf(s);
    return { s, h, c: h.cursor(1, undefined, ALL, true) };
  }
  const out = new Float64Array(5);

  it('mode 2 (left open), then truncate inside it, then commit: the deleted tuples are reported intact', () => {
    const { s, h, c } = ttlSpace();
    const r = h.expireChunk(c, 1, 30, 100, true, 2, out, scratch);
    const sp = out[4];
    expect(out[1]).toBe(30);
    const deleted = manyOf(r as number | Buffer);
    s.truncate();
    h.commit(sp);
    expect(deleted.map((t) => t[2])).toEqual(Array.from({ length: 30 }, (_, k) => `p${k + 1}`));
    expect(s.len()).toBe(0);
    expect(h.expireChunk(c, 1, 30, 100, true, 1, out, scratch)).toBe(0);
    sound(s);
  });

  it('mode 2, then drop(): commit and rollbackChunk throw ER_SPACE_DROPPED', () => {
    const { s, h, c } = ttlSpace();
    h.expireChunk(c, 1, 30, 100, true, 2, out, scratch);
    const sp = out[4];
    s.drop();
    expect(codeOf(() => h.commit(sp))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => h.rollbackChunk(c, sp))).toBe('ER_SPACE_DROPPED');
    expect(codeOf(() => h.expireChunk(c, 1, 30, 100, true, 2, out, scratch))).toBe('ER_SPACE_DROPPED');
  });

  it('mode 2, rolled back by the user, then rollbackChunk: ER_TRANSACTION and a cursor that still walks', () => {
    const { s, h, c } = ttlSpace('HASH');
    h.expireChunk(c, 1, 30, 100, false, 2, out, scratch);
    const sp = out[4];
    h.rollback(sp);
    expect(codeOf(() => h.rollbackChunk(c, sp))).toBe('ER_TRANSACTION');
    expect(codeOf(() => h.rollbackChunk(c, 12345))).toBe('ER_TRANSACTION');
    expect(s.len()).toBe(100);
    let expired = 0;
    for (let k = 0; k < 20 && expired < 60; k++) {
      h.expireChunk(c, 1, 25, 100, false, 0, out, scratch);
      expired += out[1];
    }
    expect(expired).toBe(60);
    expect(s.len()).toBe(40);
    sound(s);
  });

  it('a chunk nested in a user transaction, then the user rolls back: every tuple is back, the cursor restarts cleanly', () => {
    const { s, h, c } = ttlSpace();
    const sp = h.begin();
    h.expireChunk(c, 1, 100, 100, true, 0, out, scratch);
    expect(out[1]).toBe(60);
    for (let i = 200; i < 260; i++) s.insert([i, 5, 'late']);
    h.rollback(sp);
    expect(s.len()).toBe(100);
    expect(s.select(undefined).map((t) => t[2])).toEqual(Array.from({ length: 100 }, (_, k) => `p${k + 1}`));
    h.expireChunk(c, 1, 100, 100, true, 0, out, scratch);
    expect(out[1]).toBe(60);
    sound(s);
  });

  it('deleteVisited: positions past the visited ones are refused and nothing is deleted; replaced tuples are kept', () => {
    const { s, h, c } = ttlSpace();
    const pc = h.cursor(0, undefined, ALL, true);
    const r = h.scanChunk(pc, 10, out, scratch);
    expect(out[0]).toBe(10);
    const visited = manyOf(r as number | Buffer);
    expect(visited).toHaveLength(10);
    for (const bad of [10, 2 ** 32 - 1, 4294967295]) {
      expect(codeOf(() => h.deleteVisited(pc, Uint32Array.of(0, bad), false, out, scratch))).toBe('ER_ILLEGAL_PARAMS');
    }
    expect(s.len()).toBe(100);
    // The "predicate" changed tuple 2 and deleted tuple 3 meanwhile: only 1 goes.
    s.replace([2, 10, 'changed']);
    s.delete(3);
    h.deleteVisited(pc, Uint32Array.of(0, 1, 2, 0), false, out, scratch);
    expect(out[1]).toBe(1);
    expect(s.get(1)).toBeUndefined();
    expect(s.get(2)).toEqual([2, 10, 'changed']);
    // A cursor of another space is refused.
    const other = plain();
    other.insert([1, 1]);
    const foreign = handleOf(other).cursor(0, undefined, ALL);
    expect(codeOf(() => h.deleteVisited(foreign, Uint32Array.of(0), false, out, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(codeOf(() => h.expireChunk(foreign, 1, 5, 100, false, 0, out, scratch))).toBe('ER_ILLEGAL_PARAMS');
    expect(c).toBeDefined();
    sound(s);
  });

  it('a TTL field index past the tuple, NaN/Infinity now, early break over a HASH index', () => {
    const { s, h, c } = ttlSpace();
    const all = h.cursor(0, undefined, ALL, true);
    expect(codeOf(() => h.expireChunk(all, 1, 10, 100, true, 0, out, scratch))).toBe('ER_ILLEGAL_PARAMS');
    h.expireChunk(all, 65535, 100, Infinity, false, 0, out, scratch); // no such field: nothing expires
    expect(out[1]).toBe(0);
    h.expireChunk(c, 1, 100, NaN, true, 0, out, scratch);
    expect(out[1]).toBe(0);
    h.expireChunk(c, 1, 100, -Infinity, true, 0, out, scratch);
    expect(out[1]).toBe(0);
    h.expireChunk(c, 1, 100, Infinity, true, 0, out, scratch);
    expect(out[1]).toBe(100);
    expect(s.len()).toBe(0);
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 6. index_build.cc: an index built in steps while the space changes under it (held)
// ---------------------------------------------------------------------------------------------
describe('index builds: truncate, rollback and duplicates between steps', () => {
  it('truncate() between steps aborts the build; the build index never reads the freed tuples', () => {
    const s = plain();
    for (let i = 1; i <= 500; i++) s.insert([i, `n${i}`]);
    const h = handleOf(s);
    h.buildIndexBegin('name', 'TREE', true, [1], ['string']);
    expect(h.buildIndexStep(100, 1000)).toBe(-1);
    s.truncate();
    for (let i = 1; i <= 50; i++) s.insert([i, `m${i}`]);
    expect(codeOf(() => h.buildIndexStep(1000, 1000))).toBe('ER_INDEX_BUILD_ABORTED');
    // A new build over the new tuples works.
    h.buildIndexBegin('name', 'HASH', true, [1], ['string']);
    let id = -1;
    while (id < 0) id = h.buildIndexStep(7, 1000);
    expect(id).toBe(1);
    expect(tupleOf(h.get(1, 'm7', scratch))).toEqual([7, 'm7']);
    sound(s);
  });

  it('a duplicate written and rolled back inside a transaction does not fail the build; a committed one does', () => {
    const s = plain();
    for (let i = 1; i <= 300; i++) s.insert([i, `n${i}`]);
    const h = handleOf(s);
    h.buildIndexBegin('name', 'TREE', true, [1], ['string']);
    h.buildIndexStep(50, 1000);
    const sp = h.begin();
    s.insert([1000, 'n1']); // walked already
    s.insert([1001, 'n299']); // not walked yet
    s.delete(5);
    expect(h.buildIndexStep(50, 1000)).toBe(-1); // waits for the transaction
    h.rollback(sp);
    let id = -1;
    while (id < 0) id = h.buildIndexStep(64, 1000);
    expect(tupleOf(h.get(id, 'n5', scratch))).toEqual([5, 'n5']);
    expect(h.len(id)).toBe(300);
    sound(s);

    // A duplicate of the visible unique index is refused by it before the build sees it.
    expect(codeOf(() => s.insert([2000, 'n1']))).toBe('ER_DUPLICATE_KEY');
    // A committed write the new (unique) index cannot take fails the build at its next step.
    h.buildIndexBegin('tag', 'HASH', true, [0], ['unsigned']);
    h.buildIndexStep(10, 1000);
    s.replace([7, 'n7-changed']);
    s.insert([3000, 'n3000']);
    let built = -1;
    while (built < 0) built = h.buildIndexStep(64, 1000);
    expect(h.len(built)).toBe(301);
    expect(s.len()).toBe(301);
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// 7. space.cc: capped eviction walks the TTL index while it deletes from it (held)
// ---------------------------------------------------------------------------------------------
describe('capped spaces: eviction under update, upsert and insertMany, inside and outside transactions', () => {
  it('an update that grows a tuple past maxBytes evicts the smallest TTLs, never the tuple itself', () => {
    const evicted: unknown[][] = [];
    const s = track(new Space(uniq('capped'), { ttl: { field: 2, now: () => 0 }, maxBytes: 2000, onFull: 'evictExpiring', onEvict: (ts: unknown[][]) => { evicted.push(...ts); } } as never));
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let i = 1; i <= 40; i++) s.insert([i, i, 'x'.repeat(30)]);
    // Tuple 1 has the smallest TTL: growing it must evict others, not itself.
    const t = s.update(1, [['=', 3, 'y'.repeat(800)]]);
    expect(t![2]).toBe('y'.repeat(800));
    expect(s.get(1)![2]).toBe('y'.repeat(800));
    expect(evicted.length).toBeGreaterThan(0);
    expect(evicted.every((e) => e[0] !== 1)).toBe(true);
    expect(handleOf(s).bsize()).toBeLessThanOrEqual(2000);
    // A tuple that can never fit: refused, nothing evicted.
    const before = s.len();
    expect(codeOf(() => s.update(2 + evicted.length, [['=', 3, 'z'.repeat(3000)]]))).toMatch(/ER_SPACE_FULL|ER_TUPLE_TOO_LARGE/);
    expect(s.len()).toBe(before);
    sound(s);
  });

  it('an insertMany whose later tuple evicts an earlier one of the same batch, then fails: all undone', () => {
    const s = track(new Space(uniq('capped-many'), { ttl: { field: 2, now: () => 0 }, maxTuples: 5, onFull: 'evictExpiring' } as never));
    s.createIndex('pk', { parts: [[1, 'unsigned']] });
    s.createIndex('ttl', { unique: false, parts: [[2, 'number']] });
    for (let i = 1; i <= 5; i++) s.insert([i, 100 + i]);
    const batch = Array.from({ length: 8 }, (_, k) => [10 + k, k]);
    batch.push([17, 0]); // a duplicate of the batch's last tuple, which is still stored then
    expect(codeOf(() => s.insertMany(batch))).toBe('ER_DUPLICATE_KEY');
    expect(s.select(undefined).map((t) => t[0])).toEqual([1, 2, 3, 4, 5]);
    sound(s);
  });
});

// ---------------------------------------------------------------------------------------------
// index_build.cc: the messages of a failing build, built inside noexcept functions
// ---------------------------------------------------------------------------------------------
describe('index builds: a failure message that cannot be allocated', () => {
  // Fixed (noted by this review): IndexBuild's noexcept hooks built their error messages by string
  // concatenation, whose std::bad_alloc would have escaped a noexcept function (std::terminate:
  // the process ends) under real memory exhaustion. The messages are now built inside a try,
  // behind an allocation point, with ER_MEMORY_ISSUE as the fallback. truncate() during a build
  // reaches that point on its normal path: failing each allocation of it in turn, truncate
  // either fails whole, or empties the space and the build is refused, for one of two reasons.
  it('truncate() during createIndexAsync, each allocation failing in turn', async () => {
    const testing = (await import('../src/native/loader.js')).native.testing;
    const { setBuildSlice } = await import('../src/space/build.js');
    const slice = setBuildSlice({ tuples: 16 });
    const reasons = new Set<string>();
    try {
      for (let n = 0; ; n++) {
        expect(n).toBeLessThan(200);
        const s = track(new Space(uniq('build-truncate')));
        s.createIndex('pk', { parts: [[1, 'unsigned']] });
        for (let id = 0; id < 200; id++) s.insert([id, id % 7]);
        const build = s.createIndexAsync('extra', { unique: false, parts: [[2, 'unsigned']] });
        build.catch(() => undefined);
        await new Promise((r) => setImmediate(r));
        testing.failAllocationAfter(n);
        let error: unknown;
        try {
          s.truncate();
        } catch (e) {
          error = e;
        }
        const fired = testing.disarmAllocationFailure();
        if (error !== undefined) {
          expect(codeOf(() => { throw error; }), `truncate #${n}`).toBe('ER_MEMORY_ISSUE');
          expect(s.len(), `truncate failed at #${n}, yet changed the space`).toBe(200);
          await build;  // the build goes on, untouched
          expect(s.index.extra.len()).toBe(200);
        } else {
          expect(s.len()).toBe(0);
          const code = await build.then(() => 'built', (e: unknown) => (e as CappedError).code);
          expect(['ER_INDEX_BUILD_ABORTED', 'ER_MEMORY_ISSUE'], `the build after truncate #${n}`).toContain(code);
          reasons.add(code);
          expect(s.index.extra).toBeUndefined();
        }
        sound(s);
        if (!fired) break;
      }
    } finally {
      setBuildSlice(slice);
      testing.failAllocationAfter(-1);
    }
    // The fallback was reached: the message's allocation failed and the build still stopped.
    expect([...reasons].sort()).toEqual(['ER_INDEX_BUILD_ABORTED', 'ER_MEMORY_ISSUE']);
  });
});

// ---------------------------------------------------------------------------------------------
// cursor.h: detach() failing for memory
// ---------------------------------------------------------------------------------------------
describe('cursors: the copy that lets a walk outlive its last tuple, failing for memory', () => {
  // Fixed (noted by this review): detach() marked the cursor detached before copying its last
  // tuple; had the copy failed for memory, the next step would have resumed from an empty copy
  // (a null tuple). The copy now comes first, behind an allocation point, and a walk whose copy
  // failed ends (the error reaches the caller once; later steps return nothing).
  it.each(['TREE', 'HASH'] as const)('pairs() over a %s primary, each allocation of a step failing in turn', async (type) => {
    const testing = (await import('../src/native/loader.js')).native.testing;
    let endedByFailure = 0;
    try {
      for (let n = 0; ; n++) {
        expect(n).toBeLessThan(100);
        const s = track(new Space(uniq(`detach-${type}`)));
        s.createIndex('pk', { type, parts: [[1, 'unsigned']] });
        for (let id = 0; id < 50; id++) s.insert([id, 'x'.repeat(id)]);
        const it = s.pairs();
        const seen: number[] = [];
        for (let k = 0; k < 5; k++) seen.push(it.next().value![0] as number);
        testing.failAllocationAfter(n);
        let error: unknown;
        try {
          const r = it.next();
          if (!r.done) seen.push(r.value[0] as number);
        } catch (e) {
          error = e;
        }
        const fired = testing.disarmAllocationFailure();
        if (error !== undefined) expect(codeOf(() => { throw error; }), `step #${n}`).toBe('ER_MEMORY_ISSUE');
        // The tuple the walk stood on goes away before the next step: nothing may read it.
        s.delete(seen[seen.length - 1]);
        for (let r = it.next(); !r.done; r = it.next()) seen.push(r.value[0] as number);
        expect(new Set(seen).size, `no tuple twice (#${n})`).toBe(seen.length);
        if (error !== undefined && seen.length === 5) endedByFailure++;
        else expect(seen.length, `the walk went on to the end (#${n})`).toBeGreaterThanOrEqual(49);
        expect(s.len()).toBe(49);
        sound(s);
        if (!fired) break;
      }
    } finally {
      testing.failAllocationAfter(-1);
    }
    expect(endedByFailure, 'a step whose copy failed ended the walk').toBeGreaterThan(0);
  });
});
