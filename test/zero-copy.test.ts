// Where arrays live and how they alias. Views of wasm memory (allocF32) must be used in place,
// plain arrays of any kind (subarrays at odd offsets, SharedArrayBuffer-backed) copied through,
// the documented exact aliases (out === x, dx === dy, dx === x) honoured, and any partial
// overlap between an output and an input still give the result of the non-overlapping call.
// The expected result is always the same call on fresh, separate plain arrays (same kernel,
// so the same bits), itself checked against the float64 reference.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { firstBitDiff, mismatch, randn, refForward, testRows, testWeight, yTolerance } from '../shared/reference.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;
const GUARD = Math.fround(-777.25);

describe.each(BUILDS)('%s build: zero-copy and aliasing', (build) => {
  const dim = 17; // vector part + scalar tail
  const rows = 40; // more than one 32-row dweight block
  const n = rows * dim;
  const x0 = testRows(rows, dim, 1);
  const dy0 = randn(n, 2);
  const w0 = testWeight(dim, 3);

  let m: RmsNorm;
  let expected: {
    fwd: { y: Float32Array; rstd: Float32Array };
    bwd: { dx: Float32Array; dweight: Float32Array | null };
    bwdRstd: { dx: Float32Array; dweight: Float32Array | null };
  };
  beforeAll(async () => {
    m = await loadRmsNorm(build);
    // The expected results: the same calls on separate plain arrays, computed up front.
    const rstd = new Float32Array(rows);
    const y = m.rmsNorm(x0.slice(), w0.slice(), { rstd });
    expected = {
      fwd: { y, rstd },
      bwd: m.rmsNormBackward(dy0.slice(), x0.slice(), w0.slice()),
      bwdRstd: m.rmsNormBackward(dy0.slice(), x0.slice(), w0.slice(), { rstd }),
    };
    // Grow the scratch region beyond anything a test below stages, so that no call on plain
    // arrays grows the memory mid-test (which would detach the simd build's views).
    m.rmsNormBackward(randn(8 * n, 1), randn(8 * n, 2), testWeight(dim, 3), { rstd: new Float32Array(8 * rows) });
  });
  const fwd = () => expected.fwd;
  const bwd = (withRstd = false) => (withRstd ? expected.bwdRstd : expected.bwd);

  /**
   * `floats` of wasm memory with GUARD around it; returns the region (view) and a check that
   * the guards are intact. One allocation per test, views taken after it: later allocations
   * could grow memory and detach the views (simd build).
   */
  function region(floats: number) {
    const buf = m.allocF32(floats + 16);
    const all = buf.view();
    all.fill(GUARD);
    const view = all.subarray(8, 8 + floats);
    const guardsIntact = () =>
      all.subarray(0, 8).every((v) => v === GUARD) && all.subarray(8 + floats).every((v) => v === GUARD);
    return { view, guardsIntact, free: () => buf.free() };
  }

  it('the expected results are right (against the float64 reference)', () => {
    const { y } = fwd();
    expect(mismatch(y, refForward(x0, w0, dim, 1e-6).y, yTolerance)).toBeNull();
  });

  it('views as x, weight, out and rstd: used in place, result appears in the out view', () => {
    const r = region(2 * n + dim + rows);
    const x = r.view.subarray(0, n);
    const out = r.view.subarray(n, 2 * n);
    const w = r.view.subarray(2 * n, 2 * n + dim);
    const rstd = r.view.subarray(2 * n + dim);
    x.set(x0);
    w.set(w0);
    expect(x.buffer).toBe(m.wasm.memory.buffer);
    const ret = m.rmsNorm(x, w, { out, rstd });
    expect(ret).toBe(out);
    const e = fwd();
    expect(firstBitDiff(out, e.y)).toBe(-1);
    expect(firstBitDiff(rstd, e.rstd)).toBe(-1);
    expect(firstBitDiff(x, x0)).toBe(-1);
    expect(r.guardsIntact()).toBe(true);
    r.free();
  });

  it('in place on a view: x = out = the same view', () => {
    const r = region(n);
    r.view.set(x0);
    expect(m.rmsNorm(r.view, w0, { out: r.view })).toBe(r.view);
    expect(firstBitDiff(r.view, fwd().y)).toBe(-1);
    expect(r.guardsIntact()).toBe(true);
    r.free();
  });

  it('views at float offsets that are not 16-byte aligned', () => {
    for (const off of [1, 2, 3, 5]) {
      const r = region(2 * n + 8);
      const x = r.view.subarray(off, off + n);
      const out = r.view.subarray(n + off + 1, 2 * n + off + 1);
      x.set(x0);
      m.rmsNorm(x, w0, { out });
      expect(firstBitDiff(out, fwd().y), `offset ${off}`).toBe(-1);
      expect(r.guardsIntact()).toBe(true);
      r.free();
    }
  });

  it('mixed: view in, plain out; plain in, view out', () => {
    const r = region(n);
    r.view.set(x0);
    const plainOut = new Float32Array(n);
    m.rmsNorm(r.view, w0, { out: plainOut });
    expect(firstBitDiff(plainOut, fwd().y)).toBe(-1);
    r.view.fill(0);
    m.rmsNorm(x0.slice(), w0, { out: r.view });
    expect(firstBitDiff(r.view, fwd().y)).toBe(-1);
    expect(r.guardsIntact()).toBe(true);
    r.free();
  });

  it('backward on views: dx === dy, dx === x, and separate dx/dweight views', () => {
    const e = bwd();
    for (const mode of ['dx=dy', 'dx=x', 'separate'] as const) {
      const r = region(3 * n + dim);
      const dy = r.view.subarray(0, n);
      const x = r.view.subarray(n, 2 * n);
      const dxSep = r.view.subarray(2 * n, 3 * n);
      const dweight = r.view.subarray(3 * n);
      dy.set(dy0);
      x.set(x0);
      const dx = mode === 'dx=dy' ? dy : mode === 'dx=x' ? x : dxSep;
      const res = m.rmsNormBackward(dy, x, w0, { dx, dweight });
      expect(res.dx).toBe(dx);
      expect(res.dweight).toBe(dweight);
      expect(firstBitDiff(dx, e.dx), mode).toBe(-1);
      expect(firstBitDiff(dweight, e.dweight!), mode).toBe(-1);
      expect(r.guardsIntact()).toBe(true);
      r.free();
    }
  });

  it('plain subarrays at nonzero byteOffset: correct, and nothing outside them is touched', () => {
    const big = new Float32Array(4 * n + 64).fill(GUARD);
    const x = big.subarray(3, 3 + n); // 12 bytes in: not 16-byte aligned
    const out = big.subarray(n + 10, 2 * n + 10);
    const w = big.subarray(2 * n + 17, 2 * n + 17 + dim);
    const rstd = big.subarray(3 * n, 3 * n + rows);
    x.set(x0);
    w.set(w0);
    const before = big.slice();
    m.rmsNorm(x, w, { out, rstd });
    const e = fwd();
    expect(firstBitDiff(out, e.y)).toBe(-1);
    expect(firstBitDiff(rstd, e.rstd)).toBe(-1);
    // every float outside out and rstd is as it was
    out.set(before.subarray(n + 10, 2 * n + 10));
    rstd.set(before.subarray(3 * n, 3 * n + rows));
    expect(firstBitDiff(big, before)).toBe(-1);
  });

  it('SharedArrayBuffer-backed Float32Arrays (not wasm memory), forward and backward', () => {
    const sab = (a: Float32Array) => {
      const s = new Float32Array(new SharedArrayBuffer(a.length * 4));
      s.set(a);
      return s;
    };
    const x = sab(x0);
    const out = sab(new Float32Array(n));
    const rstd = sab(new Float32Array(rows));
    m.rmsNorm(x, sab(w0), { out, rstd });
    const e = fwd();
    expect(firstBitDiff(out, e.y)).toBe(-1);
    expect(firstBitDiff(rstd, e.rstd)).toBe(-1);
    const dx = sab(new Float32Array(n));
    const dweight = sab(new Float32Array(dim));
    m.rmsNormBackward(sab(dy0), x, sab(w0), { dx, dweight, rstd });
    const eb = bwd(true);
    expect(firstBitDiff(dx, eb.dx)).toBe(-1);
    expect(firstBitDiff(dweight, eb.dweight!)).toBe(-1);
    // in place on a shared buffer
    m.rmsNorm(x, w0, { out: x });
    expect(firstBitDiff(x, e.y)).toBe(-1);
  });

  it('plain arrays in place: out === x; dx === dy; dx === x', () => {
    const x = x0.slice();
    expect(m.rmsNorm(x, w0, { out: x })).toBe(x);
    expect(firstBitDiff(x, fwd().y)).toBe(-1);
    const e = bwd();
    const dy = dy0.slice();
    m.rmsNormBackward(dy, x0, w0, { dx: dy });
    expect(firstBitDiff(dy, e.dx)).toBe(-1);
    const x2 = x0.slice();
    m.rmsNormBackward(dy0, x2, w0, { dx: x2 });
    expect(firstBitDiff(x2, e.dx)).toBe(-1);
  });

  // Partial overlaps: outputs shifted against inputs by k floats, in both directions. The
  // kernel may only alias exactly; anything else must be detected and staged.
  const SHIFTS = [1, 3, 4, 16, dim, n / 2, n - 1];

  it.each(SHIFTS)('forward, out overlapping x in wasm memory, shift ±%i', (k) => {
    for (const dir of [1, -1]) {
      const r = region(n + k);
      const x = dir > 0 ? r.view.subarray(0, n) : r.view.subarray(k, k + n);
      const out = dir > 0 ? r.view.subarray(k, k + n) : r.view.subarray(0, n);
      x.set(x0);
      m.rmsNorm(x, w0, { out });
      expect(firstBitDiff(out, fwd().y), `shift ${dir * k}`).toBe(-1);
      expect(r.guardsIntact()).toBe(true);
      r.free();
    }
  });

  it.each(SHIFTS)('forward, out overlapping x in one plain ArrayBuffer, shift ±%i', (k) => {
    for (const dir of [1, -1]) {
      const all = new Float32Array(n + k);
      const x = dir > 0 ? all.subarray(0, n) : all.subarray(k, k + n);
      const out = dir > 0 ? all.subarray(k, k + n) : all.subarray(0, n);
      x.set(x0);
      m.rmsNorm(x, w0, { out });
      expect(firstBitDiff(out, fwd().y), `shift ${dir * k}`).toBe(-1);
    }
  });

  it.each(SHIFTS)('backward, dx overlapping dy and x in wasm memory, shift %i', (k) => {
    const e = bwd();
    for (const target of ['dy', 'x'] as const) {
      const r = region(2 * n + k + dim);
      // the input dx overlaps starts at 0, the other input after everything
      const over = r.view.subarray(0, n);
      const dx = r.view.subarray(k, k + n);
      const other = r.view.subarray(n + k, 2 * n + k);
      const dweight = r.view.subarray(2 * n + k);
      over.set(target === 'dy' ? dy0 : x0);
      other.set(target === 'dy' ? x0 : dy0);
      const [dy, x] = target === 'dy' ? [over, other] : [other, over];
      m.rmsNormBackward(dy, x, w0, { dx, dweight });
      expect(firstBitDiff(dx, e.dx), `dx over ${target}, shift ${k}`).toBe(-1);
      expect(firstBitDiff(dweight, e.dweight!), `dweight, dx over ${target}, shift ${k}`).toBe(-1);
      expect(r.guardsIntact()).toBe(true);
      r.free();
    }
  });

  it('outputs overlapping other inputs in wasm memory: rstd over x, out over weight, dweight over x', () => {
    const e = fwd();
    {
      const r = region(n + rows);
      const x = r.view.subarray(0, n);
      const rstd = r.view.subarray(n - 3, n - 3 + rows); // the last 3 floats of x
      x.set(x0);
      const out = new Float32Array(n);
      m.rmsNorm(x, w0, { out, rstd });
      expect(firstBitDiff(out, e.y)).toBe(-1);
      expect(firstBitDiff(rstd, e.rstd)).toBe(-1);
      r.free();
    }
    {
      const r = region(n + dim);
      const w = r.view.subarray(0, dim);
      const out = r.view.subarray(5, 5 + n); // starts inside weight
      w.set(w0);
      m.rmsNorm(x0, w, { out });
      expect(firstBitDiff(out, e.y)).toBe(-1);
      r.free();
    }
    {
      const eb = bwd();
      const r = region(n + dim);
      const x = r.view.subarray(0, n);
      const dweight = r.view.subarray(n - 4, n - 4 + dim);
      x.set(x0);
      const res = m.rmsNormBackward(dy0, x, w0, { dweight });
      expect(firstBitDiff(res.dx, eb.dx)).toBe(-1);
      expect(firstBitDiff(dweight, eb.dweight!)).toBe(-1);
      r.free();
    }
  });

  it('a view equal to x in position but a different object is not mistaken for an exact alias', () => {
    const r = region(n);
    r.view.set(x0);
    const sameRange = new Float32Array(r.view.buffer, r.view.byteOffset, n);
    m.rmsNorm(r.view, w0, { out: sameRange });
    expect(firstBitDiff(sameRange, fwd().y)).toBe(-1);
    r.free();
  });
});

describe.each(BUILDS)('%s build: views really are not copied', (build) => {
  // A fresh module instance: no scratch region or free blocks left over from other tests, so
  // a copy of an 8 MiB array would have to grow the memory.
  it('a large call on views or on plain arrays does not grow memory', async () => {
    const dim = 4096;
    const rows = 512; // 8 MiB
    const data = randn(rows * dim, 4);
    const dy = randn(rows * dim, 5);
    // expected results from the other (statically imported) module instance
    const other = await loadRmsNorm(build);
    const expectedY = other.rmsNorm(data, null, { dim });
    const expectedDx = other.rmsNormBackward(dy, expectedY, null, { dim }).dx;

    vi.resetModules();
    const pkg: typeof import('../dist/index.js') = await import('../dist/index.js');
    const fresh = await pkg.loadRmsNorm(build);
    expect(fresh === other).toBe(false);
    const a = fresh.allocF32(rows * dim);
    const b = fresh.allocF32(rows * dim);
    const [view, dyView] = [a.view(), b.view()];
    view.set(data);
    dyView.set(dy);
    const mem = fresh.wasm.memory;
    const before = mem.buffer.byteLength;
    fresh.rmsNorm(view, null, { dim, out: view });
    expect(mem.buffer.byteLength).toBe(before);
    expect(firstBitDiff(view, expectedY)).toBe(-1);
    fresh.rmsNormBackward(dyView, view, null, { dim, dx: dyView });
    expect(mem.buffer.byteLength).toBe(before);
    expect(firstBitDiff(dyView, expectedDx)).toBe(-1);
    // plain arrays of the same size stream through the window taken at instantiation: they
    // do not grow the memory either (before the window, they were copied whole)
    const y = fresh.rmsNorm(data.slice(), null, { dim });
    expect(mem.buffer.byteLength).toBe(before);
    expect(firstBitDiff(y, expectedY)).toBe(-1);
    const dx = fresh.rmsNormBackward(dy, expectedY, null, { dim }).dx;
    expect(mem.buffer.byteLength).toBe(before);
    expect(firstBitDiff(dx, expectedDx)).toBe(-1);
  });
});
