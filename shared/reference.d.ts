/**
 * Types of reference.js: the project's one float64 reference, seeded generator and check
 * (see that file's module doc for the tolerance policy).
 * @module
 */

/** A flat numeric array: Float32Array, Float64Array or number[]. */
export type Vec = ArrayLike<number>;
/** 2^-24: the unit roundoff of float32. */
export declare const U32: number;
/** The library's default eps (1e-6), used by the benchmark's inputs. */
export declare const EPS: number;
/** The benchmark's and the demo's check: |got − ref| ≤ ATOL + RTOL·|ref| (both 1e-4). */
export declare const ATOL: number;
export declare const RTOL: number;
/** y against float64 in the tests: |got − ref| ≤ Y_ATOL + Y_RTOL·|ref| (1e-5, 1.3e-6; PyTorch's float32). */
export declare const Y_ATOL: number;
export declare const Y_RTOL: number;
/** rstd against float64: relative 1e-5. */
export declare const RSTD_RTOL: number;
/** dx (and the browser pages' y): ROW_K·(row scale + |ref|); dweight: ROW_K·Σ|terms|. 1e-5. */
export declare const ROW_K: number;

/** mulberry32: uniform floats in [0, 1) from a 32-bit seed. */
export declare function rng(seed: number): () => number;
/** Standard normal samples (Box–Muller) from a uniform source. */
export declare function gaussian(rand: () => number): () => number;
/** `n` float32 normal samples times `scale` (default 1), from `seed`. */
export declare function randn(n: number, seed: number, scale?: number): Float32Array;
/** `n` floats uniform in [lo, hi) from `next`. */
export declare function uniform(next: () => number, n: number, lo: number, hi: number): Float32Array;
/** Fills `a` with normal floats times `scale` (default 1) plus `shift` (default 0); returns it. */
export declare function normal(a: Float32Array, next: () => number, scale?: number, shift?: number): Float32Array;

/** One benchmark problem: `rows × dim` inputs. */
export interface RefCase {
  rows: number;
  dim: number;
  eps: number;
  /** `rows × dim`, the forward's input. */
  x: Float32Array;
  /** `dim`, the gain. */
  w: Float32Array;
  /** `dim`, LayerNorm's bias. */
  b: Float32Array;
  /** `rows × dim`, the upstream gradient. */
  dy: Float32Array;
}
/** `ROWSxDIM` → shape; RangeError unless 1 ≤ rows·dim ≤ 2^26. */
export declare function parseShape(item: string): { rows: number; dim: number };
/** The benchmark's inputs for a shape, seeded by it. */
export declare function makeCase(s: { rows: number; dim: number }): RefCase;
/** `rows × dim` rows of varied scale (10^-3 .. 10^3) and mean. */
export declare function testRows(rows: number, dim: number, seed: number): Float32Array;
/** A gain near 1 (0.5 .. 1.5, some negative entries), `dim` floats. */
export declare function testWeight(dim: number, seed: number): Float32Array;

/** Result of {@link refForward}. */
export interface RefForward {
  /** `rows × dim` outputs. */
  y: Float64Array;
  /** One `1/sqrt(mean(x²) + eps)` per row. */
  rstd: Float64Array;
}
/** Float64 `1/sqrt(mean(x²) + eps)` per row of `x` (`rows × dim`), eps rounded to float32 first; the mean over the first `stat` (default `dim`). */
export declare function refRstd(x: Vec, dim: number, eps: number, stat?: number): Float64Array;
/** The variants (issue 11): the gain is `offset + weight`; rstd from the first `stat` elements of a row. */
export interface RefVariant {
  /** Added to the weight (default 0). */
  offset?: number;
  /** Elements rstd is estimated from (default `dim`). */
  stat?: number;
}
/** Float64 RMSNorm forward; eps rounded to float32 first. A fused residual add: pass `h` as `x`. */
export declare function refForward(x: Vec, weight: Vec | null, dim: number, eps: number, v?: RefVariant): RefForward;

/** Result of {@link refBackward}. */
export interface RefBackward {
  /** `rows × dim`: dL/dx. */
  dx: Float64Array;
  /** `dim`: dL/dweight, or null without weight. */
  dweight: Float64Array | null;
  /** `dim`: `Σ_rows |dy · x · rstd|`, the scale of dweight's rounding error; null without weight. */
  dweightAbs: Float64Array | null;
  /** Per row: the rstd used. */
  rstd: Float64Array;
  /** Per row: `rstd · rms(dy ⊙ weight)`, the natural magnitude of that row's dx. */
  dxScale: Float64Array;
  /**
   * Per element: `rstd·|gy_i| + rstd³·mean(|gy ⊙ x|)·|x_i| (+ |dresidual_i|)`, the sizes of the
   * terms dx_i is made of: float32 rounding error in dx_i is a small multiple of 2^-24 times this.
   */
  dxTerms: Float64Array;
}
/** Float64 RMSNorm backward; `rstd` given or recomputed from `x` and `eps`; `dresidual` added to dx. */
export declare function refBackward(
  dy: Vec,
  x: Vec,
  weight: Vec | null,
  dim: number,
  eps: number,
  rstd?: Vec | null,
  v?: RefVariant & { dresidual?: Vec | null },
): RefBackward;
/** Float64 `silu(z)` and its derivative. */
export declare function refSilu(z: number): { silu: number; grad: number };
/** Result of {@link refGated}. */
export interface RefGated {
  /** `rows × dim`: y, dL/dx, dL/dz. */
  y: Float64Array;
  dx: Float64Array;
  dz: Float64Array;
  /** `dim`: dL/dweight and `Σ_rows |term|`; null without weight. */
  dweight: Float64Array | null;
  dweightAbs: Float64Array | null;
  /** Per element: the sizes of the terms dx_i and dz_i are made of (float32 error is a small multiple of 2^-24 times these). */
  dxTerms: Float64Array;
  dzTerms: Float64Array;
}
/** Float64 gated RMSNorm forward and backward; `mode` where `silu(z)` multiplies. */
export declare function refGated(
  x: Vec, z: Vec, dy: Vec, weight: Vec | null, dim: number, eps: number, mode: 'after' | 'before', v?: RefVariant,
): RefGated;
/** Float64 LayerNorm forward; `w`, `b` may be null. */
export declare function refLayerNorm(x: Vec, w: Vec | null, b: Vec | null, dim: number, eps: number): { y: Float64Array };
/** The kernels' dweight summation (float32 per 32-row block, the blocks added in float64 in order), emulated with Math.fround. */
export declare function dweightF32(dy: Vec, x: Vec, rstd: Vec, dim: number, blockRows?: number): Float32Array;

/** A per-element tolerance: the largest allowed |actual − ref| for element `i`. */
export type Tolerance = (i: number, ref: number) => number;
/** `atol + rtol · |ref|`. */
export declare function allclose(atol: number, rtol: number): Tolerance;
/** y's tolerance in the tests: allclose(Y_ATOL, Y_RTOL). */
export declare const yTolerance: Tolerance;
/** rstd's tolerance: RSTD_RTOL·|ref|. */
export declare const rstdTolerance: Tolerance;
/** `k · (rowScale[row of i] + |ref|)` for `rows × dim` outputs; k defaults to ROW_K. */
export declare function rowTolerance(rowScale: Vec, dim: number, k?: number): Tolerance;
/** Per row of `rows × dim` values: the largest |value|. */
export declare function rowMaxAbs(ref: Vec, dim: number): Float64Array;
/** `k · scale[i]`; k defaults to ROW_K. */
export declare function sumTolerance(scale: Vec, k?: number): Tolerance;
/** dweight's rounding bound: (34 + extraUlps)·2^-24·abs[i] (float32 sums per 32-row block, the blocks added in float64). */
export declare function dweightTolerance(abs: Vec, rows: number, extraUlps?: number): Tolerance;
/** |a − r| / t with the NaN/infinity rules of every check: ≤ 1 passes. */
export declare function ratioOf(a: number, r: number, t: number): number;
/** The largest ratioOf over all elements; Infinity when `actual` is missing or of another length. */
export declare function worstRatio(actual: Vec | null | undefined, ref: Vec, tol: Tolerance): number;
/** null when every element passes `tol`, else a description of the worst offender. */
export declare function mismatch(actual: Vec, ref: Vec, tol: Tolerance, label?: string): string | null;
/** Whether two arrays of the same element width (float32, or 16-bit half bit patterns) hold identical bits. */
export declare function sameBits(a: ArrayLike<number> & ArrayBufferView, b: ArrayLike<number> & ArrayBufferView): boolean;
/** Index of the first differing bit pattern, or -1. */
export declare function firstBitDiff(a: Float32Array, b: Float32Array): number;

/** A contender's outputs. */
export interface RefOutputs {
  y?: Float32Array;
  dx?: Float32Array;
  dw?: Float32Array;
}
/** The outcome of {@link checkOutputs}. */
export interface RefCheck {
  passed: boolean;
  maxAbsErr: number;
  /** Largest |err| / (atol + rtol·|ref|): ≤ 1 passes. */
  worstToTolerance: number;
  atol: number;
  rtol: number;
  /** The worst offender, when the check failed. */
  detail?: string;
}
/** A failed check (passed false, ratios Infinity) with `detail`. */
export declare function failedCheck(detail: string): RefCheck;
/** The lazy float64 reference of one case. */
export interface CaseReference {
  forward(): RefForward;
  backward(): RefBackward;
  layerNorm(): { y: Float64Array };
}
/** Builds the lazy, cached reference of `c`. */
export declare function caseReference(c: RefCase): CaseReference;
/** Checks a contender's outputs for `op` against `ref` (ATOL/RTOL; a copy must be exact). */
export declare function checkOutputs(op: 'forward' | 'backward' | 'layernorm' | 'copy', out: RefOutputs, c: RefCase, ref: CaseReference): RefCheck;

// ---------------------------------------------------------------------------------------------
// Half precision (float16, bfloat16): exact reference conversions (see the section in
// reference.js for how they are derived and the NaN rules, checked in test/half-reference.test.ts).
// Patterns are numbers: 0..65535 for a half, 0..2^32−1 for a float32; anything else is a RangeError.
// ---------------------------------------------------------------------------------------------

/** The two 16-bit storage formats: IEEE binary16 and bfloat16 (float32's top 16 bits). */
export type HalfDtype = 'float16' | 'bfloat16';

/** The float32 bit pattern (uint32) of `v` rounded to float32; a NaN gives whatever the engine stores. */
export declare function f32BitsOf(v: number): number;
/** The float32 value of bit pattern `bits` (uint32); NaN patterns give NaN. */
export declare function f32FromBits(bits: number): number;

/** The exact value of half pattern `bits` (±0, subnormals, ±Infinity; NaN for NaN patterns). */
export declare function halfToF32(bits: number, dtype: HalfDtype): number;
/**
 * The float32 bit pattern of half pattern `bits`. NaN: sign kept, quiet bit 0x00400000 set,
 * payload kept in the top fraction bits (`sign | 0x7fc00000 | frac << (23 − p)`).
 */
export declare function halfToF32Bits(bits: number, dtype: HalfDtype): number;
/**
 * float32 bit pattern → half pattern, round to nearest, ties to even; overflow (a result that
 * rounds to 2^(emax+1) or more: ≥ 65520 for float16) gives Inf. NaN: sign kept, quiet bit set,
 * top payload bits kept — float16 `sign | 0x7e00 | frac32 >>> 13`, bfloat16 `bits >>> 16 | 0x0040`.
 */
export declare function f32BitsToHalf(bits: number, dtype: HalfDtype): number;
/**
 * float32 value → half pattern as {@link f32BitsToHalf}. RangeError unless `Math.fround(v) === v`
 * (or v is NaN): a float64 rounded straight to half can differ from float32-then-half. A NaN
 * number's sign and payload are whatever the engine stores (usually 0x7fc00000 → 0x7e00 / 0x7fc0);
 * pass bits to f32BitsToHalf when they matter.
 */
export declare function f32ToHalf(v: number, dtype: HalfDtype): number;
/** bfloat16 pattern → its value (exactly a float32); NaN for NaN patterns. */
export declare function bf16ToF32(bits: number): number;
/** IEEE binary16 pattern → its value: subnormals, ±0, ±Infinity; NaN for NaN patterns. */
export declare function f16ToF32(bits: number): number;
/** float32 value → bfloat16 pattern, round to nearest even; NaN → quiet NaN (see {@link f32ToHalf}). */
export declare function f32ToBf16(v: number): number;
/** float32 value → binary16 pattern, round to nearest even, subnormal/zero results, ≥ 65520 → Inf; NaN → quiet NaN (see {@link f32ToHalf}). */
export declare function f32ToF16(v: number): number;
/** Half patterns → float32 values (NaNs by {@link halfToF32Bits}'s rule, written as bits). */
export declare function toF32Array(bits: Uint16Array, dtype: HalfDtype): Float32Array;
/**
 * float32 values → half patterns, round to nearest even. A Float32Array is read as bits (NaN
 * signs and payloads kept, as {@link f32BitsToHalf}); other arrays must hold float32 values.
 */
export declare function fromF32Array(a: ArrayLike<number>, dtype: HalfDtype): Uint16Array;
/** Whether half pattern `bits` is a NaN of `dtype`. */
export declare function halfIsNaN(bits: number, dtype: HalfDtype): boolean;
/** Whether half pattern `bits` is ±Infinity in `dtype`. */
export declare function halfIsInf(bits: number, dtype: HalfDtype): boolean;
/**
 * One ulp of the half value with pattern `bits`: the format's spacing in that value's binade (at
 * a power of two, the spacing above it); 2^(emin−p) for ±0 and subnormals (2^-24 for float16,
 * 2^-133 for bfloat16). Infinity for ±Inf, NaN for NaN.
 */
export declare function halfUlp(bits: number, dtype: HalfDtype): number;
/**
 * The number of representable values between two half patterns of `dtype` (+0 and −0 are the
 * same; neighbours across zero or a binade are 1 apart). Both NaN: 0; exactly one NaN: Infinity;
 * an infinity: 0 when both are the same infinity, else Infinity.
 */
export declare function halfUlpDiff(aBits: number, bBits: number, dtype: HalfDtype): number;

/** Largest magnitude of each quantized output dtype. */
export declare const QMAX: { readonly int8: 127; readonly float8_e4m3: 448 };
/** The value of float8 E4M3FN code `b` (0..255); NaN for 0x7f and 0xff. */
export declare function e4m3ToNumber(b: number): number;
/** The float8 E4M3FN code nearest to `v` (|v| ≤ 448, or NaN), ties to the even code, found by search. */
export declare function numberToE4m3(v: number, negative?: boolean): number;
/** The quantized output of float32 rows `y` as the library computes it (every step in float32): codes and per-row scales. */
export declare function refQuantize(
  y: ArrayLike<number>,
  rows: number,
  dim: number,
  outDtype: 'int8' | 'float8_e4m3',
  quantScale?: number,
): { q: Int8Array | Uint8Array; scales: Float32Array };
