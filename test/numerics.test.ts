// Forward and backward of every build against the float64 reference, over the row lengths that
// exercise each code path of the kernel: shorter than a vector (1, 3), whole vectors (4, 16),
// vector + scalar tail (5, 15, 17, 33), long rows with and without a tail (4096, 4097) and a
// row longer than any cache line pattern (65536).
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { BUILDS } from '../ts/glue/load.js';
import {
  dweightF32,
  dweightTolerance,
  firstBitDiff,
  mismatch,
  randn,
  refBackward,
  refForward,
  rowTolerance,
  rstdTolerance,
  testRows,
  testWeight,
  yTolerance,
} from '../shared/reference.js';

const LENGTHS = [1, 3, 4, 5, 15, 16, 17, 33, 4096, 4097, 65536];
const EPS = [1e-6, 1e-5, 0.1, 0];

/*
 * Tolerances (shared/reference.js, where the policy is stated):
 * y: yTolerance, PyTorch's float32 (torch.testing.assert_close): |y − ref| ≤ 1e-5 + 1.3e-6·|ref|.
 * They are kept unscaled for every row length, 65536 included: y's error is rstd's relative
 * error plus two roundings (x·rstd, ·weight), and rstd's comes from a sum of squares of
 * positive terms spread over 16 accumulators, whose rounding errors partly cancel (a random
 * walk, ~√(n/16)·2^-24, not the worst case (n/16)·2^-24). Measured worst: 6% of the bound.
 * rstd: rstdTolerance, relative 1e-5 (the forward's y already pins it far tighter; this is the
 * issue's bound).
 * dx: rowTolerance(dxScale, dim), |dx − ref| ≤ 1e-5 · (s + |ref|) with s = rstd · rms(dy ⊙ weight)
 * for that row, the size of the two terms whose difference dx is. An absolute 1e-5 alone would not be scale-invariant:
 * dx scales as 1/|x|, so for rows of scale 10^3 it is ~10^-3 and the check would be empty, for
 * rows of scale 10^-3 it is ~10^3 and no float32 kernel could pass. For unit-scale rows
 * s ≈ 1 and this is an absolute 1e-5 plus a relative 1e-5.
 * dweight: dweightTolerance, a count of float32 roundings: 2 per term, ≤ 31 adds in a block,
 * one add per block.
 */

function rowsFor(dim: number): number {
  return dim >= 65536 ? 2 : Math.max(3, Math.min(64, Math.floor(65536 / dim)));
}

describe.each(BUILDS)('%s build vs float64 reference', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
    expect(m.build).toBe(build);
  });

  describe.each(LENGTHS)('dim %i', (dim) => {
    const rows = rowsFor(dim);
    const x = testRows(rows, dim, 1000 + dim);
    const dy = randn(rows * dim, 2000 + dim);
    const w = testWeight(dim, 3000 + dim);
    const cases = EPS.flatMap((eps) => [
      { eps, weight: false },
      { eps, weight: true },
    ]);

    it.each(cases)('eps $eps, weight $weight', ({ eps, weight }) => {
      const g = weight ? w : null;
      const xCopy = x.slice();
      const ref = refForward(x, g, dim, eps);

      // forward
      const rstd = new Float32Array(rows);
      const y = m.rmsNorm(x, g, { dim, eps, rstd });
      expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
      expect(mismatch(rstd, ref.rstd, rstdTolerance, 'rstd')).toBeNull();
      expect(firstBitDiff(x, xCopy)).toBe(-1); // the input is left alone

      // backward, rstd recomputed: dx against the all-float64 reference
      const b = m.rmsNormBackward(dy, x, g, { dim, eps });
      const rb = refBackward(dy, x, g, dim, eps);
      expect(mismatch(b.dx, rb.dx, rowTolerance(rb.dxScale, dim), 'dx')).toBeNull();
      expect(b.dweight === null).toBe(!weight);

      // backward with the forward's rstd: the recomputation gives the very same rstd (same
      // summation order), so the results are bit-identical
      const b2 = m.rmsNormBackward(dy, x, g, { dim, eps, rstd });
      expect(firstBitDiff(b2.dx, b.dx)).toBe(-1);
      if (weight) {
        expect(firstBitDiff(b2.dweight!, b.dweight!)).toBe(-1);
        // dweight against float64 sums of the same (float32) rstd: only the summation rounds
        const rbr = refBackward(dy, x, g, dim, eps, rstd);
        expect(mismatch(b2.dweight!, rbr.dweight!, dweightTolerance(rbr.dweightAbs!, rows), 'dweight')).toBeNull();
      }
    });
  });

  describe('dweight over 8192 rows', () => {
    const rows = 8192;
    for (const dim of [64, 33]) {
      const x = randn(rows * dim, 7 + dim);
      const dy = randn(rows * dim, 8 + dim);
      const w = testWeight(dim, 9 + dim);

      it(`dim ${dim}: within the float32 accumulation bound of the float64 sum`, () => {
        const b = m.rmsNormBackward(dy, x, w, { eps: 1e-6 });
        const rb = refBackward(dy, x, w, dim, 1e-6);
        // Each term t = dy·(x·rstd) carries 2 roundings; a block adds at most 32 terms (31
        // roundings); the 256 block sums are added one by one (256 roundings); first-order
        // error ≤ (32 + nblocks + 2)·2^-24·Σ|t|. Here rstd is recomputed in float32, which adds
        // its relative error to every term: ≤ 12·2^-24 for these rows (≤ 7 adds per
        // accumulator chain + 2 combining + hsum 2 + 1 square, halved by the sqrt, + eps add,
        // sqrt and division roundings).
        const bound = dweightTolerance(rb.dweightAbs!, rows, 12);
        expect(mismatch(b.dweight!, rb.dweight!, bound, 'dweight')).toBeNull();
        // the bound is meaningful: far below the size of dweight's terms
        const ratio = Math.max(...rb.dweightAbs!.map((a, i) => bound(i, 0) / a));
        expect(ratio).toBeLessThan(3e-5);
      });

      it(`dim ${dim}: the exact float32 sum order (32-row blocks, in order), bit for bit`, () => {
        const rstd = new Float32Array(rows);
        m.rmsNorm(x, w, { rstd, eps: 1e-6 });
        const b = m.rmsNormBackward(dy, x, w, { rstd });
        expect(firstBitDiff(b.dweight!, dweightF32(dy, x, rstd, dim))).toBe(-1);
        // and a different order (one float32 running sum over all rows) would differ, so the
        // comparison above can tell orders apart
        const f = Math.fround;
        const flat = new Float32Array(dim);
        for (let r = 0; r < rows; r++) {
          for (let i = 0; i < dim; i++) flat[i] = f(flat[i]! + f(dy[r * dim + i]! * f(x[r * dim + i]! * rstd[r]!)));
        }
        expect(firstBitDiff(b.dweight!, flat)).not.toBe(-1);
      });
    }
  });
});

describe('builds agree bit for bit (same 4-lane rounding order, no FMA)', () => {
  const builds: Partial<Record<(typeof BUILDS)[number], RmsNorm>> = {};
  beforeAll(async () => {
    for (const b of BUILDS) builds[b] = await loadRmsNorm(b);
  });

  // Normal rows plus rows that take the float64 slow paths (huge, subnormal with eps = 0).
  function mixed(rows: number, dim: number, seed: number): Float32Array {
    const x = testRows(rows, dim, seed);
    for (let i = 0; i < dim; i++) {
      x[i] = x[i]! * 1e35;
      x[dim + i] = x[dim + i]! * 1e-41;
    }
    return x;
  }

  for (const dim of [1, 5, 17, 64, 4097]) {
    for (const eps of [0, 1e-6]) {
      it(`dim ${dim}, eps ${eps}: forward, rstd, dx, dweight`, () => {
        const rows = Math.max(40, Math.min(96, Math.floor(40000 / dim)));
        const x = mixed(rows, dim, dim);
        const dy = randn(rows * dim, dim + 1);
        const w = testWeight(dim, dim + 2);
        const out: Record<string, Float32Array[]> = {};
        for (const b of BUILDS) {
          const m = builds[b]!;
          const rstd = new Float32Array(rows);
          const y = m.rmsNorm(x, w, { eps, rstd });
          const yn = m.rmsNorm(x, null, { dim, eps });
          const bw = m.rmsNormBackward(dy, x, w, { eps });
          const bn = m.rmsNormBackward(dy, x, null, { dim, eps, rstd });
          for (const [k, v] of Object.entries({ y, rstd, yn, dx: bw.dx, dweight: bw.dweight!, dxn: bn.dx })) {
            (out[k] ??= []).push(v);
          }
        }
        for (const [k, [simd, threads, scalar]] of Object.entries(out)) {
          expect(firstBitDiff(simd!, scalar!), `${k}: simd vs scalar`).toBe(-1);
          expect(firstBitDiff(simd!, threads!), `${k}: simd vs simd-threads`).toBe(-1);
        }
      });
    }
  }
});
