// The lazy iterator that pairs() returns: one native cursor step per next(). The cursor stays
// valid while the space changes between steps; return() (a `break` out of for...of) lets it go.
import type { NativeCursor } from '../native/loader.js';
import { decodeOne, scratchBuffer, type Tuple } from '../native/codec.js';

export class TupleIterator implements IterableIterator<Tuple> {
  private cursor: NativeCursor | undefined;

  constructor(cursor: NativeCursor) {
    this.cursor = cursor;
  }

  next(): IteratorResult<Tuple> {
    if (this.cursor === undefined) return { done: true, value: undefined };
    const tuple = decodeOne(this.cursor.next(scratchBuffer()));
    if (tuple === undefined) {
      this.cursor = undefined;
      return { done: true, value: undefined };
    }
    return { done: false, value: tuple };
  }

  return(): IteratorResult<Tuple> {
    this.cursor = undefined;
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): IterableIterator<Tuple> {
    return this;
  }
}
