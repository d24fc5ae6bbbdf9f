// Written by scripts/gen-api.ts from the operations' API entries (ts/call/operations/): edit those, then run `npx tsx scripts/gen-api.ts`.
/**
 * The operations as the package's top-level functions, on the instance {@link init} loaded (index.ts re-exports them).
 * @module
 */
import type { FloatArray, QuantArray, QuantDtype, RmsNormBackwardOptions, RmsNormBackwardResult, RmsNormOptions, RmsNormQuantOptions } from '../types.js';
import { ready } from '../call/current.js';

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
export function rmsNorm<T extends FloatArray = Float32Array>(x: T, weight: FloatArray | null, options?: RmsNormOptions<T>): T;
export function rmsNorm<Q extends QuantDtype>(x: FloatArray, weight: FloatArray | null, options: RmsNormQuantOptions<Q>): QuantArray<Q>;
export function rmsNorm(x: FloatArray, weight: FloatArray | null, options?: RmsNormOptions<FloatArray> | RmsNormQuantOptions): FloatArray | QuantArray<QuantDtype> {
  return ready('rmsNorm').rmsNorm(x, weight, options as never) as FloatArray | QuantArray<QuantDtype>;
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
export function rmsNormBackward<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array>(dy: T, x: T, weight: W | null, options?: RmsNormBackwardOptions<T, W>): RmsNormBackwardResult<T, W>;
export function rmsNormBackward(dy: FloatArray, x: FloatArray, weight: FloatArray | null, options?: RmsNormBackwardOptions<FloatArray, FloatArray>): RmsNormBackwardResult<FloatArray, FloatArray> {
  return ready('rmsNormBackward').rmsNormBackward(dy, x, weight, options as never) as RmsNormBackwardResult<FloatArray, FloatArray>;
}
