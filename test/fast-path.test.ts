// Calls whose own scratch allocation grows the wasm memory. Growing a non-shared memory
// detaches every view of it, and a detached view reads byteOffset 0 and length 0: the
// addresses of the views used in place must be taken before the scratch is carved (the
// zero-copy fast path and stage() both do), or the kernel gets address 0. Each case runs on a
// fresh module instance (no scratch region yet), checks that the memory did grow during the
// call, and compares the bits with the same call on plain arrays in another instance (same
// kernel, so the same bits).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadRmsNorm, type F32Buffer, type RmsNorm } from '../dist/index.js';
import {
  allclose,
  firstBitDiff,
  mismatch,
  randn,
  refBackward,
  refForward,
  testRows,
  testWeight,
  yTolerance,
} from '../shared/reference.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;

/** A new instance of `build` in a fresh copy of the package: no scratch region yet. */
async function freshInstance(build: (typeof BUILDS)[number]): Promise<RmsNorm> {
  vi.resetModules();
  const pkg: typeof import('../dist/index.js') = await import('../dist/index.js');
  return pkg.loadRmsNorm(build);
}

/** Buffers in `m`'s memory filled from `init` (arrays) or zeroed (lengths). */
function buffers(m: RmsNorm, init: (Float32Array | number)[]): F32Buffer[] {
  const bufs = init.map((v) => m.allocF32(typeof v === 'number' ? v : v.length));
  bufs.forEach((b, i) => {
    const v = init[i]!;
    if (typeof v === 'number') b.view().fill(0);
    else b.view().set(v);
  });
  return bufs;
}

describe.each(BUILDS)('%s build: a call whose scratch grows the memory', (build) => {
  // One row of 2^18 floats (1 MiB per array): the scratch a call needs (the backward's
  // workspace, or a copy) is larger than what a fresh instance has left after the views.
  const dim = 1 << 18;
  const x0 = testRows(1, dim, 1);
  const dy0 = randn(dim, 2);
  const w0 = testWeight(dim, 3);
  let other: RmsNorm;
  beforeAll(async () => {
    other = await loadRmsNorm(build);
  });

  it('the expected results are right (against the float64 reference)', () => {
    const y = other.rmsNorm(x0, w0);
    expect(mismatch(y, refForward(x0, w0, dim, 1e-6).y, yTolerance)).toBeNull();
    const b = other.rmsNormBackward(dy0, x0, w0);
    const ref = refBackward(dy0, x0, w0, dim, 1e-6);
    // dx: the numerics suite's bound for unit-scale rows (1e-5 absolute plus 1e-5 relative);
    // dweight of one row is one product dy·x·rstd: three float32 roundings, no sums.
    expect(mismatch(b.dx, ref.dx, allclose(1e-5, 1e-5))).toBeNull();
    expect(mismatch(b.dweight!, ref.dweight!, allclose(0, 1e-6))).toBeNull();
  });

  it('zero-copy backward: the workspace grows the memory, the results are right', async () => {
    const expected = other.rmsNormBackward(dy0, x0, w0);
    const m = await freshInstance(build);
    const bufs = buffers(m, [dy0, x0, w0, dim, dim]);
    const [dy, x, w, dx, dweight] = bufs.map((b) => b.view()) as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
    const before = m.wasm.memory.buffer.byteLength;
    const r = m.rmsNormBackward(dy, x, w, { dx, dweight });
    expect(m.wasm.memory.buffer.byteLength).toBeGreaterThan(before);
    // Growth detaches the simd build's views: the call returns fresh views of the same storage
    // then (never an empty array), and the views given when they survived (shared memory).
    for (const [got, given] of [[r.dx, dx], [r.dweight!, dweight]] as const) {
      if (given.length === 0) {
        expect(got === given).toBe(false);
        expect(got.buffer).toBe(m.wasm.memory.buffer);
        expect(got.byteOffset).toBe(given === dx ? bufs[3]!.view().byteOffset : bufs[4]!.view().byteOffset);
      } else expect(got === given).toBe(true);
    }
    expect(r.dx.length).toBe(dy.length || bufs[0]!.length);
    expect(firstBitDiff(r.dx, expected.dx)).toBe(-1);
    expect(firstBitDiff(r.dweight!, expected.dweight!)).toBe(-1);
    expect(firstBitDiff(bufs[3]!.view(), expected.dx)).toBe(-1);
    expect(firstBitDiff(bufs[4]!.view(), expected.dweight!)).toBe(-1);
    bufs.forEach((b) => b.free());
  });

  it('views in, a new plain output: its scratch copy grows the memory, the result is right', async () => {
    const expected = other.rmsNorm(x0, w0);
    const m = await freshInstance(build);
    const bufs = buffers(m, [x0, w0]);
    const [x, w] = bufs.map((b) => b.view()) as [Float32Array, Float32Array];
    const before = m.wasm.memory.buffer.byteLength;
    const y = m.rmsNorm(x, w);
    expect(m.wasm.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(firstBitDiff(y, expected)).toBe(-1);
    expect(firstBitDiff(bufs[0]!.view(), x0)).toBe(-1);
    bufs.forEach((b) => b.free());
  });

  it('a view input copied aside (the output overlaps it partly) while the memory grows', async () => {
    const expected = other.rmsNorm(x0, w0);
    const m = await freshInstance(build);
    // out starts 4 floats into x: x must be copied to scratch before the kernel writes out.
    const bufs = buffers(m, [dim + 4, w0]);
    const [all, w] = bufs.map((b) => b.view()) as [Float32Array, Float32Array];
    all.set(x0);
    const x = all.subarray(0, dim);
    const out = all.subarray(4, dim + 4);
    const before = m.wasm.memory.buffer.byteLength;
    m.rmsNorm(x, w, { out });
    expect(m.wasm.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(firstBitDiff(bufs[0]!.view().subarray(4), expected)).toBe(-1);
    bufs.forEach((b) => b.free());
  });
});

describe.each(BUILDS)('%s build: views the fast path remembers', (build) => {
  // The zero-copy fast path remembers the last view at each argument position with its
  // address, so repeated calls read no typed-array getters. Roles change, overlaps appear and
  // memory grows between calls here; every result must still be that of plain arrays.
  const dim = 24;
  const rows = 3;
  const n = rows * dim;
  const x0 = testRows(rows, dim, 4);
  const dy0 = randn(n, 5);
  const w0 = testWeight(dim, 6);
  let m: RmsNorm;
  let plain: RmsNorm;
  beforeAll(async () => {
    plain = await loadRmsNorm(build);
    m = await freshInstance(build);
  });

  it('the same views in changing roles, and a partial overlap after them', () => {
    const fwd = (x: Float32Array, rstd?: Float32Array) => plain.rmsNorm(x.slice(), w0, rstd ? { rstd } : {});
    const bufs = buffers(m, [2 * n + 8, dim, n, rows, dim]);
    const [all, w, dy, rstd, dweight] = bufs.map((b) => b.view()) as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
    const a = all.subarray(0, n);
    const b = all.subarray(n + 8, 2 * n + 8);
    w.set(w0);
    a.set(x0);
    for (let k = 0; k < 3; k++) {
      m.rmsNorm(a, w, { out: b });
      expect(firstBitDiff(b, fwd(x0))).toBe(-1);
    }
    const y1 = b.slice();
    m.rmsNorm(b, w, { out: a }); // roles swapped
    expect(firstBitDiff(a, fwd(y1))).toBe(-1);
    const y2 = a.slice();
    m.rmsNorm(a, w, { out: a, rstd }); // in place, with rstd
    const rstdExpected = new Float32Array(rows);
    expect(firstBitDiff(a, fwd(y2, rstdExpected))).toBe(-1);
    expect(firstBitDiff(rstd, rstdExpected)).toBe(-1);
    // out starts one float into x (x and w as remembered): x must be read before it is written
    const y3 = a.slice();
    const shifted = all.subarray(1, n + 1);
    m.rmsNorm(a, w, { out: shifted });
    expect(firstBitDiff(shifted, fwd(y3))).toBe(-1);
    // backward: dx over dy, then over x, then separate
    a.set(x0);
    dy.set(dy0);
    const expected = plain.rmsNormBackward(dy0.slice(), x0.slice(), w0.slice());
    m.rmsNormBackward(dy, a, w, { dx: b, dweight });
    expect(firstBitDiff(b, expected.dx)).toBe(-1);
    expect(firstBitDiff(dweight, expected.dweight!)).toBe(-1);
    m.rmsNormBackward(dy, a, w, { dx: dy, dweight });
    expect(firstBitDiff(dy, expected.dx)).toBe(-1);
    dy.set(dy0);
    m.rmsNormBackward(dy, a, w, { dx: a, dweight });
    expect(firstBitDiff(a, expected.dx)).toBe(-1);
    expect(firstBitDiff(dweight, expected.dweight!)).toBe(-1);
    bufs.forEach((buf) => buf.free());
  });

  it('after the memory grows: remembered views are refused (non-shared) or still right (shared)', () => {
    const bufs = buffers(m, [x0, w0, n]);
    const [x, w, out] = bufs.map((b) => b.view()) as [Float32Array, Float32Array, Float32Array];
    m.rmsNorm(x, w, { out });
    const expected = plain.rmsNorm(x0, w0);
    expect(firstBitDiff(out, expected)).toBe(-1);
    const big = m.allocF32(m.wasm.memory.buffer.byteLength / 4 + (1 << 18));
    if (m.wasm.shared) {
      out.fill(0);
      m.rmsNorm(x, w, { out });
      expect(firstBitDiff(bufs[2]!.view(), expected)).toBe(-1);
    } else {
      expect(x.length).toBe(0);
      expect(() => m.rmsNorm(x, w, { out })).toThrow(TypeError);
      const [x2, w2, out2] = bufs.map((b) => b.view()) as [Float32Array, Float32Array, Float32Array];
      out2.fill(0);
      m.rmsNorm(x2, w2, { out: out2 });
      expect(firstBitDiff(out2, expected)).toBe(-1);
    }
    big.free();
    bufs.forEach((b) => b.free());
  });
});
