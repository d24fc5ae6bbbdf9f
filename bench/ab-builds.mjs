// A/B timing of two builds of the crate (e.g. before and after a kernel change): raw kernel
// calls on wasm memory, in one process. Per round, a batch of 20 calls on A then on B (the
// order swapped every round), so both see the same machine load; prints the median of the
// per-round B/A time ratios and their interquartile range. Run it with A = B first to see the
// machine's noise. The forward writes rstd; the backward has a weight and recomputes rstd.
//
//   npm run build && node bench/ab-builds.mjs <wasm dir A> <wasm dir B> [build]     (build: simd by default)
//   env: TOTAL floats per call (2^18), DIMS (512,1024,2048,4096,8192), or SHAPES (rows×dim
//        list, e.g. 1x4096,64x4096: instead of TOTAL and DIMS), ROUNDS (41),
//        DTYPE of x, dy, y, dx (float32, or bfloat16 / float16 for builds with half precision)
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { callBlock, layoutOf } from './raw-call.mjs';

const [dirA, dirB, build = 'simd'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node bench/ab-builds.mjs <wasm dir A> <wasm dir B> [build]');
async function load(dir) {
  const base = resolve(dir, build);
  const glue = await import(pathToFileURL(`${base}/rmsnorm_wasm.js`).href);
  return glue.initSync({ module: new WebAssembly.Module(readFileSync(`${base}/rmsnorm_wasm_bg.wasm`)) });
}
const inst = [await load(dirA), await load(dirB)];
// Each build's call block as its own commit lays it out.
const layouts = [await layoutOf(dirA), await layoutOf(dirB)];
const total = Number(process.env.TOTAL ?? 2 ** 18);
const dims = (process.env.DIMS ?? '512,1024,2048,4096,8192').split(',').map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 41);
const BATCH = 20;
const DT = { float32: 0, float16: 1, bfloat16: 2 }[process.env.DTYPE ?? 'float32'];
if (DT === undefined) throw new Error(`DTYPE: float32, float16 or bfloat16, not ${process.env.DTYPE}`);
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const quantile = (a, p) => [...a].sort((u, v) => u - v)[Math.floor(p * (a.length - 1))];

const shapes = process.env.SHAPES
  ? process.env.SHAPES.split(',').map((t) => t.split('x').map(Number))
  : dims.map((dim) => [Math.max(1, Math.floor(total / dim)), dim]);
for (const [rows, dim] of shapes) {
  const calls = inst.map((ex, k) => {
    const n = rows * dim;
    // One arena, the arrays at the same offsets from a 64 KiB boundary in both modules (each
    // a page and 256 bytes past the end of the one before: arrays that start a multiple of
    // 4 KiB apart alias in the store buffer), so that A and B differ only in their code.
    const lens = [n, n, dim, n, n, rows, dim, 3 * dim]; // work: the dweight sum (f64) and the open block
    const gap = (len) => Math.ceil((4 * len) / 4096) * 4096 + 4096 + 256;
    const arena = ex.alloc_f32((lens.reduce((a, l) => a + gap(l), 0) + 65536) / 4);
    let at = Math.ceil(arena / 65536) * 65536;
    const [x, y, w, dy, dx, rs, dw, work] = lens.map((len) => {
      const a = at;
      at += gap(len);
      return a;
    });
    const F = new Float32Array(ex.memory.buffer);
    seed = 1; // the same inputs for A and B
    for (let i = 0; i < n; i++) { F[x / 4 + i] = rand(); F[dy / 4 + i] = rand(); }
    for (let i = 0; i < dim; i++) F[w / 4 + i] = 1 + rand() / 2;
    // Half data: the same values rounded, in place (each half lands at or before the float it
    // came from, so the front-to-back narrowing never reads what it wrote).
    if (DT) for (const p of [x, dy]) (ex.narrow ?? ex.narrow_half)(p, p, n, DT);
    // Builds with the positional ABI (before the call block): A/B across that change.
    if (ex.rms_norm_forward.length === 12) {
      return {
        forward: () => ex.rms_norm_forward(x, 0, w, y, 0, rs, rows, dim, 1e-6, 0, dim, DT),
        backward: () => ex.rms_norm_backward(dy, x, w, 0, 0, dx, dw, work, rows, dim, 1e-6, 0, dim, 0, rows, DT),
      };
    }
    const f = callBlock(ex, 'forward', { dim, dtypes: DT }, { x, weight: w, y, rstd: rs }, layouts[k]);
    const b = callBlock(ex, 'backward', { dim, dtypes: DT }, { dy, x, weight: w, dx, dweight: dw, work }, layouts[k]);
    return { forward: () => f.run(rows), backward: () => b.run(rows) };
  });
  for (const op of ['forward', 'backward']) {
    const time = (k) => {
      const f = calls[k][op];
      const t0 = performance.now();
      for (let i = 0; i < BATCH; i++) if (f() !== 0) throw new Error(`${op}: kernel status`);
      return performance.now() - t0;
    };
    for (let i = 0; i < 5; i++) { time(0); time(1); } // warm-up
    const ratios = [];
    const timesA = [];
    for (let k = 0; k < ROUNDS; k++) {
      const [a, b] = k % 2 ? [time(0), time(1)] : ((bb) => [time(0), bb])(time(1));
      ratios.push(b / a);
      timesA.push(a / BATCH);
    }
    console.log(`${op} ${rows}x${dim}: A ${(quantile(timesA, 0.5) * 1000).toFixed(1)} µs/call, B/A median ${quantile(ratios, 0.5).toFixed(3)} (IQR ${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)})`);
  }
}
