/**
 * The variants — fused residual add, `offset` (Gemma's `1 + weight`) and `partial`
 * (pRMSNorm, Zhang & Sennrich 2019 §4.2) — forward and backward, alone and combined, on every
 * build, against the float64 reference (itself checked against finite differences and the
 * paper's formula), plus the same-bits identities that tie each variant to the plain kernel.
 *
 * Tolerances as in numerics.test.ts (shared/reference.js): y `yTolerance`, rstd
 * `rstdTolerance`, dx `rowTolerance(dxScale)` widened by the residual gradient's size,
 * dweight `dweightTolerance`.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, statOf, type RmsNorm } from '../dist/index.js';
import {
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
import { thrown } from './thrown.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;

/** `a + b` in float32, as the kernel forms h. */
function addF32(a: Float32Array, b: Float32Array): Float32Array {
  const h = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) h[i] = a[i]! + b[i]!;
  return h;
}

interface Variant {
  residual: boolean;
  offset: number;
  partial: number;
}
const VARIANTS: Variant[] = [];
for (const residual of [false, true])
  for (const offset of [0, 1, -0.25])
    for (const partial of [1, 0.0625, 0.5, 0.3]) VARIANTS.push({ residual, offset, partial });
const name = (v: Variant) => `residual ${v.residual}, offset ${v.offset}, partial ${v.partial}`;

describe.each(BUILDS)('%s build: variants vs float64 reference', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });

  // Row lengths through every code path: below a vector, tails, a stat boundary mid-vector,
  // rows past the 1024-float sum block.
  describe.each([1, 5, 17, 64, 100, 4096, 5000])('dim %i', (dim) => {
    const rows = Math.max(3, Math.min(40, Math.floor(65536 / dim)));
    const x = testRows(rows, dim, 11 + dim);
    const res = randn(rows * dim, 12 + dim, 0.5);
    const dy = randn(rows * dim, 13 + dim);
    const dh = randn(rows * dim, 14 + dim, 0.3);
    // A Gemma-style weight near 0 for offset 1; near 1 otherwise.
    const w = testWeight(dim, 15 + dim);

    it.each(VARIANTS.map((v) => [name(v), v] as const))('%s', (_n, v) => {
      const { offset, partial } = v;
      const stat = statOf(partial, dim);
      const residual = v.residual ? res.slice() : undefined;
      const rstd = new Float32Array(rows);
      const y = m.rmsNorm(x, w, { residual, offset, partial, rstd });
      const h = v.residual ? addF32(x, res) : x;
      if (residual) expect(firstBitDiff(residual, h), 'h = x + residual, written into residual').toBe(-1);
      const ref = refForward(h, w, dim, 1e-6, { offset, stat });
      expect(mismatch(y, ref.y, yTolerance, 'y')).toBeNull();
      expect(mismatch(rstd, ref.rstd, rstdTolerance, 'rstd')).toBeNull();

      const dresidual = v.residual ? dh : undefined;
      for (const saved of [true, false]) {
        const b = m.rmsNormBackward(dy, h, w, { offset, partial, dresidual, rstd: saved ? rstd : undefined });
        const rb = refBackward(dy, h, w, dim, 1e-6, saved ? rstd : null, { offset, stat, dresidual: dresidual ?? null });
        // dx's error scale: the row's natural size plus the residual gradient it carries.
        const scale = rb.dxScale.map((s, r) => {
          let m2 = 0;
          for (let i = 0; i < dim; i++) m2 = Math.max(m2, Math.abs(dresidual ? dresidual[r * dim + i]! : 0));
          return s + m2;
        });
        expect(mismatch(b.dx, rb.dx, rowTolerance(scale, dim), `dx (saved rstd ${saved})`)).toBeNull();
        expect(mismatch(b.dweight!, rb.dweight!, dweightTolerance(rb.dweightAbs!, rows), 'dweight')).toBeNull();
      }
    });
  });

  it('identities: partial 1 and offset 0 are the plain kernel; offset o is the plain kernel with weight o + w (same bits)', () => {
    const dim = 777;
    const rows = 33;
    const x = testRows(rows, dim, 1);
    const dy = randn(rows * dim, 2);
    const w = testWeight(dim, 3);
    const plainY = m.rmsNorm(x, w);
    expect(firstBitDiff(m.rmsNorm(x, w, { partial: 1, offset: 0 }), plainY)).toBe(-1);
    const plainB = m.rmsNormBackward(dy, x, w);
    const same = m.rmsNormBackward(dy, x, w, { partial: 1, offset: 0 });
    expect(firstBitDiff(same.dx, plainB.dx)).toBe(-1);
    expect(firstBitDiff(same.dweight!, plainB.dweight!)).toBe(-1);

    const w1 = w.map((v) => Math.fround(1 + v));
    expect(firstBitDiff(m.rmsNorm(x, w, { offset: 1 }), m.rmsNorm(x, w1))).toBe(-1);
    const o = m.rmsNormBackward(dy, x, w, { offset: 1 });
    expect(firstBitDiff(o.dx, m.rmsNormBackward(dy, x, w1).dx)).toBe(-1);
    // dweight keeps its form: Σ dy·x·rstd, whatever the offset.
    expect(firstBitDiff(o.dweight!, plainB.dweight!)).toBe(-1);
  });

  it('identities: the fused forward is the plain forward of h; the fused backward is the plain dx + dresidual in float32 (same bits)', () => {
    const dim = 1500;
    const rows = 41;
    const x = testRows(rows, dim, 4);
    const r = randn(rows * dim, 5);
    const dy = randn(rows * dim, 6);
    const dh = randn(rows * dim, 7);
    const w = testWeight(dim, 8);
    for (const partial of [1, 0.25]) {
      const hOut = new Float32Array(x.length);
      const rstd = new Float32Array(rows);
      const y = m.rmsNorm(x, w, { residual: r, residualOut: hOut, partial, rstd });
      const h = addF32(x, r);
      expect(firstBitDiff(hOut, h)).toBe(-1);
      const plainRstd = new Float32Array(rows);
      expect(firstBitDiff(y, m.rmsNorm(h, w, { partial, rstd: plainRstd }))).toBe(-1);
      expect(firstBitDiff(rstd, plainRstd)).toBe(-1);
      const fused = m.rmsNormBackward(dy, h, w, { dresidual: dh, partial, rstd });
      const plain = m.rmsNormBackward(dy, h, w, { partial, rstd });
      expect(firstBitDiff(fused.dx, addF32(plain.dx, dh))).toBe(-1);
      expect(firstBitDiff(fused.dweight!, plain.dweight!)).toBe(-1);
    }
  });

  it('in place: h into residual (default), h into x, dx into dresidual; plain arrays and views of wasm memory', () => {
    const dim = 300;
    const rows = 1000; // several segments of the 256 KiB window
    const x = testRows(rows, dim, 9);
    const r = randn(rows * dim, 10);
    const w = testWeight(dim, 11);
    const h = addF32(x, r);
    const want = m.rmsNorm(h, w, { offset: 1 });

    const rIn = r.slice();
    expect(firstBitDiff(m.rmsNorm(x, w, { residual: rIn, offset: 1 }), want)).toBe(-1);
    expect(firstBitDiff(rIn, h)).toBe(-1);
    const xIn = x.slice();
    expect(firstBitDiff(m.rmsNorm(xIn, w, { residual: r, residualOut: xIn, offset: 1 }), want)).toBe(-1);
    expect(firstBitDiff(xIn, h)).toBe(-1);

    const bx = m.allocF32(x.length);
    const br = m.allocF32(x.length);
    const by = m.allocF32(x.length);
    try {
      bx.view().set(x);
      br.view().set(r);
      m.rmsNorm(bx.view(), w, { residual: br.view(), out: by.view(), offset: 1 });
      expect(firstBitDiff(by.view(), want)).toBe(-1);
      expect(firstBitDiff(br.view(), h)).toBe(-1);
    } finally {
      bx.free();
      br.free();
      by.free();
    }

    const dy = randn(rows * dim, 12);
    const dh = randn(rows * dim, 13);
    const want2 = m.rmsNormBackward(dy, h, w, { dresidual: dh });
    const dhIn = dh.slice();
    const got = m.rmsNormBackward(dy, h, w, { dresidual: dhIn, dx: dhIn });
    expect(got.dx).toBe(dhIn);
    expect(firstBitDiff(dhIn, want2.dx)).toBe(-1);
    expect(firstBitDiff(got.dweight!, want2.dweight!)).toBe(-1);
  });

  it('repeated variant calls on plain arrays do not grow the wasm memory', () => {
    const dim = 2048;
    const rows = 300;
    const x = testRows(rows, dim, 14);
    const r = randn(rows * dim, 15);
    const dy = randn(rows * dim, 16);
    const w = testWeight(dim, 17);
    const once = () => {
      const rr = r.slice();
      m.rmsNorm(x, w, { residual: rr, offset: 1, partial: 0.0625 });
      m.rmsNormBackward(dy, rr, w, { dresidual: r, offset: 1, partial: 0.0625 });
    };
    once();
    const bytes = m.wasm.memory.buffer.byteLength;
    for (let i = 0; i < 20; i++) once();
    expect(m.wasm.memory.buffer.byteLength).toBe(bytes);
  });
});

describe('the float64 reference of the variants', () => {
  /** Float64 loss `Σ dy · y` of the forward with residual, offset, stat; `x`, `r`, `w` float64. */
  function loss(x: Float64Array, r: Float64Array, w: Float64Array, dy: Float64Array, dim: number, offset: number, stat: number): number {
    const h = x.map((v, i) => v + r[i]!);
    const { y } = refForward(h, w, dim, 1e-3, { offset, stat });
    let l = 0;
    for (let i = 0; i < y.length; i++) l += y[i]! * dy[i]!;
    return l;
  }

  it.each([
    [1, 0, 10],
    [0, 1, 3],
    [1, -0.5, 7],
    [0.5, 1, 1],
  ])('matches central finite differences: partial stat %s of 10 → stat %s, offset %s', (_p, offset, stat) => {
    const dim = 10;
    const rows = 2;
    const x = Float64Array.from(randn(rows * dim, 21));
    const r = Float64Array.from(randn(rows * dim, 22, 0.5));
    const w = Float64Array.from(testWeight(dim, 23));
    const dy = Float64Array.from(randn(rows * dim, 24));
    const h = x.map((v, i) => v + r[i]!);
    // With a fused add, dL/dx = dL/dresidual = the normalization's dx (dresidual = 0 here: the
    // loss does not use h beyond y).
    const rb = refBackward(dy, h, w, dim, 1e-3, null, { offset, stat });
    const step = 1e-6;
    for (let i = 0; i < x.length; i++) {
      const xp = x.slice();
      const xm = x.slice();
      xp[i]! += step;
      xm[i]! -= step;
      const fd = (loss(xp, r, w, dy, dim, offset, stat) - loss(xm, r, w, dy, dim, offset, stat)) / (2 * step);
      expect(Math.abs(fd - rb.dx[i]!), `dx[${i}]: finite difference ${fd}, reference ${rb.dx[i]}`).toBeLessThan(1e-7 * (1 + Math.abs(fd)));
      const rp = r.slice();
      rp[i]! += step;
      const rm = r.slice();
      rm[i]! -= step;
      const fdr = (loss(x, rp, w, dy, dim, offset, stat) - loss(x, rm, w, dy, dim, offset, stat)) / (2 * step);
      expect(Math.abs(fdr - rb.dx[i]!), `dresidual[${i}]`).toBeLessThan(1e-7 * (1 + Math.abs(fdr)));
    }
    for (let i = 0; i < dim; i++) {
      const wp = w.slice();
      const wm = w.slice();
      wp[i]! += step;
      wm[i]! -= step;
      const fd = (loss(x, r, wp, dy, dim, offset, stat) - loss(x, r, wm, dy, dim, offset, stat)) / (2 * step);
      expect(Math.abs(fd - rb.dweight![i]!), `dweight[${i}]`).toBeLessThan(1e-7 * (1 + Math.abs(fd)));
    }
  });

  it("pRMSNorm is the paper's formula: rms from the first k elements, every element divided by it", () => {
    // Zhang & Sennrich 2019, eq. (4): rms̄(a) = sqrt(1/k Σ_{i≤k} a_i²), ā_i = a_i / rms̄(a) · g_i,
    // with eps inside the root as everywhere in this package.
    const a = [0.5, -2, 3, 0.25, 8, -9, 1, 1];
    const g = [1, 2, 0.5, 1, 1, 3, 1, -1];
    const k = 3;
    const rms = Math.sqrt((0.25 + 4 + 9) / 3 + Math.fround(1e-6));
    const { y, rstd } = refForward(a, g, 8, 1e-6, { stat: k });
    expect(rstd[0]).toBeCloseTo(1 / rms, 15);
    for (let i = 0; i < 8; i++) expect(y[i]).toBeCloseTo((a[i]! / rms) * g[i]!, 14);
  });
});

describe('statOf: k = ceil(partial · dim) without float64 surprises', () => {
  it.each([
    [0.0625, 4096, 256],
    [0.1, 30, 3], // 0.1 · 30 is 3.0000000000000004 in float64
    [0.3, 10, 3],
    [1, 17, 17],
    [1e-9, 17, 1],
    [0.5, 1, 1],
    [0.51, 100, 51],
    [0.0625, 100, 7],
  ])('partial %s of %s → %s', (p, dim, k) => {
    expect(statOf(p, dim)).toBe(k);
  });
});

describe('bad variant options: a clear error before anything is written', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });
  const dim = 8;
  const x = randn(16, 1);
  const w = testWeight(dim, 2);

  it.each([
    [{ partial: 0 }, RangeError, /options\.partial must be a number in \(0, 1\].*got 0/],
    [{ partial: -0.5 }, RangeError, /options\.partial .*got -0\.5/],
    [{ partial: 1.5 }, RangeError, /options\.partial .*got 1\.5/],
    [{ partial: Number.NaN }, RangeError, /options\.partial .*got NaN/],
    [{ partial: '0.5' }, TypeError, /options\.partial must be a number, got string/],
    [{ offset: Number.POSITIVE_INFINITY }, RangeError, /options\.offset must be finite as a float32/],
    [{ offset: 1e39 }, RangeError, /options\.offset must be finite as a float32.*got 1e\+39/],
    [{ offset: Number.NaN }, RangeError, /options\.offset must be finite/],
    [{ offset: null }, TypeError, /options\.offset must be a number, got null/],
    [{ residual: new Float32Array(15) }, RangeError, /options\.residual\.length must be 16/],
    [{ residual: new Float64Array(16) }, TypeError, /options\.residual must be a Float32Array, Float16Array or Uint16Array .*got Float64Array\(16\)/],
    [{ residualOut: new Float32Array(16) }, TypeError, /options\.residualOut was given without options\.residual/],
  ])('rmsNorm(x, w, %o)', (opts, type, msg) => {
    const out = new Float32Array(16).fill(7);
    const e = thrown(() => m.rmsNorm(x, w, { ...(opts as object), out }));
    expect(e).toBeInstanceOf(type);
    expect(e.message).toMatch(msg);
    expect(e.message).toMatch(/^rmsNorm: /);
    expect(out.every((v) => v === 7)).toBe(true);
  });

  it('offset without a weight', () => {
    const e = thrown(() => m.rmsNorm(x, null, { dim, offset: 1 }));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/options\.offset \(1\) needs a weight/);
  });

  it('overlaps: out and the residual that receives h; residualOut part of x; out and residual; dx part of dresidual', () => {
    const buf = new Float32Array(48).fill(3);
    const before = buf.slice();
    const cases: [() => unknown, RegExp][] = [
      [() => m.rmsNorm(x, w, { residual: buf.subarray(0, 16), out: buf.subarray(8, 24) }), /options\.out and options\.residual \(which receives x \+ residual\) must not overlap/],
      [() => m.rmsNorm(buf.subarray(0, 16), w, { residual: x, residualOut: buf.subarray(4, 20) }), /options\.residualOut must not overlap x \(it may be exactly that array\)/],
      [() => m.rmsNorm(x, w, { residual: buf.subarray(0, 16), residualOut: buf.subarray(16, 32), out: buf.subarray(0, 16) }), /options\.out must not overlap options\.residual/],
      [() => m.rmsNorm(x, w, { residual: buf.subarray(0, 16), rstd: buf.subarray(0, 2) }), /options\.rstd and options\.residual .*must not overlap/],
      [() => m.rmsNormBackward(x, x, w, { dresidual: buf.subarray(0, 16), dx: buf.subarray(1, 17) }), /options\.dx must not overlap options\.dresidual/],
      [() => m.rmsNormBackward(x, x, w, { dresidual: new Float32Array(8) }), /options\.dresidual\.length must be 16/],
    ];
    for (const [call, msg] of cases) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(RangeError);
      expect(e.message).toMatch(msg);
      expect(firstBitDiff(buf, before)).toBe(-1);
    }
    // and the module keeps working
    expect(m.rmsNorm(x, w, { residual: x.slice(), offset: 1, partial: 0.5 }).length).toBe(16);
  });
});

describe('properties: random shapes and variant options against the float64 reference (fast-check)', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });
  const SEED = Number(process.env.FC_SEED ?? 0x11);

  it('forward y/rstd/h and backward dx/dweight within the stated tolerances', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 300 }),
        fc.boolean(),
        fc.constantFrom(0, 1, -0.5, 3),
        fc.double({ min: 1e-3, max: 1, noNaN: true }),
        fc.double({ min: 1e-6, max: 1e3, noNaN: true }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        (rows, dim, fused, offset, partial, scale, seed) => {
          const stat = statOf(partial, dim);
          const x = randn(rows * dim, seed, scale);
          const r = randn(rows * dim, seed + 1, scale);
          const w = testWeight(dim, seed + 2);
          const dy = randn(rows * dim, seed + 3);
          const dh = randn(rows * dim, seed + 4, 0.1);
          const residual = fused ? r.slice() : undefined;
          const rstd = new Float32Array(rows);
          const y = m.rmsNorm(x, w, { residual, offset, partial, rstd });
          const h = fused ? addF32(x, r) : x;
          if (residual && firstBitDiff(residual, h) !== -1) return false;
          const ref = refForward(h, w, dim, 1e-6, { offset, stat });
          if (mismatch(y, ref.y, yTolerance, 'y') !== null) return false;
          if (mismatch(rstd, ref.rstd, rstdTolerance, 'rstd') !== null) return false;
          const dresidual = fused ? dh : undefined;
          const b = m.rmsNormBackward(dy, h, w, { offset, partial, dresidual, rstd });
          const rb = refBackward(dy, h, w, dim, 1e-6, rstd, { offset, stat, dresidual: dresidual ?? null });
          const dxTol = (i: number, v: number) => 1e-5 * (rb.dxTerms[i]! + Math.abs(v)) + 1e-30;
          if (mismatch(b.dx, rb.dx, dxTol, 'dx') !== null) return false;
          return mismatch(b.dweight!, rb.dweight!, dweightTolerance(rb.dweightAbs!, rows), 'dweight') === null;
        },
      ),
      { seed: SEED, numRuns: Number(process.env.FC_RUNS ?? 150) },
    );
  });

  it('edge rows: the first k elements zero, huge or tiny (the float64 path), with partial', () => {
    const dim = 64;
    const partial = 0.25; // k = 16
    const w = testWeight(dim, 1);
    for (const head of [0, 1e20, 1e-30]) {
      const x = randn(dim, 2);
      for (let i = 0; i < 16; i++) x[i] = head * (i % 2 ? -1 : 1);
      const rstd = new Float32Array(1);
      const y = m.rmsNorm(x, w, { partial, rstd, offset: 1 });
      const ref = refForward(x, w, dim, 1e-6, { offset: 1, stat: 16 });
      expect(mismatch(rstd, ref.rstd, rstdTolerance, `rstd, head ${head}`)).toBeNull();
      expect(mismatch(y, ref.y, yTolerance, `y, head ${head}`)).toBeNull();
      const dy = randn(dim, 3);
      const b = m.rmsNormBackward(dy, x, w, { partial, offset: 1 });
      const rb = refBackward(dy, x, w, dim, 1e-6, null, { offset: 1, stat: 16 });
      expect(mismatch(b.dx, rb.dx, (i, v) => 1e-5 * (rb.dxTerms[i]! + Math.abs(v)) + 1e-30, `dx, head ${head}`)).toBeNull();
    }
  });
});

describe('createRmsNorm with offset and partial', () => {
  it('gives the bits of the one-off calls with the same options', async () => {
    const m = await loadRmsNorm('simd');
    const dim = 1000;
    const rows = 20;
    const x = testRows(rows, dim, 31);
    const dy = randn(rows * dim, 32);
    const w = testWeight(dim, 33);
    const opts = { offset: 1, partial: 0.0625 };
    const layer = m.createLayer(w, opts);
    try {
      expect(layer.stat).toBe(63);
      const rstd = new Float32Array(rows);
      const y = m.rmsNorm(x, w, { ...opts, rstd });
      expect(firstBitDiff(layer.forward(x), y)).toBe(-1);
      expect(firstBitDiff(layer.rstd, rstd)).toBe(-1);
      const a = m.rmsNormBackward(dy, x, w, { ...opts, rstd });
      const b = layer.backward(dy, x, { rstd: layer.rstd });
      expect(firstBitDiff(b.dx, a.dx)).toBe(-1);
      expect(firstBitDiff(b.dweight!, a.dweight!)).toBe(-1);
      expect(() => m.createLayer(w, { partial: 2 })).toThrow(RangeError);
      expect(() => m.createLayer(null, { dim, offset: 1 })).toThrow(/needs a weight/);
    } finally {
      layer.free();
    }
  });
});
