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
export type { KernelExports, LoadedWasm, WasmClass, WasmMemory, WasmMemoryLike, WasmModule, WithWasm } from './glue/load.js';
export type { F32Buffer, U16Buffer } from './glue/memory.js';
export type { ConvertOptions } from './call/check/convert.js';
export type * from './types.js';
export { RmsNorm } from './rmsnorm.js';
export type { RmsNormLayer } from './layer.js';
export { relaxedSimdSupported, simdSupported, threadsAvailable } from './glue/platform.js';
export { DEFAULT_EPS, statOf } from './call/check/scalar-options.js';
export type { PoolOptions, RmsNormPool } from './pool/api.js';
export type { Operations, PoolOperations } from './generated/operations.js';
export * from './default-instance.js';
export * from './generated/functions.js';
