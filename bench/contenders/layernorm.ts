/**
 * LayerNorm forward through the same wasm SIMD path and zero-copy views as
 * `wasm-simd-zero-copy` (on the benchmark's build, bench-kernels.ts), to test the RMSNorm paper's claim (Zhang & Sennrich 2019) that
 * RMSNorm takes 7%–64% less time than LayerNorm.
 * @module
 */
import { benchKernels } from '../bench-kernels.js';
import type { Contender } from '../types.js';
import { wasmBuffers } from './wasm-buffers.js';

/** The LayerNorm contender: `y = (x − mean)·rstd·w + b` on the simd instance, in place views. */
export async function layerNorm(): Promise<Contender[]> {
  const k = await benchKernels();
  const m = k.m;
  return [
    {
      name: 'layernorm-wasm-simd-zero-copy', family: 'layernorm', op: 'layernorm', threads: 1, zeroCopy: true,
      note: 'LayerNorm (mean and variance), bench build, allocF32 views',
      make(c) {
        const b = wasmBuffers(m, { x: c.x, w: c.w, b: c.b, y: c.x.length });
        const v = b.views();
        return {
          async: false,
          fn: () => k.layerNorm(v.x, v.w, v.b, v.y, c.eps),
          outputs: () => ({ y: b.views().y.slice() }),
          dispose: b.free,
        };
      },
    },
  ];
}
