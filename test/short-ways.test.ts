// The short ways of the one-off calls (ts/call/short-ways/): a float32 call whose options are only
// parameters and outputs skips the checks and the placement the general path does. They must
// give the general path's bits (the general path is forced by an option key they do not take,
// given as undefined, which the general path ignores), follow every change between calls — the
// weight's contents, an options object changed in place, another weight, another shape — and
// refuse nothing but with the general path's own error.
import { describe, expect, it, vi } from 'vitest';
import { createPool, loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { ShortBackward } from '../dist/call/short-ways/backward.js';
import { ShortForward } from '../dist/call/short-ways/forward.js';
import { firstBitDiff, testRows, testWeight } from '../shared/reference.js';
import { thrown } from './thrown.js';

const same = (a: Float32Array | null, b: Float32Array | null) => (a === null || b === null ? a === b : a.length === b.length && firstBitDiff(a, b) === -1);
/** An option the short ways do not take, given as undefined: the general path, same call. */
const GENERAL_F = { residual: undefined };
const GENERAL_B = { dresidual: undefined };

const SHAPES = [[1, 896], [1, 1], [3, 7], [8, 1024], [2, 4099], [17, 100], [1, 20000]] as const;
/** Parameter options the short ways take (with and without a weight). */
const PARAMS: readonly Record<string, unknown>[] = [{}, { eps: 1e-5 }, { offset: 1 }, { partial: 0.5 }, { castingMode: 'gemma' }, { dtype: 'float32', weightDtype: 'float32' }];

describe.each(['simd', 'scalar'] as const)('the %s build', (build) => {
  let m: RmsNorm;
  const view = (a: Float32Array) => {
    const b = m.allocF32(a.length);
    b.view().set(a);
    return b;
  };

  it('forward: the general path\'s bits and rstd, plain arrays, shared ones and views, with and without a weight', async () => {
    m = await loadRmsNorm(build);
    for (const [rows, dim] of SHAPES) {
      const x = testRows(rows, dim, rows * dim);
      const xs = new Float32Array(new SharedArrayBuffer(4 * x.length));
      xs.set(x);
      const bx = view(x);
      for (const w of [testWeight(dim, dim), null]) {
        for (const p of PARAMS) {
          if (w === null && p.offset !== undefined) continue; // an offset needs a weight
          const o = { ...p, dim };
          const ref = m.rmsNorm(x, w, { ...o, ...GENERAL_F });
          const rstdRef = new Float32Array(rows);
          m.rmsNorm(x, w, { ...o, rstd: rstdRef, ...GENERAL_F });
          for (const input of [x, xs, bx.view()]) {
            expect([rows, dim, p, same(m.rmsNorm(input, w, o), ref)]).toEqual([rows, dim, p, true]);
            const out = new Float32Array(rows * dim);
            const rstd = new Float32Array(rows);
            expect(m.rmsNorm(input, w, { ...o, out, rstd })).toBe(out);
            expect([same(out, ref), same(rstd, rstdRef)]).toEqual([true, true]);
          }
          // The options-free call (the weight says dim).
          if (w !== null && Object.keys(p).length === 0) expect(same(m.rmsNorm(x, w), ref)).toBe(true);
        }
      }
      bx.free();
    }
  });

  it('forward on views: in place (out is x), with rstd, out overlapping x partly (copied aside), after the memory grew', async () => {
    m = await loadRmsNorm(build);
    for (const [rows, dim] of [[1, 896], [3, 7], [8, 1024], [2, 4099]] as const) {
      const xs = testRows(rows, dim, rows * dim);
      const w0 = testWeight(dim, dim);
      const [bx, bw, by, br] = [view(xs), view(w0), view(new Float32Array(rows * dim)), view(new Float32Array(rows))];
      const [x, w, y, rstd] = [bx.view(), bw.view(), by.view(), br.view()];
      const ref = m.rmsNorm(xs, w0, { eps: 1e-5, ...GENERAL_F });
      expect(m.rmsNorm(x, w, { out: y, eps: 1e-5, rstd })).toBe(y);
      expect(same(y, ref)).toBe(true);
      m.rmsNorm(x, w, { out: x, eps: 1e-5 });
      expect(same(x, ref)).toBe(true);
      x.set(xs);
      if (rows > 1) {
        // out one row below x: an overlap the kernel must not see (x is read whole first).
        const b2 = view(new Float32Array((rows + 1) * dim));
        const all = b2.view();
        all.set(xs, dim);
        const got = m.rmsNorm(all.subarray(dim), bw.view(), { out: all.subarray(0, rows * dim), eps: 1e-5 });
        expect(same(got, ref)).toBe(true);
        b2.free();
      }
      for (const b of [bx, bw, by, br]) b.free();
    }
    const [bx, bw, by] = [view(testRows(2, 64, 1)), view(testWeight(64, 2)), view(new Float32Array(128))];
    const [x, w, y] = [bx.view(), bw.view(), by.view()];
    m.rmsNorm(x, w, { out: y });
    const big = m.allocF32(1 << 24); // grows the memory: non-shared views above are detached
    if (x.length === 0) expect(thrown(() => m.rmsNorm(x, w, { out: y }))).toEqual(thrown(() => m.rmsNorm(x, w, { out: y, ...GENERAL_F })));
    const ref = m.rmsNorm(testRows(2, 64, 1), testWeight(64, 2));
    expect(same(m.rmsNorm(bx.view(), bw.view(), { out: by.view() }), ref)).toBe(true);
    for (const b of [bx, bw, by, big]) b.free();
  });

  it('is taken by the calls it is for, and by no other', async () => {
    m = await loadRmsNorm(build);
    const f = vi.spyOn(ShortForward.prototype, 'run');
    const b = vi.spyOn(ShortBackward.prototype, 'run');
    try {
      const x = testRows(4, 896, 1);
      const w = testWeight(896, 2);
      const bx = view(x);
      const taken = (call: () => unknown, spy: typeof f | typeof b) => {
        call();
        return spy.mock.results.at(-1)!.value !== undefined;
      };
      const cases: [string, boolean, boolean][] = [
        ['rmsNorm(x, w)', taken(() => m.rmsNorm(x, w), f), true],
        ['rmsNorm(x, null, { dim, eps, out, rstd })', taken(() => m.rmsNorm(x, null, { dim: 896, eps: 1e-5, out: new Float32Array(x.length), rstd: new Float32Array(4) }), f), true],
        ['a view, out given', taken(() => m.rmsNorm(bx.view(), w, { out: bx.view() }), f), true],
        ['a residual', taken(() => m.rmsNorm(x, w, { residual: x.slice() }), f), false],
        ['float16 data', taken(() => m.rmsNorm(new Uint16Array(896), w, { dtype: 'float16' }), f), false],
        ['too big for the window', taken(() => m.rmsNorm(new Float32Array(64 * 896), w), f), false],
        ['rmsNormBackward(dy, x, w)', taken(() => m.rmsNormBackward(x, x, w), b), true],
        ['rmsNormBackward with rstd, dx, dweight', taken(() => m.rmsNormBackward(x, x, w, { rstd: new Float32Array(4), dx: new Float32Array(x.length), dweight: new Float32Array(896) }), b), true],
        ['rmsNormBackward of views, the outputs not given (placed by the general path)', taken(() => m.rmsNormBackward(bx.view(), bx.view(), w), b), false],
        ['rmsNormBackward of views, dx and dweight views', taken(() => {
          const [bdx, bdw, bw] = [m.allocF32(x.length), m.allocF32(896), view(w)];
          m.rmsNormBackward(bx.view(), bx.view(), bw.view(), { dx: bdx.view(), dweight: bdw.view() });
          for (const t of [bdx, bdw, bw]) t.free();
        }, b), true],
        ['rmsNormBackward with dresidual', taken(() => m.rmsNormBackward(x, x, w, { dresidual: x.slice() }), b), false],
      ];
      for (const [name, got, want] of cases) expect([name, got]).toEqual([name, want]);
      bx.free();
    } finally {
      f.mockRestore();
      b.mockRestore();
    }
  });

  it('follows every change between calls: the weight\'s contents, options changed in place, another weight or shape', async () => {
    m = await loadRmsNorm(build);
    const dim = 896;
    const x = testRows(2, dim, 5);
    const w = testWeight(dim, 6);
    const o: Record<string, unknown> = {};
    expect(same(m.rmsNorm(x, w, o), m.rmsNorm(x, w, { ...GENERAL_F }))).toBe(true);
    w[3] = 100; // the same weight array, new contents
    expect(same(m.rmsNorm(x, w, o), m.rmsNorm(x, w, { ...GENERAL_F }))).toBe(true);
    o.eps = 0.5; // the same options object, changed
    expect(same(m.rmsNorm(x, w, o), m.rmsNorm(x, w, { eps: 0.5, ...GENERAL_F }))).toBe(true);
    o.offset = 1;
    expect(same(m.rmsNorm(x, w, o), m.rmsNorm(x, w, { eps: 0.5, offset: 1, ...GENERAL_F }))).toBe(true);
    delete o.offset;
    o.partial = 0.25;
    expect(same(m.rmsNorm(x, w, o), m.rmsNorm(x, w, { eps: 0.5, partial: 0.25, ...GENERAL_F }))).toBe(true);
    const w2 = testWeight(448, 7); // another weight: another dim, so x has 4 rows
    expect(same(m.rmsNorm(x, w2, o), m.rmsNorm(x, w2, { eps: 0.5, partial: 0.25, ...GENERAL_F }))).toBe(true);
    o.dim = 448;
    expect(same(m.rmsNorm(x, null, o), m.rmsNorm(x, null, { eps: 0.5, partial: 0.25, dim: 448, ...GENERAL_F }))).toBe(true);
    expect(m.rmsNorm(x.subarray(0, 448), null, o).length).toBe(448);
  });

  it('a zero-copy call repeated on the same views runs on them after any other call between (the call block rewritten)', async () => {
    m = await loadRmsNorm(build);
    const dim = 896;
    const [bx, bw, by, bx2, by2, br] = [view(testRows(2, dim, 11)), view(testWeight(dim, 12)), m.allocF32(2 * dim), view(testRows(2, dim, 13)), m.allocF32(2 * dim), m.allocF32(2)];
    const [x, w, y, x2, y2, rs] = [bx.view(), bw.view(), by.view(), bx2.view(), by2.view(), br.view()];
    const o = { out: y };
    const expected = (xs: Float32Array, ws: Float32Array | null, extra: Record<string, unknown> = {}) => m.rmsNorm(xs.slice(), ws?.slice() ?? null, { ...extra, ...GENERAL_F });
    const between: (() => unknown)[] = [
      () => m.rmsNorm(x2, w, { out: y2 }), // another zero-copy call: other addresses
      () => m.rmsNorm(x2.slice(), w.slice()), // through the window
      () => m.rmsNorm(x2.slice(), w), // through the window, the same weight and parameters
      () => m.rmsNorm(x2, w, { out: y2, ...GENERAL_F }), // the general path
      () => m.rmsNormBackward(x2.slice(), x2.slice(), w.slice()),
      () => m.rmsNorm(x2, w, { out: y2, rstd: rs }), // with rstd
      () => m.rmsNorm(x, w, { out: y, eps: 0.5 }), // other parameters
    ];
    for (const f of between) {
      m.rmsNorm(x, w, o);
      y.fill(0);
      f();
      y.fill(0);
      m.rmsNorm(x, w, o);
      expect(same(y, expected(x, w))).toBe(true);
      x[5] = -x[5]!; // new contents, same views
      m.rmsNorm(x, w, o);
      expect(same(y, expected(x, w))).toBe(true);
    }
    for (const b of [bx, bw, by, bx2, by2, br]) b.free();
  });

  it('backward on views in place: the general path\'s bits; dx exactly dy or x; overlaps and a repeated call after other calls', async () => {
    m = await loadRmsNorm(build);
    for (const [rows, dim] of SHAPES) {
      const n = rows * dim;
      const [bdy, bx, bw, brs, bdx, bdw] = [view(testRows(rows, dim, 21)), view(testRows(rows, dim, 22)), view(testWeight(dim, 23)), m.allocF32(rows), m.allocF32(n), m.allocF32(dim)];
      const [dy, x, w, rs, dx, dw] = [bdy.view(), bx.view(), bw.view(), brs.view(), bdx.view(), bdw.view()];
      m.rmsNorm(x, w, { rstd: rs });
      for (const weight of [w, null]) {
        for (const saved of [undefined, rs]) {
          const ref = m.rmsNormBackward(dy.slice(), x.slice(), weight?.slice() ?? null, { dim, rstd: saved?.slice(), ...GENERAL_B });
          dw.fill(9); // overwritten, not added to
          const got = m.rmsNormBackward(dy, x, weight, { dim, rstd: saved, dx, dweight: weight === null ? undefined : dw });
          expect([rows, dim, got.dx === dx, same(dx, ref.dx), weight === null || same(dw, ref.dweight)]).toEqual([rows, dim, true, true, true]);
        }
      }
      const ref = m.rmsNormBackward(dy.slice(), x.slice(), w.slice(), { ...GENERAL_B });
      const keep = dy.slice();
      m.rmsNormBackward(dy, x, w, { dx: dy, dweight: dw }); // dx is dy
      expect(same(dy, ref.dx)).toBe(true);
      dy.set(keep);
      const xKeep = x.slice();
      m.rmsNormBackward(dy, x, w, { dx: x, dweight: dw }); // dx is x
      expect(same(x, ref.dx)).toBe(true);
      x.set(xKeep);
      // dx over part of x, dweight over x: placed by the general path, same bits.
      if (n > 1) {
        const big = m.allocF32(2 * n);
        const bv = big.view();
        bv.set(x);
        const part = bv.subarray(1, n + 1);
        m.rmsNormBackward(dy, bv.subarray(0, n), w, { dx: part, dweight: dw });
        expect(same(part, ref.dx)).toBe(true);
        big.free();
      }
      // The same call again after calls that rewrite the call block.
      for (const between of [() => m.rmsNormBackward(dy.slice(), x.slice(), w), () => m.rmsNorm(x, w, { out: dx }), () => m.rmsNormBackward(x, dy, w, { dx, dweight: dw })]) {
        m.rmsNormBackward(dy, x, w, { dx, dweight: dw });
        between();
        dx.fill(0);
        dw.fill(0);
        m.rmsNormBackward(dy, x, w, { dx, dweight: dw });
        expect([same(dx, ref.dx), same(dw, ref.dweight)]).toEqual([true, true]);
      }
      for (const t of [bdy, bx, bw, brs, bdx, bdw]) t.free();
    }
  });

  it('refuses what the general path refuses, with its error, and keeps working', async () => {
    m = await loadRmsNorm(build);
    const x = testRows(2, 64, 1);
    const w = testWeight(64, 2);
    const y = new Float32Array(128);
    const cases: [string, () => unknown, () => unknown][] = [];
    const both = (name: string, f: (extra: object) => unknown) => cases.push([name, () => f({}), () => f(GENERAL_F)]);
    both('out too short', (e) => m.rmsNorm(x, w, { out: y.subarray(1), ...e }));
    both('eps', (e) => m.rmsNorm(x, w, { eps: -1, ...e }));
    both('eps not a number', (e) => m.rmsNorm(x, w, { eps: '1e-5', ...e } as never));
    both('dim not dividing x', (e) => m.rmsNorm(x, w, { dim: 60, ...e }));
    both('dtype of another x', (e) => m.rmsNorm(x, w, { dtype: 'bfloat16', ...e }));
    both('castingMode', (e) => m.rmsNorm(x, w, { castingMode: 'fast', ...e } as never));
    both('gateMode without a gate', (e) => m.rmsNorm(x, w, { gateMode: 'before', ...e }));
    both('partial', (e) => m.rmsNorm(x, w, { partial: 0, ...e }));
    both('offset without weight', (e) => m.rmsNorm(x, null, { offset: 1, dim: 64, ...e }));
    both('no dim without weight', (e) => m.rmsNorm(x, null, { ...e }));
    both('rstd of the wrong length', (e) => m.rmsNorm(x, w, { rstd: new Float32Array(3), ...e }));
    both('out overlapping rstd', (e) => m.rmsNorm(x, w, { out: y, rstd: y.subarray(126), ...e }));
    both('weight too short', (e) => m.rmsNorm(x, w.subarray(0, 60), { ...e }));
    both('x a Float64Array', (e) => m.rmsNorm(new Float64Array(128) as never, w, { ...e }));
    const bx = testRows(2, 64, 1);
    const wx = testWeight(64, 2);
    cases.push(['backward dweight without a weight', () => m.rmsNormBackward(bx, bx, null, { dim: 64, dweight: new Float32Array(64) }), () => m.rmsNormBackward(bx, bx, null, { dim: 64, dweight: new Float32Array(64), ...GENERAL_B })]);
    cases.push(['backward dx overlapping dweight', () => m.rmsNormBackward(bx, bx, wx, { dx: y, dweight: y.subarray(64) }), () => m.rmsNormBackward(bx, bx, wx, { dx: y, dweight: y.subarray(64), ...GENERAL_B })]);
    cases.push(['backward dy and x of different lengths', () => m.rmsNormBackward(bx, bx.subarray(64), wx), () => m.rmsNormBackward(bx, bx.subarray(64), wx, { ...GENERAL_B })]);
    // An option only a forward has is unknown to the backward, on either way.
    cases.push(['backward given quantScale', () => m.rmsNormBackward(bx, bx, wx, { quantScale: 1 } as never), () => m.rmsNormBackward(bx, bx, wx, { quantScale: 1, ...GENERAL_B } as never)]);
    cases.push(['backward rstd of the wrong length', () => m.rmsNormBackward(bx, bx, wx, { rstd: new Float32Array(1) }), () => m.rmsNormBackward(bx, bx, wx, { rstd: new Float32Array(1), ...GENERAL_B })]);
    for (const [name, short, general] of cases) {
      y.fill(7);
      const e = thrown(short);
      expect([name, e]).toEqual([name, thrown(general)]);
      expect([name, e === undefined ? 'no error' : e.name]).toEqual([name, expect.stringMatching(/^(TypeError|RangeError)$/)]);
      expect([name, y.every((v) => v === 7)]).toEqual([name, true]); // nothing written
      // the short way still works after each refusal
      expect(same(m.rmsNorm(x, w), m.rmsNorm(x, w, { ...GENERAL_F }))).toBe(true);
    }
  });

  it('backward: the general path\'s bits, with saved rstd, given outputs, in place, with and without a weight', async () => {
    m = await loadRmsNorm(build);
    for (const [rows, dim] of SHAPES) {
      const x = testRows(rows, dim, rows + dim);
      const dy = testRows(rows, dim, rows * dim + 1);
      const rstd = new Float32Array(rows);
      for (const w of [testWeight(dim, dim), null]) {
        for (const p of PARAMS) {
          if (w === null && p.offset !== undefined) continue;
          const o = { ...p, dim };
          m.rmsNorm(x, w, { ...o, rstd });
          for (const saved of [undefined, rstd]) {
            const ref = m.rmsNormBackward(dy, x, w, { ...o, rstd: saved, ...GENERAL_B });
            const got = m.rmsNormBackward(dy, x, w, { ...o, rstd: saved });
            expect([rows, dim, p, same(got.dx, ref.dx), same(got.dweight, ref.dweight)]).toEqual([rows, dim, p, true, true]);
            const dx = new Float32Array(rows * dim);
            const dweight = w === null ? undefined : new Float32Array(dim).fill(9); // overwritten, not added to
            const given = m.rmsNormBackward(dy, x, w, { ...o, rstd: saved, dx, dweight });
            expect([given.dx === dx, given.dweight === (dweight ?? null), same(dx, ref.dx), same(given.dweight, ref.dweight)]).toEqual([true, true, true, true]);
            const dyCopy = dy.slice();
            m.rmsNormBackward(dyCopy, x, w, { ...o, rstd: saved, dx: dyCopy }); // in place
            expect(same(dyCopy, ref.dx)).toBe(true);
          }
        }
      }
      const w = testWeight(dim, dim);
      expect(same(m.rmsNormBackward(dy, x, w).dweight, m.rmsNormBackward(dy, x, w, { ...GENERAL_B }).dweight)).toBe(true);
      w[0] = -3; // new contents of the same weight
      expect(same(m.rmsNormBackward(dy, x, w).dx, m.rmsNormBackward(dy, x, w, { ...GENERAL_B }).dx)).toBe(true);
    }
  });
});

describe('the layer’s short way (plain float32 rows, no options)', () => {
  it('gives the one-off call’s bits and rstd, in the window and past it, and with its own output passed back', async () => {
    const m = await loadRmsNorm('simd');
    for (const [rows, dim] of [[1, 896], [5, 33], [40, 2048], [3, 40000]] as const) {
      const w = testWeight(dim, dim);
      const layer = m.createLayer(w);
      const x = testRows(rows, dim, rows + dim);
      const rstd = new Float32Array(rows);
      const ref = m.rmsNorm(x, w, { rstd, ...GENERAL_F });
      const y = layer.forward(x);
      expect([firstBitDiff(y, ref), firstBitDiff(layer.rstd, rstd)]).toEqual([-1, -1]);
      // its own output as the next input: read before the output is written
      const again = m.rmsNorm(ref, w);
      expect(firstBitDiff(layer.forward(y), again)).toBe(-1);
      layer.free();
    }
  });
});

describe('the pool’s inline calls take the short way', () => {
  it('the sync bits for plain, shared and pool-memory arrays; a shared input gets a shared result; other options go the general way', async () => {
    const m = await loadRmsNorm('simd');
    const pool = await createPool({ threads: 2 });
    try {
      for (const [rows, dim] of [[1, 896], [3, 7], [4, 2048]] as const) {
        const x = testRows(rows, dim, 3);
        const dy = testRows(rows, dim, 4);
        const w = testWeight(dim, 5);
        const ref = m.rmsNorm(x, w);
        const refB = m.rmsNormBackward(dy, x, w);
        const xs = new Float32Array(new SharedArrayBuffer(4 * x.length));
        xs.set(x);
        const bx = pool.allocF32(x.length);
        bx.view().set(x);
        for (const input of [x, xs, bx.view()]) {
          const spy = vi.spyOn(ShortForward.prototype, 'run');
          const y = await pool.rmsNorm(input, w);
          expect(spy.mock.results.at(-1)?.value).toBe(y); // taken
          spy.mockRestore();
          expect([rows, dim, same(y, ref), y.buffer instanceof SharedArrayBuffer]).toEqual([rows, dim, true, input === xs]);
          expect(same(await pool.rmsNorm(input, w, { signal: new AbortController().signal }), ref)).toBe(true);
          const b = await pool.rmsNormBackward(dy, input, w);
          expect([same(b.dx, refB.dx), same(b.dweight, refB.dweight)]).toEqual([true, true]);
        }
        bx.free();
        await expect(pool.rmsNorm(x, w, { eps: -1 })).rejects.toThrow(/eps/);
      }
    } finally {
      await pool.destroy();
    }
  });
});
