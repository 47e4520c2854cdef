// The report printed on stdout: one row per contender with its medians and its ratios to the
// baseline, followed by the workload, the machine and what the columns mean.
import type { BenchResults, ContenderSummary } from './results.js';

interface Column {
  header: string;
  align: 'left' | 'right';
  cell(s: ContenderSummary, r: BenchResults): string;
}

const COLUMNS: Column[] = [
  { header: 'contender', align: 'left', cell: (s) => s.label },
  { header: 'load ns/tuple', align: 'right', cell: (s) => (s.median ? fmtNumber(s.median.loadNsPerTuple) : '—') },
  {
    header: 'memory B/tuple',
    align: 'right',
    cell: (s) => (s.median ? `${fmtNumber(s.median.memoryBytesPerTuple)} ${s.memoryKind}` : '—'),
  },
  { header: 'clear wall', align: 'right', cell: (s) => (s.median ? fmtMs(s.median.clearWallMs) : '—') },
  { header: 'clear CPU', align: 'right', cell: (s) => (s.median ? fmtMs(s.median.clearCpuMs) : '—') },
  { header: 'CPU ns/expired', align: 'right', cell: (s) => (s.median ? fmtNumber(s.median.cpuNsPerExpired) : '—') },
  {
    header: 'checked',
    align: 'right',
    cell: (s) => (s.median?.checked != null ? Math.round(s.median.checked).toLocaleString('en-US') : 'n/a'),
  },
  { header: 'max pause', align: 'right', cell: (s) => (s.median ? fmtMs(s.median.maxPauseMs) : '—') },
  { header: 'p99 pause', align: 'right', cell: (s) => (s.median ? fmtMs(s.median.p99PauseMs) : '—') },
  {
    header: 'CPU/expired vs indexed',
    align: 'right',
    cell: (s, r) => ratioCell(s, r, (x) => x.cpuNsPerExpired),
  },
  { header: 'max pause vs indexed', align: 'right', cell: (s, r) => ratioCell(s, r, (x) => x.maxPauseMs) },
  { header: 'check', align: 'left', cell: (s) => (s.ok ? 'ok' : 'FAILED') },
];

export function formatTable(r: BenchResults): string {
  const rows = r.contenders.map((s) => COLUMNS.map((c) => c.cell(s, r)));
  const widths = COLUMNS.map((c, i) => Math.max(c.header.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (COLUMNS[i]!.align === 'left' ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [line(COLUMNS.map((c) => c.header)), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)];

  const w = r.workload;
  const f = r.flags;
  out.push(
    '',
    `workload: ${w.tuples.toLocaleString('en-US')} tuples [id, 'user<id>@tarantool.io', exp], ` +
      `${w.expired.toLocaleString('en-US')} expired (seed ${w.seed}), scan size ${f.scanSize}, scan time ${f.scanTime} s; ` +
      `median of ${f.repeat} run${f.repeat > 1 ? 's' : ''}, each in a fresh process`,
    `machine: ${r.machine.cpuModel}, ${r.machine.cores} cores, ${(r.machine.memoryBytes / 2 ** 30).toFixed(1)} GiB; ` +
      `Node ${r.machine.node}; ${r.date}`,
    ...r.notes.map((n) => `note: ${n}`),
  );
  if (r.baseline === null) out.push('note: the baseline (capped-indexed) did not run, so there are no ratios');
  for (const s of r.contenders) {
    for (const e of s.errors) out.push(`ERROR ${s.name}: ${e}`);
  }
  return `${out.join('\n')}\n`;
}

function ratioCell(s: ContenderSummary, r: BenchResults, pick: (x: NonNullable<ContenderSummary['vsBaseline']>) => number): string {
  if (s.name === r.baseline) return 'baseline';
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
