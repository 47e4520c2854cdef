// Update operations (Tarantool's): their shape is checked here, before they are packed; the
// addon checks everything again (native/engine/update.h) and applies them in one call.
import { CappedError } from '../errors.js';
import { describe, isArray } from '../validate.js';
import { writeNumber } from '../native/codec.js';

/** Tarantool's update operators. */
export type UpdateOperator = '=' | '+' | '-' | '&' | '|' | '^' | '!' | '#' | ':';

/**
 * One operation. `field` is 1-based; a negative one counts from the end (-1 is the last field;
 * for `!`, -1 appends).
 */
export type UpdateOp =
  | [op: '=' | '!', field: number, value: unknown]
  | [op: '+' | '-', field: number, value: number | bigint]
  | [op: '&' | '|' | '^', field: number, value: number | bigint]
  | [op: '#', field: number, count: number]
  | [op: ':', field: number, position: number, length: number, replacement: string];

// A switch, not a lookup in an object: a keyed load by a string variable is megamorphic in V8.
function arityOf(name: string): number | undefined {
  switch (name) {
    case '=': case '!': case '+': case '-': case '&': case '|': case '^': case '#': return 3;
    case ':': return 5;
    default: return undefined;
  }
}

function opError(where: string, message: string): CappedError {
  return new CappedError(`${where}: ${message}`, 'ER_UPDATE_OP');
}

function isInt(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
}

/** Checks the shape of update operations; throws ER_UPDATE_OP. */
export function checkOps(where: string, ops: unknown): UpdateOp[] {
  if (!isArray(ops)) throw opError(where, `operations must be an array of [op, field, ...] arrays, got ${describe(ops)}`);
  if (ops.length > 4000) throw opError(where, `too many operations (${ops.length}, at most 4000)`);
  for (let i = 0; i < ops.length; i++) {
    const op: unknown = ops[i];
    if (!isArray(op)) throw opError(where, `operation #${i + 1} must be an array [op, field, ...], got ${describe(op)}`);
    const name = op[0];
    const arity = typeof name === 'string' ? arityOf(name) : undefined;
    if (arity === undefined) throw opError(where, `operation #${i + 1}: unknown operator ${typeof name === 'string' ? `'${name}'` : describe(name)} (expected one of = + - & | ^ ! # :)`);
    if (op.length !== arity) throw opError(where, `operation #${i + 1} '${name}' takes ${arity} elements, got ${op.length}`);
    const field = op[1];
    if (typeof field !== 'number' || !Number.isInteger(field) || field === 0 || Math.abs(field) > 0x7fffffff) {
      throw opError(where, `operation #${i + 1}: field must be a non-zero integer (1-based, or negative from the end), got ${describe(field)}`);
    }
    const arg = op[2];
    switch (name) {
      case '+': case '-':
        if ((typeof arg !== 'number' || Number.isNaN(arg)) && typeof arg !== 'bigint') {
          throw opError(where, `operation #${i + 1} '${name}': the argument must be a number, got ${describe(arg)}`);
        }
        break;
      case '&': case '|': case '^':
        if (!isInt(arg) || (arg as number) < 0) {
          throw opError(where, `operation #${i + 1} '${name}': the argument must be a non-negative integer, got ${describe(arg)}`);
        }
        break;
      case '#':
        if (typeof arg !== 'number' || !Number.isInteger(arg) || arg < 1 || arg > 0xffffffff) {
          throw opError(where, `operation #${i + 1} '#': the count must be a positive integer, got ${describe(arg)}`);
        }
        break;
      case ':':
        if (!isInt(arg) || !isInt(op[3])) throw opError(where, `operation #${i + 1} ':': position and length must be integers`);
        if (typeof op[4] !== 'string') throw opError(where, `operation #${i + 1} ':': the replacement must be a string, got ${describe(op[4])}`);
        break;
      default:
        break;
    }
  }
  return ops as UpdateOp[];
}

// The common operations (numbers, short strings, booleans, null as values) are packed here into
// one reused Buffer, as msgpackr would pack them (integers in [-2^31, 2^32) as integers, other
// numbers as float64): about 40 ns instead of 300 for msgpackr's general path. Anything else
// returns -1 and goes through msgpackr.
let opsBuffer = Buffer.allocUnsafeSlow(1024);
/** Set while packOpsFast reads operations: a getter among them must not pack others into opsBuffer. */
let packingOps = false;

/**
 * The packed operations in opsBuffer()[0, end), or -1 when msgpackr must pack them. Getters in
 * the operations run here (checkOps read them once already, and may have seen other values: what
 * this packs is what the addon checks). One that calls update or upsert on any space gets
 * ER_ILLEGAL_PARAMS, as a nested encode does: it would overwrite the operations being packed.
 */
export function packOpsFast(ops: UpdateOp[]): number {
  if (packingOps) {
    throw new CappedError('update operations cannot be packed while another update\'s are ' +
      '(a getter inside the operations called update or upsert)', 'ER_ILLEGAL_PARAMS');
  }
  packingOps = true;
  try {
    return packInto(ops);
  } finally {
    packingOps = false;
  }
}

function packInto(ops: UpdateOp[]): number {
  if (ops.length > 15) return -1;
  const b = opsBuffer;
  let p = 0;
  b[p++] = 0x90 | ops.length;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as unknown[];
    if (p + 64 > b.length) return -1;
    // checkOps allowed the operator it read; a getter may answer otherwise now: anything but
    // one ASCII character goes to msgpackr as it is, and the addon refuses it.
    const name = op[0];
    if (typeof name !== 'string' || name.length !== 1 || name.charCodeAt(0) > 0x7f) return -1;
    b[p++] = 0x90 | op.length;
    b[p++] = 0xa1;
    b[p++] = name.charCodeAt(0);
    for (let k = 1; k < op.length; k++) {
      const v = op[k];
      if (typeof v === 'number') {
        p = writeNumber(b, p, v);
      } else if (typeof v === 'string') {
        if (v.length > 10 || !(v as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
        const n = b.write(v, p + 1, 'utf8');
        b[p] = 0xa0 | n;
        p += 1 + n;
      } else if (typeof v === 'boolean') {
        b[p++] = v ? 0xc3 : 0xc2;
      } else if (v === null) {
        b[p++] = 0xc0;
      } else {
        return -1;
      }
    }
  }
  return p;
}

export function opsBufferOf(): Buffer {
  return opsBuffer;
}
