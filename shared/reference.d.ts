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
/** Float64 LayerNorm forward; `w`, `b` may be null. */
export declare function refLayerNorm(x: Vec, w: Vec | null, b: Vec | null, dim: number, eps: number): { y: Float64Array };
/** The kernels' float32 dweight summation (32-row blocks, in order), emulated with Math.fround. */
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
/** dweight's float32 rounding bound over `rows` rows: (32 + ⌈rows/32⌉ + 2 + extraUlps)·2^-24·abs[i]. */
export declare function dweightTolerance(abs: Vec, rows: number, extraUlps?: number): Tolerance;
/** |a − r| / t with the NaN/infinity rules of every check: ≤ 1 passes. */
export declare function ratioOf(a: number, r: number, t: number): number;
/** The largest ratioOf over all elements; Infinity when `actual` is missing or of another length. */
export declare function worstRatio(actual: Vec | null | undefined, ref: Vec, tol: Tolerance): number;
/** null when every element passes `tol`, else a description of the worst offender. */
export declare function mismatch(actual: Vec, ref: Vec, tol: Tolerance, label?: string): string | null;
/** Whether two float32 arrays hold identical bits. */
export declare function sameBits(a: Float32Array, b: Float32Array): boolean;
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
