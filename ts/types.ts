/**
 * The public types of the call arguments: dtypes, casting modes, the array types and the
 * options of the one-off forward and backward.
 * @module
 */

declare global {
  /**
   * The disposal symbols (`using`, `await using`), declared here too so that these typings
   * compile in projects whose TypeScript libraries lack `esnext.disposable` (the same
   * declarations as that lib's and @types/node's, with which they merge).
   */
  interface SymbolConstructor {
    readonly dispose: unique symbol;
    readonly asyncDispose: unique symbol;
  }
}


/**
 * How an array's elements are stored: float32, IEEE binary16 (`float16`) or `bfloat16`. The
 * math is float32 whatever they are: half data is widened on load and rounded (to nearest
 * even) once on store, or as {@link CastingMode} says.
 */
export type Dtype = 'float32' | 'float16' | 'bfloat16';

/**
 * The wasm builds (see build.sh): `simd` and `simd-threads` run wherever SIMD128 does (the
 * second on shared memory, for the pool); `simd-relaxed` and `simd-relaxed-threads` are the
 * same with relaxed SIMD, for engines that have it, and give the same bits; `scalar` runs
 * where SIMD128 does not.
 */
export type Build = 'simd' | 'simd-threads' | 'simd-relaxed' | 'simd-relaxed-threads' | 'scalar';

/** The two half-precision dtypes. */
export type HalfDtype = 'float16' | 'bfloat16';

/** The array that holds a {@link HalfDtype}'s elements as bit patterns. */
export type HalfBits = Uint16Array;

/**
 * A quantized output's storage (`options.outDtype`), as inference engines feed an int8 or
 * float8 matrix multiply: `'int8'` (an Int8Array) or `'float8_e4m3'` (OCP float8 E4M3FN, no
 * infinities, largest 448; a Uint8Array of bit patterns). Each row's `y` — the values the same
 * call without `outDtype` returns, bit for bit (for half activations: rounded to their dtype) —
 * is divided by a scale: its own, `max|y| / 127` or `max|y| / 448` (NaN ignored; at least
 * 2^-126, float32's smallest normal, unless 0), written to `options.rowScales`, or the static
 * `options.quantScale`; as `q = y · (1 / scale)` in float32,
 * rounded to nearest even and clamped to ±127 or ±448. int8 takes NaN to 0, float8 keeps it
 * (as 0x7f); a row whose scale is 0 gives zeros. Dequantized: `q · scale`.
 */
export type QuantDtype = 'int8' | 'float8_e4m3';

/** The array a quantized output of dtype `Q` is returned in. */
export type QuantArray<Q extends QuantDtype> = Q extends 'int8' ? Int8Array : Uint8Array;

/** What a layer's forward returns: `T` (the activations' array type), or with `outDtype` `Q` the quantized array. */
export type RmsNormOutput<T, Q extends QuantDtype | undefined> = [Q] extends [QuantDtype] ? QuantArray<Q> : T;


/**
 * Where a half-precision result is rounded, to match the framework a model came from:
 * - `'none'` (default) and `'gemma'`: everything in float32, one rounding at the end —
 *   PyTorch `torch.nn.functional.rms_norm` and Hugging Face's GemmaRMSNorm
 *   (`(x.float() * rsqrt(...) * (1 + weight.float())).type_as(x)`; Gemma's `1 +` is
 *   `options.offset: 1`).
 * - `'llama'`: Hugging Face's LlamaRMSNorm, `weight * (x.float() * rsqrt(...)).to(x.dtype)`:
 *   `x · rstd` is rounded to the activations' dtype, then multiplied by the weight and rounded
 *   again. Its backward rounds `dy · weight` to that dtype and takes the weight gradient from
 *   the rounded `x · rstd` — with a weight of that same dtype, each row's term rounded to it
 *   before the rows are summed — as autograd does.
 * For float32 activations every mode is the same.
 */
export type CastingMode = 'none' | 'llama' | 'gemma';

/**
 * Where a gated RMSNorm's gate `silu(z)` multiplies (`options.gate` gives `z`):
 * - `'after'` (default): `y = rmsnorm(x) · weight · silu(z)`, the norm then the gate —
 *   Qwen3-Next's `Qwen3NextRMSNormGated`, Mamba-2's `RMSNormGated(norm_before_gate=True)`.
 * - `'before'`: `y = rmsnorm(x · silu(z)) · weight`, the gate then the norm — Mamba-2's
 *   default (`norm_before_gate=False`; Hugging Face's `MambaRMSNormGated`).
 * `silu(z) = z / (1 + e^−z)`, computed in float32 by a fixed sequence of operations, so the
 * bits are the same on every build and thread count.
 */
export type GateMode = 'after' | 'before';

/**
 * A Float16Array (where the engine has one: Chromium, Firefox, Deno, Bun; not Node 20), typed
 * structurally so that these typings do not need TypeScript's `esnext.float16` lib.
 */
export interface Float16ArrayLike extends ArrayBufferView {
  /** What tells it apart from other typed arrays. */
  readonly [Symbol.toStringTag]: 'Float16Array';
  /** Elements. */
  readonly length: number;
  /** 2. */
  readonly BYTES_PER_ELEMENT: number;
}

/**
 * An array of activations or weights: a Float32Array, a Float16Array, or a Uint16Array
 * holding float16 or bfloat16 bit patterns (then a `dtype` option must say which).
 */
export type FloatArray = Float32Array | Uint16Array | Float16ArrayLike;

/**
 * The scalar options every call takes the same way: the sync forward and backward, the layer,
 * the pool, and the file, stream and dataset functions (and the command's flags of the same
 * names).
 */
export interface ScalarOptions {
  /** Added to mean(x²) inside the square root. Default 1e-6; ≥ 0 and finite as a float32 (≤ 3.4e38). Used as float32. */
  eps?: number;
  /**
   * Added to the weight: `y = x · rstd · (offset + weight)`. Default 0; `1` is Gemma's RMSNorm
   * (Liger-Kernel's `offset`). Finite as a float32; needs a weight when not 0. In the backward
   * dweight keeps its form and dx uses `offset + weight`.
   */
  offset?: number;
  /**
   * pRMSNorm (Zhang & Sennrich 2019, §4.2): rstd is estimated from the first `k` elements of
   * each row, `k` the smallest integer with `k / dim ≥ partial` (`ceil(partial · dim)`), and
   * every element is normalized by it (the backward's gradient through rstd reaches only
   * those). `0 < partial ≤ 1`, default 1 (RMSNorm).
   */
  partial?: number;
}

/**
 * How the arrays of a call are stored and rounded, and their row length: the options the
 * forward, the backward and the layer take alike.
 */
export interface StorageOptions {
  /**
   * The activations' storage: `x`, `dy` and every other `rows × dim` array (residual, out,
   * dx, …). Default: from the first matrix's type (Float32Array: float32, Float16Array:
   * float16); required for a Uint16Array (a layer: default `'float32'`). A dtype that the
   * array's type cannot hold is a TypeError. The math is float32 either way.
   */
  dtype?: Dtype;
  /**
   * The weight's storage (and dweight's). Default: from its type; a Uint16Array weight
   * defaults to `dtype` when that is a half type. May differ from the activations' (a float32
   * weight with bfloat16 activations is common in mixed precision).
   */
  weightDtype?: Dtype;
  /** Where half results are rounded: see {@link CastingMode}. Default `'none'`. */
  castingMode?: CastingMode;
  /** Row length (elements). Default: `weight.length`; required when `weight` is null. */
  dim?: number;
}

/** Options of {@link rmsNorm}. */
export interface RmsNormOptions<T extends FloatArray = Float32Array> extends ScalarOptions, StorageOptions {
  /** Destination, `x.length` elements of the activations' dtype; may be `x` itself. Default: a new array of `x`'s type. */
  out?: T;
  /** A quantized output: see {@link RmsNormQuantOptions} (absent here: the output has the activations' dtype). */
  outDtype?: undefined;
  /** With `outDtype` only: see {@link RmsNormQuantOptions}. */
  quantScale?: undefined;
  /** With `outDtype` only: see {@link RmsNormQuantOptions}. */
  rowScales?: undefined;
  /** Receives `1/sqrt(mean(x²) + eps)` per row: `x.length / dim` floats. */
  rstd?: Float32Array;
  /**
   * Fused residual add: `x.length` floats. The row normalized is `h = x + residual`, and `h`
   * is written to `options.residualOut`, or by default **into `residual` itself** (as vLLM's
   * `fused_add_rms_norm` does): the updated residual stream. One pass forms `h` and its sum of
   * squares. Pass that `h` as `x` to the backward. With half activations `h` is rounded to
   * their dtype before it is squared, as the framework's `residual + x` is.
   */
  residual?: T;
  /** With `residual`: where `h = x + residual` goes, `x.length` elements; may be `x`. Default: `residual`. */
  residualOut?: T;
  /**
   * Gated RMSNorm: `z`, `x.length` elements of the activations' dtype, whose `silu(z)`
   * multiplies the normalized row (see {@link GateMode}). Not with `residual`.
   */
  gate?: T;
  /** With `gate`: where it multiplies, `'after'` (default) or `'before'` the norm. */
  gateMode?: GateMode;
}

/**
 * Options of {@link rmsNorm} with a quantized output (the forward only): those of
 * {@link RmsNormOptions} but `out`, and these — with either `rowScales` (a scale per row) or
 * `quantScale` (one for every row).
 */
export type RmsNormQuantOptions<Q extends QuantDtype = QuantDtype> = Omit<RmsNormOptions<FloatArray>, 'out' | 'outDtype' | 'quantScale' | 'rowScales'> & {
  /** The output's storage: `'int8'` or `'float8_e4m3'`, see {@link QuantDtype}. */
  outDtype: Q;
  /** Destination, `x.length` elements: an Int8Array (int8) or a Uint8Array (float8 bits). Default: a new one. */
  out?: QuantArray<Q>;
} & (
    | {
        /**
         * Receives each row's scale, `x.length / dim` floats: the output means nothing without
         * them. Dequantized, `y ≈ q · rowScales[row]`.
         */
        rowScales: Float32Array;
        /** Not with `rowScales`. */
        quantScale?: undefined;
      }
    | {
        /**
         * The scale of every row (`q = y · (1 / quantScale)`), > 0, used as float32 (its
         * reciprocal must be finite there).
         */
        quantScale: number;
        /** Not with `quantScale`: every row has that scale. */
        rowScales?: undefined;
      }
  );

/** Options of {@link rmsNormBackward}. */
export interface RmsNormBackwardOptions<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array> extends ScalarOptions, StorageOptions {
  /** The forward's rstd, `x.length / dim` floats. Recomputed from `x` and `eps` when absent. */
  rstd?: Float32Array;
  /** Destination of dL/dx, `x.length` elements of the activations' dtype; may be `dy` or `x` itself. Default: new, of `dy`'s type. */
  dx?: T;
  /**
   * Destination of dL/dweight, `dim` elements of the weight's dtype (only with a weight); summed
   * in float32 and rounded once. Default: new, of the weight's type.
   */
  dweight?: W;
  /**
   * Fused residual add: the gradient arriving on the residual stream `h` (the forward's
   * `residualOut`), `x.length` floats. It is added to `dx`, which is then the gradient of both
   * `x` and `residual` (the forward's add passes it to both). Pass the forward's `h` as `x`.
   */
  dresidual?: T;
  /** The forward's gate `z` (gated RMSNorm): the result then has `dgate`. Not with `dresidual`. */
  gate?: T;
  /** As in the forward (default `'after'`). */
  gateMode?: GateMode;
  /** Destination of dL/dz, `x.length` elements of the activations' dtype (only with `gate`; may be `dy` or `gate`). Default: new, of `dy`'s type. */
  dgate?: T;
}

/** Result of {@link rmsNormBackward}: `dweight` is null when `weight` is null. */
export interface RmsNormBackwardResult<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array> {
  /** dL/dx, `x.length` elements. */
  dx: T;
  /** dL/dweight, `dim` elements; null without a weight. */
  dweight: W | null;
  /** dL/dz, `x.length` elements: only when `options.gate` was given. */
  dgate?: T;
}

/** Options of a layer's creation ({@link createRmsNorm}); `Q` the quantized output's dtype, when `outDtype` gives one. */
export interface RmsNormLayerOptions<Q extends QuantDtype | undefined = undefined> extends ScalarOptions, StorageOptions, Pick<RmsNormOptions, 'gateMode'> {
  /**
   * A quantized output, as {@link rmsNorm}'s (`'int8'` or `'float8_e4m3'`): `forward` returns
   * an Int8Array or a Uint8Array, the scales are in the layer's `rowScales` (without
   * `quantScale`), and the layer has no backward. Default: none.
   */
  outDtype?: Q;
  /** With `outDtype`: one static scale for every row, as {@link rmsNorm}'s. Default: a scale per row. */
  quantScale?: number;
}

/**
 * Options of a layer's forward: {@link rmsNorm}'s arrays of the layer's dtype; `out` defaults
 * to the layer's own array, reused (with `outDtype`, an Int8Array or a Uint8Array).
 */
export type RmsNormLayerForwardOptions<T extends FloatArray = Float32Array, Q extends QuantDtype | undefined = undefined> = Pick<
  RmsNormOptions<T>,
  'residual' | 'residualOut' | 'gate'
> & {
  /** Destination of y, `x.length` elements (may be `x`). Default: the layer's own array, reused. */
  out?: RmsNormOutput<T, Q>;
};

/** Options of a layer's backward: {@link rmsNormBackward}'s of the layer's dtype (its outputs are the layer's own arrays). */
export type RmsNormLayerBackwardOptions<T extends FloatArray = Float32Array> = Pick<RmsNormBackwardOptions<T>, 'rstd' | 'dresidual' | 'gate'>;

/** Per-call option of the pool's methods, besides the sync API's options. */
export interface PoolCallOptions {
  /** Aborting rejects the call with the signal's reason (an AbortError) while it is queued. */
  signal?: AbortSignal;
}
