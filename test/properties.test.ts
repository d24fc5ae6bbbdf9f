// Property tests (fast-check): random shapes, values spanning float32's range, random eps,
// against the float64 reference; and RMSNorm's scale invariance (Zhang & Sennrich 2019, §4.1):
// RMSNorm(a·x) = RMSNorm(x) when eps = 0.
//
// Runs are reproducible: the seed is fixed unless FC_SEED is set. To explore new cases:
//   FC_SEED=$RANDOM FC_RUNS=5000 npx vitest run test/properties.test.ts
// (fast-check prints the seed and path of a failure).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { firstBitDiff, mismatch, refBackward, type RefBackward, refForward, U32, yTolerance } from '../shared/reference.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;
const SEED = Number(process.env.FC_SEED ?? 0x5eed);
const RUNS = Number(process.env.FC_RUNS ?? 150);

/**
 * Smallest float32 results are subnormal and carry an absolute rounding error of up to 2^-150
 * per operation no matter how small the tolerance's relative part gets: 8 subnormal steps.
 */
const SUBNORMAL_SLACK = 2 ** -146;

/**
 * dx: within 1e-5 of the sizes of the two terms it is the difference of (RefBackward.dxTerms).
 * Random vectors can be spiky (one element carrying most of the norm), where an error that is
 * small next to those terms is large next to the row's rms-based scale used in numerics.test.ts.
 * For rows of at most 256, a worst-case count of float32 roundings (sum chains ≤ 23 adds, rstd
 * ≤ 14·2^-24, rstd³ thrice that) stays below 100·2^-24 ≈ 6e-6 of these terms.
 *
 * Plus underflow: the kernel forms gy = dy·weight, the products gy·x and b = mean(gy·x)·rstd·
 * rstd² in float32, and where those are subnormal each loses up to 2^-150 absolute, which the
 * later multiplications amplify: gy by rstd (first term); gy·x by rstd³·x_i, mean(gy·x)·rstd
 * by rstd²·x_i and b itself by x_i (second term). Slack: 16× that.
 */
function dxTol(rb: RefBackward, x: Float32Array, dim: number) {
  const rows = x.length / dim;
  const meanAbsX = new Float64Array(rows);
  for (let i = 0; i < x.length; i++) meanAbsX[Math.floor(i / dim)]! += Math.abs(x[i]!) / dim;
  return (i: number) => {
    const r = Math.floor(i / dim);
    const a = rb.rstd[r]!;
    const underflow = SUBNORMAL_SLACK * (1 + a + (1 + a ** 2 + a ** 3 * (1 + meanAbsX[r]!)) * Math.abs(x[i]!));
    return 1e-5 * rb.dxTerms[i]! + underflow;
  };
}

interface Problem {
  rows: number;
  dim: number;
  x: Float32Array;
  dy: Float32Array;
  weight: Float32Array | null;
  eps: number;
}

/**
 * Random problems: up to 8 rows of up to 256 (enough for every vector/tail split and several
 * 16-wide blocks), values from fast-check's float32 generator (zeros, subnormals, powers of
 * two, ...) times a per-row scale of 10^-30 .. 10^30, so rows land on the fast path and on
 * both float64 slow paths; eps from typical values or anywhere in [0, 1].
 */
const problems: fc.Arbitrary<Problem> = fc
  .record({ rows: fc.integer({ min: 1, max: 8 }), dim: fc.integer({ min: 1, max: 256 }) })
  .chain(({ rows, dim }) =>
    fc.record({
      rows: fc.constant(rows),
      dim: fc.constant(dim),
      x: fc.float32Array({ minLength: rows * dim, maxLength: rows * dim, min: -1e6, max: 1e6, noNaN: true }),
      scales: fc.array(fc.integer({ min: -30, max: 30 }), { minLength: rows, maxLength: rows }),
      dy: fc.float32Array({ minLength: rows * dim, maxLength: rows * dim, min: -1e3, max: 1e3, noNaN: true }),
      weight: fc.option(fc.float32Array({ minLength: dim, maxLength: dim, min: -4, max: 4, noNaN: true })),
      eps: fc.oneof(fc.constantFrom(0, 1e-6, 1e-5, 0.1), fc.double({ min: 0, max: 1, noNaN: true })),
    }),
  )
  .map(({ rows, dim, x, scales, dy, weight, eps }) => {
    for (let r = 0; r < rows; r++) {
      const s = 10 ** scales[r]!;
      for (let i = 0; i < dim; i++) x[r * dim + i] = x[r * dim + i]! * s;
    }
    return { rows, dim, x, dy, weight, eps };
  });

describe.each(BUILDS)('%s build: properties', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });

  it('forward and rstd match the float64 reference on random problems', () => {
    fc.assert(
      fc.property(problems, ({ dim, x, weight, eps, rows }) => {
        const rstd = new Float32Array(rows);
        const y = m.rmsNorm(x, weight, { dim, eps, rstd });
        const ref = refForward(x, weight, dim, eps);
        expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
        // rstd rounded once to float32 at best (it saturates past float32's range)
        const r32 = ref.rstd.map(Math.fround);
        expect(mismatch(rstd, r32, (_i, r) => 1e-5 * Math.abs(r) + SUBNORMAL_SLACK, 'rstd')).toBeNull();
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('backward matches the float64 reference on random problems', () => {
    fc.assert(
      fc.property(problems, ({ dim, x, dy, weight, eps, rows }) => {
        const b = m.rmsNormBackward(dy, x, weight, { dim, eps });
        const rb = refBackward(dy, x, weight, dim, eps);
        // dx can exceed float32's range where rstd does (rms below ~1e-38 with eps = 0): the
        // best float32 answer is the reference rounded to float32
        expect(mismatch(b.dx, rb.dx.map(Math.fround), dxTol(rb, x, dim), 'dx')).toBeNull();
        if (weight) {
          // one block: 2 roundings per term, ≤ 7 adds, 1 block add, and rstd's error (≤ 14
          // ulps); underflow of x·rstd (then times dy, |dy| ≤ 1e3) and of the term itself
          const bound = (i: number) => (2 + 7 + 1 + 14) * U32 * rb.dweightAbs![i]! + rows * 1e3 * SUBNORMAL_SLACK;
          expect(mismatch(b.dweight!, rb.dweight!, bound, 'dweight')).toBeNull();
        } else {
          expect(b.dweight).toBeNull();
        }
      }),
      { seed: SEED + 1, numRuns: RUNS },
    );
  });

  // x with |x_i| in [1e-3, 1e3] (or 0), so that a·x stays a normal float32 for the scales used
  const unitRows = fc
    .record({ rows: fc.integer({ min: 1, max: 6 }), dim: fc.integer({ min: 1, max: 200 }) })
    .chain(({ rows, dim }) =>
      fc.record({
        dim: fc.constant(dim),
        x: fc
          .array(
            fc.oneof(
              { weight: 1, arbitrary: fc.constant(0) },
              { weight: 20, arbitrary: fc.tuple(fc.double({ min: -3, max: 3, noNaN: true }), fc.boolean()) },
            ),
            { minLength: rows * dim, maxLength: rows * dim },
          )
          .map((vs) => Float32Array.from(vs, (v) => (typeof v === 'number' ? v : (v[1] ? -1 : 1) * 10 ** v[0]))),
        weight: fc.option(fc.float32Array({ minLength: dim, maxLength: dim, min: -4, max: 4, noNaN: true })),
      }),
    );

  it('scale invariance: RMSNorm(a·x) = RMSNorm(x) with eps = 0, for a in ±[1e-30, 1e30]', () => {
    fc.assert(
      fc.property(
        unitRows,
        fc.double({ min: -30, max: 30, noNaN: true }),
        fc.boolean(),
        ({ dim, x, weight }, logA, neg) => {
          const a = (neg ? -1 : 1) * 10 ** logA;
          const ax = x.map((v) => v * a); // rounds to float32: relative 2^-24 per element
          const y = m.rmsNorm(x, weight, { dim, eps: 0 });
          const ya = m.rmsNorm(ax, weight, { dim, eps: 0 });
          // both against the reference of the unscaled x (scaling by a < 0 flips the sign);
          // ax's own rounding adds ≤ 2·2^-24 relative, inside yTolerance's 1.3e-6 (≈ 22·2^-24)
          // together with the kernel's ≤ 16·2^-24 for rows of ≤ 256
          const ref = refForward(x, weight, dim, 0);
          const signed = neg ? ref.y.map((v) => -v) : ref.y;
          expect(mismatch(y, ref.y, yTolerance, 'y(x)')).toBeNull();
          expect(mismatch(ya, signed, yTolerance, 'y(a·x)')).toBeNull();
        },
      ),
      { seed: SEED + 2, numRuns: RUNS },
    );
  });

  it('scale invariance is exact for a = 2^k on the float32 fast path (same bits)', () => {
    fc.assert(
      fc.property(unitRows, fc.integer({ min: -40, max: 40 }), ({ dim, x, weight }, k) => {
        const a = 2 ** k;
        const ax = x.map((v) => v * a); // exact: a power of two, no overflow or underflow here
        const rows = x.length / dim;
        // Only rows whose sums of squares stay well inside the fast path's range, before and
        // after scaling: the slow path rounds differently (once, from float64).
        const { rstd: refR } = refForward(x, null, dim, 0);
        const fast = (r: number) => {
          const ss = dim / refR[r]! ** 2;
          return ss * Math.min(1, a * a) > 2 ** -90 && ss * Math.max(1, a * a) < 2 ** 120;
        };
        const r1 = new Float32Array(rows);
        const r2 = new Float32Array(rows);
        const y = m.rmsNorm(x, weight, { dim, eps: 0, rstd: r1 });
        const ya = m.rmsNorm(ax, weight, { dim, eps: 0, rstd: r2 });
        for (let r = 0; r < rows; r++) {
          if (!fast(r) || !Number.isFinite(r1[r]!)) continue;
          const row = (v: Float32Array) => v.subarray(r * dim, (r + 1) * dim);
          expect(firstBitDiff(row(ya), row(y)), `row ${r}, a = 2^${k}`).toBe(-1);
          expect(r2[r]).toBe(Math.fround(r1[r]! / a));
        }
      }),
      { seed: SEED + 3, numRuns: RUNS },
    );
  });
});
