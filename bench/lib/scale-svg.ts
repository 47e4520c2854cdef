// scale-latest.svg: the chart of `npm run bench:scale`, hand-written SVG with no dependency. Three
// horizontal bar panels, one bar per contender: the longest single insert, the longest event-loop
// pause in the get/set/expire mix (both on a log scale: they span three orders of magnitude) and
// bytes per entry (RSS growth). Every bar is labelled with its value.

export interface ScaleBar {
  name: string;
  longestInsertMs: number;
  mixPauseMs: number;
  bytesPerEntry: number;
}

const WIDTH = 960;
const LABEL_W = 190;
const VALUE_W = 110;
const PLOT_X = LABEL_W + 16;
const PLOT_W = WIDTH - PLOT_X - VALUE_W;
const ROW_H = 26;
const BAR_H = 16;
const FONT = "system-ui, -apple-system, 'Segoe UI', 'Helvetica Neue', Arial, sans-serif";

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface Panel {
  title: string;
  pick: (b: ScaleBar) => number;
  unit: string;
  log: boolean;
  /** the goal, drawn as a dashed line */
  goal?: number;
}

export function renderScaleSvg(bars: ScaleBar[], entries: number): string {
  const panels: Panel[] = [
    { title: 'Longest single insert (ms, log scale; goal ≤ 1 ms)', pick: (b) => b.longestInsertMs, unit: 'ms', log: true, goal: 1 },
    { title: 'Longest event-loop pause in the 10 s get/set/expire mix (ms, log scale; goal ≤ 2 ms)', pick: (b) => b.mixPauseMs, unit: 'ms', log: true, goal: 2 },
    { title: 'Bytes per entry (RSS growth; goal ≤ 70)', pick: (b) => b.bytesPerEntry, unit: 'B', log: false, goal: 70 },
  ];
  const out: string[] = [];
  let y = 40;
  out.push(`<text x="16" y="24" font-size="16" font-weight="600" fill="#1f2328">bench:scale — ${(entries / 1e6).toFixed(0)}M single inserts, then a fixed-rate mix</text>`);
  for (const p of panels) {
    const values = bars.map(p.pick).filter((v) => Number.isFinite(v) && v > 0);
    const all = p.goal !== undefined ? [...values, p.goal] : values;
    const lo = p.log ? Math.pow(10, Math.floor(Math.log10(Math.min(...all)))) : 0;
    const hi = p.log ? Math.pow(10, Math.ceil(Math.log10(Math.max(...all)))) : Math.max(...all) * 1.1;
    const x = (v: number): number => {
      if (p.log) return PLOT_X + (PLOT_W * (Math.log10(Math.max(v, lo)) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo) || 1);
      return PLOT_X + (PLOT_W * v) / (hi || 1);
    };
    y += 14;
    out.push(`<text x="16" y="${y}" font-size="13" font-weight="600" fill="#1f2328">${esc(p.title)}</text>`);
    y += 10;
    const top = y;
    for (const b of bars) {
      const v = p.pick(b);
      const ours = b.name === 'capped-expirationd';
      out.push(`<text x="${LABEL_W}" y="${y + BAR_H - 3}" font-size="12" text-anchor="end" fill="#1f2328">${esc(b.name)}</text>`);
      const w = Math.max(1, x(v) - PLOT_X);
      out.push(`<rect x="${PLOT_X}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${ours ? '#0a7d6b' : '#8c96a3'}"/>`);
      const label = p.unit === 'B' ? `${v.toFixed(0)} B` : `${v < 10 ? v.toFixed(2) : v.toFixed(0)} ms`;
      out.push(`<text x="${(PLOT_X + w + 6).toFixed(1)}" y="${y + BAR_H - 3}" font-size="12" fill="#1f2328">${label}</text>`);
      y += ROW_H;
    }
    if (p.goal !== undefined) {
      const gx = x(p.goal).toFixed(1);
      out.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${y - 6}" stroke="#cf222e" stroke-dasharray="4 3"/>`);
      out.push(`<text x="${gx}" y="${y + 6}" font-size="11" text-anchor="middle" fill="#cf222e">goal</text>`);
    }
    y += 18;
  }
  const height = y + 8;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}">\n` +
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>\n${out.join('\n')}\n</svg>\n`;
}
