// Typed keys: what a key of an index is, worked out at compile time from the parts given to
// createIndex() and the space's tuple type. Nothing here exists at run time.
//
// A part's value type comes from its declared type ('string' -> string, 'unsigned' | 'integer' |
// 'number' -> number | bigint, 'boolean' -> boolean), narrowed by the tuple type's field when the
// space is typed and the field number is a literal (Space<[`user:${string}`, number]> and a part
// on field 1 give `user:${string}`). Parts that are not literals (a Part[] variable) give the
// untyped Key.
//
// Keys are typed only on a typed space (Space<[...]>): on an untyped one (unknown[]) they stay
// the untyped Key, as free as the run-time checks.
//
// - A single-part index's full key is the value or a one-element array of it.
// - A multi-part index's full key is the array of its part values.
// - Reads of a TREE index (select, pairs, count, min, max) also take a prefix of the full key;
//   a HASH index takes only full keys.
import type { Key } from '../native/codec.js';
import type { FieldType, IndexType, Part } from './args.js';

/** A part as createIndex takes it: `{ field, type }` or `[field, type]`. */
export type PartSpec = Part | readonly [field: number, type: FieldType];

/** The JavaScript values a part of this type holds. */
export type FieldValue<Type> =
  Type extends 'string' ? string :
  Type extends 'boolean' ? boolean :
  Type extends 'unsigned' | 'integer' | 'number' ? number | bigint :
  never;

type Field<P> = P extends readonly [infer F, unknown] ? F : P extends { field: infer F } ? F : never;
type TypeOf<P> = P extends readonly [unknown, infer Ty] ? Ty : P extends { type: infer Ty } ? Ty : never;

// The tuple's field F (1-based), when F is a literal and T says something about it.
type TupleField<T extends unknown[], F> = number extends F ? unknown
  : F extends keyof [never, ...T] ? [never, ...T][F] : unknown;

/** The key value of one part: its declared type, narrowed by the tuple type's field. */
export type PartValue<T extends unknown[], P> = [TupleField<T, Field<P>> & FieldValue<TypeOf<P>>] extends [never]
  ? FieldValue<TypeOf<P>>
  : TupleField<T, Field<P>> & FieldValue<TypeOf<P>>;

type PartValues<T extends unknown[], Ps extends readonly unknown[]> = { -readonly [I in keyof Ps]: PartValue<T, Ps[I]> };

/** The full key of an index with these parts (see the file's comment). */
export type FullKey<T extends unknown[], Ps> =
  Ps extends readonly [infer One] ? PartValue<T, One> | [PartValue<T, One>]
  : Ps extends readonly [unknown, unknown, ...unknown[]] ? PartValues<T, Ps>
  : Key;

/**
 * The key createIndex() gives an index: FullKey on a typed space, the untyped Key on an untyped
 * one (Space, or Space<unknown[]>), where keys stay as free as the run-time checks.
 */
export type IndexKey<T extends unknown[], Ps> = unknown[] extends T ? Key : FullKey<T, Ps>;

/** A key or any non-empty prefix of it: what reads of a TREE index take. */
export type KeyPrefix<K> =
  K extends readonly [infer First, ...infer Rest] ? (Rest extends [] ? First | [First] : First | [First] | PrefixTail<[First], Rest>)
  : K;
type PrefixTail<Head extends unknown[], Rest extends unknown[]> =
  Rest extends [infer Next, ...infer More] ? [...Head, Next] | PrefixTail<[...Head, Next], More> : never;

/** What reads through an index of this type take: a prefix on TREE, the full key on HASH. */
export type ReadKey<K, Type extends IndexType> = Type extends 'HASH' ? K : KeyPrefix<K>;
