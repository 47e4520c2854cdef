// The events of a Task, typed: `task.on('expired', (tuples) => ...)` gets the space's tuple
// type, and a misspelled event name (`task.on('expird', ...)`) does not compile. At run time a
// Task is a plain EventEmitter; this file only gives its listener methods their types.
import { EventEmitter } from 'node:events';
import type { TaskStats } from './task.js';

/** Event name -> listener arguments. */
export interface TaskEvents<T extends unknown[] = unknown[]> {
  /** The tuples a chunk deleted (emitted after the chunk committed; only when someone listens). */
  expired: [tuples: T[]];
  /** A pass ended; the task's stats at that moment. */
  fullScan: [stats: TaskStats];
  /**
   * A chunk or callback failed (the task goes on): a CappedError for the task's own failures,
   * otherwise whatever the callback threw (typed any, as EventEmitter's 'error' is).
   */
  error: [error: any];
}

type Listener<E, K extends keyof E> = E[K] extends unknown[] ? (...args: E[K]) => void : never;

/** EventEmitter's listener methods, restricted to the events of E. */
export interface TypedEvents<E> {
  on<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  once<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  off<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  addListener<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  removeListener<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  prependListener<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  prependOnceListener<K extends keyof E>(event: K, listener: Listener<E, K>): this;
  removeAllListeners(event?: keyof E): this;
  listenerCount(event: keyof E): number;
  listeners<K extends keyof E>(event: K): Listener<E, K>[];
}

type ListenerMethods = keyof TypedEvents<unknown>;

/** EventEmitter, with the listener methods typed by E; emit() stays untyped (the task's own). */
export type TypedEmitter<E> = Omit<EventEmitter, ListenerMethods> & TypedEvents<E>;

/** EventEmitter as the base class of a TypedEmitter<E>. */
export const TypedEmitter = EventEmitter as unknown as new <E>() => TypedEmitter<E>;
