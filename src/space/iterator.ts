// The lazy iterator that pairs() returns: one native cursor step per next(). The cursor stays
// valid while the space changes between steps; return() (a `break` out of for...of) lets it go.
import type { NativeCursor } from '../native/loader.js';
import { decodeOne, scratchBuffer, type Tuple } from '../native/codec.js';
import type { TtlClock } from './ttl.js';

export class TupleIterator<T extends unknown[] = Tuple> implements IterableIterator<T> {
  private cursor: NativeCursor | undefined;
  /** A TTL space's clock: read at every step, so no tuple that expired meanwhile is returned. */
  private readonly clock: TtlClock | undefined;

  constructor(cursor: NativeCursor, clock?: TtlClock) {
    this.cursor = cursor;
    this.clock = clock;
  }

  next(): IteratorResult<T> {
    if (this.cursor === undefined) return { done: true, value: undefined };
    let tuple: Tuple | undefined;
    if (this.clock === undefined) tuple = decodeOne(this.cursor.next(scratchBuffer()));
    else {
      const now = this.clock.read();  // user code: before the scratch Buffer is taken
      if (this.cursor === undefined) return { done: true, value: undefined };
      // No now (the wall clock, which the addon reads): the call a plain space's step makes.
      tuple = decodeOne(now === undefined ? this.cursor.next(scratchBuffer()) : this.cursor.next(scratchBuffer(), now));
    }
    if (tuple === undefined) {
      this.cursor = undefined;
      return { done: true, value: undefined };
    }
    return { done: false, value: tuple as T };
  }

  return(): IteratorResult<T> {
    this.cursor = undefined;
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this;
  }
}
