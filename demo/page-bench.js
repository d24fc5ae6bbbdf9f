// @ts-check
/**
 * The demo's benchmark core, with no DOM: inputs, float64 reference and check, contenders,
 * timing. The page (app.js) drives it with buttons; `npm run bench:browser` drives the same
 * functions headless through `window.rmsnormDemo.run()`.
 *
 * Rows have the shape of bench/types.ts `Row` (the Node benchmark's JSON); inputs, reference
 * and tolerances come from shared/reference.js as the Node benchmark's do, and contender names
 * are the same as bench/contenders/*.ts, so the two result files can be compared line by line.
 *
 * Timing differs from the Node run on purpose: browsers coarsen `performance.now()` (5 µs in a
 * cross-origin-isolated page, 100 µs otherwise), so calls are timed in batches long enough
 * for the clock (≥ 200 resolution steps), and a sample is one batch's time ÷ its size.
 * @module
 */

import { ATOL, RTOL, EPS, caseReference, checkOutputs, failedCheck, makeCase, parseShape } from '../shared/reference.js';
import { naiveBackward, naiveForward } from '../shared/naive.js';

export { ATOL, RTOL, EPS, makeCase, parseShape, naiveForward };

/** Bytes per element of the GB/s column, as bench/runner.ts (compulsory traffic). */
export const BYTES_PER_ELEM = { forward: 8, backward: 12, copy: 8, layernorm: 8 };

/** The float64 forward, backward and LayerNorm of a case (lazy): shared/reference.js, as the Node benchmark. */
export const reference = caseReference;

/** Compares outputs with the reference (shared/reference.js checkOutputs, as the Node benchmark). */
export const check = checkOutputs;

/** Buffers in one instance's memory, filled from `init` (array) or zeroed (length); views re-made on demand. */
function wasmBuffers(m, init) {
  const keys = Object.keys(init);
  const bufs = keys.map((k) => m.allocF32(typeof init[k] === 'number' ? init[k] : init[k].length));
  const views = () => Object.fromEntries(keys.map((k, i) => [k, bufs[i].view()]));
  const v = views();
  for (const k of keys) {
    if (typeof init[k] === 'number') v[k].fill(0);
    else v[k].set(init[k]);
  }
  return { views, free: () => bufs.forEach((b) => b.free()) };
}

/** Forward on plain Float32Arrays through `m` (sync) or a pool (async). */
function plainForward(m, c, async) {
  const y = new Float32Array(c.x.length);
  const o = { out: y, eps: c.eps };
  return { async, fn: () => m.rmsNorm(c.x, c.w, o), outputs: () => ({ y }) };
}

/** Backward on plain Float32Arrays through `m` (sync) or a pool (async). */
function plainBackward(m, c, async) {
  const dx = new Float32Array(c.x.length);
  const dw = new Float32Array(c.dim);
  const o = { dx, dweight: dw, eps: c.eps };
  return { async, fn: () => m.rmsNormBackward(c.dy, c.x, c.w, o), outputs: () => ({ dx, dw }) };
}

/** Forward on views of `owner`'s memory, called through `m` (`owner` itself, or a pool on it). */
function zeroCopyForward(owner, m, c, async) {
  const b = wasmBuffers(owner, { x: c.x, w: c.w, y: c.x.length });
  const { x, w, y } = b.views();
  const o = { out: y, eps: c.eps };
  return { async, fn: () => m.rmsNorm(x, w, o), outputs: () => ({ y: b.views().y.slice() }), dispose: b.free };
}

/** Backward on views of `owner`'s memory, called through `m`. */
function zeroCopyBackward(owner, m, c, async) {
  const b = wasmBuffers(owner, { dy: c.dy, x: c.x, w: c.w, dx: c.x.length, dw: c.dim });
  const { dy, x, w, dx, dw } = b.views();
  const o = { dx, dweight: dw, eps: c.eps };
  return {
    async,
    fn: () => m.rmsNormBackward(dy, x, w, o),
    outputs: () => ({ dx: b.views().dx.slice(), dw: b.views().dw.slice() }),
    dispose: b.free,
  };
}

/**
 * The contenders, named as in bench/contenders: js-naive; wasm-default (`init(); rmsNorm(x, w)`,
 * the result allocated by the library) and wasm-layer (`createRmsNorm(w).forward(x)`, outputs
 * reused); wasm-scalar (zero-copy, the build without SIMD128); wasm-simd (plain Float32Arrays,
 * out given) and wasm-simd-zero-copy (allocF32 views); pool-N and pool-N-zero-copy (views of
 * the instance the pool computes on; N = the pool's workers, or 1 in single mode); `copy` (the
 * memory roof, for pctOfCopy) and layernorm-wasm-simd-zero-copy (RMSNorm's saving over
 * LayerNorm), both on the benchmark's own build (bench-kernels.js).
 * @param {{ lib: any, bench: any, simd: any, scalar: any, pool: any, poolInstance: any }} ctx the
 *   package (after init()), the benchmark build, instances of the simd and scalar builds, a
 *   pool, and the instance whose memory the pool works on
 */
export function contenders(ctx) {
  const { lib, bench, simd, scalar, pool, poolInstance } = ctx;
  const n = pool.mode === 'threads' ? pool.threads : 1;
  const single = `pool mode 'single' (no workers)`;
  const base = (name, family, op, zeroCopy, note, threads = 1) => ({ name, family, op, threads, zeroCopy, note });
  return [
    {
      ...base('copy', 'copy', 'copy', true, 'copy_f32 (bench build): v128 loads/stores in wasm memory'),
      make(c) {
        const b = wasmBuffers(bench.m, { src: c.x, dst: c.x.length });
        const { src, dst } = b.views();
        return { async: false, fn: () => bench.copy(src, dst), outputs: () => ({ y: b.views().dst.slice() }), dispose: b.free };
      },
    },
    {
      ...base('wasm-default', 'wasm', 'forward', false, 'init(); rmsNorm(x, w): plain arrays, result allocated by the library'),
      make(c) {
        let y;
        const o = { eps: c.eps };
        return { async: false, fn: () => (y = lib.rmsNorm(c.x, c.w, o)), outputs: () => ({ y }) };
      },
    },
    {
      ...base('wasm-layer', 'wasm', 'forward', false, 'createRmsNorm(w).forward(x): plain arrays, outputs reused'),
      make(c) {
        const layer = lib.createRmsNorm(c.w, { eps: c.eps });
        let y;
        return { async: false, fn: () => (y = layer.forward(c.x)), outputs: () => ({ y }), dispose: () => layer.free() };
      },
    },
    {
      ...base('js-naive', 'js-naive', 'forward', false, null),
      make(c) {
        const y = new Float32Array(c.x.length);
        return { async: false, fn: () => naiveForward(c.x, c.w, y, c.rows, c.dim, c.eps), outputs: () => ({ y }) };
      },
    },
    { ...base('wasm-scalar', 'wasm', 'forward', true, 'no SIMD128 build, allocF32 views'), make: (c) => zeroCopyForward(scalar, scalar, c, false) },
    { ...base('wasm-simd', 'wasm', 'forward', false, 'plain Float32Arrays'), make: (c) => plainForward(simd, c, false) },
    { ...base('wasm-simd-zero-copy', 'wasm', 'forward', true, 'allocF32 views'), make: (c) => zeroCopyForward(simd, simd, c, false) },
    { ...base(`pool-${n}`, 'pool', 'forward', false, pool.mode === 'threads' ? 'plain Float32Arrays' : single, n), make: (c) => plainForward(pool, c, true) },
    {
      ...base(`pool-${n}-zero-copy`, 'pool', 'forward', true, pool.mode === 'threads' ? `${poolInstance.build} allocF32 views` : single, n),
      make: (c) => zeroCopyForward(poolInstance, pool, c, true),
    },
    {
      ...base('js-naive', 'js-naive', 'backward', false, null),
      make(c) {
        const dx = new Float32Array(c.x.length);
        const dw = new Float32Array(c.dim);
        return { async: false, fn: () => naiveBackward(c.dy, c.x, c.w, dx, dw, c.rows, c.dim, c.eps), outputs: () => ({ dx, dw }) };
      },
    },
    { ...base('wasm-scalar', 'wasm', 'backward', true, 'no SIMD128 build, allocF32 views'), make: (c) => zeroCopyBackward(scalar, scalar, c, false) },
    {
      ...base('wasm-default', 'wasm', 'backward', false, 'rmsNormBackward(dy, x, w): results allocated by the library'),
      make(c) {
        let r;
        const o = { eps: c.eps };
        return { async: false, fn: () => (r = lib.rmsNormBackward(c.dy, c.x, c.w, o)), outputs: () => ({ dx: r?.dx, dw: r?.dweight }) };
      },
    },
    {
      ...base('wasm-layer', 'wasm', 'backward', false, 'layer.backward(dy, x): outputs reused'),
      make(c) {
        const layer = lib.createRmsNorm(c.w, { eps: c.eps });
        let r;
        return { async: false, fn: () => (r = layer.backward(c.dy, c.x)), outputs: () => ({ dx: r?.dx, dw: r?.dweight }), dispose: () => layer.free() };
      },
    },
    { ...base('wasm-simd', 'wasm', 'backward', false, 'plain Float32Arrays'), make: (c) => plainBackward(simd, c, false) },
    { ...base('wasm-simd-zero-copy', 'wasm', 'backward', true, 'allocF32 views'), make: (c) => zeroCopyBackward(simd, simd, c, false) },
    { ...base(`pool-${n}`, 'pool', 'backward', false, pool.mode === 'threads' ? 'plain Float32Arrays' : single, n), make: (c) => plainBackward(pool, c, true) },
    {
      ...base(`pool-${n}-zero-copy`, 'pool', 'backward', true, pool.mode === 'threads' ? `${poolInstance.build} allocF32 views` : single, n),
      make: (c) => zeroCopyBackward(poolInstance, pool, c, true),
    },
    {
      ...base('layernorm-wasm-simd-zero-copy', 'layernorm', 'layernorm', true, 'LayerNorm (mean and variance), bench build, allocF32 views'),
      make(c) {
        const b = wasmBuffers(bench.m, { x: c.x, w: c.w, b: c.b, y: c.x.length });
        const v = b.views();
        return { async: false, fn: () => bench.layerNorm(v.x, v.w, v.b, v.y, c.eps), outputs: () => ({ y: b.views().y.slice() }), dispose: b.free };
      },
    },
  ];
}

/**
 * onnxruntime-web in the page, as bench/contenders/ort.ts runs it in Node: the wasm execution
 * provider with `threads` threads (onnxruntime-web reads that once per page, so each thread
 * count needs a page of its own) running one RMSNormalization node. Only `session.run()` on a
 * tensor made once is timed; it includes onnxruntime's own copies of X in and Y out.
 * @param {any} ort the onnxruntime-web module, `env.wasm` already set
 * @param {number} threads
 * @param {(c: any) => Promise<Uint8Array>} modelFor the ONNX model of a case (its rows, dim, weight, eps)
 */
export function ortWebContender(ort, threads, modelFor) {
  return {
    name: `ort-web-${threads}t`, family: 'ort-web', op: 'forward', threads, zeroCopy: false,
    note: `onnxruntime-web ${ort.env.versions?.web ?? ''} wasm EP in the page, RMSNormalization (opset 23)`.replace('  ', ' '),
    async make(c) {
      const session = await ort.InferenceSession.create(await modelFor(c), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
      const feeds = { X: new ort.Tensor('float32', c.x, [c.rows, c.dim]) };
      let y;
      return {
        async: true,
        fn: () => session.run(feeds).then((r) => {
          y = r.Y.data;
        }),
        outputs: () => ({ y }),
        dispose: () => session.release(),
      };
    },
  };
}

/** The smallest positive step of performance.now() seen in a short spin, ms. */
export function clockResolution() {
  let best = Infinity;
  for (let k = 0; k < 20; k++) {
    const t0 = performance.now();
    let t1 = t0;
    while (t1 === t0) t1 = performance.now();
    best = Math.min(best, t1 - t0);
  }
  return best;
}

/** Median of a sorted copy. */
function median(a) {
  const s = [...a].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** One batch of `k` calls, ms. */
async function batch(inst, k) {
  const t0 = performance.now();
  if (inst.async) for (let i = 0; i < k; i++) await inst.fn();
  else for (let i = 0; i < k; i++) inst.fn();
  return performance.now() - t0;
}

/**
 * Times `inst`: warms up (≥ 3 calls and ≥ budget/10 ms, so the JIT has settled), picks a batch
 * size whose batch lasts ≥ `minBatchMs`, then samples batches until `budgetMs` is spent (at
 * least 5, at most 200 samples).
 * @returns {Promise<{ medianMs: number, meanMs: number, rmePct: number, samples: number }>}
 *   per-call figures; rmePct is the 95% margin of error of the mean, in percent.
 */
export async function time(inst, budgetMs, minBatchMs) {
  const warm = performance.now();
  for (let i = 0; i < 3 || performance.now() - warm < budgetMs / 10; i++) await batch(inst, 1);
  let k = 1;
  for (;;) {
    const t = await batch(inst, k);
    if (t >= minBatchMs || k >= 1 << 24) break;
    k *= t > 0 ? Math.min(16, Math.max(2, Math.ceil((1.2 * minBatchMs) / t))) : 16;
  }
  let per = [];
  const start = performance.now();
  while (per.length < 5 || (per.length < 200 && performance.now() - start < budgetMs)) {
    const t = await batch(inst, k);
    // A batch under one clock step measures 0: the calibration batch above was slowed (a GC, a
    // busy machine) and picked too few calls. Start over with more, or the median may be 0.
    if (t === 0 && k < 1 << 24) {
      k *= 4;
      per = [];
      continue;
    }
    per.push(t / k);
  }
  const mean = per.reduce((a, b) => a + b, 0) / per.length;
  const sd = Math.sqrt(per.reduce((a, b) => a + (b - mean) ** 2, 0) / (per.length - 1));
  return { medianMs: median(per), meanMs: mean, rmePct: ((1.96 * sd) / Math.sqrt(per.length) / mean) * 100, samples: per.length };
}

/** Checks one contender on one case, then (if it passed) times it; returns a bench Row. */
export async function measure(k, c, ref, budgetMs, minBatchMs) {
  /** @type {Record<string, any>} a bench/types.ts Row */
  const row = {
    shape: `${c.rows}x${c.dim}`, rows: c.rows, dim: c.dim, op: k.op, contender: k.name, family: k.family,
    threads: k.threads, zeroCopy: k.zeroCopy, note: k.note, bytesPerElem: BYTES_PER_ELEM[k.op],
    check: failedCheck('not run'),
    medianMs: null, meanMs: null, rmePct: null, samples: null, gelemPerS: null, gbPerS: null,
    vsNaive: null, pctOfCopy: null, error: null,
  };
  let inst;
  try {
    inst = await k.make(c);
    await inst.fn();
    row.check = check(k.op, inst.outputs(), c, ref);
    if (!row.check.passed) return row;
    Object.assign(row, await time(inst, budgetMs, minBatchMs));
    const n = c.rows * c.dim;
    row.gelemPerS = n / (row.medianMs * 1e6);
    row.gbPerS = (n * row.bytesPerElem) / (row.medianMs * 1e6);
  } catch (e) {
    row.error = e instanceof Error ? e.message : String(e);
    if (row.check.detail === 'not run') row.check = failedCheck(`threw: ${row.error}`);
  } finally {
    try {
      await inst?.dispose?.();
    } catch (e) {
      row.error ??= `dispose: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
  return row;
}

/** Fills vsNaive (js-naive median ÷ row median, same op and shape) and pctOfCopy (GB/s vs `copy`). */
export function derive(rows) {
  for (const r of rows) {
    if (r.medianMs == null) continue;
    const naive = rows.find((q) => q.shape === r.shape && q.op === r.op && q.contender === 'js-naive' && q.medianMs != null);
    if (naive && r.op !== 'copy') r.vsNaive = naive.medianMs / r.medianMs;
    const copy = rows.find((q) => q.shape === r.shape && q.contender === 'copy' && q.gbPerS != null);
    if (copy && r.gbPerS != null) r.pctOfCopy = (r.gbPerS / copy.gbPerS) * 100;
  }
  return rows;
}
