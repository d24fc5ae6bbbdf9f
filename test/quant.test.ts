// The quantized output (options.outDtype 'int8' / 'float8_e4m3', per-row scales or a static
// quantScale): every step of the quantization against shared/reference.js's refQuantize (which
// finds float8 codes by searching the format's values, not as the kernel does) applied to the
// output of the same call without outDtype (float32, half, gated, with a residual), to the bit; the result against the float64 reference within
// half a quantization step; every float8 code and every midpoint between codes through the
// kernel; the same bits on every build, in a layer and on a pool of 2 threads (sharded, and on
// SharedArrayBuffers); against golden vectors from real PyTorch 2.15 on the CPU
// (test/fixtures/quant/golden.json, made by scripts/make-quant-golden.py); and the argument
// errors, after which the module keeps working.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, loadRmsNorm, relaxedSimdSupported, RmsNorm, type Build, type QuantDtype, type RmsNormPool, type RmsNormQuantOptions } from '../dist/index.js';
import { loadWasm } from '../dist/glue/load.js';
import { e4m3ToNumber, halfToF32, numberToE4m3, QMAX, randn, refForward, refQuantize, sameBits, type HalfDtype } from '../shared/reference.js';

const BUILDS: Build[] = ['simd', 'simd-threads', 'scalar', ...(relaxedSimdSupported() ? (['simd-relaxed', 'simd-relaxed-threads'] as Build[]) : [])];
const DTYPES: QuantDtype[] = ['int8', 'float8_e4m3'];

let m: Record<string, RmsNorm>;
let pool: RmsNormPool;
beforeAll(async () => {
  m = Object.fromEntries(await Promise.all(BUILDS.map(async (b) => [b, await loadRmsNorm(b)] as const)));
  pool = await createPool({ threads: 2 });
});
afterAll(() => pool.destroy());

/** Rows with the edge cases in them: a zero row, one with a NaN, one with an infinity, tiny and huge magnitudes. */
function edgeRows(rows: number, dim: number, seed: number): Float32Array {
  const x = randn(rows * dim, seed);
  const row = (r: number) => x.subarray(r * dim, (r + 1) * dim);
  if (rows > 1) row(1).fill(0);
  if (rows > 2) row(2)[dim >> 1] = NaN;
  if (rows > 3) row(3)[0] = Infinity;
  if (rows > 4) row(4).forEach((v, i, a) => (a[i] = v * 1e-30));
  if (rows > 5) row(5).forEach((v, i, a) => (a[i] = v * 1e30)); // the sum of squares overflows float32: the f64 path
  if (rows > 6) row(6).forEach((v, i, a) => (a[i] = i % 3 === 0 ? v * 1e4 : v * 1e-4));
  return x;
}

const SHAPES: [number, number][] = [[1, 1], [7, 3], [9, 17], [8, 896], [3, 4099], [2, 9000]];

describe.each(BUILDS)('the %s build', (build) => {
  it.each(DTYPES)('%s per row and with a static scale: the float32 output quantized, to the bit', (dt) => {
    for (const [rows, dim] of SHAPES) {
      const x = edgeRows(rows, dim, rows * 1000 + dim);
      const w = randn(dim, dim + 7);
      for (const opts of [{}, { offset: 1, eps: 1e-5 }, { partial: 0.5 }]) {
        const y = m[build]!.rmsNorm(x, w, opts);
        const rowScales = new Float32Array(rows);
        const q = m[build]!.rmsNorm(x, w, { ...opts, outDtype: dt, rowScales });
        const ref = refQuantize(y, rows, dim, dt);
        expect(q).toBeInstanceOf(dt === 'int8' ? Int8Array : Uint8Array);
        expect(sameBits(rowScales, ref.scales), `${dt} ${rows}x${dim} scales`).toBe(true);
        expect(Array.from(q), `${dt} ${rows}x${dim}`).toEqual(Array.from(ref.q));
        for (const quantScale of [0.25, 3e-3]) {
          const s = m[build]!.rmsNorm(x, w, { ...opts, outDtype: dt, quantScale });
          expect(Array.from(s), `${dt} ${rows}x${dim} static ${quantScale}`).toEqual(Array.from(refQuantize(y, rows, dim, dt, quantScale).q));
        }
      }
    }
  });

  it.each(['float16', 'bfloat16'] as HalfDtype[])('%s activations, also gated and llama: the half output quantized, to the bit', (dtype) => {
    const [rows, dim] = [7, 300];
    const rn = m[build]!;
    const x = rn.float32ToHalf(edgeRows(rows, dim, 11), dtype);
    const z = rn.float32ToHalf(randn(rows * dim, 12), dtype);
    const w = randn(dim, 13);
    for (const opts of [{ dtype }, { dtype, castingMode: 'llama' as const }, { dtype, gate: z }, { dtype, gate: z, gateMode: 'before' as const }]) {
      const y = Float32Array.from(rn.rmsNorm(x, w, opts) as Uint16Array, (b) => halfToF32(b, dtype));
      for (const dt of DTYPES) {
        const rowScales = new Float32Array(rows);
        const q = rn.rmsNorm(x, w, { ...opts, outDtype: dt, rowScales });
        const ref = refQuantize(y, rows, dim, dt);
        expect(sameBits(rowScales, ref.scales), `${dtype} ${dt} ${JSON.stringify(Object.keys(opts))}`).toBe(true);
        expect(Array.from(q)).toEqual(Array.from(ref.q));
      }
    }
  });

  it('the fused residual add with a quantized output: h as without it, y quantized', () => {
    const [rows, dim] = [5, 300];
    const x = randn(rows * dim, 1);
    const res = randn(rows * dim, 2);
    const w = randn(dim, 3);
    const h1 = res.slice();
    const y = m[build]!.rmsNorm(x, w, { residual: h1 });
    const h2 = res.slice();
    const rowScales = new Float32Array(rows);
    const q = m[build]!.rmsNorm(x, w, { residual: h2, outDtype: 'int8', rowScales });
    expect(sameBits(h1, h2)).toBe(true);
    expect(Array.from(q)).toEqual(Array.from(refQuantize(y, rows, dim, 'int8').q));
  });

  it('every float8 code and every midpoint between neighbours, through the kernel (y = weight: x of ones, eps 0)', () => {
    // Each code's value, the midpoints between neighbours (ties: to the even code) and points
    // just beside them, beyond 448 (clamped), NaN.
    const vals: number[] = [];
    for (let b = 0; b < 127; b++) {
      const v = e4m3ToNumber(b);
      const next = e4m3ToNumber(b + 1);
      vals.push(v, -v);
      if (b < 126) {
        const mid = (v + next) / 2;
        vals.push(mid, -mid, Math.fround(mid * (1 + 2 ** -20)), Math.fround(mid * (1 - 2 ** -20)));
      }
    }
    vals.push(449, -460, 1e30, -1e30, 2 ** -12, -(2 ** -11), NaN);
    const dim = vals.length;
    const w = Float32Array.from(vals);
    const x = new Float32Array(dim).fill(1);
    const q = m[build]!.rmsNorm(x, w, { eps: 0, outDtype: 'float8_e4m3', quantScale: 1 }) as Uint8Array;
    const expected = vals.map((v) => numberToE4m3(Math.max(-448, Math.min(448, Math.fround(v)))));
    expect(Array.from(q)).toEqual(expected);
    // And int8: the same values scaled into its range, ties to even.
    const wi = Float32Array.from([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 127.5, -200, 3.4999998, NaN, -0]);
    const qi = m[build]!.rmsNorm(new Float32Array(wi.length).fill(1), wi, { eps: 0, outDtype: 'int8', quantScale: 1 });
    expect(Array.from(qi)).toEqual([0, 2, 2, 0, -2, 126, 127, -127, 3, 0, 0]);
  });
});

describe('edges the review found', () => {
  it('a row whose scale would be below 2^-126 gets 2^-126: finite reciprocal, codes by size, zeros stay zeros', () => {
    const x = new Float32Array(4).fill(1);
    const w = Float32Array.from([1e-38, 1e-39, 5e-39, 0]); // y = w (x of ones, eps 0)
    for (const dt of DTYPES) {
      const rowScales = new Float32Array(1);
      const q = m.simd!.rmsNorm(x, w, { eps: 0, outDtype: dt, rowScales });
      expect(rowScales[0]).toBe(2 ** -126);
      const ref = refQuantize(m.simd!.rmsNorm(x, w, { eps: 0 }), 1, 4, dt);
      expect(Array.from(q)).toEqual(Array.from(ref.q));
      // 1e-38 / 2^-126 = 0.85, 1e-39 → 0.085: int8 rounds those to 1 and 0; float8 keeps them apart.
      if (dt === 'int8') expect(Array.from(q)).toEqual([1, 0, 0, 0]);
      else expect(q[3]).toBe(0); // not NaN (0 · inf)
    }
  });

  it('a long row whose scratch grows the memory mid-call: every segment writes its own rows (out in wasm memory)', async () => {
    // A fresh instance (not loadRmsNorm's shared one), so that the call's own scratch is what
    // grows the memory.
    const rn = new RmsNorm(await loadWasm('simd'));
    const [d, r] = [100000, 8];
    const x = new Float32Array(d * r).map((_, i) => Math.cos(i));
    const w = new Float32Array(d).fill(1.25);
    const ref = refQuantize(m.simd!.rmsNorm(x, w), r, d, 'int8');
    const b = rn.allocF32(d * r / 4);
    const v = b.view();
    const before = v.buffer.byteLength;
    const rowScales = new Float32Array(r);
    rn.rmsNorm(x, w, { outDtype: 'int8', out: new Int8Array(v.buffer, v.byteOffset, d * r), rowScales });
    const after = b.view();
    const q = new Int8Array(after.buffer, after.byteOffset, d * r);
    let wrong = 0;
    for (let i = 0; i < q.length; i++) if (q[i] !== ref.q[i]) wrong++;
    expect(wrong, 'codes that differ from the reference').toBe(0);
    expect(sameBits(rowScales, ref.scales)).toBe(true);
    expect(after.buffer.byteLength, 'the memory grew during the call').toBeGreaterThan(before);
    b.free();
  });

  it('a quantized layer given a Float16Array returns its Int8Array', () => {
    const saved = (globalThis as { Float16Array?: unknown }).Float16Array;
    // Node 20 has no Float16Array: a stand-in with its tag is enough for the kind check.
    class F16 extends Uint16Array {
      get [Symbol.toStringTag](): 'Uint16Array' {
        return 'Float16Array' as 'Uint16Array'; // the tag is all the kind check reads
      }
    }
    (globalThis as { Float16Array?: unknown }).Float16Array = saved ?? F16;
    try {
      const Ctor = (globalThis as unknown as { Float16Array: new (n: number) => Uint16Array }).Float16Array;
      const layer = m.simd!.createLayer(null, { dim: 8, dtype: 'float16', outDtype: 'int8' });
      const xs = new Ctor(32);
      const q = layer.forward(xs as never);
      expect(q).toBeInstanceOf(Int8Array);
      expect(q.length).toBe(32);
      layer.free();
    } finally {
      (globalThis as { Float16Array?: unknown }).Float16Array = saved;
    }
  });
});

describe('against the float64 reference', () => {
  it.each(DTYPES)('%s: each dequantized value within half a step (plus float32 error) of the exact y', (dt) => {
    for (const [rows, dim] of [[16, 896], [4, 4096], [3, 33]] as [number, number][]) {
      const x = randn(rows * dim, dim);
      const w = randn(dim, dim + 1);
      const rowScales = new Float32Array(rows);
      const q = m.simd!.rmsNorm(x, w, { outDtype: dt, rowScales });
      const { y } = refForward(x, w, dim, 1e-6);
      for (let r = 0; r < rows; r++) {
        let max = 0;
        for (let i = 0; i < dim; i++) max = Math.max(max, Math.abs(y[r * dim + i]!));
        // The scale: max|y| / qmax, float32's error on y and one rounding.
        expect(Math.abs(rowScales[r]! - max / QMAX[dt]) / (max / QMAX[dt])).toBeLessThan(4e-6);
        for (let i = 0; i < dim; i++) {
          const yi = y[r * dim + i]!;
          const v = dt === 'int8' ? q[r * dim + i]! * rowScales[r]! : e4m3ToNumber(q[r * dim + i]!) * rowScales[r]!;
          // int8: half a step is half the scale; float8: half its relative spacing (2^-4) of the
          // value, or half its smallest subnormal step.
          const step = dt === 'int8' ? rowScales[r]! : Math.max(Math.abs(yi) * 2 ** -3, 2 ** -9 * rowScales[r]!);
          expect(Math.abs(v - yi), `${dt} row ${r} element ${i}`).toBeLessThanOrEqual(step * 0.5 * (1 + 1e-5) + 1e-6 * max);
        }
      }
    }
  });
});

describe('the layer and the pool give the same bits', () => {
  it.each(DTYPES)('%s: sync, layer, pool (sharded; plain and SharedArrayBuffer arrays)', async (dt) => {
    for (const [rows, dim] of [[512, 1024], [2048, 1000], [3, 5]] as [number, number][]) {
      const x = edgeRows(rows, dim, 5);
      const w = randn(dim, 6);
      const s1 = new Float32Array(rows);
      const q1 = m.simd!.rmsNorm(x, w, { outDtype: dt, rowScales: s1 });
      const layer = m.simd!.createLayer(w, { outDtype: dt });
      const q2 = layer.forward(x);
      expect(Array.from(q2)).toEqual(Array.from(q1));
      expect(sameBits(layer.rowScales, s1)).toBe(true);
      for (let rep = 0; rep < 3; rep++) {
        const s3 = new Float32Array(rows);
        const q3 = await pool.rmsNorm(x, w, { outDtype: dt, rowScales: s3 });
        expect(q3).toBeInstanceOf(dt === 'int8' ? Int8Array : Uint8Array);
        expect(Array.from(q3), `pool ${rows}x${dim}`).toEqual(Array.from(q1));
        expect(sameBits(s3, s1)).toBe(true);
        const xs = new Float32Array(new SharedArrayBuffer(4 * x.length));
        xs.set(x);
        const s4 = new Float32Array(new SharedArrayBuffer(4 * rows));
        const q4 = await pool.rmsNorm(xs, w, { outDtype: dt, rowScales: s4 });
        expect(q4.buffer).toBeInstanceOf(SharedArrayBuffer);
        expect(Array.from(q4)).toEqual(Array.from(q1));
        expect(sameBits(s4, s1)).toBe(true);
        const st = await pool.rmsNorm(x, w, { outDtype: dt, quantScale: 0.01 });
        expect(Array.from(st)).toEqual(Array.from(m.simd!.rmsNorm(x, w, { outDtype: dt, quantScale: 0.01 })));
      }
      layer.free();
    }
  });

  it('a given out: written in place, also a view of wasm memory', () => {
    const [rows, dim] = [4, 64];
    const x = randn(rows * dim, 9);
    const w = randn(dim, 10);
    const s = new Float32Array(rows);
    const ref = m.simd!.rmsNorm(x, w, { outDtype: 'int8', rowScales: s });
    const out = new Int8Array(rows * dim);
    expect(m.simd!.rmsNorm(x, w, { outDtype: 'int8', rowScales: s, out })).toBe(out);
    expect(Array.from(out)).toEqual(Array.from(ref));
    // An Int8Array over wasm memory: the kernel writes it where it is.
    const buf = m.simd!.allocF32(rows * dim);
    const view = new Int8Array(buf.view().buffer, buf.view().byteOffset, rows * dim);
    m.simd!.rmsNorm(x, w, { outDtype: 'int8', rowScales: s, out: view });
    expect(Array.from(view)).toEqual(Array.from(ref));
    buf.free();
  });
});

interface Golden {
  name: string;
  dtype: 'float32' | HalfDtype;
  outDtype: QuantDtype;
  quantScale: number | null;
  rows: number;
  dim: number;
  eps: number;
  x: string;
  weight: string;
  y: string;
  q: string;
  scales?: string;
}
const golden = JSON.parse(readFileSync(new URL('./fixtures/quant/golden.json', import.meta.url), 'utf8')) as { torch: string; cases: Golden[] };
const raw = (s: string) => {
  const b = Buffer.from(s, 'base64');
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
};
/** Steps between two codes in value order: int8 as numbers, float8 by sign and magnitude bits. */
const codeSteps = (dt: QuantDtype, a: number, b: number) => {
  if (dt === 'int8') return Math.abs(a - b);
  const ord = (c: number) => (c & 0x80 ? -(c & 0x7f) : c);
  return Math.abs(ord(a) - ord(b));
};

describe('against PyTorch 2.15 (test/fixtures/quant/golden.json)', () => {
  it('the golden file holds every dtype, output and scale kind', () => {
    expect(golden.torch).toMatch(/^2\.15\.0/);
    expect(new Set(golden.cases.map((c) => `${c.dtype}/${c.outDtype}/${c.quantScale === null ? 'rows' : 'static'}`)).size).toBe(12);
  });

  it.each(golden.cases.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    const half = c.dtype !== 'float32';
    const x = half ? new Uint16Array(raw(c.x)) : new Float32Array(raw(c.x));
    const w = new Float32Array(raw(c.weight));
    const yT = half ? Float32Array.from(new Uint16Array(raw(c.y)), (b) => halfToF32(b, c.dtype as HalfDtype)) : new Float32Array(raw(c.y));
    const qT = c.outDtype === 'int8' ? new Int8Array(raw(c.q)) : new Uint8Array(raw(c.q));
    const sT = c.scales ? new Float32Array(raw(c.scales)) : null;
    // 1. The library's documented quantization is PyTorch's: applied to torch's own y, the same bits.
    const fromTorch = refQuantize(yT, c.rows, c.dim, c.outDtype, c.quantScale ?? 0);
    expect(Array.from(fromTorch.q)).toEqual(Array.from(qT));
    if (sT) expect(sameBits(fromTorch.scales, sT)).toBe(true);
    // 2. Ours, on every build and the pool: the library sums squares in another order than torch,
    // so y may differ by float32 ulps (or one half ulp) and a code on a rounding boundary by one
    // step; scales within 4 float32 ulps (plus y's own difference).
    const base = { dtype: c.dtype, eps: c.eps, outDtype: c.outDtype };
    const results: (Int8Array | Uint8Array)[] = [];
    const calls = [
      (o: RmsNormQuantOptions) => m.simd!.rmsNorm(x, w, o),
      (o: RmsNormQuantOptions) => m.scalar!.rmsNorm(x, w, o),
      (o: RmsNormQuantOptions) => pool.rmsNorm(x, w, o),
    ];
    for (const call of calls) {
      const rowScales = new Float32Array(c.rows);
      const q = await call(sT ? { ...base, rowScales } : { ...base, quantScale: c.quantScale! });
      results.push(q);
      let differ = 0;
      for (let i = 0; i < q.length; i++) {
        const d = codeSteps(c.outDtype, q[i]!, qT[i]!);
        expect(d, `${c.name} element ${i}`).toBeLessThanOrEqual(1);
        if (d) differ++;
      }
      expect(differ / q.length, c.name).toBeLessThanOrEqual(0.02);
      if (sT) for (let r = 0; r < c.rows; r++) expect(Math.abs(rowScales![r]! - sT[r]!), `${c.name} scale ${r}`).toBeLessThanOrEqual(sT[r]! * (half ? 2 ** -7 : 2 ** -21));
    }
    expect(Array.from(results[1]!)).toEqual(Array.from(results[0]!));
    expect(Array.from(results[2]!)).toEqual(Array.from(results[0]!));
  });
});

describe('argument errors', () => {
  const x = randn(8, 1);
  const w = randn(4, 2);
  const cases: [string, () => unknown, RegExp][] = [
    ['no rowScales', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8' } as never), /^TypeError: rmsNorm: options\.rowScales \(a Float32Array of 2 floats, one per row\) is required/],
    ['rowScales with quantScale', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8', quantScale: 1, rowScales: new Float32Array(2) } as never), /^TypeError: rmsNorm: options\.rowScales was given with options\.quantScale/],
    ['rowScales without outDtype', () => m.simd!.rmsNorm(x, w, { rowScales: new Float32Array(2) } as never), /^TypeError: rmsNorm: options\.rowScales was given without options\.outDtype/],
    ['rowScales too short', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8', rowScales: new Float32Array(1) }), /^RangeError: rmsNorm: options\.rowScales\.length must be 2/],
    ['unknown outDtype', () => m.simd!.rmsNorm(x, w, { outDtype: 'int4' } as never), /^TypeError: rmsNorm: options\.outDtype must be 'int8' or 'float8_e4m3'.*got string "int4"/],
    ['outDtype float16', () => m.simd!.rmsNorm(x, w, { outDtype: 'float16' } as never), /^TypeError: rmsNorm: options\.outDtype must be 'int8' or 'float8_e4m3'/],
    ['quantScale 0', () => m.simd!.rmsNorm(x, w, { outDtype: 'float8_e4m3', quantScale: 0 }), /^RangeError: rmsNorm: options\.quantScale must be > 0/],
    ['quantScale whose reciprocal overflows', () => m.simd!.rmsNorm(x, w, { outDtype: 'float8_e4m3', quantScale: 1e-40 }), /^RangeError: rmsNorm: options\.quantScale/],
    ['quantScale a string', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8', quantScale: '1' } as never), /^TypeError: rmsNorm: options\.quantScale must be a number/],
    ['quantScale without outDtype', () => m.simd!.rmsNorm(x, w, { quantScale: 1 } as never), /^TypeError: rmsNorm: options\.quantScale was given without options\.outDtype/],
    ['out a Float32Array', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8', quantScale: 1, out: new Float32Array(8) as never }), /^TypeError: rmsNorm: options\.out must be an Int8Array \(options\.outDtype is 'int8'\), got Float32Array\(8\)/],
    ['float8 out an Int8Array', () => m.simd!.rmsNorm(x, w, { outDtype: 'float8_e4m3', quantScale: 1, out: new Int8Array(8) as never }), /^TypeError: rmsNorm: options\.out must be a Uint8Array/],
    ['out too short', () => m.simd!.rmsNorm(x, w, { outDtype: 'int8', quantScale: 1, out: new Int8Array(7) }), /^RangeError: rmsNorm: options\.out\.length must be 8/],
    ['in the backward', () => m.simd!.rmsNormBackward(x, x, w, { outDtype: 'int8' } as never), /^TypeError: rmsNormBackward: unknown option "outDtype"/],
    ['a layer backward', () => m.simd!.createLayer(w, { outDtype: 'int8' }).backward(x, x), /^TypeError: layer\.backward: the layer was made with options\.outDtype, which only a forward has: it has no backward/],
    ['a layer bad quantScale', () => m.simd!.createLayer(w, { outDtype: 'int8', quantScale: -1 }), /^RangeError: createRmsNorm: options\.quantScale must be > 0/],
  ];
  it.each(cases)('%s', (_what, call, re) => {
    const out = new Int8Array(8).fill(5);
    let err: unknown;
    try {
      call();
    } catch (e) {
      err = e;
    }
    expect(String(err)).toMatch(re);
    expect(out.every((v) => v === 5)).toBe(true);
    // The module keeps working.
    const s = new Float32Array(2);
    expect(Array.from(m.simd!.rmsNorm(x, w, { outDtype: 'int8', rowScales: s }))).toEqual(Array.from(refQuantize(m.simd!.rmsNorm(x, w), 2, 4, 'int8').q));
  });

  it('the pool rejects as the sync call throws', async () => {
    await expect(pool.rmsNorm(x, w, { outDtype: 'int8' } as never)).rejects.toThrow(/options\.rowScales .* is required/);
  });
});
