// Written by scripts/gen-api.ts from the operations' API entries (ts/call/operations/): edit those, then run `npx tsx scripts/gen-api.ts`.
/**
 * The operations' public methods: the sync instance's (rmsnorm.ts extends {@link Operations}), the pool's interface and its methods (pool/caller/pool.ts extends {@link PoolMethods}).
 * @module
 */
import type { FloatArray, QuantArray, QuantDtype, RmsNormBackwardOptions, RmsNormBackwardResult, RmsNormOptions, RmsNormQuantOptions, PoolCallOptions } from '../types.js';
import { OPS } from '../call/ops.js';
import type { Op } from '../call/op.js';

/** The operations' methods of the sync API (rmsnorm.ts RmsNorm has them), each running its operation through the instance. */
export abstract class Operations {
  /** Runs a call of `op` (`fn` names it in errors) with its positional arguments: its short way, or its check and the general way. @internal */
  protected abstract callOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown): unknown;

  /**
   * RMSNorm forward: for each row `x_r` (length `dim`),
   * `y_r = x_r · rstd_r · weight`, `rstd_r = 1/sqrt(mean(x_r²) + eps)`.
   *
   * Variants (options, combinable): `residual` — fused residual add, the row normalized is
   * `h = x + residual`, written into `residual` (or `residualOut`); `offset` — the gain is
   * `offset + weight` (Gemma: 1); `partial` — pRMSNorm, the mean over the first
   * `ceil(partial · dim)` elements only; `gate` — the gated RMSNorm. Half precision: `x` (and
   * every `rows × dim` array) may be a Float16Array or a Uint16Array of float16 / bfloat16 bit
   * patterns (`dtype`), the weight likewise (`weightDtype`, may differ); the math is float32,
   * results rounded to nearest even as `castingMode` says. A quantized output (`outDtype`) is an
   * Int8Array, or a Uint8Array of float8 E4M3 bits, with a scale per row (`rowScales`).
   *
   * @param x `rows × dim` elements, row-major. Views of wasm memory ({@link allocF32},
   *   {@link allocU16}) are used in place; other arrays are copied through reused scratch space.
   * @param weight The gain, `dim` elements, or null for none.
   * @param options Every option, each with its default: {@link RmsNormOptions} (a quantized
   *   output's: {@link RmsNormQuantOptions}).
   * @returns `options.out`, or a new array of `x`'s type (with `outDtype`: an Int8Array, or a
   *   Uint8Array of float8 bits).
   * @throws TypeError / RangeError naming the bad argument, before anything is written.
   */
  rmsNorm<T extends FloatArray = Float32Array>(x: T, weight: FloatArray | null, options?: RmsNormOptions<T>): T;
  rmsNorm<Q extends QuantDtype>(x: FloatArray, weight: FloatArray | null, options: RmsNormQuantOptions<Q>): QuantArray<Q>;
  rmsNorm(x: FloatArray, weight: FloatArray | null, options?: RmsNormOptions<FloatArray> | RmsNormQuantOptions): FloatArray | QuantArray<QuantDtype> {
    return this.callOp('rmsNorm', OPS[0]!, x, weight, options, undefined) as FloatArray | QuantArray<QuantDtype>;
  }

  /**
   * RMSNorm backward: `dx = rstd · (gy − x · rstd² · mean(gy ⊙ x))` with `gy = dy ⊙ weight`,
   * and `dweight = Σ_rows dy ⊙ x · rstd` (deterministic: f32 sums per 32-row block, the blocks
   * added in f64 in order: the same bits whatever the thread count). Half precision as in
   * {@link rmsNorm}: `dx` in the activations' dtype, `dweight` in the weight's (summed in float32,
   * rounded once).
   *
   * @param dy Upstream gradient, `rows × dim`.
   * @param x The forward's input, `rows × dim` (with a fused residual add: its `h`).
   * @param weight The gain (`dim`) or null.
   * @param options Every option, each with its default: {@link RmsNormBackwardOptions}.
   * @returns `{ dx, dweight }` (and `dgate` with a gate); `dweight` is null when `weight` is null.
   * @throws TypeError / RangeError naming the bad argument, before anything is written.
   */
  rmsNormBackward<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array>(dy: T, x: T, weight: W | null, options?: RmsNormBackwardOptions<T, W>): RmsNormBackwardResult<T, W>;
  rmsNormBackward(dy: FloatArray, x: FloatArray, weight: FloatArray | null, options?: RmsNormBackwardOptions<FloatArray, FloatArray>): RmsNormBackwardResult<FloatArray, FloatArray> {
    return this.callOp('rmsNormBackward', OPS[1]!, dy, x, weight, options) as RmsNormBackwardResult<FloatArray, FloatArray>;
  }
}

/** The operations' methods of a worker pool (pool/api.ts RmsNormPool has them). */
export interface PoolOperations {
  /**
   * As the sync {@link rmsNorm}, resolved when done. Arguments are checked before queueing.
   *
   * RMSNorm forward: for each row `x_r` (length `dim`),
   * `y_r = x_r · rstd_r · weight`, `rstd_r = 1/sqrt(mean(x_r²) + eps)`.
   *
   * Variants (options, combinable): `residual` — fused residual add, the row normalized is
   * `h = x + residual`, written into `residual` (or `residualOut`); `offset` — the gain is
   * `offset + weight` (Gemma: 1); `partial` — pRMSNorm, the mean over the first
   * `ceil(partial · dim)` elements only; `gate` — the gated RMSNorm. Half precision: `x` (and
   * every `rows × dim` array) may be a Float16Array or a Uint16Array of float16 / bfloat16 bit
   * patterns (`dtype`), the weight likewise (`weightDtype`, may differ); the math is float32,
   * results rounded to nearest even as `castingMode` says. A quantized output (`outDtype`) is an
   * Int8Array, or a Uint8Array of float8 E4M3 bits, with a scale per row (`rowScales`).
   *
   * @param x `rows × dim` elements, row-major. Views of wasm memory ({@link allocF32},
   *   {@link allocU16}) are used in place; other arrays are copied through reused scratch space.
   * @param weight The gain, `dim` elements, or null for none.
   * @param options Every option, each with its default: {@link RmsNormOptions} (a quantized
   *   output's: {@link RmsNormQuantOptions}).
   * @returns `options.out`, or a new array of `x`'s type (with `outDtype`: an Int8Array, or a
   *   Uint8Array of float8 bits).
   * @throws TypeError / RangeError naming the bad argument, before anything is written.
   */
  rmsNorm<T extends FloatArray = Float32Array>(x: T, weight: FloatArray | null, options?: (RmsNormOptions<T>) & PoolCallOptions): Promise<T>;
  /**
   * As the sync {@link rmsNorm}, resolved when done. Arguments are checked before queueing.
   *
   * RMSNorm forward: for each row `x_r` (length `dim`),
   * `y_r = x_r · rstd_r · weight`, `rstd_r = 1/sqrt(mean(x_r²) + eps)`.
   *
   * Variants (options, combinable): `residual` — fused residual add, the row normalized is
   * `h = x + residual`, written into `residual` (or `residualOut`); `offset` — the gain is
   * `offset + weight` (Gemma: 1); `partial` — pRMSNorm, the mean over the first
   * `ceil(partial · dim)` elements only; `gate` — the gated RMSNorm. Half precision: `x` (and
   * every `rows × dim` array) may be a Float16Array or a Uint16Array of float16 / bfloat16 bit
   * patterns (`dtype`), the weight likewise (`weightDtype`, may differ); the math is float32,
   * results rounded to nearest even as `castingMode` says. A quantized output (`outDtype`) is an
   * Int8Array, or a Uint8Array of float8 E4M3 bits, with a scale per row (`rowScales`).
   *
   * @param x `rows × dim` elements, row-major. Views of wasm memory ({@link allocF32},
   *   {@link allocU16}) are used in place; other arrays are copied through reused scratch space.
   * @param weight The gain, `dim` elements, or null for none.
   * @param options Every option, each with its default: {@link RmsNormOptions} (a quantized
   *   output's: {@link RmsNormQuantOptions}).
   * @returns `options.out`, or a new array of `x`'s type (with `outDtype`: an Int8Array, or a
   *   Uint8Array of float8 bits).
   * @throws TypeError / RangeError naming the bad argument, before anything is written.
   */
  rmsNorm<Q extends QuantDtype>(x: FloatArray, weight: FloatArray | null, options: (RmsNormQuantOptions<Q>) & PoolCallOptions): Promise<QuantArray<Q>>;
  /**
   * As the sync {@link rmsNormBackward}, resolved when done; dweight has the same bits whatever the thread count.
   *
   * RMSNorm backward: `dx = rstd · (gy − x · rstd² · mean(gy ⊙ x))` with `gy = dy ⊙ weight`,
   * and `dweight = Σ_rows dy ⊙ x · rstd` (deterministic: f32 sums per 32-row block, the blocks
   * added in f64 in order: the same bits whatever the thread count). Half precision as in
   * {@link rmsNorm}: `dx` in the activations' dtype, `dweight` in the weight's (summed in float32,
   * rounded once).
   *
   * @param dy Upstream gradient, `rows × dim`.
   * @param x The forward's input, `rows × dim` (with a fused residual add: its `h`).
   * @param weight The gain (`dim`) or null.
   * @param options Every option, each with its default: {@link RmsNormBackwardOptions}.
   * @returns `{ dx, dweight }` (and `dgate` with a gate); `dweight` is null when `weight` is null.
   * @throws TypeError / RangeError naming the bad argument, before anything is written.
   */
  rmsNormBackward<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array>(dy: T, x: T, weight: W | null, options?: (RmsNormBackwardOptions<T, W>) & PoolCallOptions): Promise<RmsNormBackwardResult<T, W>>;
}

/** The pool's operation methods (pool/caller/pool.ts Pool has them), each submitting its operation to the pool. */
export abstract class PoolMethods implements PoolOperations {
  /** Submits a call of `op` (`fn` names it in errors) with its positional arguments, `options` its options. @internal */
  protected abstract submitOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown, options: unknown): Promise<unknown>;
  rmsNorm<T extends FloatArray = Float32Array>(x: T, weight: FloatArray | null, options?: (RmsNormOptions<T>) & PoolCallOptions): Promise<T>;
  rmsNorm<Q extends QuantDtype>(x: FloatArray, weight: FloatArray | null, options: (RmsNormQuantOptions<Q>) & PoolCallOptions): Promise<QuantArray<Q>>;
  rmsNorm(x: FloatArray, weight: FloatArray | null, options?: (RmsNormOptions<FloatArray> | RmsNormQuantOptions) & PoolCallOptions): Promise<FloatArray | QuantArray<QuantDtype>> {
    return this.submitOp('pool.rmsNorm', OPS[0]!, x, weight, options, undefined, options) as Promise<FloatArray | QuantArray<QuantDtype>>;
  }
  rmsNormBackward<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array>(dy: T, x: T, weight: W | null, options?: (RmsNormBackwardOptions<T, W>) & PoolCallOptions): Promise<RmsNormBackwardResult<T, W>>;
  rmsNormBackward(dy: FloatArray, x: FloatArray, weight: FloatArray | null, options?: (RmsNormBackwardOptions<FloatArray, FloatArray>) & PoolCallOptions): Promise<RmsNormBackwardResult<FloatArray, FloatArray>> {
    return this.submitOp('pool.rmsNormBackward', OPS[1]!, dy, x, weight, options, options) as Promise<RmsNormBackwardResult<FloatArray, FloatArray>>;
  }
}
