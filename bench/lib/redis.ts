// A private redis-server for the Redis contender, and the smallest RESP client that can load it.
//
// The server: found on PATH, started on a free loopback port with persistence off
// (--save '' --appendonly no --port N --bind 127.0.0.1), waited for with a bounded number of
// connection attempts, and stopped with SIGTERM (SIGKILL after 2 s) by stop(), and also
// synchronously when the process exits, so that no run leaves a server behind.
//
// The client: one socket; commands are RESP arrays of bulk strings; replies are parsed
// incrementally (+ - : $ *) and handed to the oldest waiting command, so a pipeline is simply many
// send() calls before the first await.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { sleep } from './measure.js';

export const REDIS_HOST = '127.0.0.1';

/** The path of redis-server on PATH, or null. */
export function findRedisServer(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, 'redis-server');
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, REDIS_HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  private stopped = false;
  private readonly onExit = (): void => {
    if (!this.stopped) this.proc.kill('SIGKILL');
  };

  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    private readonly stderr: string[],
  ) {
    process.on('exit', this.onExit);
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** Starts a private server; up to 3 attempts (a free port can be taken between probe and bind). */
  static async start(binary: string): Promise<RedisServer> {
    let lastError: Error | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const args = ['--port', String(port), '--bind', REDIS_HOST, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'];
      const proc = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      const stderr: string[] = [];
      proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
      const server = new RedisServer(proc, port, stderr);
      try {
        await server.waitReady();
        return server;
      } catch (err) {
        lastError = err as Error;
        await server.stop();
      }
    }
    throw new Error(`redis-server did not start: ${lastError?.message ?? 'unknown error'}`);
  }

  private async waitReady(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(`it exited (${this.proc.exitCode ?? this.proc.signalCode}): ${this.stderr.join('').trim()}`);
      }
      try {
        const client = await RespClient.connect(this.port);
        try {
          if ((await client.call('PING')) === 'PONG') return;
        } finally {
          client.close();
        }
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    throw new Error('no answer to PING within 5 s');
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    process.off('exit', this.onExit);
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.kill('SIGTERM');
    const killer = setTimeout(() => this.proc.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(killer);
  }
}

export type RespValue = string | number | null | RespValue[] | Error;

interface Pending {
  resolve(v: RespValue): void;
  reject(e: Error): void;
}

/** A minimal RESP2 client: call() for one command, send() + flush()-free pipelining. */
export class RespClient {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  private failed: Error | undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  static connect(port: number): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: REDIS_HOST, port });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RespClient(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends one command and returns its reply; an error reply rejects. */
  call(...args: (string | number)[]): Promise<RespValue> {
    if (this.failed) return Promise.reject(this.failed);
    const reply = new Promise<RespValue>((resolve, reject) => this.pending.push({ resolve, reject }));
    this.socket.write(encode(args));
    return reply.then((v) => {
      if (v instanceof Error) throw v;
      return v;
    });
  }

  /** Sends many commands in one write and resolves with their replies (error replies included). */
  pipeline(commands: (string | number)[][]): Promise<RespValue[]> {
    if (this.failed) return Promise.reject(this.failed);
    const replies = commands.map(() => new Promise<RespValue>((resolve, reject) => this.pending.push({ resolve, reject })));
    let text = '';
    for (const c of commands) text += encodeText(c);
    this.socket.write(text);
    return Promise.all(replies);
  }

  close(): void {
    this.socket.destroy();
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    let offset = 0;
    for (;;) {
      // Fast path for the pipelined SETs' "+OK\r\n".
      const b = this.buffer;
      if (b.length - offset >= 5 && b[offset] === 0x2b && b[offset + 1] === 0x4f && b[offset + 2] === 0x4b && b[offset + 3] === 0x0d) {
        offset += 5;
        this.pending.shift()?.resolve('OK');
        continue;
      }
      const parsed = parse(this.buffer, offset);
      if (parsed === null) break;
      offset = parsed.next;
      const p = this.pending.shift();
      if (p) p.resolve(parsed.value);
    }
    this.buffer = offset >= this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(offset);
  }
}

function encode(args: (string | number)[]): Buffer {
  return Buffer.from(encodeText(args));
}

function encodeText(args: (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (const a of args) {
    const s = String(a);
    out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  }
  return out;
}

/** Parses one reply at offset; null when the buffer does not hold a whole one yet. */
function parse(buf: Buffer, offset: number): { value: RespValue; next: number } | null {
  const eol = buf.indexOf('\r\n', offset);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[offset]!);
  const line = buf.toString('utf8', offset + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+':
      return { value: line, next: after };
    case '-':
      return { value: new Error(line), next: after };
    case ':':
      return { value: Number(line), next: after };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return null;
      return { value: buf.toString('utf8', after, after + len), next: after + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let next = after;
      for (let i = 0; i < n; i++) {
        const item = parse(buf, next);
        if (item === null) return null;
        items.push(item.value);
        next = item.next;
      }
      return { value: items, next };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}

/** A field of INFO's "key:value" lines, as a number. */
export function infoField(info: string, key: string): number {
  const m = new RegExp(`^${key}:(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : Number.NaN;
}
