// The report printed on stdout: for each workload shape, one row per contender with its medians
// (and, for CPU per expired record, min–max over the runs) and its ratios to the baseline; with
// several shapes, a sweep matrix after them; then the workload, the machine and what the columns mean.
import type { Spread } from './measure.js';
import type { BenchResults, ContenderSummary, ShapeResults } from './results.js';

interface Column {
  header: string;
  align: 'left' | 'right';
  cell(s: ContenderSummary, shape: ShapeResults, r: BenchResults): string;
}

const med = (x: Spread | null | undefined): number => (x ? x.median : Number.NaN);

const COLUMNS: Column[] = [
  { header: 'contender', align: 'left', cell: (s) => s.label },
  { header: 'load ns/rec', align: 'right', cell: (s) => fmtNumber(med(s.stats?.loadNsPerTuple)) },
  { header: 'RSS B/rec', align: 'right', cell: (s) => fmtNumber(med(s.stats?.rssBytesPerTuple)) },
  {
    header: 'self B/rec',
    align: 'right',
    cell: (s) => (s.stats ? `${fmtNumber(med(s.stats.selfBytesPerTuple))} ${s.selfMemory ?? ''}`.trimEnd() : '—'),
  },
  { header: 'idle CPU/s', align: 'right', cell: (s) => (s.stats ? fmtMs(med(s.stats.idleCpuMsPerS)) : '—') },
  { header: 'detect', align: 'right', cell: (s) => (s.stats ? fmtMs(med(s.stats.detectMs)) : '—') },
  { header: 'clear', align: 'right', cell: (s) => (s.stats ? clearCell(s, med(s.stats.clearMs)) : '—') },
  { header: 'due→gone', align: 'right', cell: (s) => (s.stats ? clearCell(s, med(s.stats.dueToClearedMs)) : '—') },
  { header: 'clear CPU', align: 'right', cell: (s) => (s.stats ? fmtMs(med(s.stats.clearCpuMs)) : '—') },
  { header: 'CPU ns/expired (min–max)', align: 'right', cell: (s) => fmtSpread(s.stats?.cpuNsPerExpired ?? null) },
  { header: 'vs indexed', align: 'right', cell: (s, shape) => ratioCell(s, shape, (x) => x.cpuNsPerExpired) },
  // Stalls: the median run's, and the worst run's when it differs (one bad run is the news).
  { header: 'max stall (worst run)', align: 'right', cell: (s) => fmtWorst(s.stats?.maxPauseMs ?? null) },
  { header: '>5 ms stalls (worst run)', align: 'right', cell: (s) => fmtWorst(s.stats?.stalledMs ?? null) },
  {
    header: 'checked',
    align: 'right',
    cell: (s) => (s.stats?.checked ? Math.round(s.stats.checked.median).toLocaleString('en-US') : 'n/a'),
  },
  { header: 'check', align: 'left', cell: (s) => (s.skipped !== null ? 'skipped' : s.ok ? 'ok' : 'FAILED') },
];

/** "—" with what was left, for runs that did not clear within the window. */
function clearCell(s: ContenderSummary, ms: number): string {
  if (Number.isFinite(ms)) return fmtMs(ms);
  const left = med(s.stats?.leftFraction);
  if (!Number.isFinite(left) || left <= 0) return '—';
  return `${fmtPercent(left)} left at ${fmtMs(med(s.stats?.measuredMs))}`;
}

export function formatShape(shape: ShapeResults, r: BenchResults): string {
  const rows = shape.contenders.map((s) =>
    s.skipped !== null && s.stats === null
      ? COLUMNS.map((c, i) => (i === 0 ? s.label : i === COLUMNS.length - 1 ? 'skipped' : ''))
      : COLUMNS.map((c) => c.cell(s, shape, r)),
  );
  const widths = COLUMNS.map((c, i) => Math.max(c.header.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (COLUMNS[i]!.align === 'left' ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [
    `${shape.tuples.toLocaleString('en-US')} records, ${shape.expired.toLocaleString('en-US')} expired (${fmtPercent(shape.fraction)}):`,
    line(COLUMNS.map((c) => c.header)),
    widths.map((w) => '─'.repeat(w)).join('  '),
    ...rows.map(line),
  ];
  for (const s of shape.contenders) {
    if (s.skipped !== null) out.push(`not run: ${s.name}: ${s.skipped}`);
  }
  return out.join('\n');
}

/** Rows: contenders; columns: shapes; cells: median CPU ns per expired record (ratio to the baseline). */
export function formatSweep(r: BenchResults): string {
  const names = r.shapes[0]!.contenders.filter((c) => c.skipped === null).map((c) => c.name);
  const header = ['CPU ns/expired (× indexed)', ...r.shapes.map((s) => `${compact(s.tuples)} × ${fmtPercent(s.fraction)}`)];
  const rows = names.map((name) => {
    const label = r.shapes[0]!.contenders.find((c) => c.name === name)!.label;
    return [
      label,
      ...r.shapes.map((shape) => {
        const c = shape.contenders.find((x) => x.name === name);
        if (!c?.stats) return '—';
        const v = fmtNumber(med(c.stats.cpuNsPerExpired));
        const ratio = c.vsBaseline ? ` (${fmtRatio(c.vsBaseline.cpuNsPerExpired)})` : '';
        return `${v}${ratio}`;
      }),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function formatTable(r: BenchResults): string {
  const out: string[] = [];
  for (const shape of r.shapes) out.push(formatShape(shape, r), '');
  if (r.shapes.length > 1) out.push(formatSweep(r), '');
  const f = r.flags;
  const load = r.machine.loadAvg;
  out.push(
    `workload: records [id, 'user<id>@tarantool.io', exp] (seed ${r.workload.seed}), live TTLs ${r.workload.liveTtlSeconds} s + id % ${r.workload.ttlSpreadSeconds} s; ` +
      `scan size ${f.scanSize}, scan time ${f.scanTime} s; ${f.repeat} run${f.repeat > 1 ? 's' : ''} per contender and shape, interleaved, each in a fresh process; ` +
      `idle window ${f.idle} s, stall window ${f.pauseWindow} s, watch window ${f.window} s`,
    `machine: ${r.machine.cpuModel}, ${r.machine.cores} cores, ${(r.machine.memoryBytes / 2 ** 30).toFixed(1)} GiB; ` +
      `Node ${r.machine.node}; load average ${load.start[0]!.toFixed(2)} at the start, ${load.end[0]!.toFixed(2)} at the end; ${r.date}`,
    ...r.notes.map((n) => `note: ${n}`),
  );
  for (const shape of r.shapes) {
    if (shape.baseline === null) out.push(`note: the baseline (capped-indexed) did not run on ${shape.tuples} × ${fmtPercent(shape.fraction)}, so there are no ratios`);
    for (const s of shape.contenders) {
      for (const e of s.errors) out.push(`ERROR ${s.name} (${shape.tuples} × ${shape.fraction}): ${e}`);
    }
  }
  return `${out.join('\n')}\n`;
}

function ratioCell(s: ContenderSummary, shape: ShapeResults, pick: (x: NonNullable<ContenderSummary['vsBaseline']>) => number): string {
  if (s.name === shape.baseline) return 'baseline';
  return s.vsBaseline ? fmtRatio(pick(s.vsBaseline)) : '—';
}

export function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return '—';
  if (x >= 100) return `${Math.round(x).toLocaleString('en-US')}×`;
  if (x >= 10) return `${x.toFixed(1)}×`;
  return `${x.toFixed(2)}×`;
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

/** Three significant digits, thousands separated. */
export function fmtNumber(x: number): string {
  if (!Number.isFinite(x)) return '—';
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US');
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

/** The median, then the maximum in brackets when a run went above it. */
export function fmtWorst(x: Spread | null): string {
  if (!x) return '—';
  return x.max > x.median ? `${fmtMs(x.median)} (${fmtMs(x.max)})` : fmtMs(x.median);
}

export function fmtSpread(x: Spread | null): string {
  if (!x) return '—';
  if (x.min === x.max) return fmtNumber(x.median);
  return `${fmtNumber(x.median)} (${fmtNumber(x.min)}–${fmtNumber(x.max)})`;
}

export function fmtPercent(f: number): string {
  const p = f * 100;
  return `${p >= 10 || Number.isInteger(p) ? p.toFixed(0) : p.toFixed(1)}%`;
}

function compact(n: number): string {
  if (n >= 1e6 && n % 1e6 === 0) return `${n / 1e6}M`;
  if (n >= 1e3 && n % 1e3 === 0) return `${n / 1e3}k`;
  return n.toLocaleString('en-US');
}
