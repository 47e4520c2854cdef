// What a timer wake-up and a setImmediate hop cost a Node process here, beside a C program's
// sleep and wake-up: the figures behind MIN_WAKEUP_GAP (src/expirationd/scheduler.ts).
//
//   node scripts/wakeup-cost.mjs [--rounds 3]
//
// Each measure runs in a fresh child process, rounds interleaved, and the table gives medians of
// the process's CPU (getrusage: every thread, user + system) per event:
// - node setTimeout(gap): 100 timers one after the other, gap 1, 10, 50 and 200 ms, empty callbacks;
// - node setImmediate: 977 hops one after the other (the chunks of a 1M pass at scanSize 1024);
// - C nanosleep(gap): the same 100 sleeps in a C program, compiled on the fly with `cc` into the
//   temp directory (blank without a C compiler).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const GAPS = [1, 10, 50, 200];
const TIMERS = 100;
const HOPS = 977;

function child(kind, gap) {
  const start = process.cpuUsage();
  let left = kind === 'timer' ? TIMERS : HOPS;
  const done = () => {
    const c = process.cpuUsage(start);
    process.stdout.write(String((c.user + c.system) / (kind === 'timer' ? TIMERS : HOPS)));
  };
  const next = () => {
    if (--left === 0) done();
    else if (kind === 'timer') setTimeout(next, gap);
    else setImmediate(next);
  };
  if (kind === 'timer') setTimeout(next, gap);
  else setImmediate(next);
}

const C_SOURCE = `
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
static double cpu_us(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}
int main(int argc, char** argv) {
  long gap = atol(argv[1]);
  double start = cpu_us();
  for (int i = 0; i < ${TIMERS}; i++) {
    struct timespec ts = { gap / 1000, (gap % 1000) * 1000000L };
    nanosleep(&ts, NULL);
  }
  printf("%f", (cpu_us() - start) / ${TIMERS});
  return 0;
}
`;

function compileC() {
  try {
    const dir = mkdtempSync(join(tmpdir(), 'wakeup-cost-'));
    writeFileSync(join(dir, 'sleep.c'), C_SOURCE);
    execFileSync('cc', ['-O2', '-o', join(dir, 'sleep'), join(dir, 'sleep.c')], { stdio: 'ignore' });
    return join(dir, 'sleep');
  } catch {
    return undefined;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function parent() {
  const i = process.argv.indexOf('--rounds');
  const rounds = i >= 0 ? Number(process.argv[i + 1]) : 3;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('scripts/wakeup-cost.mjs: --rounds must be a whole number >= 1');
  const self = fileURLToPath(import.meta.url);
  const sleeper = compileC();
  const samples = new Map();
  const add = (key, value) => samples.set(key, [...(samples.get(key) ?? []), value]);
  for (let r = 0; r < rounds; r++) {
    for (const gap of GAPS) {
      add(`timer ${gap}`, Number(spawnSync(process.execPath, [self, '--child', 'timer', String(gap)], { encoding: 'utf8' }).stdout));
      if (sleeper) add(`c ${gap}`, Number(execFileSync(sleeper, [String(gap)], { encoding: 'utf8' })));
    }
    add('hop', Number(spawnSync(process.execPath, [self, '--child', 'hop', '0'], { encoding: 'utf8' }).stdout));
  }
  const fmt = (key) => (samples.has(key) ? median(samples.get(key)).toFixed(1) : '');
  console.log(`CPU per event, µs (medians of ${rounds} interleaved round(s), each in a fresh process)`);
  console.log('| event | Node | C |');
  console.log('|---|---:|---:|');
  for (const gap of GAPS) console.log(`| timer wake-up after a ${gap} ms sleep | ${fmt(`timer ${gap}`)} | ${fmt(`c ${gap}`)} |`);
  console.log(`| setImmediate hop (${HOPS} in a row) | ${fmt('hop')} | |`);
  if (!sleeper) console.log('(no C compiler: the C column is blank)');
}

if (process.argv[2] === '--child') child(process.argv[3], Number(process.argv[4]));
else parent();
