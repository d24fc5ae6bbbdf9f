// Fixed cost of a call, against the raw kernel and against plain JavaScript. For each shape
// (rows×dim; default 1×896 8×1024 64×4096) and direction, µs per call (median of 15 batches):
//   raw     the wasm export called directly on views of wasm memory (no checks, no placement)
//   zc      rmsNorm on views of wasm memory with `out` given (the zero-copy path)
//   layer   createRmsNorm(w).forward / .backward on plain arrays
//   out     rmsNorm on plain arrays with `out` given
//   default rmsNorm(x, w) / rmsNormBackward(dy, x, w): the library allocates the results
//   js      the plain-JavaScript loop a user would write, allocating its results
// and the ratios users compare. Pass the dist/index.js of the build to measure:
//   npm run build && node bench/per-call.mjs dist/index.js [1x896 8x1024 ...]
import { callBlock } from './raw-call.mjs';

const dist = process.argv[2] ?? 'dist/index.js';
const shapes = (process.argv.length > 3 ? process.argv.slice(3) : ['1x896', '8x1024', '64x4096']).map((s) => s.split('x').map(Number));
const lib = await import(new URL(dist, `file://${process.cwd()}/`).href);
await lib.init({ build: 'simd' });
const raw = await import(new URL('load.js', new URL(dist, `file://${process.cwd()}/`)).href).then((m) => m.loadWasm('simd'));
const k = raw.exports;

function jsForward(x, w, dim, eps = 1e-6) {
  const y = new Float32Array(x.length);
  for (let o = 0; o < x.length; o += dim) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[o + i] * x[o + i];
    const r = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) y[o + i] = x[o + i] * r * w[i];
  }
  return y;
}
function jsBackward(dy, x, w, dim, eps = 1e-6) {
  const dx = new Float32Array(x.length);
  const dw = new Float32Array(dim);
  for (let o = 0; o < x.length; o += dim) {
    let ss = 0, c = 0;
    for (let i = 0; i < dim; i++) { ss += x[o + i] * x[o + i]; c += dy[o + i] * w[i] * x[o + i]; }
    const r = 1 / Math.sqrt(ss / dim + eps);
    const b = (r * r * r * c) / dim;
    for (let i = 0; i < dim; i++) { dx[o + i] = r * dy[o + i] * w[i] - b * x[o + i]; dw[i] += dy[o + i] * x[o + i] * r; }
  }
  return { dx, dweight: dw };
}

function time(f, n) {
  for (let i = 0; i < n; i++) f();
  const med = [];
  for (let r = 0; r < 15; r++) {
    const t = performance.now();
    for (let i = 0; i < n; i++) f();
    med.push(((performance.now() - t) / n) * 1000);
  }
  return med.sort((a, b) => a - b)[7];
}

for (const [rows, dim] of shapes) {
  const n = rows * dim;
  const buf = (len) => lib.allocF32(len);
  const [xb, yb, wb, dyb, dxb, dwb] = [buf(n), buf(n), buf(dim), buf(n), buf(n), buf(dim)];
  // Everything that allocates wasm memory before the views are made: growth detaches them.
  const layer = lib.createRmsNorm(new Float32Array(dim));
  const [rx, ry, rw, rdy, rdx, rdw, rwork] = [n, n, dim, n, n, dim, 3 * dim].map((len) => k.alloc_f32(len));
  const X = xb.view(), Y = yb.view(), W = wb.view(), DY = dyb.view(), DX = dxb.view(), DW = dwb.view();
  for (let i = 0; i < n; i++) { X[i] = Math.sin(i); DY[i] = Math.cos(i * 0.7); }
  for (let i = 0; i < dim; i++) W[i] = 1 + Math.cos(i) / 4;
  const x = X.slice(), w = W.slice(), dy = DY.slice(), out = new Float32Array(n);
  // the raw export's operands: the same values at addresses of its own
  const f32 = (addr, len) => new Float32Array(raw.memory.buffer, addr, len);
  f32(rx, n).set(x);
  f32(rw, dim).set(w);
  f32(rdy, n).set(dy);
  layer.setWeight(w);
  const N = Math.max(20, Math.round(20000 / Math.max(1, n / 896)));
  const rawF = callBlock(k, 'forward', { dim }, { x: rx, weight: rw, y: ry });
  const rawB = callBlock(k, 'backward', { dim }, { dy: rdy, x: rx, weight: rw, dx: rdx, dweight: rdw, work: rwork });
  const fwd = {
    raw: () => rawF.run(rows),
    zc: () => lib.rmsNorm(X, W, { out: Y }),
    layer: () => layer.forward(x),
    out: () => lib.rmsNorm(x, w, { out }),
    default: () => lib.rmsNorm(x, w),
    js: () => jsForward(x, w, dim),
  };
  const bwd = {
    raw: () => rawB.run(rows),
    zc: () => lib.rmsNormBackward(DY, X, W, { dx: DX, dweight: DW }),
    layer: () => layer.backward(dy, x),
    out: () => lib.rmsNormBackward(dy, x, w, { dx: out, dweight: new Float32Array(dim) }),
    default: () => lib.rmsNormBackward(dy, x, w),
    js: () => jsBackward(dy, x, w, dim),
  };
  for (const [dir, cases] of [['forward', fwd], ['backward', bwd]]) {
    const t = Object.fromEntries(Object.entries(cases).map(([name, f]) => [name, time(f, N)]));
    const cells = Object.entries(t).map(([name, us]) => `${name} ${us.toFixed(3)}`).join('  ');
    const ratios = `zc/raw ${(t.zc / t.raw).toFixed(2)}  layer/zc ${(t.layer / t.zc).toFixed(2)}  js/default ${(t.js / t.default).toFixed(2)}`;
    console.log(`${rows}×${dim} ${dir.padEnd(8)} µs: ${cells}   ${ratios}`);
  }
  layer.free();
  for (const b of [xb, yb, wb, dyb, dxb, dwb]) b.free();
}
