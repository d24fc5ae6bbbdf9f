// A/B timing of the public calls of two checkouts of this package (e.g. before and after a
// change), in one process: what users get, through the whole TypeScript path — the default call
// (a new result each time), a call with `out` given, the zero-copy call on views of wasm memory,
// and the default backward. Per round, a batch of calls on A then on B (the order swapped every
// round), so both see the same machine load; prints per call and shape the median of the
// per-round B/A speed ratios (above 1: B is faster) and their interquartile range. Run it with
// A = B first to see the machine's noise.
//
//   npm run build && node --experimental-wasm-relaxed-simd bench/ab-api.mjs <checkout A> [checkout B (default: this one)]
//   env: SHAPES (rows×dim list, default 1x896,1x4096,64x4096), ROUNDS (31)
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const here = resolve(new URL('..', import.meta.url).pathname);
const [dirA, dirB = here] = process.argv.slice(2);
if (!dirA) throw new Error('usage: node bench/ab-api.mjs <checkout A> [checkout B]');
const load = async (dir) => {
  const lib = await import(pathToFileURL(resolve(dir, 'dist/index.js')).href);
  await lib.init();
  return lib;
};
const libs = [await load(dirA), await load(dirB)];
const shapes = (process.env.SHAPES ?? '1x896,1x4096,64x4096').split(',').map((t) => t.split('x').map(Number));
const ROUNDS = Number(process.env.ROUNDS ?? 31);
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const quantile = (a, p) => [...a].sort((u, v) => u - v)[Math.floor(p * (a.length - 1))];

console.log(`A ${dirA}\nB ${dirB}\n(B/A speed: median of ${ROUNDS} rounds [interquartile range])`);
for (const [rows, dim] of shapes) {
  const n = rows * dim;
  // About 4 MiB of data per batch, at least 20 calls.
  const batch = Math.max(20, Math.floor(2 ** 20 / n));
  const x = Float32Array.from({ length: n }, rand);
  const w = Float32Array.from({ length: dim }, () => 1 + rand() / 2);
  const dy = Float32Array.from({ length: n }, rand);
  const out = new Float32Array(n);
  const calls = libs.map((lib) => {
    const [bx, bw, by] = [lib.allocF32(n), lib.allocF32(dim), lib.allocF32(n)];
    bx.view().set(x);
    bw.view().set(w);
    return {
      'default call': () => lib.rmsNorm(x, w),
      'out given': () => lib.rmsNorm(x, w, { out }),
      'zero-copy': () => lib.rmsNorm(bx.view(), bw.view(), { out: by.view() }),
      'backward, default': () => lib.rmsNormBackward(dy, x, w),
    };
  });
  for (const name of Object.keys(calls[0])) {
    const time = (k) => {
      const f = calls[k][name];
      const t0 = performance.now();
      for (let i = 0; i < batch; i++) f();
      return performance.now() - t0;
    };
    time(0);
    time(1);
    const ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      const [first, second] = r % 2 ? [1, 0] : [0, 1];
      const t = [];
      t[first] = time(first);
      t[second] = time(second);
      ratios.push(t[0] / t[1]);
    }
    const f = (v) => v.toFixed(3);
    console.log(`${`${rows}x${dim}`.padEnd(9)} ${name.padEnd(18)} ${f(quantile(ratios, 0.5))} [${f(quantile(ratios, 0.25))}, ${f(quantile(ratios, 0.75))}]`);
  }
}
