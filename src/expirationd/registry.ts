// The registered tasks (running or stopped) by name, shared by the expirationd object and Task.
import type { Task } from './task.js';

export const tasks = new Map<string, Task>();
