/**
 * js-optimized: the fastest plain JavaScript we could write for the same math, to show what
 * wasm gains over good JS rather than over a straw man.
 *
 * What helps in V8 (measured on this machine, Node 20): four independent accumulators (the
 * sums are latency-bound otherwise), loads hoisted into locals, one multiply by 1/rms instead
 * of a divide per element, all loops monomorphic over Float32Arrays, and reused output and
 * scratch buffers. The weight gradient is summed in a reused Float64Array (no float32 rounding
 * per row, which also costs V8 a conversion per store) and rounded once at the end.
 * Math.fround on the accumulators did not help (V8 keeps float64 math either way), so it is
 * not used.
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

/**
 * Backward: one pass for Σx² and Σ dy·w·x (four accumulators each), one pass writing dx and
 * adding dy·x·rstd into `acc` (float64, `dim`), which is then rounded into `dw`.
 */
export function optimizedBackward(
  dy: Float32Array, x: Float32Array, w: Float32Array, dx: Float32Array, dw: Float32Array, acc: Float64Array,
  rows: number, dim: number, eps: number,
): void {
  acc.fill(0);
  const invDim = 1 / dim;
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, g0 = 0, g1 = 0, g2 = 0, g3 = 0;
    let i = 0;
    for (const e = dim - 3; i < e; i += 4) {
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
    for (; i < dim; i++) {
      const a = x[o + i]!;
      s0 += a * a;
      g0 += dy[o + i]! * w[i]! * a;
    }
    const rstd = 1 / Math.sqrt((s0 + s1 + (s2 + s3)) * invDim + eps);
    // dx = rstd·gy − x·(rstd³·mean(gy·x))
    const k = rstd * rstd * rstd * (g0 + g1 + (g2 + g3)) * invDim;
    for (i = 0; i < dim; i++) {
      const a = x[o + i]!, g = dy[o + i]!;
      dx[o + i] = rstd * g * w[i]! - a * k;
      acc[i]! += g * a * rstd;
    }
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
        return {
          async: false,
          fn: () => optimizedBackward(c.dy, c.x, c.w, dx, dw, acc, c.rows, c.dim, c.eps),
          outputs: () => ({ dx, dw }),
        };
      },
    },
  ];
}
