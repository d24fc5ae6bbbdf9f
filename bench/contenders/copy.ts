/**
 * The memory-bandwidth roof: copying the forward's bytes (read n floats, write n floats, the
 * same 8 bytes per element as the forward) inside wasm memory (the benchmark's simd build,
 * bench-kernels.ts), with the kernel's vector loop (`copy`) and with TypedArray.copyWithin
 * (`memcpy`, V8's memmove).
 * @module
 */
import { benchKernels } from '../bench-kernels.js';
import type { Contender } from '../types.js';
import { wasmBuffers } from './wasm-buffers.js';

/** The copy contenders: `copy` (wasm v128 loop) and `memcpy` (copyWithin). */
export async function copies(): Promise<Contender[]> {
  const k = await benchKernels();
  const m = k.m;
  return [
    {
      name: 'copy', family: 'copy', op: 'copy', threads: 1, zeroCopy: true, note: 'copy_f32 (bench build): v128 loads/stores in wasm memory',
      make(c) {
        const b = wasmBuffers(m, { src: c.x, dst: c.x.length });
        const { src, dst } = b.views();
        return { async: false, fn: () => k.copy(src, dst), outputs: () => ({ y: b.views().dst.slice() }), dispose: b.free };
      },
    },
    {
      name: 'memcpy', family: 'copy', op: 'copy', threads: 1, zeroCopy: true, note: 'Float32Array.copyWithin in wasm memory',
      make(c) {
        const n = c.x.length;
        const b = wasmBuffers(m, { both: 2 * n });
        const both = b.views().both;
        both.set(c.x);
        return { async: false, fn: () => both.copyWithin(n, 0, n), outputs: () => ({ y: b.views().both.slice(n) }), dispose: b.free };
      },
    },
  ];
}
