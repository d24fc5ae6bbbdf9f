/**
 * Float64 reference RMSNorm (forward and backward), deterministic test data, and tolerance
 * checks that report the first offending element. Shared by the sync-API suites.
 *
 * The reference takes float32 (or float64) inputs and does all arithmetic in float64, so its
 * own error (about 2^-53 relative per operation) is negligible next to the float32 kernels'
 * tolerances. eps is rounded to float32 first, as the kernels receive it.
 * @module
 */

/** A flat numeric array: Float32Array, Float64Array or number[]. */
export type Vec = ArrayLike<number>;

/** 2^-24: the unit roundoff of float32 (half an ulp of 1). */
export const U32 = 2 ** -24;

/**
 * A deterministic PRNG (mulberry32): uniform floats in [0, 1) from a 32-bit seed. Tests use
 * it rather than Math.random so that a failure reproduces exactly.
 */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Standard normal samples (Box–Muller) from a uniform source. */
export function gaussian(rand: () => number): () => number {
  return () => {
    const u = 1 - rand(); // (0, 1]: log(u) is finite
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
  };
}

/** `n` float32 normal samples times `scale`, from `seed`. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  const g = gaussian(rng(seed));
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = g() * scale;
  return a;
}

/**
 * `rows × dim` test input whose rows differ in scale (10^-3 .. 10^3) and some in mean, so that
 * eps matters for some rows and not others, and rows are not all alike.
 */
export function testRows(rows: number, dim: number, seed: number): Float32Array {
  const g = gaussian(rng(seed));
  const x = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    const scale = 10 ** ((r % 7) - 3);
    const mean = r % 3 === 2 ? 2 * scale : 0;
    for (let i = 0; i < dim; i++) x[r * dim + i] = mean + g() * scale;
  }
  return x;
}

/** A gain near 1 (0.5 .. 1.5, some negative entries), `dim` floats. */
export function testWeight(dim: number, seed: number): Float32Array {
  const rand = rng(seed);
  const w = new Float32Array(dim);
  for (let i = 0; i < dim; i++) w[i] = (i % 11 === 5 ? -1 : 1) * (0.5 + rand());
  return w;
}

/** Result of {@link refForward}. */
export interface RefForward {
  /** `rows × dim` outputs. */
  y: Float64Array;
  /** One `1/sqrt(mean(x²) + eps)` per row. */
  rstd: Float64Array;
}

/**
 * Float64 RMSNorm forward: `y = x · rstd · weight`, `rstd = 1/sqrt(mean(x²) + eps)` per row.
 * @param x `rows × dim` values. @param weight `dim` values or null (gain 1).
 * @param eps Rounded to float32 before use (the kernels' parameter is float32).
 */
export function refForward(x: Vec, weight: Vec | null, dim: number, eps: number): RefForward {
  const rows = x.length / dim;
  const e = Math.fround(eps);
  const y = new Float64Array(x.length);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[o + i]! * x[o + i]!;
    const rs = 1 / Math.sqrt(ss / dim + e);
    rstd[r] = rs;
    for (let i = 0; i < dim; i++) y[o + i] = x[o + i]! * rs * (weight ? weight[i]! : 1);
  }
  return { y, rstd };
}

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
  /**
   * Per row: `rstd · rms(dy ⊙ weight)`, the natural magnitude of that row's dx (the size of
   * the terms that cancel in it), used to scale dx's absolute tolerance.
   */
  dxScale: Float64Array;
  /**
   * Per element: `rstd·|gy_i| + rstd³·mean(|gy ⊙ x|)·|x_i|`, the sizes of the two terms whose
   * difference dx_i is (with the dot product taken in absolute value): float32 rounding error
   * in dx_i is a small multiple of 2^-24 times this, whatever the data.
   */
  dxTerms: Float64Array;
}

/**
 * Float64 RMSNorm backward. With `gy = dy ⊙ weight`, per row
 * `dx = rstd · gy − x · rstd³ · mean(gy ⊙ x)` and `dweight = Σ_rows dy ⊙ x · rstd`.
 * @param rstd The per-row rstd to use (e.g. the kernel's float32 one); recomputed in float64
 *   from `x` and `eps` when omitted.
 */
export function refBackward(
  dy: Vec,
  x: Vec,
  weight: Vec | null,
  dim: number,
  eps: number,
  rstd?: Vec,
): RefBackward {
  const rows = x.length / dim;
  const rs = rstd ? Float64Array.from(rstd) : refForward(x, null, dim, eps).rstd;
  const dx = new Float64Array(x.length);
  const dweight = weight ? new Float64Array(dim) : null;
  const dweightAbs = weight ? new Float64Array(dim) : null;
  const dxScale = new Float64Array(rows);
  const dxTerms = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    const a = rs[r]!;
    let c = 0;
    let cAbs = 0;
    let gg = 0;
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i]! * (weight ? weight[i]! : 1);
      c += gy * x[o + i]!;
      cAbs += Math.abs(gy * x[o + i]!);
      gg += gy * gy;
    }
    const b = a * a * a * (c / dim);
    const bAbs = a * a * a * (cAbs / dim);
    dxScale[r] = a * Math.sqrt(gg / dim);
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i]! * (weight ? weight[i]! : 1);
      dx[o + i] = a * gy - b * x[o + i]!;
      dxTerms[o + i] = Math.abs(a * gy) + bAbs * Math.abs(x[o + i]!);
      if (dweight && dweightAbs) {
        const t = dy[o + i]! * x[o + i]! * a;
        dweight[i]! += t;
        dweightAbs[i]! += Math.abs(t);
      }
    }
  }
  return { dx, dweight, dweightAbs, rstd: rs, dxScale, dxTerms };
}

/**
 * The kernels' documented weight-gradient summation, emulated in float32 with Math.fround:
 * per row `t = dy · (x · rstd)`, summed over each block of 32 rows in row order from zero, the
 * block sums added in block order from zero. With the same float32 rstd the kernel must agree
 * bit for bit (its vector lanes are per column, so the order per column is exactly this).
 */
export function dweightF32(dy: Vec, x: Vec, rstd: Vec, dim: number, blockRows = 32): Float32Array {
  const rows = x.length / dim;
  const f = Math.fround;
  const dg = new Float32Array(dim);
  const p = new Float32Array(dim);
  for (let r0 = 0; r0 < rows; r0 += blockRows) {
    p.fill(0);
    for (let r = r0; r < Math.min(rows, r0 + blockRows); r++) {
      const a = rstd[r]!;
      for (let i = 0; i < dim; i++) p[i] = f(p[i]! + f(dy[r * dim + i]! * f(x[r * dim + i]! * a)));
    }
    for (let i = 0; i < dim; i++) dg[i] = f(dg[i]! + p[i]!);
  }
  return dg;
}

/** A per-element tolerance: the largest allowed |actual − ref| for element `i`. */
export type Tolerance = (i: number, ref: number) => number;

/** `|a − ref| ≤ atol + rtol · |ref|` (PyTorch's assert_close rule). */
export function allclose(atol: number, rtol: number): Tolerance {
  return (_i, ref) => atol + rtol * Math.abs(ref);
}

/**
 * Compares `actual` against `ref` element by element. A NaN reference requires a NaN, an
 * infinite one the same infinity; otherwise `actual` must be finite and within `tol`.
 * @returns null when all pass, else a description of the worst offender and the count.
 */
export function mismatch(actual: Vec, ref: Vec, tol: Tolerance, label = ''): string | null {
  if (actual.length !== ref.length) return `${label}: length ${actual.length}, expected ${ref.length}`;
  let bad = 0;
  let worst = -1;
  let worstRatio = 0;
  for (let i = 0; i < ref.length; i++) {
    const a = actual[i]!;
    const r = ref[i]!;
    // ratio > 1 fails; written so that a NaN tolerance fails too instead of passing silently
    let ratio: number;
    if (Number.isNaN(r)) ratio = Number.isNaN(a) ? 0 : Infinity;
    else if (!Number.isFinite(r)) ratio = a === r ? 0 : Infinity;
    else if (!Number.isFinite(a)) ratio = Infinity;
    else {
      const d = Math.abs(a - r);
      const t = tol(i, r);
      ratio = d === 0 ? 0 : d <= t ? d / t : t > 0 ? Math.max(d / t, 1 + 1e-9) : Infinity;
    }
    if (ratio > 1) {
      bad++;
      if (ratio > worstRatio || worst < 0) {
        worstRatio = ratio;
        worst = i;
      }
    }
  }
  if (bad === 0) return null;
  const a = actual[worst]!;
  const r = ref[worst]!;
  return (
    `${label}: ${bad}/${ref.length} elements out of tolerance; worst [${worst}] = ${a}, ` +
    `reference ${r}, |diff| ${Math.abs(a - r)} vs allowed ${tol(worst, r)}`
  );
}

/** Whether two float32 arrays hold identical bits (NaN payloads included). */
export function sameBits(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return false;
  return true;
}

/** Index of the first differing bit pattern, or -1. */
export function firstBitDiff(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < n; i++) if (ua[i] !== ub[i]) return i;
  return a.length === b.length ? -1 : n;
}
