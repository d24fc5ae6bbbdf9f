// The float64 reference checked against itself: its backward must be the derivative of its
// forward (central finite differences), and the helpers the other suites rely on must catch
// what they claim to catch. Everything else is only as trustworthy as this file.
import { describe, expect, it } from 'vitest';
import {
  allclose,
  ATOL,
  caseReference,
  checkOutputs,
  dweightF32,
  dweightTolerance,
  failedCheck,
  makeCase,
  mismatch,
  randn,
  ratioOf,
  refBackward,
  refForward,
  rng,
  rowMaxAbs,
  rowTolerance,
  rstdTolerance,
  RTOL,
  sameBits,
  sumTolerance,
  testWeight,
  worstRatio,
  yTolerance,
} from '../shared/reference.js';

/** L(x, g) = Σ dy ⊙ RMSNorm(x, g): its gradient is what refBackward claims to compute. */
function loss(dy: Float64Array, x: Float64Array, w: Float64Array | null, dim: number, eps: number): number {
  const { y } = refForward(x, w, dim, eps);
  let s = 0;
  for (let i = 0; i < y.length; i++) s += dy[i]! * y[i]!;
  return s;
}

describe('float64 reference: backward is the derivative of forward', () => {
  // Central differences have truncation error O(h²·|L'''|) and rounding error O(ε·|L|/h); with
  // h = 1e-5 on unit-scale data both are below 1e-8, so 1e-6 relative to the gradient's scale
  // separates a right formula from a wrong one by orders of magnitude.
  const h = 1e-5;
  const cases = [
    { dim: 1, rows: 3, eps: 1e-5, weight: true },
    { dim: 5, rows: 3, eps: 0, weight: false },
    { dim: 17, rows: 2, eps: 0.1, weight: true },
    { dim: 64, rows: 2, eps: 1e-6, weight: true },
  ];
  it.each(cases)('dim $dim, rows $rows, eps $eps, weight $weight', ({ dim, rows, eps, weight }) => {
    const x = Float64Array.from(randn(rows * dim, 11 + dim));
    const dy = Float64Array.from(randn(rows * dim, 23 + dim));
    const w = weight ? Float64Array.from(testWeight(dim, 5)) : null;
    const ref = refBackward(dy, x, w, dim, eps);
    const numDx = new Float64Array(x.length);
    for (let i = 0; i < x.length; i++) {
      const xp = x.slice();
      const xm = x.slice();
      xp[i]! += h;
      xm[i]! -= h;
      numDx[i] = (loss(dy, xp, w, dim, eps) - loss(dy, xm, w, dim, eps)) / (2 * h);
    }
    const scale = Math.max(...ref.dx.map(Math.abs));
    expect(mismatch(ref.dx, numDx, allclose(1e-6 * scale, 1e-6), 'dx vs finite differences')).toBeNull();
    if (w) {
      const numDw = new Float64Array(dim);
      for (let j = 0; j < dim; j++) {
        const wp = w.slice();
        const wm = w.slice();
        wp[j]! += h;
        wm[j]! -= h;
        numDw[j] = (loss(dy, x, wp, dim, eps) - loss(dy, x, wm, dim, eps)) / (2 * h);
      }
      const dwScale = Math.max(...ref.dweight!.map(Math.abs));
      expect(mismatch(ref.dweight!, numDw, allclose(1e-6 * dwScale, 1e-6), 'dweight vs finite differences')).toBeNull();
    } else {
      expect(ref.dweight).toBeNull();
    }
  });

  it('a wrong backward (the rstd³ term dropped) fails the same check', () => {
    const dim = 8;
    const x = Float64Array.from(randn(dim, 3));
    const dy = Float64Array.from(randn(dim, 4));
    const ref = refBackward(dy, x, null, dim, 1e-5);
    const wrong = ref.dx.map((_, i) => ref.rstd[0]! * dy[i]!);
    const numDx = new Float64Array(dim);
    for (let i = 0; i < dim; i++) {
      const xp = x.slice();
      const xm = x.slice();
      xp[i]! += h;
      xm[i]! -= h;
      numDx[i] = (loss(dy, xp, null, dim, 1e-5) - loss(dy, xm, null, dim, 1e-5)) / (2 * h);
    }
    expect(mismatch(wrong, numDx, allclose(1e-6, 1e-6))).not.toBeNull();
  });
});

describe('float64 reference: basic identities', () => {
  it('rms of each output row is 1 without weight and eps = 0', () => {
    const dim = 33;
    const { y } = refForward(randn(4 * dim, 9, 100), null, dim, 0);
    for (let r = 0; r < 4; r++) {
      let ss = 0;
      for (let i = 0; i < dim; i++) ss += y[r * dim + i]! ** 2;
      expect(Math.sqrt(ss / dim)).toBeCloseTo(1, 14);
    }
  });

  it('eps is used as float32 (the kernels receive a float32)', () => {
    const x = new Float32Array([0, 0, 0, 0]);
    expect(refForward(x, null, 4, 0.1).rstd[0]).toBe(1 / Math.sqrt(Math.fround(0.1)));
  });

  it('dweightF32 is a float32 rounding of the float64 sum', () => {
    const dim = 7;
    const rows = 100;
    const x = randn(rows * dim, 1);
    const dy = randn(rows * dim, 2);
    const { rstd } = refForward(x, null, dim, 1e-6);
    const r32 = Float32Array.from(rstd);
    const ref = refBackward(dy, x, testWeight(dim, 1), dim, 1e-6, r32);
    const emu = dweightF32(dy, x, r32, dim);
    expect(mismatch(emu, ref.dweight!, dweightTolerance(ref.dweightAbs!, rows))).toBeNull();
  });
});

describe('test helpers', () => {
  it('mismatch: NaN must match NaN, infinities must match exactly, finite within tolerance', () => {
    const tol = allclose(1e-5, 0);
    expect(mismatch([NaN, Infinity, 1], [NaN, Infinity, 1 + 1e-6], tol)).toBeNull();
    expect(mismatch([0], [NaN], tol)).not.toBeNull();
    expect(mismatch([NaN], [0], tol)).not.toBeNull();
    expect(mismatch([-Infinity], [Infinity], tol)).not.toBeNull();
    expect(mismatch([1e9], [Infinity], tol)).not.toBeNull();
    expect(mismatch([1.1e-5], [0], tol)).toMatch(/1\/1 elements/);
    expect(mismatch([1, 2], [1], tol)).toMatch(/length/);
    expect(mismatch([1.5], [1], () => NaN)).not.toBeNull();
    expect(mismatch([1], [1], () => NaN)).toBeNull();
  });

  it('the named tolerances have the bounds shared/reference.js states', () => {
    expect(yTolerance(0, 2)).toBe(1e-5 + 1.3e-6 * 2);
    expect(rstdTolerance(0, -4)).toBe(4e-5);
    // rows of dim 2: row scale 3 for elements 0-1, 5 for elements 2-3
    const row = rowTolerance([3, 5], 2);
    expect(row(1, -1)).toBe(1e-5 * 4);
    expect(row(2, 1)).toBe(1e-5 * 6);
    expect(Array.from(rowMaxAbs([1, -3, 5, 2], 2))).toEqual([3, 5]);
    expect(sumTolerance([2])(0, 0)).toBe(2e-5);
    // (2 + 31 + 1 + 1)·2^-24 per unit of Σ|t|, whatever the number of rows (the blocks are added in float64)
    expect(dweightTolerance([1], 33, 1)(0, 0)).toBe(35 * 2 ** -24);
    expect(dweightTolerance([1], 100_000, 1)(0, 0)).toBe(35 * 2 ** -24);
  });

  it('worstRatio: the largest |got − ref| / tol, with mismatch\'s NaN and length rules', () => {
    const tol = allclose(1e-5, 0);
    expect(worstRatio([1 + 5e-6, 2], [1, 2], tol)).toBeCloseTo(0.5, 6);
    expect(worstRatio([1 + 2e-5], [1], tol)).toBeCloseTo(2, 6);
    expect(worstRatio([NaN], [1], tol)).toBe(Infinity);
    expect(worstRatio([1, 2], [1], tol)).toBe(Infinity);
    expect(worstRatio(null, [1], tol)).toBe(Infinity);
    expect(ratioOf(1.5, 1, NaN)).toBe(Infinity);
  });

  it('checkOutputs passes the reference itself and fails an output off by 2·(ATOL + RTOL·|ref|)', () => {
    const c = makeCase({ rows: 3, dim: 8 });
    const ref = caseReference(c);
    const y = Float32Array.from(ref.forward().y);
    expect(checkOutputs('forward', { y }, c, ref).passed).toBe(true);
    y[5] = y[5]! + 2 * (ATOL + RTOL * Math.abs(y[5]!));
    const bad = checkOutputs('forward', { y }, c, ref);
    expect(bad.passed).toBe(false);
    expect(bad.worstToTolerance).toBeGreaterThan(1.9);
    expect(bad.detail).toMatch(/^y\[5\]/);
    y[5] = NaN;
    expect(checkOutputs('forward', { y }, c, ref).worstToTolerance).toBe(Infinity);
    expect(failedCheck('threw').passed).toBe(false);
  });

  it('rng is deterministic and roughly uniform', () => {
    const a = rng(42);
    const b = rng(42);
    let sum = 0;
    for (let i = 0; i < 10000; i++) {
      const v = a();
      expect(v).toBe(b());
      expect(v >= 0 && v < 1).toBe(true);
      sum += v;
    }
    expect(sum / 10000).toBeCloseTo(0.5, 1);
  });

  it('sameBits tells -0 from 0 and NaN payloads apart', () => {
    expect(sameBits(new Float32Array([0]), new Float32Array([-0]))).toBe(false);
    const n1 = new Float32Array(new Uint32Array([0x7fc00000]).buffer);
    const n2 = new Float32Array(new Uint32Array([0x7fc00001]).buffer);
    expect(sameBits(n1, n1.slice())).toBe(true);
    expect(sameBits(n1, n2)).toBe(false);
  });
});
