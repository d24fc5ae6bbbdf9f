// @ts-check
/**
 * The benchmark's own build in the page (`build.sh bench-simd`, not part of the package): the
 * simd build plus the LayerNorm forward and the v128 copy loop that the copy and LayerNorm rows
 * time. As bench/bench-kernels.ts does in Node: an RmsNorm instance on its own memory (for
 * allocF32 views) and the two raw kernels.
 * @module
 */
import { RmsNorm } from '../bundle/index.js';
import { initSync } from '../wasm/bench-simd/rmsnorm_wasm.js';

/** @returns {Promise<{ m: any, copy(src: Float32Array, dst: Float32Array): void, layerNorm(x: Float32Array, w: Float32Array, b: Float32Array, y: Float32Array, eps: number): void }>} */
export async function benchKernels() {
  const res = await fetch(new URL('../wasm/bench-simd/rmsnorm_wasm_bg.wasm', import.meta.url));
  const module = await WebAssembly.compile(await res.arrayBuffer());
  const exports = /** @type {any} */ (initSync({ module }));
  const m = new RmsNorm({ build: 'simd', exports, memory: exports.memory, module, shared: false });
  /** @param {Float32Array} v */
  const at = (v) => {
    if (v.buffer !== exports.memory.buffer) throw new RangeError('bench kernels: arrays must be views of the bench build\'s memory');
    return v.byteOffset;
  };
  return {
    m,
    copy: (src, dst) => void exports.copy_f32(at(src), at(dst), src.length),
    layerNorm: (x, w, b, y, eps) => void exports.layer_norm_forward(at(x), at(w), at(b), at(y), x.length / w.length, w.length, eps),
  };
}
