// Fixed cost of a tiny call (1×896 forward): zero-copy views, plain arrays with out, the default call
// (library-allocated result), the layer. Median of 15 batches of 20000 calls, µs per call. Pass the
// dist/index.js of the build to measure (compare two checkouts in turn):
//   node bench/per-call.mjs dist/index.js
const dist = process.argv[2];
const lib = await import(new URL(dist, `file://${process.cwd()}/`).href);
await lib.init({ build: 'simd' });
const dim = 896;
const xb = lib.allocF32(dim), yb = lib.allocF32(dim), wb = lib.allocF32(dim);
const X = xb.view(), Y = yb.view(), W = wb.view();
for (let i = 0; i < dim; i++) { X[i] = Math.sin(i); W[i] = 1 + Math.cos(i) / 4; }
const x = X.slice(), w = W.slice(), out = new Float32Array(dim);
const layer = lib.createRmsNorm ? lib.createRmsNorm(w) : null;
const cases = {
  zc: () => lib.rmsNorm(X, W, { out: Y }),
  out: () => lib.rmsNorm(x, w, { out }),
  dflt: () => lib.rmsNorm(x, w),
  ...(layer ? { layer: () => layer.forward(x) } : {}),
};
const N = 20000;
for (const [name, f] of Object.entries(cases)) {
  for (let i = 0; i < N; i++) f();
  const med = [];
  for (let r = 0; r < 15; r++) { const t = performance.now(); for (let i = 0; i < N; i++) f(); med.push((performance.now() - t) / N * 1000); }
  med.sort((a, b) => a - b);
  process.stdout.write(`${name} ${med[7].toFixed(3)}µs  `);
}
console.log(dist);
