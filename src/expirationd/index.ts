// expirationd: tasks that expire tuples of a space in paced, transactional chunks. This is the
// registry (start, kill, task, tasks, stats, killAll); options.ts checks the options, task.ts
// runs a task, scheduler.ts paces it and strategies/ decide what a chunk expires.
import { CappedError } from '../errors.js';
import type { Space } from '../space/space.js';
import { checkName } from '../validate.js';
import { configure, optionsOf, type PositionalArgs, type TaskOptions } from './options.js';
import { tasks } from './registry.js';
import { Task, type TaskStats } from './task.js';

export { Task, type TaskStats } from './task.js';
export type { TaskOptions } from './options.js';

function start(name: string, space: Space, options?: TaskOptions): Task;
function start(name: string, space: Space, ...positional: PositionalArgs): Task;
function start(name: string, space: Space, ...rest: unknown[]): Task {
  checkName('expirationd.start', name);
  const config = configure(space, optionsOf(rest));
  tasks.get(name)?.kill();
  const task = new Task(name, space, config);
  task.start();
  return task;
}

function lookup(name: string): Task {
  const task = tasks.get(name);
  if (task === undefined) throw new CappedError(`expirationd: no task named '${String(name)}'`, 'ER_NO_SUCH_TASK');
  return task;
}

export const expirationd = {
  start,
  /** Stops the named task; throws ER_NO_SUCH_TASK for an unknown name. */
  kill(name: string): void {
    lookup(name).kill();
  },
  /** The named task; throws ER_NO_SUCH_TASK for an unknown name. */
  task(name: string): Task {
    return lookup(name);
  },
  /** Names of the registered tasks, running or stopped. */
  tasks(): string[] {
    return [...tasks.keys()];
  },
  /** Stats of one task, or of every registered task (running or stopped) by name. */
  stats(name?: string): TaskStats | Record<string, TaskStats> {
    if (name !== undefined) return lookup(name).stats();
    return Object.fromEntries([...tasks].map(([n, t]) => [n, t.stats()]));
  },
  /** Kills every task. */
  killAll(): void {
    for (const task of [...tasks.values()]) task.kill();
  },
};
