// Rows that float32 arithmetic cannot take at face value: all zeros, subnormal magnitudes
// (squares underflow), huge magnitudes (squares overflow), and NaN / Inf. The kernels redo such
// rows in float64; these tests hold them to the same float64 reference as ordinary rows.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { BUILDS } from '../ts/glue/load.js';
import {
  dweightTolerance,
  firstBitDiff,
  mismatch,
  randn,
  refBackward,
  refForward,
  rowTolerance,
  rstdTolerance,
  sumTolerance,
  testWeight,
  yTolerance,
} from '../shared/reference.js';

const DIMS = [1, 5, 16, 17, 4097];

/** `rows` rows of unit normal values, each row times `scales[r % scales.length]`. */
function scaledRows(rows: number, dim: number, scales: number[], seed: number): Float32Array {
  const x = randn(rows * dim, seed);
  for (let r = 0; r < rows; r++) {
    const s = scales[r % scales.length]!;
    for (let i = 0; i < dim; i++) x[r * dim + i] = x[r * dim + i]! * s;
  }
  return x;
}

describe.each(BUILDS)('%s build: edge values', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });

  describe.each(DIMS)('dim %i', (dim) => {
    const w = testWeight(dim, dim);

    it('zero rows with eps > 0 give zeros and rstd = 1/sqrt(eps)', () => {
      const x = new Float32Array(3 * dim);
      for (const eps of [1e-6, 0.1]) {
        const rstd = new Float32Array(3);
        const y = m.rmsNorm(x, w, { eps, rstd });
        expect(y.every((v) => v === 0)).toBe(true);
        // float32 sqrt then reciprocal: two roundings, so within 2^-22 relative of the exact value
        for (const r of rstd) expect(Math.abs(r * Math.sqrt(Math.fround(eps)) - 1)).toBeLessThanOrEqual(2 ** -22);
        const dy = randn(3 * dim, 1);
        const b = m.rmsNormBackward(dy, x, w, { eps });
        // dx = rstd·gy on a zero row (the mean term vanishes); dweight = Σ dy·0·rstd = 0
        expect(mismatch(b.dx, refBackward(dy, x, w, dim, eps).dx, yTolerance)).toBeNull();
        expect(b.dweight!.every((v) => v === 0)).toBe(true);
      }
    });

    it('an eps that makes mean(x²) + eps overflow float32 (Σx² does not) gives the reference, not 0', () => {
      // eps = float32's maximum: mean(x²) = 2^102 still rounds to it, 2^104 and 1e38 overflow
      const eps = 3.4028234663852886e38;
      const x = new Float32Array(3 * dim);
      [2 ** 51, 2 ** 52, 1e19].forEach((c, r) => x.fill(c, r * dim, (r + 1) * dim));
      const rstd = new Float32Array(3);
      const y = m.rmsNorm(x, w, { eps, rstd });
      const ref = refForward(x, w, dim, eps);
      expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
      expect(mismatch(rstd, ref.rstd, rstdTolerance, 'rstd')).toBeNull();
      const dy = randn(3 * dim, 3);
      for (const saved of [undefined, rstd]) {
        const b = m.rmsNormBackward(dy, x, w, { eps, rstd: saved });
        const rb = refBackward(dy, x, w, dim, eps, saved ?? null);
        expect(mismatch(b.dx, rb.dx, rowTolerance(rb.dxScale, dim), 'dx')).toBeNull();
      }
    });

    it('a zero row with eps = 0 is NaN (0/0), as in the reference, and only that row', () => {
      const x = scaledRows(3, dim, [1], 5);
      x.fill(0, dim, 2 * dim);
      const rstd = new Float32Array(3);
      const y = m.rmsNorm(x, null, { dim, eps: 0, rstd });
      const ref = refForward(x, null, dim, 0);
      expect(mismatch(y, ref.y, yTolerance)).toBeNull();
      expect(y.subarray(dim, 2 * dim).every(Number.isNaN)).toBe(true);
      expect(rstd[1]).toBe(Infinity);
    });

    for (const eps of [0, 1e-6]) {
      it(`subnormal-range rows (|x| ~ 1e-40 .. 1e-20), eps ${eps}: forward and backward`, () => {
        const scales = [1e-40, 1e-38, 1e-30, 1e-20, 1];
        const x = scaledRows(scales.length * 2, dim, scales, 7 + dim);
        const rows = x.length / dim;
        const rstd = new Float32Array(rows);
        const y = m.rmsNorm(x, w, { eps, rstd });
        const ref = refForward(x, w, dim, eps);
        expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
        // rstd is rounded to float32 once; with eps = 0 a row of rms ~1e-40 has rstd ~1e40,
        // past float32's range: it saturates to Infinity (what Math.fround of the exact value is)
        expect(mismatch(rstd, ref.rstd.map(Math.fround), rstdTolerance, 'rstd')).toBeNull();
        if (eps === 0) expect(rstd[0]).toBe(Infinity);
        else expect(Math.abs(rstd[0]! * Math.sqrt(Math.fround(1e-6)) - 1)).toBeLessThanOrEqual(2 ** -22); // eps dominates

        const dy = randn(x.length, 8 + dim);
        const b = m.rmsNormBackward(dy, x, w, { eps });
        const rb = refBackward(dy, x, w, dim, eps);
        // With eps = 0 a row of rms ~1e-40 has dx ~ rstd·dy ~ 1e40: past float32's range, so
        // the best a float32 result can be is the reference rounded to float32 (±Infinity).
        expect(mismatch(b.dx, rb.dx.map(Math.fround), rowTolerance(rb.dxScale, dim), 'dx')).toBeNull();
        // dweight: rounding bound as in numerics.test.ts (one block here) plus the relative
        // error of the float32 rstd of the ordinary rows (measured ≤ 4 ulps; 17 ulps = 1e-6 allowed)
        expect(mismatch(b.dweight!, rb.dweight!, dweightTolerance(rb.dweightAbs!, rows, 17), 'dweight')).toBeNull();
      });
    }

    it('overflow rows (|x| ~ 1e20 .. 3e38): the scale-invariant result, not NaN or 0', () => {
      const scales = [1e20, 1e30, 1e36, 1e37, 1e38, 3e38];
      const x = scaledRows(scales.length, dim, scales, 9 + dim);
      // clamp the normal samples into float32 range (|sample| may exceed 1 at scale 3e38)
      for (let i = 0; i < x.length; i++) if (!Number.isFinite(x[i]!)) x[i] = Math.sign(x[i]!) * 3.4e38;
      for (const eps of [0, 1e-6]) {
        const rstd = new Float32Array(scales.length);
        const y = m.rmsNorm(x, w, { eps, rstd });
        const ref = refForward(x, w, dim, eps);
        expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
        expect(y.every(Number.isFinite)).toBe(true);
        // the rows are not flushed to zero: each row's rms of y/w is 1
        let ss = 0;
        for (let i = 0; i < dim; i++) ss += (y[i]! / w[i]!) ** 2;
        expect(Math.sqrt(ss / dim)).toBeCloseTo(1, 5);
        // rstd near 1e-38 and below is subnormal in float32 (fewer significant bits): allow
        // a relative 1e-5 or half a subnormal step
        const tiny = 2 ** -150;
        expect(
          mismatch(rstd, ref.rstd, (_i, r) => Math.max(1e-5 * Math.abs(r), tiny), 'rstd'),
        ).toBeNull();
      }
    });

    it('overflow rows (|x| ~ 1e20): backward, with and without the saved rstd', () => {
      const scales = [1e20, -3e20, 1e25];
      const x = scaledRows(6, dim, [...scales, 1], 10 + dim);
      const dy = randn(x.length, 11 + dim);
      const rows = x.length / dim;
      const rstd = new Float32Array(rows);
      m.rmsNorm(x, w, { eps: 1e-6, rstd });

      const b = m.rmsNormBackward(dy, x, w, { eps: 1e-6 });
      const rb = refBackward(dy, x, w, dim, 1e-6);
      expect(mismatch(b.dx, rb.dx, rowTolerance(rb.dxScale, dim), 'dx')).toBeNull();
      expect(b.dx.every(Number.isFinite)).toBe(true);
      expect(b.dx.subarray(0, dim).some((v) => v !== 0)).toBe(true); // ~1e-20, not flushed
      expect(mismatch(b.dweight!, rb.dweight!, dweightTolerance(rb.dweightAbs!, rows, 17), 'dweight')).toBeNull();

      const bs = m.rmsNormBackward(dy, x, w, { rstd });
      const rbs = refBackward(dy, x, w, dim, 1e-6, rstd);
      expect(mismatch(bs.dx, rbs.dx, rowTolerance(rbs.dxScale, dim), 'dx (saved rstd)')).toBeNull();
      expect(mismatch(bs.dweight!, rbs.dweight!, dweightTolerance(rbs.dweightAbs!, rows), 'dweight')).toBeNull();
    });

    it('NaN and Inf stay in their rows; the other rows are bit-identical to a clean run', () => {
      const rows = 6;
      const clean = scaledRows(rows, dim, [1, 1e-3, 1e3], 12 + dim);
      const dirty = clean.slice();
      dirty[1 * dim + (dim >> 1)] = NaN;
      dirty[3 * dim] = Infinity;
      dirty[4 * dim + dim - 1] = -Infinity;
      const badRows = new Set([1, 3, 4]);

      const rc = new Float32Array(rows);
      const rd = new Float32Array(rows);
      const yc = m.rmsNorm(clean, w, { rstd: rc });
      const yd = m.rmsNorm(dirty, w, { rstd: rd });
      const ref = refForward(dirty, w, dim, 1e-6);
      // the dirty rows follow the float64 reference too (NaN where it is NaN)
      expect(mismatch(yd, ref.y, yTolerance, 'y')).toBeNull();
      expect(yd.subarray(dim, 2 * dim).every(Number.isNaN)).toBe(true);
      for (let r = 0; r < rows; r++) {
        if (badRows.has(r)) continue;
        expect(firstBitDiff(yd.subarray(r * dim, (r + 1) * dim), yc.subarray(r * dim, (r + 1) * dim)), `row ${r}`).toBe(-1);
        expect(rd[r]).toBe(rc[r]);
      }

      const dy = randn(clean.length, 13 + dim);
      const bc = m.rmsNormBackward(dy, clean, w);
      const bd = m.rmsNormBackward(dy, dirty, w);
      for (let r = 0; r < rows; r++) {
        const row = (a: Float32Array) => a.subarray(r * dim, (r + 1) * dim);
        if (badRows.has(r)) {
          expect(row(bd.dx).some((v) => !Number.isFinite(v)), `row ${r} dx`).toBe(true);
        } else {
          expect(firstBitDiff(row(bd.dx), row(bc.dx)), `row ${r} dx`).toBe(-1);
        }
      }
      // a NaN in x makes every dweight column NaN (Σ over rows includes it), as in float64
      const rb = refBackward(dy, dirty, w, dim, 1e-6);
      expect(mismatch(bd.dweight!, rb.dweight!, sumTolerance(rb.dweightAbs!))).toBeNull();
    });

    it('a NaN in dy stays in its row of dx', () => {
      const rows = 4;
      const x = scaledRows(rows, dim, [1], 14 + dim);
      const dy = randn(x.length, 15 + dim);
      const clean = m.rmsNormBackward(dy, x, null, { dim });
      dy[2 * dim] = NaN;
      const dirty = m.rmsNormBackward(dy, x, null, { dim });
      for (let r = 0; r < rows; r++) {
        const row = (a: Float32Array) => a.subarray(r * dim, (r + 1) * dim);
        if (r === 2) expect(row(dirty.dx).some(Number.isNaN)).toBe(true);
        else expect(firstBitDiff(row(dirty.dx), row(clean.dx)), `row ${r}`).toBe(-1);
      }
    });
  });
});
