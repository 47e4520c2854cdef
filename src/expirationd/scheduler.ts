// The scheduler: when a task's next chunk runs. It knows nothing of how a chunk decides expiry.
//
// Pacing: after each chunk the task waits
//   chunkDelay = min(scanSize * scanTime / (itIndex.len() + 1), iterationDelay) seconds,
// so a full pass over N tuples takes about scanTime; after the chunk that ends a pass it waits
// chunkDelay + fullScanDelay. (Without the chunkDelay there, an early-break task whose passes
// end at once would spin when fullScanDelay is 0.)
//
// Timers: inside a pass, a wait under 1 ms is a setImmediate, so the event loop still runs
// between chunks; it is ref'd, because libuv does not wake up for an unref'd immediate (it would
// wait for some other event), so a pass at sub-millisecond pacing keeps the process alive until
// it ends. Every other wait, and every wait between passes (at least 1 ms), is a setTimeout,
// unref'd unless keepAlive: an idle task never keeps the process alive.
import type { Config } from './options.js';

/** Seconds to wait after a chunk that did not end a pass. */
export function chunkDelay(config: Config): number {
  const { scanSize, scanTime, iterationDelay, it } = config;
  return Math.min(scanSize * scanTime / (it.len() + 1), iterationDelay);
}

/** One pending wake-up at a time; cancel() makes sure the pending one never runs. */
export class Scheduler {
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private isImmediate = false;

  constructor(private readonly keepAlive: boolean) {}

  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** `betweenPasses`: the wait may be long-lived, so it is always an unref'able timer. */
  schedule(seconds: number, betweenPasses: boolean, run: () => void): void {
    this.cancel();
    const wake = () => {
      this.timer = undefined;
      run();
    };
    const ms = seconds * 1000;
    this.isImmediate = ms < 1 && !betweenPasses;
    if (this.isImmediate) {
      this.timer = setImmediate(wake);
    } else {
      this.timer = setTimeout(wake, Math.max(ms, 1));
      if (!this.keepAlive) this.timer.unref();
    }
  }

  cancel(): void {
    if (this.timer === undefined) return;
    if (this.isImmediate) clearImmediate(this.timer as NodeJS.Immediate);
    else clearTimeout(this.timer as NodeJS.Timeout);
    this.timer = undefined;
  }
}
