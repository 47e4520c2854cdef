// latest.svg: a self-contained chart of the results of one workload shape (the headline shape: the
// --tuples × --expired one when it ran, else the first), hand-written SVG with no dependency. Four
// horizontal bar panels (CPU ns per expired record with its min–max over the runs, due → gone,
// RSS per record, idle CPU per second), a log scale when the values span more than an order of
// magnitude, every bar labelled with its value and, where it applies, its ratio to the baseline.
import type { Spread } from './measure.js';
import type { BenchResults, ContenderSummary, Figures, ShapeResults } from './results.js';
import { fmtMs, fmtNumber, fmtPercent, fmtRatio } from './table.js';

const WIDTH = 960;
const LABEL_W = 236;
const VALUE_W = 196;
const PLOT_X = LABEL_W + 16;
const PLOT_W = WIDTH - PLOT_X - VALUE_W;
const ROW_H = 30;
const BAR_H = 18;
const FONT = "system-ui, -apple-system, 'Segoe UI', 'Helvetica Neue', Arial, sans-serif";

const COLORS = {
  text: '#1f2328',
  muted: '#656d76',
  grid: '#d8dee4',
  ours: '#0a7d6b',
  peer: '#8c96a3',
  failed: '#cf222e',
  bg: '#ffffff',
};

interface Panel {
  title: string;
  subtitle: string;
  pick: (f: Figures) => Spread | null;
  format: (v: number) => string;
  unit: string;
  /** the ratio to the baseline printed after the value */
  ratio?: (r: NonNullable<ContenderSummary['vsBaseline']>) => number;
  /** what to print when there is no value (e.g. "87% left") */
  missing?: (s: ContenderSummary) => string | null;
  /** a reference value drawn as a dashed line, with its caption */
  marker?: { value: number; caption: string };
}

const PANELS: Panel[] = [
  {
    title: 'CPU time per expired record',
    subtitle: 'CPU (user + system) from due to the last deletion ÷ expired records deleted; whisker: min–max over the runs · lower is better',
    pick: (f) => f.cpuNsPerExpired,
    format: (v) => `${fmtNumber(v)} ns`,
    unit: 'ns',
    ratio: (r) => r.cpuNsPerExpired,
  },
  {
    title: 'Due → gone',
    subtitle: 'from the moment the backlog is due to the last expired record deleted (detection + clearing) · lower is better',
    pick: (f) => f.dueToClearedMs,
    format: (v) => fmtMs(v),
    unit: 'ms',
    missing: (s) => {
      const left = s.stats?.leftFraction?.median;
      return left ? `${fmtPercent(left)} left after ${fmtMs(s.stats?.measuredMs?.median ?? Number.NaN)}` : null;
    },
  },
  {
    title: 'Idle CPU',
    subtitle: 'CPU per second with expiry running as configured and nothing due · lower is better',
    pick: (f) => f.idleCpuMsPerS,
    format: (v) => `${fmtMs(v)}/s`,
    unit: 'ms',
  },
  {
    title: 'Memory per record (RSS)',
    subtitle: 'resident-set growth over the load after a full GC, in a fresh process (Redis: the server) · lower is better',
    pick: (f) => f.rssBytesPerTuple,
    format: (v) => `${fmtNumber(v)} B`,
    unit: 'B',
    ratio: (r) => r.rssBytesPerTuple,
  },
];

/** The shape the chart shows: the --tuples × --expired one when it ran, else the first. */
export function headlineShape(r: BenchResults): ShapeResults {
  return r.shapes.find((s) => s.tuples === r.flags.tuples && s.fraction === r.flags.expired) ?? r.shapes[0]!;
}

export function renderSvg(r: BenchResults): string {
  const shape = headlineShape(r);
  const rows = shape.contenders.filter((c) => c.skipped === null);
  const parts: string[] = [];
  let y = 0;

  parts.push(text(24, (y += 34), 'capped-expirationd: clearing an expired backlog', { size: 21, weight: 700 }));
  parts.push(
    text(
      24,
      (y += 22),
      `${shape.tuples.toLocaleString('en-US')} records, ${shape.expired.toLocaleString('en-US')} expired (${fmtPercent(shape.fraction)}) · scan size ${r.flags.scanSize}, ` +
        `scan time ${r.flags.scanTime} s · median of ${r.flags.repeat} run${r.flags.repeat > 1 ? 's' : ''}`,
      { size: 13, fill: COLORS.muted },
    ),
  );
  parts.push(legend(WIDTH - 24, 34));
  y += 14;

  for (const panel of PANELS) {
    y += 26;
    parts.push(text(24, y, panel.title, { size: 16, weight: 700 }));
    parts.push(text(24, (y += 18), panel.subtitle, { size: 12, fill: COLORS.muted }));
    y += panel.marker ? 26 : 14;
    const { svg, height } = barPanel(panel, rows, shape.baseline, y);
    parts.push(svg);
    y += height;
  }

  y += 18;
  parts.push(
    text(
      24,
      y,
      `${r.machine.cpuModel} · ${r.machine.cores} cores · ${(r.machine.memoryBytes / 2 ** 30).toFixed(0)} GiB · ` +
        `Node ${r.machine.node} · ${r.date.slice(0, 16).replace('T', ' ')} UTC`,
      { size: 11, fill: COLORS.muted },
    ),
  );
  parts.push(
    text(
      24,
      (y += 16),
      '“N× indexed” compares with capped-expirationd, indexed (tuned). Every backlog comes due at once: an injected clock steps, or the caches\' short TTLs end together. Details in latest.json.',
      { size: 11, fill: COLORS.muted },
    ),
  );
  const height = y + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}">`,
    `<title>capped-expirationd benchmark: CPU per expired record, due to gone, idle CPU and memory per record</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="${COLORS.bg}"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function barPanel(panel: Panel, rows: ContenderSummary[], baseline: string | null, top: number): { svg: string; height: number } {
  const spreads = rows.map((s) => (s.stats ? panel.pick(s.stats) : null));
  const values = spreads.map((x) => (x ? x.median : Number.NaN));
  const finite = spreads.flatMap((x) => (x ? [x.median, x.max] : [])).filter((v) => Number.isFinite(v) && v > 0);
  const scale = makeScale(finite.length && panel.marker ? [...finite, panel.marker.value] : finite);
  const axisTop = top;
  const plotH = rows.length * ROW_H;
  const out: string[] = [];

  for (const t of scale.ticks) {
    const x = PLOT_X + scale.x(t) * PLOT_W;
    out.push(line(x, axisTop, x, axisTop + plotH, COLORS.grid));
    out.push(text(x, axisTop + plotH + 16, `${tickLabel(t)} ${panel.unit}`, { size: 11, fill: COLORS.muted, anchor: 'middle' }));
  }
  out.push(line(PLOT_X, axisTop, PLOT_X, axisTop + plotH, COLORS.muted));
  const m = panel.marker;
  if (m && m.value >= scale.min && scale.x(m.value) > 0.04) {
    const x = PLOT_X + scale.x(m.value) * PLOT_W;
    out.push(`<line x1="${round(x)}" y1="${round(axisTop - 3)}" x2="${round(x)}" y2="${round(axisTop + plotH)}" stroke="${COLORS.muted}" stroke-width="1" stroke-dasharray="3 3"/>`);
    out.push(text(x, axisTop - 6, m.caption, { size: 10, fill: COLORS.muted, anchor: 'middle' }));
  }
  if (scale.log) {
    out.push(text(PLOT_X + PLOT_W, axisTop + plotH + 30, 'log scale', { size: 10, fill: COLORS.muted, anchor: 'end' }));
  }

  rows.forEach((s, i) => {
    const yMid = axisTop + i * ROW_H + ROW_H / 2;
    out.push(text(LABEL_W, yMid + 4.5, s.label, { size: 13, anchor: 'end', weight: s.ours ? 700 : 400 }));
    const v = values[i]!;
    if (!s.stats || !Number.isFinite(v)) {
      const why = s.ok && panel.missing ? panel.missing(s) : null;
      out.push(
        why
          ? text(PLOT_X + 6, yMid + 4.5, why, { size: 12, fill: COLORS.muted, weight: 600 })
          : text(PLOT_X + 6, yMid + 4.5, s.ok ? 'no figure' : 'FAILED', { size: 12, fill: COLORS.failed, weight: 700 }),
      );
      return;
    }
    const len = Math.max(2, scale.x(Math.max(v, scale.min)) * PLOT_W);
    const fill = !s.ok ? COLORS.failed : s.ours ? COLORS.ours : COLORS.peer;
    out.push(
      `<rect x="${PLOT_X}" y="${(yMid - BAR_H / 2).toFixed(1)}" width="${len.toFixed(1)}" height="${BAR_H}" rx="3" fill="${fill}"/>`,
    );
    const sp = spreads[i]!;
    let end = PLOT_X + len;
    if (panel.ratio && sp.max > sp.min && sp.min > 0) {
      const x0 = PLOT_X + Math.max(0, scale.x(Math.max(sp.min, scale.min))) * PLOT_W;
      const x1 = PLOT_X + scale.x(sp.max) * PLOT_W;
      out.push(line(x0, yMid, x1, yMid, COLORS.text));
      out.push(line(x0, yMid - 4, x0, yMid + 4, COLORS.text));
      out.push(line(x1, yMid - 4, x1, yMid + 4, COLORS.text));
      end = Math.max(end, x1);
    }
    const ratio = s.name === baseline || !panel.ratio || !s.vsBaseline ? '' : `${fmtRatio(panel.ratio(s.vsBaseline))} indexed`;
    const x = round(end + 8);
    const spans = [
      `<tspan font-weight="600" fill="${s.ok ? COLORS.text : COLORS.failed}">${escapeXml(panel.format(v))}</tspan>`,
      ratio ? `<tspan dx="6" fill="${COLORS.muted}">${escapeXml(ratio)}</tspan>` : '',
      s.ok ? '' : `<tspan dx="6" font-weight="700" fill="${COLORS.failed}">FAILED</tspan>`,
    ];
    out.push(`<text x="${x}" y="${round(yMid + 4.5)}" font-size="12.5">${spans.join('')}</text>`);
  });
  return { svg: `<g>\n${out.join('\n')}\n</g>`, height: plotH + (scale.log ? 34 : 22) };
}

function legend(right: number, y: number): string {
  const items = [
    { color: COLORS.ours, label: 'capped-expirationd' },
    { color: COLORS.peer, label: 'peers' },
  ];
  const out: string[] = [];
  let x = right;
  for (const item of [...items].reverse()) {
    const w = item.label.length * 6.6;
    x -= w;
    out.push(text(x, y, item.label, { size: 12, fill: COLORS.muted }));
    x -= 18;
    out.push(`<rect x="${round(x)}" y="${round(y - 10)}" width="12" height="12" rx="2" fill="${item.color}"/>`);
    x -= 18;
  }
  return out.join('\n');
}

interface Scale {
  log: boolean;
  min: number;
  ticks: number[];
  /** 0..1 across the plot */
  x(v: number): number;
}

/** Log scale over whole decades when the values span more than 10×; otherwise linear from zero. */
export function makeScale(values: number[]): Scale {
  if (values.length === 0) return { log: false, min: 0, ticks: [0, 1], x: () => 0 };
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (hi / lo > 10) {
    const a = Math.floor(Math.log10(lo) - 0.15);
    const b = Math.ceil(Math.log10(hi) + 0.02);
    const ticks: number[] = [];
    for (let e = a; e <= b; e++) ticks.push(10 ** e);
    return {
      log: true,
      min: 10 ** a,
      ticks,
      x: (v) => (Math.log10(v) - a) / (b - a),
    };
  }
  const step = niceStep(hi / 4);
  const top = Math.ceil((hi * 1.02) / step) * step;
  const ticks: number[] = [];
  for (let t = 0; t <= top + step / 2; t += step) ticks.push(t);
  return { log: false, min: 0, ticks, x: (v) => v / top };
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

function tickLabel(v: number): string {
  if (v === 0) return '0';
  if (v >= 1e6) return `${v / 1e6}M`;
  if (v >= 1e3) return `${(v / 1e3).toLocaleString('en-US')}k`;
  if (v >= 1) return String(Math.round(v * 100) / 100);
  return String(Number(v.toPrecision(2)));
}

interface TextStyle {
  size: number;
  weight?: number;
  fill?: string;
  anchor?: 'start' | 'middle' | 'end';
}

function text(x: number, y: number, content: string, s: TextStyle): string {
  const attrs = [
    `x="${round(x)}"`,
    `y="${round(y)}"`,
    `font-size="${s.size}"`,
    s.weight && s.weight !== 400 ? `font-weight="${s.weight}"` : '',
    `fill="${s.fill ?? COLORS.text}"`,
    s.anchor && s.anchor !== 'start' ? `text-anchor="${s.anchor}"` : '',
  ].filter(Boolean);
  return `<text ${attrs.join(' ')}>${escapeXml(content)}</text>`;
}

function line(x1: number, y1: number, x2: number, y2: number, stroke: string): string {
  return `<line x1="${round(x1)}" y1="${round(y1)}" x2="${round(x2)}" y2="${round(y2)}" stroke="${stroke}" stroke-width="1"/>`;
}

function round(v: number): string {
  return String(Math.round(v * 10) / 10);
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
