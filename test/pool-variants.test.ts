/**
 * The variants (fused residual add, offset, partial) through the worker pool: the same bits
 * as the sync API for 1–4 threads — forward y, rstd and h; backward dx and dweight — on plain
 * arrays (streamed) and on views of the shared memory (in place).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, init, instance, type RmsNorm, type RmsNormPool } from '../dist/index.js';
import { firstBitDiff, randn, testWeight } from '../shared/reference.js';

let sync: RmsNorm;
beforeAll(async () => {
  await init({ build: 'simd-threads' });
  sync = instance()!;
});

// Sharded shapes (above the inline threshold), odd sizes so chunks and dweight blocks end mid-way.
const SHAPES: [number, number][] = [
  [257, 4097],
  [300, 1000],
  [2048, 96],
];
const VARIANTS = [
  { offset: 1, partial: 0.0625 },
  { offset: 0, partial: 0.3 },
  { offset: -0.5, partial: 1 },
];

describe.each([1, 2, 3, 4])('pool with %i threads', (threads) => {
  let pool: RmsNormPool;
  beforeAll(async () => {
    pool = await createPool({ threads });
  });
  afterAll(() => pool.destroy());

  it.each(SHAPES)('%i x %i: fused residual add with offset and partial, forward and backward', async (rows, dim) => {
    const x = randn(rows * dim, rows + dim);
    const r = randn(rows * dim, rows + 2 * dim, 0.5);
    const dy = randn(rows * dim, rows + 3 * dim);
    const dh = randn(rows * dim, rows + 4 * dim, 0.3);
    const w = testWeight(dim, dim);
    for (const v of VARIANTS) {
      const hs = r.slice();
      const hp = r.slice();
      const rs = new Float32Array(rows);
      const rp = new Float32Array(rows);
      const ys = sync.rmsNorm(x, w, { ...v, residual: hs, rstd: rs });
      const yp = await pool.rmsNorm(x, w, { ...v, residual: hp, rstd: rp });
      expect(firstBitDiff(yp, ys), `y ${JSON.stringify(v)}`).toBe(-1);
      expect(firstBitDiff(rp, rs), 'rstd').toBe(-1);
      expect(firstBitDiff(hp, hs), 'h').toBe(-1);
      for (const rstd of [rs, undefined]) {
        const a = sync.rmsNormBackward(dy, hs, w, { ...v, dresidual: dh, rstd });
        const b = await pool.rmsNormBackward(dy, hs, w, { ...v, dresidual: dh, rstd });
        expect(firstBitDiff(b.dx, a.dx), 'dx').toBe(-1);
        expect(firstBitDiff(b.dweight!, a.dweight!), 'dweight').toBe(-1);
      }
    }
  });

  it('views of the shared memory, h in place into the residual', async () => {
    const rows = 512;
    const dim = 1024;
    const x = randn(rows * dim, 1);
    const r = randn(rows * dim, 2);
    const w = testWeight(dim, 3);
    const want = r.slice();
    const y = sync.rmsNorm(x, w, { residual: want, offset: 1, partial: 0.25 });
    const bx = pool.allocF32(rows * dim);
    const br = pool.allocF32(rows * dim);
    const by = pool.allocF32(rows * dim);
    try {
      bx.view().set(x);
      br.view().set(r);
      await pool.rmsNorm(bx.view(), w, { residual: br.view(), out: by.view(), offset: 1, partial: 0.25 });
      expect(firstBitDiff(by.view(), y)).toBe(-1);
      expect(firstBitDiff(br.view(), want)).toBe(-1);
    } finally {
      bx.free();
      br.free();
      by.free();
    }
  });
});
