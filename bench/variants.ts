/**
 * The variants against what a user would do without them, on the `simd` kernel:
 *
 * - fused residual add, forward: `rmsNorm(x, w, { residual })` (h written into `residual`)
 *   against the two steps `residual += x` then `rmsNorm(residual, w)` — on plain arrays (the
 *   default call, the add a JS loop) and on views of wasm memory (the add a v128 wasm loop);
 * - fused residual add, backward: `rmsNormBackward(dy, h, w, { dresidual, rstd })` against
 *   the plain backward followed by `dx += dresidual` (JS loop / wasm loop);
 * - pRMSNorm at partial = 6.25% against full RMSNorm (forward and backward, default call and
 *   zero-copy): the paper's speed-up comes from reading less of the row for the statistics;
 * - an int8 output with a scale per row, `rmsNorm(x, w, { outDtype: 'int8', rowScales })`,
 *   against the default call followed by the same quantization as a JS loop (max|y|, the
 *   scale, `round(y / scale)` to nearest even) into an Int8Array.
 *
 * Each pair is timed in alternating rounds (A then B, then B then A, ...) with tinybench, and
 * the figure is the median over rounds of the per-round ratio of medians, so that both sides
 * see the same machine load. Before timing, each pair's outputs are checked to have the same
 * bits (the fused kernels compute exactly the two steps' float32 operations).
 *
 * Run: `npm run bench:variants` (env ROUNDS, default 7; SHAPES, default
 * 64x4096,1024x5120,1x4096,512x896). Writes bench/results/variants.json.
 * @module
 */
import { writeBenchmarks } from './docs.js';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { timePair } from './pairs.js';
import { benchKernels } from './bench-kernels.js';
import { firstBitDiff, parseShape, randn, testRows, testWeight } from '../shared/reference.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const SHAPES = (process.env.SHAPES ?? "64x4096,1024x5120,1x4096,512x896").split(",").map((s) => parseShape(s));

const bk = await benchKernels();
const m = bk.m;

/** A pair: `fast` (the variant) against `slow` (the way without it); `check` compares outputs. */
interface Pair {
  name: string;
  slow: () => void;
  fast: () => void;
  check?: () => string | null;
}

function jsAdd(a: Float32Array, b: Float32Array): void {
  for (let i = 0; i < a.length; i++) a[i]! += b[i]!;
}

/**
 * Quantizes float32 rows `y` to int8 as the library documents it, every step in float32: per
 * row `scale = max|y| / 127` (at least 2^-126 unless 0), `q = round(y · (1 / scale))` to
 * nearest even, clamped to ±127, NaN to 0.
 */
function jsQuantInt8(y: Float32Array, rows: number, dim: number, q: Int8Array, scales: Float32Array): void {
  const f = Math.fround;
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let m = 0;
    for (let i = 0; i < dim; i++) {
      const a = Math.abs(y[o + i]!);
      if (a > m) m = a;
    }
    let s = f(m / 127);
    if (s !== 0 && s < 2 ** -126) s = 2 ** -126;
    scales[r] = s;
    const inv = s === 0 ? 0 : f(1 / s);
    for (let i = 0; i < dim; i++) {
      const v = f(y[o + i]! * inv);
      let t = Math.round(v);
      if (t - v === 0.5 && (t & 1) !== 0) t -= 1; // Math.round takes halves up: to even instead
      q[o + i] = v !== v ? 0 : Math.max(-127, Math.min(127, t));
    }
  }
}

function pairsFor(rows: number, dim: number): Pair[] {
  const n = rows * dim;
  const x = testRows(rows, dim, 1);
  const r0 = randn(n, 2, 0.5);
  const dy = randn(n, 3);
  const dh = randn(n, 4, 0.3);
  const w = testWeight(dim, 5);
  // Plain arrays: the residual stream is updated in place each call, as in a model's loop.
  const rA = r0.slice();
  const rB = r0.slice();
  const h = r0.slice();
  jsAdd(h, x);
  const rstd = new Float32Array(rows);
  m.rmsNorm(h, w, { rstd });
  // Views of wasm memory.
  const buf = (a: Float32Array) => {
    const b = m.allocF32(a.length);
    b.view().set(a);
    return b;
  };
  const [vx, vrA, vrB, vy, vdy, vdh, vh, vdx, vw, vrstd] = [x, r0, r0, x, dy, dh, h, x, w, rstd].map(buf);
  const V = () => ({
    x: vx!.view(), rA: vrA!.view(), rB: vrB!.view(), y: vy!.view(), dy: vdy!.view(), dh: vdh!.view(),
    h: vh!.view(), dx: vdx!.view(), w: vw!.view(), rstd: vrstd!.view(),
  });
  const v = V();
  const dxOut = new Float32Array(n);
  const dwOut = new Float32Array(dim);
  const dxOut2 = new Float32Array(n);
  const scalesA = new Float32Array(rows);
  const scalesB = new Float32Array(rows);
  const dwOut2 = new Float32Array(dim);
  const bits = (a: Float32Array, b: Float32Array, what: string) => (firstBitDiff(a, b) === -1 ? null : `${what} differs at ${firstBitDiff(a, b)}`);
  return [
    {
      name: 'fused add forward, default call',
      slow: () => {
        jsAdd(rA, x);
        m.rmsNorm(rA, w);
      },
      fast: () => {
        m.rmsNorm(x, w, { residual: rB });
      },
      check: () => {
        const a = r0.slice();
        const b = r0.slice();
        jsAdd(a, x);
        return bits(m.rmsNorm(a, w), m.rmsNorm(x, w, { residual: b }), 'y') ?? bits(a, b, 'h');
      },
    },
    {
      name: 'fused add forward, zero-copy',
      slow: () => {
        bk.add(v.rA, v.x, v.rA);
        m.rmsNorm(v.rA, v.w, { out: v.y });
      },
      fast: () => {
        m.rmsNorm(v.x, v.w, { residual: v.rB, out: v.y });
      },
    },
    {
      name: 'fused add backward, default call',
      slow: () => {
        const { dx } = m.rmsNormBackward(dy, h, w, { rstd });
        jsAdd(dx, dh);
      },
      fast: () => {
        m.rmsNormBackward(dy, h, w, { rstd, dresidual: dh });
      },
      check: () => {
        const a = m.rmsNormBackward(dy, h, w, { rstd });
        jsAdd(a.dx, dh);
        const b = m.rmsNormBackward(dy, h, w, { rstd, dresidual: dh });
        return bits(a.dx, b.dx, 'dx') ?? bits(a.dweight!, b.dweight!, 'dweight');
      },
    },
    {
      name: 'fused add backward, zero-copy',
      slow: () => {
        m.rmsNormBackward(v.dy, v.h, v.w, { rstd: v.rstd, dx: v.dx, dweight: dwOut });
        bk.add(v.dx, v.dh, v.dx);
      },
      fast: () => {
        m.rmsNormBackward(v.dy, v.h, v.w, { rstd: v.rstd, dx: v.dx, dweight: dwOut, dresidual: v.dh });
      },
    },
    {
      name: 'pRMSNorm 6.25% forward, default call',
      slow: () => m.rmsNorm(x, w),
      fast: () => m.rmsNorm(x, w, { partial: 0.0625 }),
    },
    {
      name: 'pRMSNorm 6.25% forward, zero-copy',
      slow: () => m.rmsNorm(v.x, v.w, { out: v.y }),
      fast: () => m.rmsNorm(v.x, v.w, { out: v.y, partial: 0.0625 }),
    },
    {
      name: 'int8 output, default call',
      slow: () => jsQuantInt8(m.rmsNorm(x, w), rows, dim, new Int8Array(n), scalesA),
      fast: () => m.rmsNorm(x, w, { outDtype: 'int8', rowScales: scalesB }),
      check: () => {
        const q = new Int8Array(n);
        jsQuantInt8(m.rmsNorm(x, w), rows, dim, q, scalesA);
        const fast = m.rmsNorm(x, w, { outDtype: 'int8', rowScales: scalesB });
        const at = q.findIndex((v, i) => v !== fast[i]);
        return at >= 0 ? `q differs at ${at}` : bits(scalesA, scalesB, 'scales');
      },
    },
    {
      name: 'pRMSNorm 6.25% backward, default call (rstd recomputed)',
      slow: () => m.rmsNormBackward(dy, x, w, { dx: dxOut, dweight: dwOut }),
      fast: () => m.rmsNormBackward(dy, x, w, { dx: dxOut2, dweight: dwOut2, partial: 0.0625 }),
    },
  ];
}

interface Row {
  shape: string;
  pair: string;
  slowUs: number;
  fastUs: number;
  speedup: number;
  iqr: [number, number];
}
const rows: Row[] = [];
console.log(`load ${os.loadavg()[0]!.toFixed(2)}, ${ROUNDS} rounds per pair`);
console.log('shape      | pair                                                | without (µs) | with (µs) | speed-up (IQR)');
for (const { rows: r, dim: d } of SHAPES) {
  const shape = `${r}x${d}`;
  for (const p of pairsFor(r, d)) {
    const bad = p.check?.();
    if (bad) throw new Error(`${shape} ${p.name}: outputs differ (${bad})`);
    const t = await timePair(p.slow, p.fast, r * d, ROUNDS);
    const row: Row = {
      shape,
      pair: p.name,
      slowUs: t.slowMs * 1000,
      fastUs: t.fastMs * 1000,
      speedup: t.ratio,
      iqr: t.iqr,
    };
    rows.push(row);
    console.log(
      `${shape.padEnd(10)} | ${p.name.padEnd(51)} | ${row.slowUs.toFixed(1).padStart(12)} | ${row.fastUs.toFixed(1).padStart(9)} | ` +
        `${row.speedup.toFixed(2)}× (${row.iqr[0].toFixed(2)}–${row.iqr[1].toFixed(2)})`,
    );
  }
}
const out = new URL('./results/variants.json', import.meta.url);
writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), cpu: os.cpus()[0]?.model ?? '', cores: os.availableParallelism(), load: os.loadavg(), node: process.version, rounds: ROUNDS, rows }, null, 2) + '\n');
console.log(`wrote ${out.pathname}`);
writeBenchmarks();
