/**
 * Views of one instance's memory passed to another entry point: `allocF32()` (the sync API's
 * `simd` memory) to the pool, and `pool.allocF32()` (the pool's shared memory) to the sync
 * API. Each is accepted and copied like a plain array — same bits as the all-plain call, the
 * caller's views hold the results — and each entry point's own views are used in place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocF32, createPool, init, instance, rmsNorm, rmsNormBackward, type RmsNormPool } from '../dist/index.js';
import { firstBitDiff, randn, testRows, testWeight } from '../shared/reference.js';

let pool: RmsNormPool;
beforeAll(async () => {
  await init();
  pool = await createPool({ threads: 2 });
});
afterAll(async () => {
  await pool.destroy();
});

// large enough that the pool shards it (above its inline threshold)
const [rows, dim] = [256, 1024];
const n = rows * dim;
const x = testRows(rows, dim, 1);
const w = testWeight(dim, 2);
const dy = randn(n, 3);

describe('views of one memory at another entry point', () => {
  it('the sync API (simd-relaxed) and the pool (simd-relaxed-threads) have different memories', () => {
    expect(instance()!.build).toBe('simd-relaxed');
    expect(pool.build).toBe('simd-relaxed-threads');
    const a = allocF32(4);
    const b = pool.allocF32(4);
    expect(a.view().buffer === b.view().buffer).toBe(false);
    expect(b.view().buffer).toBeInstanceOf(SharedArrayBuffer);
    a.free();
    b.free();
  });

  it("allocF32 views (the sync API's) given to the pool: accepted, copied, the same bits", async () => {
    const want = rmsNorm(x, w);
    const wantB = rmsNormBackward(dy, x, w);
    const bufs = [n, dim, n, n, n, dim].map((k) => allocF32(k));
    const [vx, vw, vy, vdy, vdx, vdw] = bufs.map((b) => b.view()) as Float32Array[];
    vx!.set(x);
    vw!.set(w);
    vdy!.set(dy);
    await pool.rmsNorm(vx!, vw!, { out: vy! });
    expect(firstBitDiff(vy!, want)).toBe(-1);
    await pool.rmsNormBackward(vdy!, vx!, vw!, { dx: vdx!, dweight: vdw! });
    expect(firstBitDiff(vdx!, wantB.dx)).toBe(-1);
    expect(firstBitDiff(vdw!, wantB.dweight!)).toBe(-1);
    bufs.forEach((b) => b.free());
  });

  it('pool.allocF32 views given to the sync API: accepted, copied, the same bits; the pool uses them in place', async () => {
    const want = rmsNorm(x, w);
    const wantB = rmsNormBackward(dy, x, w);
    const bufs = [n, dim, n, n, n, dim].map((k) => pool.allocF32(k));
    const [vx, vw, vy, vdy, vdx, vdw] = bufs.map((b) => b.view()) as Float32Array[];
    vx!.set(x);
    vw!.set(w);
    vdy!.set(dy);
    rmsNorm(vx!, vw!, { out: vy! });
    expect(firstBitDiff(vy!, want)).toBe(-1);
    rmsNormBackward(vdy!, vx!, vw!, { dx: vdx!, dweight: vdw! });
    expect(firstBitDiff(vdx!, wantB.dx)).toBe(-1);
    expect(firstBitDiff(vdw!, wantB.dweight!)).toBe(-1);
    // in the pool: in place, so the shared memory does not grow over repeated calls
    vy!.fill(0);
    await pool.rmsNorm(vx!, vw!, { out: vy! });
    const mem = (vx!.buffer as SharedArrayBuffer).byteLength;
    for (let i = 0; i < 20; i++) await pool.rmsNorm(vx!, vw!, { out: vy! });
    expect(firstBitDiff(vy!, want)).toBe(-1);
    expect(bufs[0]!.view().buffer.byteLength).toBe(mem);
    bufs.forEach((b) => b.free());
  });

  it('pool.allocF32 after destroy() throws', async () => {
    const p = await createPool({ threads: 1 });
    await p.destroy();
    expect(() => p.allocF32(4)).toThrow(/destroyed/);
  });
});
