// Bits fingerprint: hashes the forward (y, rstd) and backward (dx, dweight; saved and
// recomputed rstd; with and without weight) outputs of every build (simd, simd-threads,
// scalar) and of the pool at 1 and 2 threads, on 17 shapes from 1x1 to 1x100003 (rows below,
// at and past the kernels' 16-float step and their 1024-float sum block). Every entry must be
// equal (same bits on every build and thread count); compare the line before and after a
// refactor that must not change results.
//
//   node scripts/bits-hash.mjs [repository root, default .]    (needs dist/ and wasm/ built)
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(process.argv[2] ?? '.');
const { loadRmsNorm, createPool } = await import(pathToFileURL(`${root}/dist/index.js`).href);
function rng(seed) { let s = seed >>> 0; return () => { s = (s + 0x6d2b79f5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }
const shapes = [[1, 1], [3, 7], [5, 15], [4, 16], [2, 17], [7, 63], [9, 100], [33, 256], [3, 257], [2, 1000], [65, 1024], [4, 4099], [2, 8192], [1, 8193], [1, 20000], [1, 65536], [1, 100003]];
const out = {};
for (const build of ['simd', 'simd-threads', 'scalar']) {
  const m = await loadRmsNorm(build);
  const h = createHash('sha256');
  for (const [rows, dim] of shapes) {
    const r = rng(rows * 100000 + dim);
    const x = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    const w = new Float32Array(dim).map(() => 0.5 + r());
    const dy = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    for (const wt of [w, null]) {
      const rstd = new Float32Array(rows);
      const y = m.rmsNorm(x, wt, { dim, rstd, eps: 1e-6 });
      h.update(new Uint8Array(y.buffer.slice(0))); h.update(new Uint8Array(rstd.buffer.slice(0)));
      for (const rs of [rstd, undefined]) {
        const { dx, dweight } = m.rmsNormBackward(dy, x, wt, { dim, rstd: rs, eps: 1e-6 });
        h.update(new Uint8Array(dx.buffer.slice(0))); if (dweight) h.update(new Uint8Array(dweight.buffer.slice(0)));
      }
    }
  }
  out[build] = h.digest('hex').slice(0, 16);
}
for (const threads of [1, 2]) {
  const pool = await createPool({ threads });
  const h = createHash('sha256');
  for (const [rows, dim] of shapes) {
    const r = rng(rows * 100000 + dim);
    const x = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    const w = new Float32Array(dim).map(() => 0.5 + r());
    const dy = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    for (const wt of [w, null]) {
      const rstd = new Float32Array(rows);
      const y = await pool.rmsNorm(x, wt, { dim, rstd, eps: 1e-6 });
      h.update(new Uint8Array(y.buffer.slice(0))); h.update(new Uint8Array(rstd.buffer.slice(0)));
      for (const rs of [rstd, undefined]) {
        const { dx, dweight } = await pool.rmsNormBackward(dy, x, wt, { dim, rstd: rs, eps: 1e-6 });
        h.update(new Uint8Array(dx.buffer.slice(0))); if (dweight) h.update(new Uint8Array(dweight.buffer.slice(0)));
      }
    }
  }
  out['pool' + threads] = h.digest('hex').slice(0, 16);
  await pool.destroy?.();
}
console.log(JSON.stringify(out));
process.exit(0);
