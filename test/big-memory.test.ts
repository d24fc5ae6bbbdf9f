/**
 * The simd build's memory is not shared, so it may grow to wasm32's 4 GiB: addresses past
 * 2 GiB must be read as unsigned end to end (the raw exports return i32). A third 1 GiB block
 * is usable by every path; a fourth does not fit and is refused with a RangeError.
 * Needs about 4 GiB of RAM: runs where the machine has 16 GiB or more (CI here has 24).
 */
import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadWasm } from '../dist/glue/load.js';
import { RmsNorm } from '../dist/rmsnorm.js';
import { firstBitDiff, testRows, testWeight } from '../shared/reference.js';

describe.runIf(totalmem() >= 16 * 2 ** 30)('simd build: memory past 2 GiB', () => {
  it('a block above 2 GiB: its view, zero-copy and plain calls work; a fourth 1 GiB block is a RangeError', async () => {
    const m = new RmsNorm(await loadWasm('simd'));
    const GiB = 1 << 28; // floats
    const blocks = [m.allocF32(GiB), m.allocF32(GiB), m.allocF32(GiB)];
    const v = blocks[2]!.view();
    expect(v.byteOffset).toBeGreaterThanOrEqual(2 ** 31);
    expect(v.length).toBe(GiB);
    const [rows, dim] = [64, 1024];
    const n = rows * dim;
    const x = testRows(rows, dim, 1);
    const w = testWeight(dim, 2);
    const want = m.rmsNorm(x, w);
    const wantB = m.rmsNormBackward(x, x, w);
    // views at the very end of the third block, i.e. near 3 GiB
    const end = v.length;
    const vx = v.subarray(end - 3 * n - dim, end - 2 * n - dim);
    const vw = v.subarray(end - 2 * n - dim, end - 2 * n);
    const vy = v.subarray(end - 2 * n, end - n);
    const vdx = v.subarray(end - n, end);
    vx.set(x);
    vw.set(w);
    expect(firstBitDiff(m.rmsNorm(vx, vw, { out: vy }), want)).toBe(-1);
    expect(firstBitDiff(m.rmsNormBackward(vx, vx, vw, { dx: vdx }).dx, wantB.dx)).toBe(-1);
    // plain input, output a view up there (and the reverse)
    vy.fill(0);
    m.rmsNorm(x, w, { out: vy });
    expect(firstBitDiff(vy, want)).toBe(-1);
    expect(firstBitDiff(m.rmsNorm(vx, w), want)).toBe(-1);
    expect(() => m.allocF32(GiB)).toThrow(RangeError);
    expect(() => m.allocF32(GiB)).toThrow(/cannot allocate 268435456 floats/);
    for (const b of blocks) b.free();
  }, 120_000);
});
