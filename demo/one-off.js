// @ts-check
/**
 * What the one-off call (`rmsNorm(x, w)`, the README's quick start: plain arrays in, a new
 * array out) costs in a page, and where its time goes, beside the plain-JS loop a page would
 * otherwise write (allocating its result the same way). Per shape, the median per-call time of:
 *
 *   plain JS     `new Float32Array(n)`, then the two-pass loop (the baseline)
 *   default      `rmsNorm(x, w)`
 *   out          `rmsNorm(x, w, { out })`: the same call into an array the page keeps
 *   layer        `createRmsNorm(w).forward(x)`: reused outputs
 *   zero-copy    `rmsNorm(xv, wv, { out: yv })` on views of wasm memory: checks and kernel only
 *   new array    `new Float32Array(n)`: the allocation (zeroed)
 *   new+write    `new Float32Array(n).set(x)`: allocation, first touch of its pages, one copy
 *   copy         `y.set(x)` into an array the page keeps: one copy of the data
 *
 * The default call is roughly `new+write` (its result) plus `out` less one copy: the breakdown
 * says which part an engine makes expensive. Calls are timed in batches long enough for the
 * engine's clock; rounds are interleaved and the median of rounds is kept.
 * @module
 */

import { clockResolution, naiveForward } from './page-bench.js';

/** Median of numbers. */
const median = (a) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];

/**
 * Per-call time of `f` (ms): batches of at least `minBatchMs`, for `budgetMs`; the median batch.
 * @param {() => unknown} f
 */
function time(f, minBatchMs, budgetMs) {
  // Warm up first: a first call that compiles would make a batch of one call look long enough.
  for (const t0 = performance.now(); performance.now() - t0 < minBatchMs; ) f();
  let calls = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) f();
    if (performance.now() - t0 >= minBatchMs) break;
    calls *= 2;
  }
  const samples = [];
  const end = performance.now() + budgetMs;
  while (samples.length < 5 || performance.now() < end) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) f();
    const t = performance.now() - t0;
    // A batch that got faster than the clock can time (the engine optimized the call once
    // warm) is not a sample: time twice as many calls from then on.
    if (t < minBatchMs) {
      calls *= 2;
      continue;
    }
    samples.push(t / calls);
  }
  return median(samples);
}

/**
 * Runs the breakdown. `lib` is the package's module namespace (init() done).
 * @param {any} lib
 * @param {{ shapes: string[], rounds?: number, budgetMs?: number }} o
 */
export function breakdown(lib, o) {
  const res = clockResolution();
  const minBatchMs = Math.max(1, 100 * res);
  const rounds = o.rounds ?? 3;
  const budgetMs = o.budgetMs ?? 150;
  const rows = [];
  for (const shape of o.shapes) {
    const [r, d] = shape.split('x').map(Number);
    const n = r * d;
    const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37));
    const w = Float32Array.from({ length: d }, (_, i) => 1 + (i % 7) / 10);
    const kept = new Float32Array(n);
    const layer = lib.createRmsNorm(w);
    const bufs = [lib.allocF32(n), lib.allocF32(d), lib.allocF32(n)];
    bufs[0].view().set(x);
    bufs[1].view().set(w);
    let sink = 0;
    /** @type {Record<string, () => unknown>} */
    const cases = {
      plainJs: () => {
        const y = new Float32Array(n);
        naiveForward(x, w, y, r, d, 1e-6);
        sink += y[0];
      },
      default: () => (sink += lib.rmsNorm(x, w)[0]),
      out: () => lib.rmsNorm(x, w, { out: kept }),
      layer: () => (sink += layer.forward(x)[0]),
      zeroCopy: () => lib.rmsNorm(bufs[0].view(), bufs[1].view(), { out: bufs[2].view() }),
      newArray: () => (sink += new Float32Array(n).length),
      newWrite: () => {
        const y = new Float32Array(n);
        y.set(x);
        sink += y[0];
      },
      copy: () => kept.set(x),
    };
    /** @type {Record<string, number[]>} */
    const t = {};
    for (let k = 0; k < rounds; k++) for (const [name, f] of Object.entries(cases)) (t[name] ??= []).push(time(f, minBatchMs, budgetMs));
    layer.free();
    for (const b of bufs) b.free();
    const us = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, 1000 * median(v)]));
    rows.push({ shape, us, defaultVsPlainJs: us.plainJs / us.default, layerVsPlainJs: us.plainJs / us.layer, sink: sink > 0 });
  }
  return { clockResolutionMs: res, minBatchMs, rounds, rows };
}
