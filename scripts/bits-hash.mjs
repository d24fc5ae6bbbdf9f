// Bits fingerprint: hashes the forward (y, rstd) and backward (dx, dweight; saved and
// recomputed rstd; with and without weight) outputs of every build this engine runs (simd,
// simd-threads, scalar; simd-relaxed and simd-relaxed-threads where it has relaxed SIMD, e.g.
// node --experimental-wasm-relaxed-simd on Node 20) and of the pool at 1 and 2 threads, on 17 shapes from 1x1 to 1x100003 (rows below,
// at and past the kernels' 16-float step and their 1024-float sum block). Every entry must be
// equal (same bits on every build and thread count); compare the line before and after a
// refactor that must not change results.
//
//   node scripts/bits-hash.mjs [repository root, default .]    (needs dist/ and wasm/ built)
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(process.argv[2] ?? '.');
const { loadRmsNorm, createPool, relaxedSimdSupported } = await import(pathToFileURL(`${root}/dist/index.js`).href);
const { rng } = await import(pathToFileURL(`${root}/shared/reference.js`).href);
const shapes = [[1, 1], [3, 7], [5, 15], [4, 16], [2, 17], [7, 63], [9, 100], [33, 256], [3, 257], [2, 1000], [65, 1024], [4, 4099], [2, 8192], [1, 8193], [1, 20000], [1, 65536], [1, 100003]];

/** Hash of every output of `m` (the sync API of one build, or a pool: awaited either way) over the shapes. */
async function fingerprint(m) {
  const h = createHash('sha256');
  const add = (a) => h.update(new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength)));
  for (const [rows, dim] of shapes) {
    const r = rng(rows * 100000 + dim);
    const x = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    const w = new Float32Array(dim).map(() => 0.5 + r());
    const dy = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    for (const wt of [w, null]) {
      const rstd = new Float32Array(rows);
      add(await m.rmsNorm(x, wt, { dim, rstd, eps: 1e-6 }));
      add(rstd);
      for (const rs of [rstd, undefined]) {
        const { dx, dweight } = await m.rmsNormBackward(dy, x, wt, { dim, rstd: rs, eps: 1e-6 });
        add(dx);
        if (dweight) add(dweight);
      }
    }
  }
  return h.digest('hex').slice(0, 16);
}

const out = {};
const relaxed = relaxedSimdSupported() ? ['simd-relaxed', 'simd-relaxed-threads'] : [];
for (const build of ['simd', 'simd-threads', ...relaxed, 'scalar']) out[build] = await fingerprint(await loadRmsNorm(build));
for (const threads of [1, 2]) {
  const pool = await createPool({ threads });
  out['pool' + threads] = await fingerprint(pool);
  await pool.destroy();
}
console.log(JSON.stringify(out));
process.exit(0);
