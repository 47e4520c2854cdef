// bench/floor.mjs: what an empty Node process pays for the scheduling of a paced 1M pass (issue 15 floor):
// 98 timer wake-ups, 977 setImmediate hops (10 per wake-up) and the anchor bench's 10 ms poll, over 1.1 s.
//   node bench/floor.mjs all|poll|timers|hops|nopoll   (prints the whole-process CPU)
const [mode, passMs = 1100] = [process.argv[2], 1100];
const wakeups = 98, hops = 977, perWake = 10;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let w = 0, h = 0;
const useTimers = mode === 'timers' || mode === 'all' || mode === 'nopoll';
const useHops = mode === 'hops' || mode === 'all' || mode === 'nopoll';
const usePoll = mode === 'poll' || mode === 'all' || mode === 'hops' || mode === 'timers';
function wake() {
  w++;
  let k = 0;
  const hop = () => {
    h++; k++;
    if (useHops && k < perWake && h < hops) setImmediate(hop);
    else if (w < wakeups) { const t = setTimeout(wake, passMs / wakeups); if (usePoll) t.unref(); }
  };
  hop();
}
if (useTimers) setTimeout(wake, 0);
else if (useHops) { let n = 0; const f = () => { if (++n < hops) setImmediate(f); }; setImmediate(f); }
if (usePoll) while (performance.now() - t0 < passMs) await new Promise((r) => setTimeout(r, 10));
else await new Promise((r) => process.on('beforeExit', r));
const c = process.cpuUsage(cpu0);
console.log(mode, ((c.user + c.system) / 1000).toFixed(1), 'ms CPU', Math.round(performance.now() - t0), 'ms wall');
