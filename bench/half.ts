/**
 * Half-precision storage against float32 and against what a user would write
 * without it, on the build init() picks (`simd-relaxed` where the engine has relaxed SIMD, else
 * `simd`; env BUILD names another):
 *
 * - bfloat16 / float16 against float32, same shape (so the ratio of times is the ratio of
 *   elements per second): forward and backward, zero-copy (views of wasm memory, outputs
 *   given) and the default call (plain arrays, results allocated by the library);
 * - the default call on half data against the plain-JS way: convert the bits to a
 *   Float32Array, normalize with the naive loop, convert back (round to nearest even);
 * - the zero-copy bfloat16 and float16 forwards against the hand-written two-pass kernels of
 *   each (bench/roofs/roofs.wat: the same loads, arithmetic and rounding, nothing else), and
 *   those kernels against their float32 twin (what the half bytes give the roof itself).
 *
 * Each pair is timed in alternating rounds (A then B, then B then A, ...) with tinybench; the
 * figure is the median over rounds of the per-round ratio of medians, so both sides see the
 * same machine load. Before timing, the half results are checked against the float32 path
 * rounded (forward: within one half ulp).
 *
 * Run: `npm run bench:half` (env ROUNDS, default 5; SHAPES, default 4096x4096,1024x5120,64x4096;
 * BUILD). With relaxed SIMD on Node 20: `npx tsx --experimental-wasm-relaxed-simd bench/half.ts`.
 * Writes bench/results/half.json.
 * @module
 */
import { writeBenchmarks } from './docs.js';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { timePair } from './pairs.js';
import { roofs } from './roofs.js';
import { loadRmsNorm, type Build } from '../dist/index.js';
import { fromF32Array, halfUlpDiff, parseShape, testRows, testWeight, toF32Array } from '../shared/reference.js';

type Half = 'bfloat16' | 'float16';
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SHAPES = (process.env.SHAPES ?? '4096x4096,1024x5120,64x4096').split(',').map((s) => parseShape(s));

/** Shapes too big for the plain-JS comparison (it would take minutes). */
const BIG = new Set(['4096x4096', '1024x5120']);

const m = await loadRmsNorm(process.env.BUILD as Build | undefined);
const roof = await roofs();

/** The roof pairs of one shape and half type (`xh`: `x32` in that type, float32 `w`), in the roofs' own memory. */
function roofPairs(rows: number, dim: number, x32: Float32Array, w32: Float32Array, dtype: Half, xh: Uint16Array): Pair[] {
  const n = rows * dim;
  const [x, w, y, bx, by] = [roof.alloc(4 * n), roof.alloc(4 * dim), roof.alloc(4 * n), roof.alloc(2 * n), roof.alloc(2 * n)];
  roof.f32(x, n).set(x32);
  roof.f32(w, dim).set(w32);
  roof.u16(bx, n).set(xh);
  const [hx, hw, hy] = [m.allocU16(n), m.allocF32(dim), m.allocU16(n)];
  hx.view().set(xh);
  hw.view().set(w32);
  const o = { dtype, weightDtype: 'float32' as const };
  const hand = dtype === 'bfloat16' ? roof.k.fwd_bf16 : roof.k.fwd_f16;
  return [
    {
      name: `${dtype} forward ÷ hand-written`,
      slow: () => hand(bx, w, by, rows, dim, 1e-6),
      fast: () => m.rmsNorm(hx.view(), hw.view(), { ...o, out: hy.view() }),
    },
    {
      name: `hand-written: ${dtype} ÷ float32`,
      slow: () => roof.k.fwd_f32(x, w, y, rows, dim, 1e-6),
      fast: () => hand(bx, w, by, rows, dim, 1e-6),
    },
  ];
}

// --- The plain-JS way: what a user writes without half support. ---
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function jsToF32(bits: Uint16Array, dtype: Half, out: Float32Array): Float32Array {
  const o = new Uint32Array(out.buffer, out.byteOffset, out.length);
  if (dtype === 'bfloat16') {
    for (let i = 0; i < bits.length; i++) o[i] = bits[i]! << 16;
  } else {
    for (let i = 0; i < bits.length; i++) {
      const h = bits[i]!;
      const s = (h & 0x8000) << 16;
      const e = (h >> 10) & 0x1f;
      const f = h & 0x3ff;
      if (e === 0) out[i] = (s ? -1 : 1) * f * 2 ** -24;
      else if (e === 31) o[i] = s | 0x7f800000 | (f << 13);
      else o[i] = s | ((e + 112) << 23) | (f << 13);
    }
  }
  return out;
}
function jsFromF32(a: Float32Array, dtype: Half, out: Uint16Array): Uint16Array {
  for (let i = 0; i < a.length; i++) {
    f32[0] = a[i]!;
    const b = u32[0]!;
    if (dtype === 'bfloat16') {
      out[i] = a[i] !== a[i] ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
    } else {
      const s = (b >>> 16) & 0x8000;
      const x = b & 0x7fffffff;
      let h: number;
      if (x > 0x7f800000) h = 0x7e00;
      else if (x >= 0x47800000) h = 0x7c00;
      else if (x < 0x38800000) {
        f32[0] = Math.abs(a[i]!) + 0.5;
        h = u32[0]! - 0x3f000000;
      } else h = (x - 0x38000000 + 0xfff + ((x >>> 13) & 1)) >>> 13;
      out[i] = s | h;
    }
  }
  return out;
}
function jsNorm(x: Float32Array, w: Float32Array, dim: number, y: Float32Array): void {
  for (let r = 0; r < x.length; r += dim) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[r + i]! * x[r + i]!;
    const rs = 1 / Math.sqrt(ss / dim + 1e-6);
    for (let i = 0; i < dim; i++) y[r + i] = x[r + i]! * rs * w[i]!;
  }
}

interface Pair {
  name: string;
  /** The baseline (float32, or plain JS). */
  slow: () => void;
  fast: () => void;
}

function pairsFor(rows: number, dim: number): Pair[] {
  const n = rows * dim;
  const x32 = testRows(rows, dim, 1);
  const dy32 = testRows(rows, dim, 2);
  const w32 = testWeight(dim, 3);
  const pairs: Pair[] = [];
  const view32 = (a: Float32Array) => {
    const b = m.allocF32(a.length);
    b.view().set(a);
    return b;
  };
  const view16 = (a: Uint16Array) => {
    const b = m.allocU16(a.length);
    b.view().set(a);
    return b;
  };
  const rstd32 = new Float32Array(rows);
  m.rmsNorm(x32, w32, { rstd: rstd32 });
  const [bx, by, bdy, bdx, bw, brs] = [x32, x32, dy32, dy32, w32, rstd32].map(view32);
  const dw32 = new Float32Array(dim);
  roof.reset(); // the roofs' memory, for this shape's arrays of both half types
  for (const dtype of ['bfloat16', 'float16'] as const) {
    const x = fromF32Array(x32, dtype);
    const dy = fromF32Array(dy32, dtype);
    const w = fromF32Array(w32, dtype);
    const o = { dtype };
    // Checked once: the half forward is the float32 one rounded, within one half ulp.
    const y = m.rmsNorm(x, w, o);
    const yRef = fromF32Array(Float32Array.from(m.rmsNorm(toF32Array(x, dtype), toF32Array(w, dtype))), dtype);
    for (let i = 0; i < n; i += 97) {
      if (halfUlpDiff(y[i]!, yRef[i]!, dtype) > 1) throw new Error(`${dtype} ${rows}x${dim}: y[${i}] is off by more than 1 ulp`);
    }
    const [hx, hy, hdy, hdx, hw] = [x, x, dy, dy, w].map(view16);
    const dw16 = new Uint16Array(dim);
    const rs = new Float32Array(rows);
    pairs.push(
      {
        name: `${dtype} forward zero-copy`,
        slow: () => m.rmsNorm(bx!.view(), bw!.view(), { out: by!.view() }),
        fast: () => m.rmsNorm(hx!.view(), hw!.view(), { out: hy!.view(), dtype }),
      },
      {
        name: `${dtype} backward zero-copy`,
        slow: () => m.rmsNormBackward(bdy!.view(), bx!.view(), bw!.view(), { rstd: brs!.view(), dx: bdx!.view(), dweight: dw32 }),
        fast: () => m.rmsNormBackward(hdy!.view(), hx!.view(), hw!.view(), { rstd: brs!.view(), dx: hdx!.view(), dweight: dw16, dtype }),
      },
      {
        name: `${dtype} forward default call`,
        slow: () => m.rmsNorm(x32, w32),
        fast: () => m.rmsNorm(x, w, o),
      },
      {
        name: `${dtype} backward default call`,
        slow: () => m.rmsNormBackward(dy32, x32, w32, { rstd: rs }),
        fast: () => m.rmsNormBackward(dy, x, w, { rstd: rs, dtype }),
      },
    );
    // The roofs take rows of a multiple of 4 halves (fwd_f16).
    if (dim % 4 === 0) pairs.push(...roofPairs(rows, dim, x32, w32, dtype, x));
    if (!BIG.has(`${rows}x${dim}`)) {
      pairs.push({
        name: `${dtype} default call vs plain JS`,
        slow: () => {
          const xf = jsToF32(x, dtype, new Float32Array(n));
          const wf = jsToF32(w, dtype, new Float32Array(dim));
          const yf = new Float32Array(n);
          jsNorm(xf, wf, dim, yf);
          jsFromF32(yf, dtype, new Uint16Array(n));
        },
        fast: () => m.rmsNorm(x, w, o),
      });
    }
  }
  return pairs;
}

interface Row {
  shape: string;
  pair: string;
  baselineUs: number;
  halfUs: number;
  ratio: number;
  iqr: [number, number];
}
const out: Row[] = [];
console.log(`build ${m.build}, load ${os.loadavg()[0]!.toFixed(2)}, ${ROUNDS} rounds per pair; ratio = baseline time / half time`);
console.log('shape      | pair                                  | baseline (µs) | half (µs) | ratio (IQR)');
for (const { rows, dim } of SHAPES) {
  const shape = `${rows}x${dim}`;
  for (const p of pairsFor(rows, dim)) {
    const t = await timePair(p.slow, p.fast, rows * dim, ROUNDS);
    const name = p.name;
    const row: Row = {
      shape,
      pair: name,
      baselineUs: t.slowMs * 1000,
      halfUs: t.fastMs * 1000,
      ratio: t.ratio,
      iqr: t.iqr,
    };
    out.push(row);
    console.log(
      `${shape.padEnd(10)} | ${name.padEnd(37)} | ${row.baselineUs.toFixed(1).padStart(13)} | ${row.halfUs.toFixed(1).padStart(9)} | ` +
        `${row.ratio.toFixed(2)}× (${row.iqr[0].toFixed(2)}–${row.iqr[1].toFixed(2)})`,
    );
  }
}
writeFileSync(
  new URL('./results/half.json', import.meta.url),
  JSON.stringify({ date: new Date().toISOString(), cpu: os.cpus()[0]?.model ?? '', cores: os.availableParallelism(), build: m.build, node: process.version, load: os.loadavg()[0], rounds: ROUNDS, rows: out }, null, 2) + '\n',
);
writeBenchmarks();
