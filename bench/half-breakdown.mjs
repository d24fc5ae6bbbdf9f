// Where the time of a zero-copy forward goes, float32 against bfloat16 and float16, at
// 4096 rows × 4096 (simd build, the raw kernel, one row per call so that each row can be
// pointed at fresh or at cached memory):
//   stream     x and y walk through 64 MiB (float32) / 32 MiB (halves), as a real call does
//   y cached   x streams, every row written to one cached row (reads from memory only)
//   x cached   every row read from one cached row, y streams (writes to memory only)
//   cached     one row in, one row out: the compute alone
// If memory transfers overlapped the compute, `stream` would be near the larger of `cached`
// and the memory time; on the machine this was written on it is near their sum.
//   npm run build && node bench/half-breakdown.mjs     (median of 9 runs of 4096 calls each, ms)
import { readFileSync } from 'node:fs';
import { callBlock } from './raw-call.mjs';

const base = new URL('../wasm/simd/', import.meta.url);
const glue = await import(new URL('rmsnorm_wasm.js', base).href);
const ex = glue.initSync({ module: new WebAssembly.Module(readFileSync(new URL('rmsnorm_wasm_bg.wasm', base))) });
const rows = 4096, dim = 4096, n = rows * dim;
const x = ex.alloc_f32(n), y = ex.alloc_f32(n), w = ex.alloc_f32(dim), rs = ex.alloc_f32(rows);
const xRow = ex.alloc_f32(dim), yRow = ex.alloc_f32(dim);
console.log('dtype     | stream | y cached | x cached | cached (ms)');
for (const [name, dt, size] of [['float32', 0, 4], ['bfloat16', 2, 2], ['float16', 1, 2]]) {
  const F = new Float32Array(ex.memory.buffer);
  for (let i = 0; i < n; i++) F[x / 4 + i] = Math.sin(i);
  for (let i = 0; i < dim; i++) { F[w / 4 + i] = 1 + Math.cos(i) / 4; F[xRow / 4 + i] = Math.cos(i); }
  if (dt) { (ex.narrow ?? ex.narrow_half)(x, x, n, dt); (ex.narrow ?? ex.narrow_half)(xRow, xRow, dim, dt); }
  const call = callBlock(ex, 'forward', { dim, dtypes: dt }, { weight: w, rstd: rs });
  const run = (xOf, yOf) => () => {
    for (let r = 0; r < rows; r++) {
      call.set('x', xOf(r));
      call.set('y', yOf(r));
      call.run(1);
    }
  };
  const at = (p) => (r) => p + r * dim * size;
  const fixed = (p) => () => p;
  const cases = [run(at(x), at(y)), run(at(x), fixed(yRow)), run(fixed(xRow), at(y)), run(fixed(xRow), fixed(yRow))];
  const ms = cases.map((f) => {
    const t = [];
    for (let k = 0; k < 9; k++) { const s = performance.now(); f(); t.push(performance.now() - s); }
    return t.sort((a, b) => a - b)[4];
  });
  console.log(`${name.padEnd(9)} | ${ms.map((v, i) => v.toFixed(1).padStart([6, 8, 8, 6][i])).join(' | ')}`);
}
