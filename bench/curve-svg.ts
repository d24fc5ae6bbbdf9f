/**
 * A rate-against-threads chart as hand-written SVG: one line per series (GB/s or a speed-up at
 * 1, 2, 4, … threads), dashed horizontal lines for references (a copy's rate, the sync call),
 * a dotted vertical line at the machine's core count. Each point has a <title> with its value.
 * @module
 */
import { esc } from './svg.js';

/** A line of the chart: y at each thread count. */
export interface CurveSeries {
  label: string;
  color: string;
  points: readonly (readonly [threads: number, y: number])[];
}

/** A horizontal reference line. */
export interface CurveRef {
  label: string;
  color: string;
  y: number;
}

const W = 760;
const H = 360;
const L = 70;
const R = 210;
const T = 50;
const B = 50;

const num = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1));

/** The chart: x is the thread count on a log2 axis, y from 0 to a little over the largest value. */
export function renderCurve(o: { title: string; subtitle: string; yLabel: string; cores: number; series: readonly CurveSeries[]; refs: readonly CurveRef[] }): string {
  const xs = [...new Set(o.series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const ys = [...o.series.flatMap((s) => s.points.map((p) => p[1])), ...o.refs.map((r) => r.y)];
  const yMax = Math.max(...ys, 1e-9) * 1.15;
  const x0 = Math.log2(xs[0] ?? 1);
  const x1 = Math.max(Math.log2(xs[xs.length - 1] ?? 2), x0 + 1);
  const px = (t: number) => L + ((Math.log2(t) - x0) / (x1 - x0)) * (W - L - R);
  const py = (y: number) => H - B - (y / yMax) * (H - T - B);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${L}" y="20" font-size="15" font-weight="bold">${esc(o.title)}</text>`,
    `<text x="${L}" y="38" fill="#555">${esc(o.subtitle)}</text>`,
  ];
  // Axes and grid.
  for (let k = 0; k <= 4; k++) {
    const y = (yMax * k) / 4;
    out.push(`<line x1="${L}" x2="${W - R}" y1="${py(y)}" y2="${py(y)}" stroke="#eee"/>`, `<text x="${L - 6}" y="${py(y) + 4}" text-anchor="end" fill="#555">${num(y)}</text>`);
  }
  for (const t of xs) out.push(`<text x="${px(t)}" y="${H - B + 16}" text-anchor="middle" fill="#555">${t}</text>`);
  out.push(
    `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#999"/>`,
    `<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">threads</text>`,
    `<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  if (o.cores >= (xs[0] ?? 1) && o.cores <= (xs[xs.length - 1] ?? 1)) {
    out.push(`<line x1="${px(o.cores)}" x2="${px(o.cores)}" y1="${T}" y2="${H - B}" stroke="#888" stroke-dasharray="2 3"/>`, `<text x="${px(o.cores) + 4}" y="${T + 10}" fill="#888">${o.cores} cores</text>`);
  }
  let ly = T + 4;
  const legend = (label: string, color: string, dashed: boolean) => {
    out.push(`<line x1="${W - R + 12}" x2="${W - R + 36}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dashed ? ' stroke-dasharray="6 4"' : ''}/>`, `<text x="${W - R + 42}" y="${ly + 4}">${esc(label)}</text>`);
    ly += 18;
  };
  for (const r of o.refs) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${py(r.y)}" y2="${py(r.y)}" stroke="${r.color}" stroke-width="1.5" stroke-dasharray="6 4"><title>${esc(r.label)}: ${num(r.y)}</title></line>`);
    legend(`${r.label} (${num(r.y)})`, r.color, true);
  }
  for (const s of o.series) {
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map(([t, y]) => `${px(t).toFixed(1)},${py(y).toFixed(1)}`).join(' ')}"/>`);
    for (const [t, y] of pts) out.push(`<circle cx="${px(t).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3.5" fill="${s.color}"><title>${esc(s.label)}, ${t} threads: ${num(y)}</title></circle>`);
    legend(s.label, s.color, false);
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
