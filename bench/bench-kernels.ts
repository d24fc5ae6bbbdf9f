/**
 * The benchmark's own wasm build (`build.sh bench-simd`: the simd build plus the LayerNorm
 * forward and the v128 copy loop, feature `bench-kernels`), which the package does not ship,
 * with the two wrappers the LayerNorm and copy rows call. It is an ordinary RmsNorm instance
 * besides (allocF32, views), on a memory of its own.
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { LoadedWasm } from '../dist/glue/load.js';
import { RmsNorm } from '../dist/rmsnorm.js';
import { checkStatus } from '../dist/glue/status.js';
import { initSync } from '../wasm/bench-simd/rmsnorm_wasm.js';

interface BenchExports {
  layer_norm_forward(x: number, w: number, b: number, y: number, rows: number, dim: number, eps: number): number;
  copy_f32(src: number, dst: number, n: number): number;
  add_f32(a: number, b: number, out: number, n: number): number;
}

/** The bench build's instance and its two extra kernels (every array a view of its memory). */
export interface BenchKernels {
  m: RmsNorm;
  /** LayerNorm forward `y = (x − mean)·rstd·w + b` over `x.length / w.length` rows. */
  layerNorm(x: Float32Array, w: Float32Array, b: Float32Array, y: Float32Array, eps: number): void;
  /** Copies `src` to `dst` (equal lengths, not overlapping) with v128 loads and stores. */
  copy(src: Float32Array, dst: Float32Array): void;
  /** `out = a + b` (equal lengths; `out` may be `a` or `b`) with v128 adds: the unfused residual add. */
  add(a: Float32Array, b: Float32Array, out: Float32Array): void;
}

let loaded: Promise<BenchKernels> | null = null;

/** Loads the bench build once. */
export function benchKernels(): Promise<BenchKernels> {
  loaded ??= (async () => {
    const bytes = await readFile(new URL('../wasm/bench-simd/rmsnorm_wasm_bg.wasm', import.meta.url));
    const module = await WebAssembly.compile(bytes);
    const exports = (initSync as (o: { module: WebAssembly.Module }) => unknown)({ module }) as LoadedWasm['exports'] &
      BenchExports & { memory: WebAssembly.Memory };
    const wasm: LoadedWasm = { build: 'simd', exports, memory: exports.memory, module, shared: false };
    const m = new RmsNorm(wasm);
    const held = (v: Float32Array) => {
      if (v.buffer !== wasm.memory.buffer) throw new RangeError('bench kernels: every array must be a view of the bench build\'s memory');
      return v.byteOffset;
    };
    return {
      m,
      layerNorm(x, w, b, y, eps) {
        checkStatus('layerNorm', exports.layer_norm_forward(held(x), held(w), held(b), held(y), x.length / w.length, w.length, eps));
      },
      copy(src, dst) {
        if (src.length !== dst.length) throw new RangeError('copy: src and dst must have equal lengths');
        checkStatus('copy', exports.copy_f32(held(src), held(dst), src.length));
      },
      add(a, b, out) {
        if (a.length !== b.length || a.length !== out.length) throw new RangeError('add: a, b and out must have equal lengths');
        checkStatus('add', exports.add_f32(held(a), held(b), held(out), a.length));
      },
    };
  })();
  return loaded;
}
