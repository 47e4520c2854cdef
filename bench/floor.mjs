// bench/floor.mjs: what an empty Node process pays for the scheduling of a paced 1M pass at
// scanTime 1 (issue 15 floor): W timer wake-ups over 1.1 s, 977 setImmediate hops spread over them,
// and the anchor bench's 10 ms poll. No chunk runs: only Node's timers, immediates and poll.
//   node bench/floor.mjs all|nopoll|poll|timers|hops|idle|cold [--wakeups W] [--rounds R]
// W: 20 for the current schedule (bursts 50 ms apart), 98 for the schedule before 2026-11-26
// (k = ceil(chunks / 100)). The schedule runs R times (default 4) in the same process; the first
// round pays for compiling Node's timer code and is shown but left out of the median, as the
// anchor's child has run its timers long before its pass starts.
// `cold`: why a wake-up costs Node so much on these VMs. The wall time of one trivial call
// (process.hrtime(), Buffer.alloc(16), JSON.parse of a small object) right after a 10 ms sleep,
// against the same call back to back: every code path a wake-up touches first pays this again.
const mode = process.argv[2] ?? 'all';
const MODES = ['all', 'nopoll', 'poll', 'timers', 'hops', 'idle', 'cold'];
if (!MODES.includes(mode)) throw new Error(`bench/floor.mjs: mode must be one of ${MODES.join(', ')}, got ${mode}`);
const numberFlag = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  const n = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(n) || n < 1) throw new Error(`bench/floor.mjs: --${name} must be a positive integer`);
  return n;
};
const wakeups = numberFlag('wakeups', 20);
const rounds = numberFlag('rounds', 4);
const hops = 977;
const passMs = 1100;
const useTimers = ['all', 'nopoll', 'timers'].includes(mode);
const useHops = ['all', 'nopoll', 'hops'].includes(mode);
const usePoll = ['all', 'poll', 'timers', 'hops'].includes(mode);

/** One pass's schedule; resolves when its last wake-up ran (and, with the poll, 1.1 s passed). */
function schedule() {
  return new Promise((resolve) => {
    const perWake = Math.ceil(hops / wakeups);
    let w = 0;
    let h = 0;
    let done = !useTimers && !useHops;
    const finish = () => {
      done = true;
      if (!usePoll) resolve();
    };
    const wake = () => {
      w++;
      let k = 0;
      const hop = () => {
        h++;
        k++;
        if (useHops && k < perWake && h < hops) setImmediate(hop);
        else if (useTimers && w < wakeups) setTimeout(wake, passMs / wakeups);
        else if (useHops && h < hops) setImmediate(hop);
        else finish();
      };
      hop();
    };
    if (useTimers || useHops) setTimeout(wake, 0);
    if (usePoll || mode === 'idle') {
      const t0 = performance.now();
      const poll = () => {
        if (performance.now() - t0 >= passMs && done) resolve();
        else setTimeout(poll, usePoll ? 10 : passMs);
      };
      if (mode === 'idle') done = true;
      poll();
    }
  });
}

/** Median wall time in µs of one call of op: after a 10 ms sleep, and back to back. */
async function coldAndWarm(op) {
  const us = (t0) => Number(process.hrtime.bigint() - t0) / 1000;
  const cold = [];
  for (let i = 0; i < 61; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const t0 = process.hrtime.bigint();
    op();
    cold.push(us(t0));
  }
  const warm = [];
  for (let i = 0; i < 1001; i++) {
    const t0 = process.hrtime.bigint();
    op();
    warm.push(us(t0));
  }
  const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];
  return { cold: median(cold), warm: median(warm) };
}

if (mode === 'cold') {
  const ops = {
    'process.hrtime()': () => process.hrtime(),
    'Buffer.alloc(16)': () => Buffer.alloc(16),
    "JSON.parse('{\"a\":[1,2,3]}')": () => JSON.parse('{"a":[1,2,3]}'),
  };
  for (const [name, op] of Object.entries(ops)) {
    const { cold, warm } = await coldAndWarm(op);
    console.log(`${name}: ${cold.toFixed(1)} µs after a 10 ms sleep, ${warm.toFixed(2)} µs back to back (medians)`);
  }
  process.exit(0);
}

const cpus = [];
for (let r = 0; r < rounds; r++) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await schedule();
  const c = process.cpuUsage(cpu0);
  cpus.push((c.user + c.system) / 1000);
  console.log(`${mode} round ${r + 1}: ${cpus[r].toFixed(1)} ms CPU, ${Math.round(performance.now() - t0)} ms wall`);
}
const warm = cpus.slice(1).sort((a, b) => a - b);
const median = warm.length === 0 ? cpus[0] : warm[Math.floor(warm.length / 2)];
console.log(`${mode}, ${wakeups} wake-ups: median of the warm rounds ${median.toFixed(1)} ms CPU`);
