// expirationd: tasks that expire tuples of a space in paced, transactional chunks. This is the
// registry (start, kill, task, tasks, stats, killAll); options.ts checks the options, task.ts
// runs a task, scheduler.ts paces it and strategies/ decide what a chunk expires.
import { CappedError, textOf } from '../errors.js';
import type { Space } from '../space/space.js';
import { checkName } from '../validate.js';
import { configure, optionsOf, type PositionalArgs, type TaskOptions } from './options.js';
import { tasks } from './registry.js';
import { Task, type TaskStats } from './task.js';

export { Task, type TaskStats, type TaskState } from './task.js';
export type { TaskEvents } from './events.js';
export type { TaskOptions } from './options.js';

// T comes from the space alone (NoInfer): the callbacks in the options are typed by it.
function start<T extends unknown[]>(name: string, space: Space<T, any>, options?: TaskOptions<NoInfer<T>>): Task<T>;
function start<T extends unknown[]>(name: string, space: Space<T, any>, ...positional: PositionalArgs): Task<T>;
function start<T extends unknown[]>(name: string, space: Space<T, any>, ...rest: unknown[]): Task<T> {
  checkName('expirationd.start', name);
  const config = configure(space, optionsOf(rest));
  // start() kills a running task of that name only once the new one can run (Task#begin): a
  // start that fails leaves it alone.
  const task = new Task<T>(name, space, config);
  task.start();
  return task;
}

/** Stats of the named task; throws ER_NO_SUCH_TASK for an unknown name. */
function stats(name: string): TaskStats;
/** Stats of every registered task (running or stopped), by name. */
function stats(): Record<string, TaskStats>;
function stats(name?: string): TaskStats | Record<string, TaskStats>;
function stats(name?: string): TaskStats | Record<string, TaskStats> {
  if (name !== undefined) return lookup(name).stats();
  return Object.fromEntries([...tasks].map(([n, t]) => [n, t.stats()]));
}

function lookup(name: string): Task {
  const task = tasks.get(name);
  if (task === undefined) throw new CappedError(`expirationd: no task named '${textOf(name)}'`, 'ER_NO_SUCH_TASK');
  return task;
}

export const expirationd = {
  start,
  /** Kills the named task; throws ER_NO_SUCH_TASK for an unknown name. */
  kill(name: string): void {
    lookup(name).kill();
  },
  /** The named task; throws ER_NO_SUCH_TASK for an unknown name. T is taken on trust, as a cast. */
  task<T extends unknown[] = unknown[]>(name: string): Task<T> {
    return lookup(name) as Task<any> as Task<T>;
  },
  /** Names of the registered tasks, running or stopped. */
  tasks(): string[] {
    return [...tasks.keys()];
  },
  stats,
  /** Kills every task. */
  killAll(): void {
    for (const task of [...tasks.values()]) task.kill();
  },
};
