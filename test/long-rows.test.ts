/**
 * Long rows keep their accuracy. With 16 float32 partial sums over a whole
 * row, rstd's relative error grew with the row: 2e-5 at 2^20, 2.1e-4 at 2^24, 2.9e-3 at 2^27.
 * Rows longer than 1024 are now summed in blocks of 1024 floats whose sums are added in
 * float64 (crate/src/kernel/reduce.rs, SUM_BLOCK and fold_long): rstd within 2e-6 relative of float64
 * at every length up to 2^27, for uniform rows and for near-constant ones (whose positive terms
 * let rounding errors add up instead of cancelling), and for the worst rows found, constant
 * rows whose squares round the same way at every addition (one fold over 8192 of them was
 * 3.8e-6 off). Same bits on every build.
 */
import { totalmem } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type F32Buffer, type RmsNorm } from '../dist/index.js';
import { firstBitDiff, refRstd, rng } from '../shared/reference.js';

const RSTD_RTOL = 2e-6;
const EPS = 1e-6;

/** Fills `v` with uniform values in [-1, 1] or near-constant ones (1 + 1e-3·u). */
function fill(v: Float32Array, kind: 'uniform' | 'near-constant', seed: number): void {
  const r = rng(seed);
  if (kind === 'uniform') for (let i = 0; i < v.length; i++) v[i] = 2 * r() - 1;
  else for (let i = 0; i < v.length; i++) v[i] = 1 + 1e-3 * (2 * r() - 1);
}

/** float64 rstd of one row. */
function rstd64(v: Float32Array): number {
  return refRstd(v, v.length, EPS)[0]!;
}

describe.runIf(totalmem() >= 8 * 2 ** 30)('long rows: rstd within 2e-6 relative of float64', () => {
  let simd: RmsNorm;
  let scalar: RmsNorm;
  let buf: F32Buffer;
  beforeAll(async () => {
    simd = await loadRmsNorm('simd');
    scalar = await loadRmsNorm('scalar');
    buf = simd.allocF32(2 ** 27 + 2 ** 20);
  }, 60_000);
  afterAll(() => buf?.free());

  for (const log2 of [20, 24, 27]) {
    for (const kind of ['uniform', 'near-constant'] as const) {
      it(`dim 2^${log2}, ${kind}`, () => {
        const dim = 2 ** log2;
        const x = buf.view().subarray(0, dim);
        fill(x, kind, log2);
        const want = rstd64(x);
        const rstd = new Float32Array(1);
        // in place on a view of wasm memory: no copy of the 512 MiB row
        const y = simd.rmsNorm(x, null, { dim, rstd, out: x.length <= 2 ** 24 ? undefined : x });
        const rel = Math.abs(rstd[0]! - want) / want;
        expect(rel, `relative error ${rel.toExponential(2)}`).toBeLessThanOrEqual(RSTD_RTOL);
        if (log2 <= 24) {
          // y = x · rstd: each element within float32 rounding of x · rstd64
          const again = buf.view().subarray(0, dim);
          let worst = 0;
          for (let i = 0; i < dim; i += 997) worst = Math.max(worst, Math.abs(y[i]! - again[i]! * want) / Math.abs(again[i]! * want));
          expect(worst).toBeLessThanOrEqual(RSTD_RTOL + 2 ** -23);
        }
      }, 120_000);
    }
  }

  it('the same bits on the simd and scalar builds, and the backward recomputes the same rstd', () => {
    const dim = 2 ** 20 + 5;
    const x = new Float32Array(dim);
    fill(x, 'uniform', 99);
    const dy = new Float32Array(dim);
    fill(dy, 'uniform', 100);
    const ra = new Float32Array(1);
    const rb = new Float32Array(1);
    expect(firstBitDiff(simd.rmsNorm(x, null, { dim, rstd: ra }), scalar.rmsNorm(x, null, { dim, rstd: rb }))).toBe(-1);
    expect(firstBitDiff(ra, rb)).toBe(-1);
    const given = simd.rmsNormBackward(dy, x, null, { dim, rstd: ra }).dx;
    const recomputed = simd.rmsNormBackward(dy, x, null, { dim }).dx;
    expect(firstBitDiff(given, recomputed)).toBe(-1);
    expect(firstBitDiff(recomputed, scalar.rmsNormBackward(dy, x, null, { dim }).dx)).toBe(-1);
  }, 120_000);
});

describe('rows up to 8192 floats: blocked too', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });

  it('constant rows of 8192 whose squares all round alike: rstd within 2e-6 relative', () => {
    // One fold over 8192 floats (16 partial sums of 512 terms) was off by up to 3.8e-6 here.
    const dim = 8192;
    const x = new Float32Array(dim);
    const rstd = new Float32Array(1);
    let worst = 0;
    for (let k = 0; k < 400; k++) {
      x.fill(Math.sqrt(1 + k * 2 ** -23));
      m.rmsNorm(x, null, { dim, rstd, eps: EPS });
      const want = rstd64(x);
      worst = Math.max(worst, Math.abs(rstd[0]! - want) / want);
    }
    expect(worst, `worst relative error ${worst.toExponential(2)}`).toBeLessThanOrEqual(RSTD_RTOL);
  });

  it.each([20, 24])('backward at 2^%i, rstd recomputed: dx within float32 tolerance of float64', (log2) => {
    const dim = 2 ** log2;
    const [xb, dyb, dxb] = [m.allocF32(dim), m.allocF32(dim), m.allocF32(dim)];
    try {
      fill(xb.view(), 'near-constant', log2);
      fill(dyb.view(), 'uniform', log2 + 100);
      const [x, dy, dx] = [xb.view(), dyb.view(), dxb.view()];
      m.rmsNormBackward(dy, x, null, { dim, dx, eps: EPS });
      const r = rstd64(x);
      let c = 0;
      for (let i = 0; i < dim; i++) c += dy[i]! * x[i]!;
      const b = r * r * r * (c / dim);
      let worst = 0;
      for (let i = 0; i < dim; i++) {
        const ref = r * dy[i]! - b * x[i]!;
        worst = Math.max(worst, Math.abs(dx[i]! - ref) / (1e-5 + 1.3e-6 * Math.abs(ref)));
      }
      expect(worst, 'max |dx − ref| / (1e-5 + 1.3e-6·|ref|)').toBeLessThanOrEqual(1);
    } finally {
      for (const b of [xb, dyb, dxb]) b.free();
    }
  }, 120_000);
});
