/**
 * How big the sync API's window (placement/placer.ts, SYNC_WINDOW_FLOATS) should be, and which build's
 * memory makes plain-array calls fastest. For each window size, the plain-array forward and
 * backward (outputs given, and the forward's result allocated by the library) against the
 * zero-copy call on views, at small to large shapes; medians of interleaved runs, so the
 * ratios in one table compare like with like on a noisy machine.
 *
 * Run: `npm run bench:window` (after `npm run build`).
 * @module
 */
import { loadWasm } from '../dist/glue/load.js';
import type { Build } from '../dist/index.js';
import { RmsNorm } from '../dist/rmsnorm.js';
import { rng, uniform } from '../shared/reference.js';

/** Median wall time (µs) of `f` over about `budgetMs` after a warm-up. */
function median(f: () => unknown, budgetMs = 250): number {
  const t0 = performance.now();
  for (let i = 0; performance.now() - t0 < budgetMs / 5 || i < 3; i++) f();
  const t: number[] = [];
  const t1 = performance.now();
  while ((performance.now() - t1 < budgetMs && t.length < 20000) || t.length < 7) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[t.length >> 1]! * 1000;
}

/** `n` floats uniform in [-1, 1) from `seed` (shared/reference.js; the timings do not depend on the values). */
function inputs(n: number, seed: number): Float32Array {
  return uniform(rng(seed), n, -1, 1);
}

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const shapes: [number, number][] = quick
  ? [[64, 4096], [512, 4096]]
  : [[1, 896], [64, 4096], [512, 4096], [1024, 5120], [4096, 4096]];
const windows = quick ? [1 << 14, 1 << 16, 1 << 18] : [1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20];
const builds: Build[] = ['simd', 'simd-threads'];

for (const build of builds) {
  const wasm = await loadWasm(build);
  console.log(`\n## build ${build} (Node ${process.version}) — µs per call, median; GB/s of the forward's x + y`);
  console.log('window KiB | shape      | zero-copy fwd | plain fwd (out) | plain fwd (new y) | zero-copy bwd | plain bwd (out) | fwd plain/zc | bwd plain/zc');
  for (const [rows, dim] of shapes) {
    const n = rows * dim;
    const x = inputs(n, 1);
    const dy = inputs(n, 2);
    const w = inputs(dim, 3);
    const y = new Float32Array(n);
    const dx = new Float32Array(n);
    const dw = new Float32Array(dim);
    for (const floats of windows) {
      const m = new RmsNorm(wasm, floats);
      // zero-copy views in this instance's memory (allocated after the window)
      const bufs = [n, n, n, n, dim, dim].map((k) => m.allocF32(k));
      const v = () => bufs.map((b) => b.view());
      const [vx, vdy, vy, vdx, vw, vdw] = v() as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
      vx.set(x);
      vdy.set(dy);
      vw.set(w);
      const zf = median(() => m.rmsNorm(vx, vw, { out: vy }));
      const pf = median(() => m.rmsNorm(x, w, { out: y }));
      const nf = median(() => m.rmsNorm(x, w));
      const zb = median(() => m.rmsNormBackward(vdy, vx, vw, { dx: vdx, dweight: vdw }));
      const pb = median(() => m.rmsNormBackward(dy, x, w, { dx, dweight: dw }));
      for (const b of bufs) b.free();
      const gbs = (us: number) => ((8 * n) / us / 1e3).toFixed(1);
      console.log(
        `${String(floats / 256).padStart(10)} | ${`${rows}×${dim}`.padEnd(10)} | ` +
          `${zf.toFixed(1).padStart(8)} ${gbs(zf).padStart(4)} | ${pf.toFixed(1).padStart(10)} ${gbs(pf).padStart(4)} | ` +
          `${nf.toFixed(1).padStart(12)} ${gbs(nf).padStart(4)} | ${zb.toFixed(1).padStart(13)} | ${pb.toFixed(1).padStart(15)} | ` +
          `${(zf / pf).toFixed(2).padStart(12)} | ${(zb / pb).toFixed(2).padStart(12)}`,
      );
    }
  }
}
