// Works around a deadlock in Node 20 itself, not in the addon (nodejs/node#54918): a worker
// thread whose event loop ends waits in NodePlatform::DrainTasks for its background tasks, while
// a concurrent TurboFan job of that worker's isolate waits in
// CollectionBarrier::AwaitCollectionBackground for a garbage collection that only the waiting
// thread could run. Neither moves again and the worker never exits. Two workers that exit by
// themselves hung this way within 14 to 119 runs, in each of three loops here
// (test/workers.test.ts; seen in CI, reproduced with gdb showing exactly those two stacks).
// Without concurrent recompilation, the isolates created afterwards compile on their own thread
// and the cycle cannot form: two loops of 400 runs exited. Applications that end workers the
// same way can pass --no-concurrent-recompilation to node.
'use strict';
require('node:v8').setFlagsFromString('--no-concurrent-recompilation');
