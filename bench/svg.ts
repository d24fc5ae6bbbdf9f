/**
 * The results chart as hand-written SVG: two panels (forward, backward), one group of bars per
 * shape, one bar per contender series, throughput in Gelem/s on a log axis, the memory roof
 * (the wasm copy's bandwidth at that op's bytes per element) as a dashed line over each group.
 * Each bar has a <title> (hover in a browser shows the exact value).
 * @module
 */
import type { Op, Row } from './types.js';

/** One bar series: which rows it takes its value from (the fastest matching one). */
interface Series {
  label: string;
  color: string;
  pick: (r: Row) => boolean;
}

const SERIES: Record<'forward' | 'backward', Series[]> = {
  forward: [
    { label: 'js-naive', color: '#b0b0b0', pick: (r) => r.contender === 'js-naive' },
    { label: 'js-optimized', color: '#6d6d6d', pick: (r) => r.contender === 'js-optimized' },
    { label: 'wasm-scalar', color: '#f4a340', pick: (r) => r.contender === 'wasm-scalar' },
    { label: 'wasm-simd (plain arrays)', color: '#7fb8e6', pick: (r) => r.contender === 'wasm-simd' },
    { label: 'wasm-simd zero-copy', color: '#1f5fa8', pick: (r) => r.contender === 'wasm-simd-zero-copy' },
    { label: 'pool (best N, zero-copy)', color: '#2e8b3e', pick: (r) => r.family === 'pool' && r.zeroCopy },
    { label: 'onnxruntime-web (best threads)', color: '#c2185b', pick: (r) => r.family === 'ort-web' },
    { label: 'onnxruntime-node (best threads)', color: '#7b3fa0', pick: (r) => r.family === 'ort-node' },
  ],
  backward: [],
};
SERIES.backward = SERIES.forward.filter((s) => !s.label.startsWith('onnxruntime'));

const W = 1200;
const PANEL_H = 330;
const LEFT = 80;
const RIGHT = 20;
const TOP = 120;
const GAP = 90;

/** `s` as text in SVG/XML (the chart modules share it). */
export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const num = (v: number) => (Math.round(v * 10) / 10).toString();

function bestOf(rows: Row[], shape: string, op: Op, pick: (r: Row) => boolean): Row | undefined {
  return rows
    .filter((r) => r.shape === shape && r.op === op && r.gelemPerS !== null && pick(r))
    .sort((a, b) => b.gelemPerS! - a.gelemPerS!)[0];
}

/** Renders the chart; `title` and `subtitle` go on top (machine, date). */
export function renderSvg(rows: Row[], shapes: string[], title: string, subtitle: string): string {
  const values = rows.filter((r) => r.gelemPerS !== null && r.gelemPerS > 0 && Number.isFinite(r.gelemPerS)).map((r) => r.gelemPerS!);
  // Axis from the largest 1/2/5×10^k below the smallest bar (with room to see it) to the
  // decade above the tallest.
  const floorNice = (v: number) => {
    const e = Math.floor(Math.log10(v));
    const m = [5, 2, 1].find((k) => k * 10 ** e <= v) ?? 1;
    return Math.log10(m * 10 ** e);
  };
  const lo = floorNice(Math.min(...values, 1) / 1.6);
  const hi = Math.ceil(Math.log10(Math.max(...values, 1) * 1.05));
  const out: string[] = [];
  const H = TOP + 2 * PANEL_H + GAP + 70;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="18" font-weight="bold">${esc(title)}</text>`,
    `<text x="${W / 2}" y="44" text-anchor="middle" font-size="12" fill="#444">${esc(subtitle)}</text>`,
  );
  // Legend, two rows.
  const all = SERIES.forward;
  const perRow = Math.ceil((all.length + 1) / 2);
  const colW = (W - LEFT - RIGHT) / perRow;
  const items: { label: string; draw: (x: number, y: number) => string }[] = all.map((s) => ({
    label: s.label,
    draw: (x, y) => `<rect x="${x}" y="${y - 10}" width="14" height="12" fill="${s.color}"/>`,
  }));
  items.push({
    label: 'memory roof: 1-thread wasm copy GB/s ÷ bytes/elem',
    draw: (x, y) => `<line x1="${x}" y1="${y - 4}" x2="${x + 14}" y2="${y - 4}" stroke="#000" stroke-width="2" stroke-dasharray="4 2"/>`,
  });
  items.forEach((it, i) => {
    const x = LEFT + (i % perRow) * colW;
    const y = 72 + Math.floor(i / perRow) * 20;
    out.push(it.draw(x, y), `<text x="${x + 20}" y="${y}">${esc(it.label)}</text>`);
  });

  (['forward', 'backward'] as const).forEach((op, p) => {
    const y0 = TOP + p * (PANEL_H + GAP);
    const plotW = W - LEFT - RIGHT;
    const yOf = (v: number) => y0 + PANEL_H - ((Math.log10(v) - lo) / (hi - lo)) * PANEL_H;
    out.push(
      `<text x="${LEFT}" y="${y0 - 8}" font-size="14" font-weight="bold">${op === 'forward' ? 'Forward (8 B/elem: read x, write y)' : 'Backward (12 B/elem: read dy, x; write dx); onnxruntime has no backward'}</text>`,
    );
    // Grid: decades solid, 2× and 5× faint.
    for (let e = Math.floor(lo); e <= hi; e++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** e;
        if (Math.log10(v) > hi + 1e-9 || Math.log10(v) < lo - 1e-9) continue;
        const y = num(yOf(v));
        out.push(`<line x1="${LEFT}" y1="${y}" x2="${W - RIGHT}" y2="${y}" stroke="${m === 1 ? '#c8c8c8' : '#ececec'}"/>`);
        if (m === 1 || hi - lo <= 4) {
          const label = v >= 1 ? String(v) : v.toPrecision(1);
          out.push(`<text x="${LEFT - 6}" y="${num(yOf(v) + 4)}" text-anchor="end" fill="${m === 1 ? '#000' : '#777'}">${label}</text>`);
        }
      }
    }
    out.push(
      `<line x1="${LEFT}" y1="${y0}" x2="${LEFT}" y2="${y0 + PANEL_H}" stroke="#000"/>`,
      `<line x1="${LEFT}" y1="${y0 + PANEL_H}" x2="${W - RIGHT}" y2="${y0 + PANEL_H}" stroke="#000"/>`,
      `<text transform="translate(22 ${y0 + PANEL_H / 2}) rotate(-90)" text-anchor="middle" font-size="13">Throughput, Gelem/s (log scale)</text>`,
    );
    const series = SERIES[op];
    const groupW = plotW / shapes.length;
    const barW = Math.min(16, (groupW * 0.84) / series.length);
    shapes.forEach((shape, g) => {
      const gx = LEFT + g * groupW + (groupW - barW * series.length) / 2;
      series.forEach((s, i) => {
        const r = bestOf(rows, shape, op, s.pick);
        if (!r) return;
        const y = yOf(r.gelemPerS!);
        const tip = `${r.contender} ${op} ${shape}: ${r.gelemPerS!.toPrecision(3)} Gelem/s, ${r.gbPerS!.toPrecision(3)} GB/s, median ${r.medianMs!.toPrecision(3)} ms`;
        out.push(
          `<rect x="${num(gx + i * barW)}" y="${num(y)}" width="${num(barW - 1)}" height="${num(y0 + PANEL_H - y)}" fill="${s.color}"><title>${esc(tip)}</title></rect>`,
        );
      });
      const copy = bestOf(rows, shape, 'copy', (r) => r.contender === 'copy');
      if (copy?.gbPerS) {
        const roof = copy.gbPerS / (op === 'forward' ? 8 : 12);
        const y = num(yOf(roof));
        out.push(
          `<line x1="${num(gx - 3)}" y1="${y}" x2="${num(gx + barW * series.length + 3)}" y2="${y}" stroke="#000" stroke-width="2" stroke-dasharray="4 2"><title>${esc(`memory roof ${shape}: ${roof.toPrecision(3)} Gelem/s`)}</title></line>`,
        );
      }
      out.push(`<text x="${num(LEFT + (g + 0.5) * groupW)}" y="${y0 + PANEL_H + 18}" text-anchor="middle" font-size="13">${esc(shape.replace('x', ' × '))}</text>`);
    });
    out.push(`<text x="${LEFT + plotW / 2}" y="${y0 + PANEL_H + 40}" text-anchor="middle" font-size="13">Shape (rows × dim)</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
