// Progress on stderr for phases that last more than about a second: one line rewritten in place
// when stderr is a terminal, plain lines (one every few seconds, plus the end) otherwise.
import { performance } from 'node:perf_hooks';

const QUIET_MS = 1000;
const TTY_EVERY_MS = 100;
const PLAIN_EVERY_MS = 3000;

export interface ProgressOptions {
  enabled: boolean;
  /** defaults to whether stderr is a terminal */
  tty?: boolean;
  stream?: NodeJS.WritableStream;
}

export class Progress {
  private readonly enabled: boolean;
  private readonly tty: boolean;
  private readonly stream: NodeJS.WritableStream;

  constructor(o: ProgressOptions) {
    this.enabled = o.enabled;
    this.stream = o.stream ?? process.stderr;
    this.tty = o.tty ?? Boolean((this.stream as { isTTY?: boolean }).isTTY);
  }

  /** A phase of `total` units (0 when unknown); silent unless it lasts longer than about a second. */
  phase(label: string, total = 0, unit = ''): Phase {
    return new Phase(this, label, total, unit);
  }

  /** A line that is always printed (between phases). */
  line(text: string): void {
    if (this.enabled) this.stream.write(`${text}\n`);
  }

  /** @internal */
  write(text: string, inPlace: boolean): void {
    if (!this.enabled) return;
    if (this.tty && inPlace) this.stream.write(`\r\x1b[2K${text}`);
    else this.stream.write(`${this.tty ? '\r\x1b[2K' : ''}${text}\n`);
  }

  /** @internal */
  get isTty(): boolean {
    return this.tty;
  }
}

export class Phase {
  private readonly started = performance.now();
  private lastShown = 0;
  private shown = false;
  private done = 0;

  constructor(
    private readonly progress: Progress,
    private readonly label: string,
    private readonly total: number,
    private readonly unit: string,
  ) {}

  /** Records how far the phase got; prints only when due (cheap to call often). */
  update(done: number): void {
    this.done = done;
    const t = performance.now();
    if (t - this.started < QUIET_MS) return;
    if (this.shown && t - this.lastShown < (this.progress.isTty ? TTY_EVERY_MS : PLAIN_EVERY_MS)) return;
    this.lastShown = t;
    this.shown = true;
    this.progress.write(this.render(t), true);
  }

  /** Ends the phase; prints a final line if anything was shown or it lasted over a second. */
  end(done: number = this.done): void {
    this.done = done;
    const t = performance.now();
    if (!this.shown && t - this.started < QUIET_MS) return;
    this.progress.write(`${this.render(t)} done`, false);
  }

  private render(t: number): string {
    const secs = ((t - this.started) / 1000).toFixed(1);
    const count =
      this.total > 0
        ? `${this.done.toLocaleString('en-US')}/${this.total.toLocaleString('en-US')} ${this.unit}`.trimEnd()
        : this.done > 0
          ? `${this.done.toLocaleString('en-US')} ${this.unit}`.trimEnd()
          : '';
    return `  ${this.label}${count ? ` ${count}` : ''} ${secs} s`;
  }
}
