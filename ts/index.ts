/**
 * rmsnorm-wasm: RMSNorm forward and backward in WebAssembly SIMD128, with a Worker pool.
 *
 * ```ts
 * import { init, rmsNorm } from 'rmsnorm-wasm';
 * await init();
 * const y = rmsNorm(x, weight);            // x: rows × dim, weight: dim
 * ```
 * @module
 */
export type { Build, KernelExports, LoadedWasm, WasmClass, WasmMemory, WasmMemoryLike, WasmModule, WithWasm } from './load.js';
export type { F32Buffer, U16Buffer } from './memory.js';
export type { ConvertOptions } from './check/convert.js';
export type * from './types.js';
export { RmsNorm } from './rmsnorm.js';
export type { RmsNormLayer } from './layer.js';
export { relaxedSimdSupported, simdSupported, threadsAvailable } from './platform.js';
export { DEFAULT_EPS, statOf } from './check/scalar-options.js';
export type { PoolCallOptions, PoolOptions, RmsNormPool } from './pool/api.js';
export * from './default-instance.js';
