/**
 * The library's synchronous API, from the call most users make to the fastest:
 * `wasm-default` (`await init(); rmsNorm(x, w)`: plain arrays, the result allocated by the
 * library — what onnxruntime's rows do too), `wasm-layer` (`createRmsNorm(w).forward(x)`: the
 * layer reuses its outputs), `wasm-simd` (plain arrays, `out` given), `wasm-simd-zero-copy`
 * (allocF32 views of the simd instance's memory) and `wasm-scalar` (the crate built without
 * SIMD128, zero-copy views).
 * @module
 */
import { createRmsNorm, init, loadRmsNorm, rmsNorm, rmsNormBackward, type RmsNorm } from '../../dist/index.js';
import type { Case, Contender, Instance } from '../types.js';
import { wasmBuffers } from './wasm-buffers.js';

function forwardPlain(m: RmsNorm, c: Case): Instance {
  const y = new Float32Array(c.x.length);
  const opts = { out: y, eps: c.eps };
  return { async: false, fn: () => m.rmsNorm(c.x, c.w, opts), outputs: () => ({ y }) };
}

function forwardZeroCopy(m: RmsNorm, c: Case): Instance {
  const b = wasmBuffers(m, { x: c.x, w: c.w, y: c.x.length });
  const { x, w, y } = b.views();
  const opts = { out: y, eps: c.eps };
  return { async: false, fn: () => m.rmsNorm(x, w, opts), outputs: () => ({ y: b.views().y.slice() }), dispose: b.free };
}

function backwardPlain(m: RmsNorm, c: Case): Instance {
  const dx = new Float32Array(c.x.length);
  const dw = new Float32Array(c.dim);
  const opts = { dx, dweight: dw, eps: c.eps };
  return { async: false, fn: () => m.rmsNormBackward(c.dy, c.x, c.w, opts), outputs: () => ({ dx, dw }) };
}

function backwardZeroCopy(m: RmsNorm, c: Case): Instance {
  const b = wasmBuffers(m, { dy: c.dy, x: c.x, w: c.w, dx: c.x.length, dw: c.dim });
  const { dy, x, w, dx, dw } = b.views();
  const opts = { dx, dweight: dw, eps: c.eps };
  return {
    async: false,
    fn: () => m.rmsNormBackward(dy, x, w, opts),
    outputs: () => {
      const v = b.views();
      return { dx: v.dx.slice(), dw: v.dw.slice() };
    },
    dispose: b.free,
  };
}

function forwardDefault(c: Case): Instance {
  let y: Float32Array | undefined;
  const opts = { eps: c.eps };
  return { async: false, fn: () => (y = rmsNorm(c.x, c.w, opts)), outputs: () => ({ y }) };
}

function backwardDefault(c: Case): Instance {
  let r: { dx: Float32Array; dweight: Float32Array | null } | undefined;
  const opts = { eps: c.eps };
  return { async: false, fn: () => (r = rmsNormBackward(c.dy, c.x, c.w, opts)), outputs: () => ({ dx: r?.dx, dw: r?.dweight ?? undefined }) };
}

function forwardLayer(c: Case): Instance {
  const layer = createRmsNorm(c.w, { eps: c.eps });
  let y: Float32Array | undefined;
  return { async: false, fn: () => (y = layer.forward(c.x)), outputs: () => ({ y }), dispose: () => layer.free() };
}

function backwardLayer(c: Case): Instance {
  const layer = createRmsNorm(c.w, { eps: c.eps });
  let r: { dx: Float32Array; dweight: Float32Array | null } | undefined;
  return {
    async: false,
    fn: () => (r = layer.backward(c.dy, c.x)),
    outputs: () => ({ dx: r?.dx, dw: r?.dweight ?? undefined }),
    dispose: () => layer.free(),
  };
}

/** The sync-API contenders, forward and backward (loads the default, simd and scalar builds). */
export async function wasmSync(): Promise<Contender[]> {
  await init();
  const simd = await loadRmsNorm('simd');
  const scalar = await loadRmsNorm('scalar');
  const base = { family: 'wasm', threads: 1 };
  return [
    { ...base, name: 'wasm-default', op: 'forward', zeroCopy: false, note: 'init(); rmsNorm(x, w): plain arrays, result allocated by the library', make: forwardDefault },
    { ...base, name: 'wasm-layer', op: 'forward', zeroCopy: false, note: 'createRmsNorm(w).forward(x): plain arrays, outputs reused', make: forwardLayer },
    { ...base, name: 'wasm-default', op: 'backward', zeroCopy: false, note: 'rmsNormBackward(dy, x, w): plain arrays, results allocated by the library', make: backwardDefault },
    { ...base, name: 'wasm-layer', op: 'backward', zeroCopy: false, note: 'layer.backward(dy, x): plain arrays, outputs reused', make: backwardLayer },
    { ...base, name: 'wasm-scalar', op: 'forward', zeroCopy: true, note: 'no SIMD128 build, allocF32 views', make: (c) => forwardZeroCopy(scalar, c) },
    { ...base, name: 'wasm-simd', op: 'forward', zeroCopy: false, note: 'plain Float32Arrays', make: (c) => forwardPlain(simd, c) },
    { ...base, name: 'wasm-simd-zero-copy', op: 'forward', zeroCopy: true, note: 'allocF32 views', make: (c) => forwardZeroCopy(simd, c) },
    { ...base, name: 'wasm-scalar', op: 'backward', zeroCopy: true, note: 'no SIMD128 build, allocF32 views', make: (c) => backwardZeroCopy(scalar, c) },
    { ...base, name: 'wasm-simd', op: 'backward', zeroCopy: false, note: 'plain Float32Arrays', make: (c) => backwardPlain(simd, c) },
    { ...base, name: 'wasm-simd-zero-copy', op: 'backward', zeroCopy: true, note: 'allocF32 views', make: (c) => backwardZeroCopy(simd, c) },
  ];
}
