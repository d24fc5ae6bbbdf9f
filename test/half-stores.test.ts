// Half results are stored without the NaN test when the forward can show none is NaN (a call
// of several rows, every element in the statistic, a finite gain, a finite rstd): those stores
// must give the bits of the tested ones. The same rows called one at a time take the tested
// stores; here both ways on rows whose results overflow to ±infinity, underflow to zero and
// subnormals, with and without a residual, with the llama casting, on every build.
import { describe, expect, it } from 'vitest';
import { loadRmsNorm, type Build } from '../dist/index.js';
import { fromF32Array } from '../shared/reference.js';

const BUILDS: Build[] = ['simd', 'scalar', 'simd-relaxed'];
const DTYPES = ['bfloat16', 'float16'] as const;

/** Rows whose results span the half range: tiny, ordinary and huge gains on varied rows. */
function inputs(rows: number, dim: number): { x: Float32Array; w: Float32Array; res: Float32Array } {
  const x = new Float32Array(rows * dim);
  const res = new Float32Array(rows * dim);
  for (let i = 0; i < x.length; i++) {
    x[i] = Math.sin(i * 0.37) * 2 ** ((i % 13) - 6);
    res[i] = Math.cos(i * 0.11) / 4;
  }
  const w = new Float32Array(dim);
  // Gains from 2^-30 (results underflow to subnormal halves and zero) to 3e38 (to infinity), signs mixed.
  for (let i = 0; i < dim; i++) w[i] = (i % 2 ? -1 : 1) * [2 ** -30, 2 ** -20, 1, 0.5, 7e4, 1e6, 3e38, 0][i % 8]!;
  return { x, w, res };
}

describe.each(BUILDS)('half stores on the %s build', (build) => {
  it.each(DTYPES)('%s: several rows at once give the bits of the rows one at a time (infinities, zeros, subnormals)', async (dtype) => {
    const m = await loadRmsNorm(build).catch(() => null);
    if (m === null) return expect(build).toBe('simd-relaxed'); // an engine without relaxed SIMD
    const rows = 8;
    for (const dim of [64, 100, 1000]) {
      const { x, w: finite, res } = inputs(rows, dim);
      x[dim + 5] = 0; // with an infinite gain there: 0 · inf, a NaN result
      const withInf = finite.slice();
      withInf[5] = Infinity;
      const xh = fromF32Array(x, dtype);
      const rh = fromF32Array(res, dtype);
      // The fused add writes h = x + residual into the residual: each call gets a fresh copy.
      for (const [w, o] of [finite, withInf].flatMap((g) => [{}, { residual: rh }, { castingMode: 'llama' as const }].map((o) => [g, o] as const))) {
        const all = m.rmsNorm(xh, w, { dtype, ...o, ...('residual' in o ? { residual: rh.slice() } : {}) }) as Uint16Array;
        let infinities = 0;
        for (let r = 0; r < rows; r++) {
          const one = m.rmsNorm(xh.subarray(r * dim, (r + 1) * dim), w, {
            dtype,
            ...o,
            ...('residual' in o ? { residual: rh.slice(r * dim, (r + 1) * dim) } : {}),
          }) as Uint16Array;
          expect([dim, r, Array.from(all.subarray(r * dim, (r + 1) * dim))]).toEqual([dim, r, Array.from(one)]);
        }
        const inf = dtype === 'bfloat16' ? 0x7f80 : 0x7c00;
        let nans = 0;
        for (const b of all) {
          if ((b & 0x7fff) === inf) infinities++;
          else if ((b & 0x7fff) > inf) nans++;
        }
        expect(infinities).toBeGreaterThan(0); // the overflow to infinity was exercised
        expect(nans > 0).toBe(w === withInf && !('residual' in o)); // and NaN results, 0 · inf (with a residual h is not 0 there)
      }
    }
  });
});
