/**
 * js-optimized: the fastest plain JavaScript we could write for the same math, to show what
 * wasm gains over good JS rather than over a straw man.
 *
 * What helps in V8 (measured on this machine, Node 20): four independent accumulators (the
 * sums are latency-bound otherwise), loads hoisted into locals, one multiply by 1/rms instead
 * of a divide per element, all loops monomorphic over Float32Arrays, and reused output and
 * scratch buffers. The weight gradient is summed in a reused Float64Array (no float32 rounding
 * per row, which also costs V8 a conversion per store) and rounded once at the end.
 * Measured at 64×4096: the forward's scaling loop unrolled by 4 is 1.35× faster than the
 * plain loop; Math.fround around every operation made it slower (573 µs vs 336 µs: V8 still
 * computes in float64 and adds the roundings), so it is not used.
 * @module
 */
import type { Case, Contender } from '../types.js';

/** Sum of squares of `x[o .. o+n)` with four accumulators. */
function sumSq(x: Float32Array, o: number, n: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let i = 0;
  for (const e = n - 3; i < e; i += 4) {
    const a = x[o + i]!, b = x[o + i + 1]!, c = x[o + i + 2]!, d = x[o + i + 3]!;
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
  }
  for (; i < n; i++) s0 += x[o + i]! * x[o + i]!;
  return s0 + s1 + (s2 + s3);
}

/** Forward into `y` (may be `x`): `y = x · (1/rms) · w`. */
export function optimizedForward(x: Float32Array, w: Float32Array, y: Float32Array, rows: number, dim: number, eps: number): void {
  const invDim = 1 / dim;
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    const k = 1 / Math.sqrt(sumSq(x, o, dim) * invDim + eps);
    let i = 0;
    for (const e = dim - 3; i < e; i += 4) {
      const a = x[o + i]!, b = x[o + i + 1]!, c = x[o + i + 2]!, d = x[o + i + 3]!;
      y[o + i] = a * k * w[i]!;
      y[o + i + 1] = b * k * w[i + 1]!;
      y[o + i + 2] = c * k * w[i + 2]!;
      y[o + i + 3] = d * k * w[i + 3]!;
    }
    for (; i < dim; i++) y[o + i] = x[o + i]! * k * w[i]!;
  }
}

/** Σx² and Σ dy·w·x of one row, written to `out[0]`, `out[1]` (no allocation per row). */
function rowSums(dy: Float32Array, x: Float32Array, w: Float32Array, o: number, n: number, out: Float64Array): void {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0, g0 = 0, g1 = 0, g2 = 0, g3 = 0;
  let i = 0;
  for (const e = n - 3; i < e; i += 4) {
    const a = x[o + i]!, b = x[o + i + 1]!, c = x[o + i + 2]!, d = x[o + i + 3]!;
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
    g0 += dy[o + i]! * w[i]! * a;
    g1 += dy[o + i + 1]! * w[i + 1]! * b;
    g2 += dy[o + i + 2]! * w[i + 2]! * c;
    g3 += dy[o + i + 3]! * w[i + 3]! * d;
  }
  for (; i < n; i++) {
    const a = x[o + i]!;
    s0 += a * a;
    g0 += dy[o + i]! * w[i]! * a;
  }
  out[0] = s0 + s1 + (s2 + s3);
  out[1] = g0 + g1 + (g2 + g3);
}

/** dx of one row, `dx = rstd·dy·w − x·k`, and `acc += dy·x·rstd`. */
function rowGrad(
  dy: Float32Array, x: Float32Array, w: Float32Array, dx: Float32Array, acc: Float64Array,
  o: number, n: number, rstd: number, k: number,
): void {
  for (let i = 0; i < n; i++) {
    const a = x[o + i]!, g = dy[o + i]!;
    dx[o + i] = rstd * g * w[i]! - a * k;
    acc[i]! += g * a * rstd;
  }
}

/**
 * Backward: one pass for Σx² and Σ dy·w·x (four accumulators each), one pass writing dx and
 * adding dy·x·rstd into `acc` (float64, `dim`), which is then rounded into `dw`. The two passes
 * are separate small functions: written inline in one function V8 compiled the whole thing
 * about 2× slower on single rows (measured 18 µs vs 8 µs at 1×4096; equal at 64×4096).
 * `sums` is 2 floats of scratch.
 */
export function optimizedBackward(
  dy: Float32Array, x: Float32Array, w: Float32Array, dx: Float32Array, dw: Float32Array, acc: Float64Array,
  sums: Float64Array, rows: number, dim: number, eps: number,
): void {
  acc.fill(0);
  const invDim = 1 / dim;
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    rowSums(dy, x, w, o, dim, sums);
    const rstd = 1 / Math.sqrt(sums[0]! * invDim + eps);
    // dx = rstd·gy − x·(rstd³·mean(gy·x))
    rowGrad(dy, x, w, dx, acc, o, dim, rstd, rstd * rstd * rstd * sums[1]! * invDim);
  }
  for (let i = 0; i < dim; i++) dw[i] = acc[i]!;
}

/** The js-optimized contenders (forward, backward). */
export function jsOptimized(): Contender[] {
  return [
    {
      name: 'js-optimized', family: 'js-optimized', op: 'forward', threads: 1, zeroCopy: false,
      make(c: Case) {
        const y = new Float32Array(c.x.length);
        return { async: false, fn: () => optimizedForward(c.x, c.w, y, c.rows, c.dim, c.eps), outputs: () => ({ y }) };
      },
    },
    {
      name: 'js-optimized', family: 'js-optimized', op: 'backward', threads: 1, zeroCopy: false,
      make(c: Case) {
        const dx = new Float32Array(c.x.length);
        const dw = new Float32Array(c.dim);
        const acc = new Float64Array(c.dim);
        const sums = new Float64Array(2);
        return {
          async: false,
          fn: () => optimizedBackward(c.dy, c.x, c.w, dx, dw, acc, sums, c.rows, c.dim, c.eps),
          outputs: () => ({ dx, dw }),
        };
      },
    },
  ];
}
