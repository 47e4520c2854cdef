// Argument checks shared by Space and Index: keys, iterator names and index parts.
import { Iter } from '../native/loader.js';
import type { Key } from '../native/codec.js';
import { CappedError, illegal, textOf } from '../errors.js';
import { describe, isArray, ownOption } from '../validate.js';

export type FieldType = 'unsigned' | 'integer' | 'number' | 'string' | 'boolean';
export type IndexType = 'TREE' | 'HASH';
export type IteratorType = 'EQ' | 'REQ' | 'ALL' | 'GE' | 'GT' | 'LE' | 'LT';

export interface Part {
  field: number;
  type: FieldType;
}

const FIELD_TYPES: readonly FieldType[] = ['unsigned', 'integer', 'number', 'string', 'boolean'];
const ITERATORS: Record<IteratorType, Iter> = {
  EQ: Iter.EQ, REQ: Iter.REQ, ALL: Iter.ALL, GE: Iter.GE, GT: Iter.GT, LE: Iter.LE, LT: Iter.LT,
};

export function iteratorOf(where: string, value: unknown): Iter | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(value.toUpperCase() in ITERATORS)) {
    throw new CappedError(`${where}: unknown iterator '${textOf(value)}' (expected one of ${Object.keys(ITERATORS).join(', ')})`,
      'ER_ITERATOR_TYPE');
  }
  return ITERATORS[value.toUpperCase() as IteratorType];
}

function isScalar(v: unknown): boolean {
  const t = typeof v;
  return t === 'number' || t === 'string' || t === 'boolean' || t === 'bigint';
}

export function checkKey(where: string, key: unknown): Key | undefined {
  if (key === undefined || key === null) return undefined;
  if (isScalar(key)) return key as Key;
  let scalars: boolean;
  try {
    scalars = isArray(key) && key.every(isScalar);
  } catch (error) {
    // A getter or a Proxy trap threw while the parts were read: the same code as when it throws
    // while they are packed (codec.ts), or inside a tuple.
    throw new CappedError(`${where}: the key cannot be read: ${textOf(error)}`, 'ER_KEY_TYPE', { cause: error });
  }
  if (scalars) return key as Key;
  throw new CappedError(`${where}: a key is a number, string, boolean or an array of them, got ${describe(key)}`, 'ER_KEY_TYPE');
}

/**
 * The parts of an index definition, read once into fresh objects: what is checked is what is
 * indexed and what index.parts reports (a getter, a Proxy or an Array subclass may answer
 * differently at a second read, or map() to something else). A read that throws is
 * ER_ILLEGAL_PARAMS.
 */
export function checkParts(where: string, parts: unknown): Part[] {
  const read = <V>(what: string, get: () => V): V => {
    try {
      return get();
    } catch (error) {
      throw new CappedError(`${where}: ${what} cannot be read: ${textOf(error)}`, 'ER_ILLEGAL_PARAMS', { cause: error });
    }
  };
  const length = isArray(parts) ? read('parts', () => parts.length) : 0;
  if (length === 0) throw illegal(`${where}: parts must be a non-empty array`);
  const out: Part[] = [];
  for (let i = 0; i < length; i++) {
    const [field, type] = read(`parts[${i}]`, (): [unknown, unknown] => {
      const p: unknown = (parts as unknown[])[i];
      if (isArray(p)) return [p[0], p[1]];
      return p !== null && typeof p === 'object' ? [ownOption(p, 'field'), ownOption(p, 'type')] : [undefined, undefined];
    });
    if (typeof field !== 'number' || !Number.isInteger(field) || field < 1 || field > 65535) {
      throw illegal(`${where}: parts[${i}].field must be a 1-based field number, got ${textOf(field)}`);
    }
    if (!FIELD_TYPES.includes(type as FieldType)) {
      throw illegal(`${where}: parts[${i}].type must be one of ${FIELD_TYPES.join(', ')}, got ${textOf(type)}`);
    }
    out.push({ field, type: type as FieldType });
  }
  return out;
}
