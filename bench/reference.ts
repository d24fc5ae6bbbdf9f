/**
 * The float64 reference every contender is checked against before it is timed, and the check.
 *
 * Tolerance: an element passes when |actual − reference| ≤ ATOL + RTOL·|reference| with
 * ATOL = RTOL = 1e-4 (float32 carries ~7 digits; the kernels sum in float32, so errors of a
 * few ulps times √dim are expected and 1e-4 leaves room for them, but not for a wrong formula).
 * @module
 */
import type { Case, Check, Outputs } from './types.js';

/** Absolute tolerance of the check. */
export const ATOL = 1e-4;
/** Relative tolerance of the check. */
export const RTOL = 1e-4;

/** Exact results in float64 for one Case, computed on first use. */
export interface Reference {
  forward(): { y: Float64Array; rstd: Float64Array };
  backward(): { dx: Float64Array; dw: Float64Array };
  layerNorm(): { y: Float64Array };
}

/** Builds the (lazy, cached) float64 reference of `c`. */
export function reference(c: Case): Reference {
  const { rows, dim, x, w, b, dy, eps } = c;
  let fwd: { y: Float64Array; rstd: Float64Array } | undefined;
  let bwd: { dx: Float64Array; dw: Float64Array } | undefined;
  let ln: { y: Float64Array } | undefined;
  const forward = () => {
    if (fwd) return fwd;
    const y = new Float64Array(rows * dim);
    const rstd = new Float64Array(rows);
    for (let r = 0, o = 0; r < rows; r++, o += dim) {
      let ss = 0;
      for (let i = 0; i < dim; i++) ss += x[o + i]! * x[o + i]!;
      const s = 1 / Math.sqrt(ss / dim + eps);
      rstd[r] = s;
      for (let i = 0; i < dim; i++) y[o + i] = x[o + i]! * s * w[i]!;
    }
    return (fwd = { y, rstd });
  };
  return {
    forward,
    backward() {
      if (bwd) return bwd;
      const { rstd } = forward();
      const dx = new Float64Array(rows * dim);
      const dw = new Float64Array(dim);
      for (let r = 0, o = 0; r < rows; r++, o += dim) {
        const s = rstd[r]!;
        let dot = 0;
        for (let i = 0; i < dim; i++) dot += dy[o + i]! * w[i]! * x[o + i]!;
        const k = (s * s * dot) / dim;
        for (let i = 0; i < dim; i++) {
          dx[o + i] = s * (dy[o + i]! * w[i]! - x[o + i]! * k);
          dw[i]! += dy[o + i]! * x[o + i]! * s;
        }
      }
      return (bwd = { dx, dw });
    },
    layerNorm() {
      if (ln) return ln;
      const y = new Float64Array(rows * dim);
      for (let r = 0, o = 0; r < rows; r++, o += dim) {
        let sum = 0;
        for (let i = 0; i < dim; i++) sum += x[o + i]!;
        const mean = sum / dim;
        let v = 0;
        for (let i = 0; i < dim; i++) v += (x[o + i]! - mean) ** 2;
        const s = 1 / Math.sqrt(v / dim + eps);
        for (let i = 0; i < dim; i++) y[o + i] = (x[o + i]! - mean) * s * w[i]! + b[i]!;
      }
      return (ln = { y });
    },
  };
}

/** Accumulates element comparisons into a Check. */
class Checker {
  maxAbsErr = 0;
  worst = 0;
  detail: string | undefined;

  compare(name: string, actual: Float32Array | undefined, ref: ArrayLike<number>): void {
    if (!actual || actual.length !== ref.length) {
      this.worst = Infinity;
      this.detail ??= `${name}: expected ${ref.length} floats, got ${actual ? actual.length : 'none'}`;
      return;
    }
    for (let i = 0; i < ref.length; i++) {
      const r = ref[i]!;
      const err = Math.abs(actual[i]! - r);
      const ratio = err / (ATOL + RTOL * Math.abs(r));
      // NaN fails: !(NaN <= 1).
      if (!(ratio <= this.worst)) {
        this.worst = Number.isNaN(ratio) ? Infinity : ratio;
        if (!(ratio <= 1)) this.detail = `${name}[${i}] = ${actual[i]}, reference ${r}`;
      }
      if (err > this.maxAbsErr) this.maxAbsErr = err;
    }
  }

  result(): Check {
    const passed = this.worst <= 1;
    return {
      passed,
      maxAbsErr: this.maxAbsErr,
      worstToTolerance: this.worst,
      atol: ATOL,
      rtol: RTOL,
      ...(passed ? {} : { detail: this.detail ?? 'unknown' }),
    };
  }
}

/**
 * Compares a contender's outputs with the reference for its op (forward: y; backward: dx and
 * dweight; layernorm: y; copy: the copy must equal x exactly, so its tolerance is 0).
 */
export function check(op: 'forward' | 'backward' | 'layernorm' | 'copy', out: Outputs, c: Case, ref: Reference): Check {
  const k = new Checker();
  if (op === 'forward') k.compare('y', out.y, ref.forward().y);
  else if (op === 'layernorm') k.compare('y', out.y, ref.layerNorm().y);
  else if (op === 'backward') {
    const r = ref.backward();
    k.compare('dx', out.dx, r.dx);
    k.compare('dweight', out.dw, r.dw);
  } else {
    const y = out.y;
    const same = !!y && y.length === c.x.length && y.every((v, i) => Object.is(v, c.x[i]));
    return { passed: same, maxAbsErr: same ? 0 : Infinity, worstToTolerance: same ? 0 : Infinity, atol: 0, rtol: 0, ...(same ? {} : { detail: 'copy differs from its source' }) };
  }
  return k.result();
}

/** A failed check for a contender that threw before producing outputs. */
export function failedCheck(detail: string): Check {
  return { passed: false, maxAbsErr: Infinity, worstToTolerance: Infinity, atol: ATOL, rtol: RTOL, detail };
}
