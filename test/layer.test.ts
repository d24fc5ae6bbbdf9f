/**
 * createRmsNorm: a layer bound to its weight that owns and reuses its outputs. Same bits as the
 * one-off calls; nothing allocated per call (same arrays back, no wasm growth); the weight's
 * view survives memory growth; bad input is refused before anything is written.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { allocF32, createRmsNorm, float32ToHalf, init, instance, rmsNorm, rmsNormBackward, type CastingMode, type HalfDtype } from '../dist/index.js';
import { firstBitDiff, randn, sameBits, testRows, testWeight } from '../shared/reference.js';
import { thrown } from './thrown.js';

beforeAll(async () => {
  await init();
});

describe('createRmsNorm', () => {
  const dim = 96;
  const w = testWeight(dim, 1);

  it('forward and backward have the bits of rmsNorm / rmsNormBackward, for any row count', () => {
    const layer = createRmsNorm(w, { eps: 1e-5 });
    for (const rows of [1, 7, 300, 7]) {
      const x = testRows(rows, dim, rows);
      const dy = randn(rows * dim, rows + 1);
      const rstd = new Float32Array(rows);
      const want = rmsNorm(x, w, { eps: 1e-5, rstd });
      const y = layer.forward(x);
      expect(y.length).toBe(x.length);
      expect(firstBitDiff(y, want)).toBe(-1);
      expect(firstBitDiff(layer.rstd, rstd)).toBe(-1);
      const wantB = rmsNormBackward(dy, x, w, { eps: 1e-5 });
      for (const opts of [undefined, { rstd: layer.rstd }]) {
        const b = layer.backward(dy, x, opts);
        expect(firstBitDiff(b.dx, wantB.dx)).toBe(-1);
        expect(firstBitDiff(b.dweight!, wantB.dweight!)).toBe(-1);
      }
    }
    layer.free();
  });

  it('without a weight (dim given): dweight is null', () => {
    const layer = createRmsNorm(null, { dim });
    const x = testRows(5, dim, 3);
    expect(firstBitDiff(layer.forward(x), rmsNorm(x, null, { dim }))).toBe(-1);
    const b = layer.backward(x, x);
    expect(b.dweight).toBeNull();
    expect(firstBitDiff(b.dx, rmsNormBackward(x, x, null, { dim }).dx)).toBe(-1);
  });

  it('reuses its outputs: the same arrays come back, and wasm memory does not grow over 1000 calls', () => {
    const layer = createRmsNorm(w);
    const x = testRows(32, dim, 4);
    const y0 = layer.forward(x);
    const b0 = layer.backward(x, x);
    const mem = instance()!.wasm.memory;
    const before = mem.buffer.byteLength;
    for (let i = 0; i < 1000; i++) {
      expect(layer.forward(x) === y0).toBe(true);
      const b = layer.backward(x, x, { rstd: layer.rstd });
      expect(b.dx === b0.dx && b.dweight === b0.dweight).toBe(true);
    }
    expect(mem.buffer.byteLength).toBe(before);
    layer.free();
  });

  it("its own results passed back in (y as x, dx as dy, a view of them) give the one-off calls' bits", () => {
    const layer = createRmsNorm(w);
    for (const rows of [1, 9]) {
      const x = testRows(rows, dim, 40 + rows);
      const y1 = layer.forward(x).slice();
      // y fed back as x: the output array is the input (an exact alias), then a part of it.
      const y = layer.forward(x);
      expect(firstBitDiff(layer.forward(y), rmsNorm(y1, w))).toBe(-1);
      layer.forward(x);
      const half = layer.forward(x).subarray(0, dim);
      expect(firstBitDiff(layer.forward(half), rmsNorm(y1.subarray(0, dim), w))).toBe(-1);
    }
    // A part of the layer's output, shifted by a row, on more rows than one window segment holds
    // (streamed in several segments, the output written while later input rows are still unread).
    const rows = 2000;
    const big = testRows(rows, dim, 77);
    const y0 = layer.forward(big).slice();
    const shifted = layer.forward(big).subarray(dim);
    expect(firstBitDiff(layer.forward(shifted), rmsNorm(y0.subarray(dim), w))).toBe(-1);
    for (const rows of [1, 9]) {
      const x = testRows(rows, dim, 40 + rows);
      const y1 = layer.forward(x).slice();
      // dx fed back as dy, and the layer's rstd and y as inputs of the backward.
      const dy = randn(rows * dim, rows);
      const dx1 = layer.backward(dy, x).dx.slice();
      const want = rmsNormBackward(dx1, x, w);
      const dx = layer.backward(dy, x).dx;
      const b = layer.backward(dx, x);
      expect(firstBitDiff(b.dx, want.dx)).toBe(-1);
      expect(firstBitDiff(b.dweight!, want.dweight!)).toBe(-1);
      const yIn = layer.forward(x);
      const wantY = rmsNormBackward(dy, y1, w);
      expect(firstBitDiff(layer.backward(dy, yIn).dx, wantY.dx)).toBe(-1);
    }
    layer.free();
  });

  it('the weight is copied at creation; setWeight replaces it', () => {
    const w2 = w.slice();
    const layer = createRmsNorm(w2);
    const x = testRows(3, dim, 5);
    w2.fill(7); // the caller's array changing does not change the layer
    expect(firstBitDiff(layer.forward(x), rmsNorm(x, w))).toBe(-1);
    layer.setWeight(w2);
    expect(firstBitDiff(layer.forward(x), rmsNorm(x, w2))).toBe(-1);
  });

  it('keeps working after the memory grows (its weight view is re-made)', () => {
    const layer = createRmsNorm(w);
    const x = testRows(4, dim, 6);
    layer.forward(x);
    const big = allocF32(16 << 20); // 64 MiB: grows the memory, detaching the simd build's views
    expect(firstBitDiff(layer.forward(x), rmsNorm(x, w))).toBe(-1);
    big.free();
    layer.free();
  });

  it('bad arguments throw TypeError / RangeError naming them; a freed layer throws', () => {
    expect(thrown(() => createRmsNorm(null))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/options.dim is required/) });
    expect(thrown(() => createRmsNorm(w, { dim: 5 }))).toMatchObject({ name: 'RangeError' });
    expect(thrown(() => createRmsNorm(w, { epsilon: 1 } as never))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/unknown option "epsilon"/) });
    expect(thrown(() => createRmsNorm(w, { eps: -1 }))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/eps/) });
    const layer = createRmsNorm(w);
    expect(thrown(() => layer.forward([1, 2] as never))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/layer.forward: x must be a Float32Array/) });
    expect(thrown(() => layer.forward(new Float32Array(dim + 1)))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/multiple of dim \(96\)/) });
    const x = testRows(2, dim, 7);
    expect(thrown(() => layer.backward(new Float32Array(dim), x))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/dy.length/) });
    expect(thrown(() => layer.backward(x, x, { rstd: new Float32Array(3) }))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/options.rstd.length must be 2/) });
    expect(thrown(() => layer.setWeight(new Float32Array(3)))).toMatchObject({ name: 'RangeError', message: 'layer.setWeight: weight.length must be 96 (dim), got 3' });
    expect(thrown(() => layer.setWeight(new Uint16Array(dim) as never))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/^layer.setWeight: weight is a Uint16Array.* but the layer's weightDtype is 'float32'/) });
    // nothing was written, and the layer still works
    expect(firstBitDiff(layer.forward(x), rmsNorm(x, w))).toBe(-1);
    layer.free();
    const freed = { name: 'TypeError', message: expect.stringMatching(/this layer was freed/) };
    expect(thrown(() => layer.forward(x))).toMatchObject(freed);
    expect(thrown(() => layer.backward(x, x))).toMatchObject(freed);
    expect(thrown(() => layer.setWeight(w))).toMatchObject(freed);
    expect(thrown(() => layer.rstd)).toMatchObject(freed);
    layer.free(); // a second free is harmless
    const none = createRmsNorm(null, { dim });
    none.free();
    expect(thrown(() => none.setWeight(w))).toMatchObject(freed);
  });
});

describe('the layer in a decoder block: out, the fused residual add, dresidual', () => {
  const dim = 64;
  const w = testWeight(dim, 3);

  it.each(['float32', 'bfloat16'] as const)('%s: forward(x, { residual }) and backward(dy, h, { rstd, dresidual }) have the one-off calls\' bits', (dtype) => {
    const half = dtype !== 'float32';
    const cast = (a: Float32Array) => (half ? float32ToHalf(a, dtype) : a);
    const layer = createRmsNorm(w, { dtype, eps: 1e-5 });
    for (const rows of [1, 5, 40]) {
      const x = cast(testRows(rows, dim, 10 + rows));
      const r0 = cast(testRows(rows, dim, 20 + rows));
      const dy = cast(randn(rows * dim, 30 + rows));
      const dres = cast(randn(rows * dim, 40 + rows));
      const opt = { dtype, eps: 1e-5 } as const;
      const wantH = r0.slice();
      const wantRstd = new Float32Array(rows);
      const wantY = rmsNorm(x, w, { ...opt, residual: wantH, rstd: wantRstd } as never);
      const residual = r0.slice();
      const y = layer.forward(x, { residual } as never);
      expect(sameBits(y, wantY), `y, ${rows} rows`).toBe(true);
      expect(sameBits(residual, wantH), 'h written into the residual').toBe(true);
      expect(sameBits(layer.rstd, wantRstd)).toBe(true);
      const h2 = new (half ? Uint16Array : Float32Array)(rows * dim);
      const out = new (half ? Uint16Array : Float32Array)(rows * dim);
      expect(layer.forward(x, { residual: r0, residualOut: h2, out } as never)).toBe(out);
      expect(sameBits(out, wantY) && sameBits(h2, wantH), 'residualOut and out').toBe(true);
      const want = rmsNormBackward(dy, wantH, w, { ...opt, rstd: wantRstd, dresidual: dres } as never);
      const b = layer.backward(dy, wantH, { rstd: layer.rstd, dresidual: dres } as never);
      expect(sameBits(b.dx, want.dx) && sameBits(b.dweight!, want.dweight!), `backward, ${rows} rows`).toBe(true);
    }
    layer.free();
  });

  it("dresidual may be the layer's last dx (the gradient flowing down the residual stream)", () => {
    const rows = 8;
    const layer = createRmsNorm(w);
    const x = testRows(rows, dim, 5);
    const dy = randn(rows * dim, 6);
    const first = layer.backward(dy, x).dx;
    const copy = first.slice();
    const want = rmsNormBackward(dy, x, w, { dresidual: copy });
    expect(firstBitDiff(layer.backward(dy, x, { dresidual: first }).dx, want.dx)).toBe(-1);
    layer.free();
  });

  it('unknown options and bad arrays are refused on every method, before anything is written', () => {
    const layer = createRmsNorm(w);
    const x = testRows(2, dim, 7);
    const residual = testRows(2, dim, 8);
    const before = residual.slice();
    expect(String(thrown(() => layer.forward(x, { residul: residual } as never)))).toMatch(/^TypeError: layer\.forward: unknown option "residul" \(known: residual, out, residualOut, gate\)$/);
    expect(String(thrown(() => layer.forward(x, { residual: residual.subarray(1) })))).toMatch(/^RangeError: layer\.forward: options\.residual\.length must be 128/);
    expect(String(thrown(() => layer.forward(x, { residualOut: residual })))).toMatch(/^TypeError: layer\.forward: options\.residualOut was given without options\.residual/);
    expect(String(thrown(() => layer.forward(x, { residual, out: residual })))).toMatch(/^RangeError: layer\.forward: options\.out and options\.residual \(which receives x \+ residual\) must not overlap$/);
    expect(String(thrown(() => layer.backward(x, x, { dresidul: x } as never)))).toMatch(/^TypeError: layer\.backward: unknown option "dresidul" \(known: rstd, dresidual, gate\)$/);
    expect(String(thrown(() => layer.backward(x, x, { dresidual: new Float32Array(3) })))).toMatch(/^RangeError: layer\.backward: options\.dresidual\.length must be 128/);
    expect(sameBits(residual, before)).toBe(true);
    layer.free();
  });
});

describe('createRmsNorm with half-precision activations', () => {
  const dim = 200;
  const w32 = testWeight(dim, 11);
  const cases: [HalfDtype, 'float32' | 'same', CastingMode][] = [
    ['bfloat16', 'float32', 'none'],
    ['bfloat16', 'same', 'none'],
    ['bfloat16', 'same', 'llama'],
    ['float16', 'float32', 'gemma'],
    ['float16', 'same', 'none'],
    ['float16', 'same', 'llama'],
  ];

  it.each(cases)("%s activations, %s weight, castingMode '%s': the bits of rmsNorm / rmsNormBackward, outputs reused", (dtype, wd, castingMode) => {
    const weight = wd === 'float32' ? w32 : float32ToHalf(w32, dtype);
    const opts = { dtype, weightDtype: wd === 'float32' ? ('float32' as const) : dtype, castingMode, eps: 1e-5, offset: 0.5 };
    const layer = createRmsNorm(weight, opts);
    expect([layer.dtype, layer.weightDtype]).toEqual([dtype, opts.weightDtype]);
    for (const rows of [1, 9, 300, 9]) {
      const x = float32ToHalf(testRows(rows, dim, rows), dtype);
      const dy = float32ToHalf(randn(rows * dim, rows + 3), dtype);
      const rstd = new Float32Array(rows);
      const want = rmsNorm(x, weight, { ...opts, rstd });
      const y = layer.forward(x);
      expect(y).toBeInstanceOf(Uint16Array);
      expect(sameBits(y, want)).toBe(true);
      expect(firstBitDiff(layer.rstd, rstd)).toBe(-1);
      const wantB = rmsNormBackward(dy, x, weight, opts);
      for (const o of [undefined, { rstd: layer.rstd }]) {
        const b = layer.backward(dy, x, o);
        expect(sameBits(b.dx, wantB.dx)).toBe(true);
        if (wd === 'float32') expect(firstBitDiff(b.dweight as Float32Array, wantB.dweight as Float32Array)).toBe(-1);
        else expect(sameBits(b.dweight!, wantB.dweight!)).toBe(true);
      }
      // the same arrays again at the same row count
      expect(layer.forward(x) === y).toBe(true);
      const b1 = layer.backward(dy, x);
      const b2 = layer.backward(dy, x);
      expect(b1.dx === b2.dx && b1.dweight === b2.dweight).toBe(true);
    }
    layer.free();
  });

  it('bad half arguments: TypeError / RangeError naming them, nothing written', () => {
    const bf = float32ToHalf(w32, 'bfloat16');
    expect(thrown(() => createRmsNorm(w32, { dtype: 'float8' as never }))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/options.dtype/) });
    expect(thrown(() => createRmsNorm(bf))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/weight is a Uint16Array: say what it holds with options.weightDtype/) });
    const layer = createRmsNorm(bf, { dtype: 'bfloat16' });
    expect(layer.weightDtype).toBe('bfloat16');
    const x = float32ToHalf(testRows(2, dim, 1), 'bfloat16');
    const y = layer.forward(x).slice();
    expect(thrown(() => layer.forward(testRows(2, dim, 1) as never))).toMatchObject({
      name: 'TypeError',
      message: expect.stringMatching(/^layer.forward: x is a Float32Array.* but the layer's dtype is 'bfloat16'/),
    });
    expect(thrown(() => layer.backward(x, new Uint16Array(dim)))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/dy.length/) });
    expect(thrown(() => layer.setWeight(w32 as never))).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/weightDtype is 'bfloat16'/) });
    expect(sameBits(layer.forward(x), y)).toBe(true);
    layer.setWeight(float32ToHalf(testWeight(dim, 12), 'bfloat16'));
    expect(sameBits(layer.forward(x), rmsNorm(x, float32ToHalf(testWeight(dim, 12), 'bfloat16'), { dtype: 'bfloat16' }))).toBe(true);
    layer.free();
  });
});
