/**
 * The derived columns (×naive, % of copy), the per-shape tables, the goals of issues 2 and 4
 * with met/missed verdicts, the RMSNorm-vs-LayerNorm saving, and the closing summary.
 *
 * Bytes model (GB/s column): compulsory traffic per element of the `rows × dim` matrix.
 * forward: read x, write y = 8 B; backward: read dy and x, write dx = 12 B; copy: read and
 * write = 8 B; layernorm: 8 B. The gain and bias (dim floats) are ignored; so are the extra
 * reads of kernels that take two passes over a row and the copies through scratch of the
 * plain-array paths (those are what the zero-copy rows avoid).
 * @module
 */
import { shapeName } from './data.js';
import type { Op, Row, Shape } from './types.js';

/** The roof each op is measured against (contenders/roofs.ts). */
const ROOF: Partial<Record<Op, string>> = { forward: 'roof-two-pass', backward: 'roof-two-pass', copy: 'roof-copy' };

/** Fills vsNaive (js-naive median ÷ row median, same op and shape), pctOfCopy and pctOfRoof. */
export function derive(rows: Row[]): void {
  const find = (shape: string, op: Op, name: string) =>
    rows.find((r) => r.shape === shape && r.op === op && r.contender === name && r.medianMs !== null);
  for (const r of rows) {
    if (r.medianMs === null) continue;
    const naive = r.op === 'forward' || r.op === 'backward' ? find(r.shape, r.op, 'js-naive') : undefined;
    r.vsNaive = naive ? naive.medianMs! / r.medianMs : null;
    const copy = find(r.shape, 'copy', 'copy');
    r.pctOfCopy = copy?.gbPerS && r.gbPerS ? (100 * r.gbPerS) / copy.gbPerS : null;
    const roof = ROOF[r.op] ? find(r.shape, r.op, ROOF[r.op]!) : undefined;
    r.pctOfRoof = roof?.gbPerS && r.gbPerS ? (100 * r.gbPerS) / roof.gbPerS : null;
  }
}

function fmtTime(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  return `${ms.toPrecision(3)} ms`;
}

function fmt(v: number | null, digits = 3, suffix = ''): string {
  if (v === null || !Number.isFinite(v)) return '-';
  return v >= 1000 ? `${Math.round(v)}${suffix}` : `${v.toPrecision(digits)}${suffix}`;
}

/** One line per measured task, for progress on stderr. */
export function progressLine(r: Row): string {
  const status = r.error ? `ERROR ${r.error}` : r.check.passed ? 'ok' : `CHECK FAILED ${r.check.detail ?? ''}`;
  const t = r.medianMs === null ? '' : `${fmtTime(r.medianMs)} ±${fmt(r.rmePct, 2)}%`;
  return `  [${r.shape}] ${r.op.padEnd(9)} ${r.contender.padEnd(30)} ${t.padEnd(20)} ${status}`;
}

function pad(cells: string[][]): string {
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells
    .map((row) => row.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
    .join('\n');
}

const OP_ORDER: Op[] = ['forward', 'backward', 'layernorm', 'copy'];

/** The table of one shape: every row, grouped by op. */
export function shapeTable(rows: Row[], shape: string): string {
  const head = ['op', 'contender', 'thr', 'median', 'Gelem/s', 'GB/s', '×naive', '%copy', '%roof', '±rme', 'check'];
  const body = OP_ORDER.flatMap((op) =>
    rows
      .filter((r) => r.shape === shape && r.op === op)
      .map((r) => [
        r.op,
        r.contender,
        String(r.threads),
        fmtTime(r.medianMs),
        fmt(r.gelemPerS),
        fmt(r.gbPerS),
        r.vsNaive === null ? '-' : `${fmt(r.vsNaive)}×`,
        r.pctOfCopy === null ? '-' : `${fmt(r.pctOfCopy, 3)}%`,
        r.pctOfRoof == null ? '-' : `${fmt(r.pctOfRoof, 3)}%`,
        r.rmePct === null ? '-' : `${fmt(r.rmePct, 2)}%`,
        r.error ? 'error' : r.check.passed ? `ok ${r.check.maxAbsErr.toExponential(0)}` : 'FAILED',
      ]),
  );
  return pad([head, ...body]);
}

/** One comparison of two contenders, per shape: how many times faster the first is. */
export interface Comparison {
  id: string;
  /** What is compared with what, as a reader of the results would ask it. */
  text: string;
  /** Per shape where both were timed: `ratio` = the second's median ÷ the first's (> 1: the first is faster). */
  shapes: { shape: string; ratio: number; of: string; vs: string }[];
}

type Median = (shape: string, op: Op, pred: (r: Row) => boolean) => Row | undefined;

/** The fastest timed row of `op` at `shape` that satisfies `pred`. */
function fastest(rows: Row[]): Median {
  return (shape, op, pred) =>
    rows
      .filter((r) => r.shape === shape && r.op === op && r.medianMs !== null && pred(r))
      .sort((a, b) => a.medianMs! - b.medianMs!)[0];
}

const named = (name: string) => (r: Row) => r.contender === name;

/** `num`'s speed over `den`'s (den median ÷ num median) at each shape where both were timed. */
function compare(id: string, text: string, shapes: string[], pick: (shape: string) => { num?: Row; den?: Row }): Comparison {
  const out: Comparison['shapes'] = [];
  for (const shape of shapes) {
    const { num, den } = pick(shape);
    if (num && den) out.push({ shape, ratio: den.medianMs! / num.medianMs!, of: num.contender, vs: den.contender });
  }
  return { id, text, shapes: out };
}

/** The comparisons a reader of the results makes, from the call most users make to the fastest. */
export function comparisons(rows: Row[], shapes: Shape[]): Comparison[] {
  const best = fastest(rows);
  const all = shapes.map(shapeName);
  const syncOrPool = (r: Row) => (r.family === 'wasm' && r.contender !== 'wasm-scalar') || r.family === 'pool';
  const ortWeb = (r: Row) => r.family === 'ort-web';
  const ortNode = (r: Row) => r.family === 'ort-node';
  const fwd = (s: string, p: (r: Row) => boolean) => best(s, 'forward', p);
  const bwd = (s: string, p: (r: Row) => boolean) => best(s, 'backward', p);
  const c = (id: string, text: string, pick: (s: string) => { num?: Row; den?: Row }) => compare(id, text, all, pick);
  return [
    c('default-js', 'the default call (rmsNorm(x, w): a new result) ÷ the plain JS loop into a new array (js-naive-new), forward', (s) => ({ num: fwd(s, named('wasm-default')), den: fwd(s, named('js-naive-new')) })),
    c('default-ort-node', 'the default call ÷ onnxruntime-node (its best thread count), forward', (s) => ({ num: fwd(s, named('wasm-default')), den: fwd(s, ortNode) })),
    c('default-ort-web', 'the default call ÷ onnxruntime-web (its best thread count), forward', (s) => ({ num: fwd(s, named('wasm-default')), den: fwd(s, ortWeb) })),
    c('layer-js', 'the layer (createRmsNorm(w).forward(x)) ÷ js-naive, forward', (s) => ({ num: fwd(s, named('wasm-layer')), den: fwd(s, named('js-naive')) })),
    c('zc-js', 'zero-copy ÷ js-naive, forward', (s) => ({ num: fwd(s, named('wasm-simd-zero-copy')), den: fwd(s, named('js-naive')) })),
    c('zc-js-optimized', 'zero-copy ÷ js-optimized, forward', (s) => ({ num: fwd(s, named('wasm-simd-zero-copy')), den: fwd(s, named('js-optimized')) })),
    c('zc-js-bwd', 'zero-copy ÷ js-naive, backward', (s) => ({ num: bwd(s, named('wasm-simd-zero-copy')), den: bwd(s, named('js-naive')) })),
    c('best-ort-web', 'the fastest wasm call (one thread or the pool) ÷ onnxruntime-web (its best), forward', (s) => ({ num: fwd(s, syncOrPool), den: fwd(s, ortWeb) })),
    c('best-ort-node', 'the fastest wasm call ÷ onnxruntime-node (its best), forward', (s) => ({ num: fwd(s, syncOrPool), den: fwd(s, ortNode) })),
    c('plain-zc-fwd', 'plain arrays with out given ÷ zero-copy, forward (below 1: what copying costs)', (s) => ({ num: fwd(s, named('wasm-simd')), den: fwd(s, named('wasm-simd-zero-copy')) })),
    c('plain-zc-bwd', 'plain arrays with out given ÷ zero-copy, backward', (s) => ({ num: bwd(s, named('wasm-simd')), den: bwd(s, named('wasm-simd-zero-copy')) })),
    c('zc-copy', 'zero-copy forward ÷ the in-wasm copy of the same bytes (1: as fast as a copy)', (s) => ({ num: fwd(s, named('wasm-simd-zero-copy')), den: best(s, 'copy', named('copy')) })),
    c('zc-roof', 'zero-copy forward ÷ the hand-written two-pass kernel (1: as fast as the roof)', (s) => ({ num: fwd(s, named('wasm-simd-zero-copy')), den: fwd(s, named('roof-two-pass')) })),
    c('zc-roof-bwd', 'zero-copy backward ÷ the hand-written two-pass backward', (s) => ({ num: bwd(s, named('wasm-simd-zero-copy')), den: bwd(s, named('roof-two-pass')) })),
    c('zc-rten', 'zero-copy ÷ rten-vecmath (Rust, +simd128), forward', (s) => ({ num: fwd(s, named('wasm-simd-zero-copy')), den: fwd(s, named('rten-vecmath')) })),
    c('copy-roof', 'the bench build\'s copy loop ÷ the hand-written v128 copy', (s) => ({ num: best(s, 'copy', named('copy')), den: best(s, 'copy', named('roof-copy')) })),
  ];
}

/** RMSNorm's saving over LayerNorm, same wasm SIMD zero-copy path: `1 − t_rms / t_ln`. */
export interface LayerNormSaving {
  shape: string;
  rmsMs: number;
  layerNormMs: number;
  /** Percent of LayerNorm's time that RMSNorm saves. */
  savingPct: number;
}

/** The saving per shape where both were timed. */
export function layerNormSavings(rows: Row[], shapes: Shape[]): LayerNormSaving[] {
  const best = fastest(rows);
  return shapes.flatMap((sh) => {
    const s = shapeName(sh);
    const rms = best(s, 'forward', named('wasm-simd-zero-copy'));
    const ln = best(s, 'layernorm', () => true);
    if (!rms || !ln) return [];
    return [{ shape: s, rmsMs: rms.medianMs!, layerNormMs: ln.medianMs!, savingPct: 100 * (1 - rms.medianMs! / ln.medianMs!) }];
  });
}

/** The closing paragraph: the check, the comparisons, the LayerNorm saving, what was left out. */
export function summary(rows: Row[], cs: Comparison[], ln: LayerNormSaving[], notes: string[]): string {
  const failed = rows.filter((r) => !r.check.passed || r.error);
  const parts: string[] = [];
  const checked = rows.length - failed.length;
  parts.push(
    failed.length === 0
      ? `All ${rows.length} contender×shape rows passed the float64 check (|err| ≤ 1e-4 + 1e-4·|ref|) before timing.`
      : `${checked} of ${rows.length} rows passed the float64 check; failed or errored: ${failed.map((r) => `${r.op} ${r.contender} @${r.shape}`).join(', ')}.`,
  );
  for (const c of cs) {
    if (c.shapes.length) parts.push(`${c.text[0]!.toUpperCase()}${c.text.slice(1)}: ${c.shapes.map((x) => `${x.shape} ${x.ratio.toFixed(2)}×`).join(', ')}.`);
  }
  if (ln.length) {
    const lo = Math.min(...ln.map((l) => l.savingPct));
    const hi = Math.max(...ln.map((l) => l.savingPct));
    parts.push(
      `RMSNorm vs LayerNorm (same wasm SIMD zero-copy path): RMSNorm saves ${lo.toFixed(0)}%–${hi.toFixed(0)}% of LayerNorm's time ` +
        `(${ln.map((l) => `${l.shape} ${l.savingPct.toFixed(0)}%`).join(', ')}).`,
    );
  }
  parts.push(...notes);
  return parts.join(' ');
}
