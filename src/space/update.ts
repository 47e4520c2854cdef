// Update operations (Tarantool's): their shape is checked here, before they are packed; the
// addon checks everything again (native/engine/update.h) and applies them in one call.
import { CappedError } from '../errors.js';
import { describe } from '../validate.js';

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

const ARITY: Record<string, number> = { '=': 3, '!': 3, '+': 3, '-': 3, '&': 3, '|': 3, '^': 3, '#': 3, ':': 5 };

function opError(where: string, message: string): CappedError {
  return new CappedError(`${where}: ${message}`, 'ER_UPDATE_OP');
}

function isInt(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
}

/** Checks the shape of update operations; throws ER_UPDATE_OP. */
export function checkOps(where: string, ops: unknown): UpdateOp[] {
  if (!Array.isArray(ops)) throw opError(where, `operations must be an array of [op, field, ...] arrays, got ${describe(ops)}`);
  if (ops.length > 4000) throw opError(where, `too many operations (${ops.length}, at most 4000)`);
  for (let i = 0; i < ops.length; i++) {
    const op: unknown = ops[i];
    if (!Array.isArray(op)) throw opError(where, `operation #${i + 1} must be an array [op, field, ...], got ${describe(op)}`);
    const name = op[0];
    const arity = typeof name === 'string' ? ARITY[name] : undefined;
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
