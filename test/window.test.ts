/**
 * Plain arrays stream through a fixed window of wasm memory (ts/call/placement/placer.ts): segment after
 * segment, the bits are those of one pass over views of wasm memory (zero-copy, no segments),
 * for every mix of plain arrays and views, for row counts that do not divide the segment, and
 * for rows longer than the window; and the memory grows by no more than the window.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadWasm } from '../dist/glue/load.js';
import { RmsNorm } from '../dist/rmsnorm.js';
import { firstBitDiff, randn, testRows, testWeight } from '../shared/reference.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;
/** A small window (4 KiB), so that even small calls take many segments. */
const WINDOW = 1024;

describe.each(BUILDS)('%s build: streaming through the window', (build) => {
  let small: RmsNorm;
  let zc: RmsNorm;
  beforeAll(async () => {
    const wasm = await loadWasm(build);
    small = new RmsNorm(wasm, WINDOW);
    zc = new RmsNorm(wasm);
  });

  /** Views in zc's memory holding copies of `arrs`, made after all the allocations (growth detaches the simd build's older views). */
  function views(arrs: Float32Array[]) {
    const bufs = arrs.map((a) => zc.allocF32(a.length));
    const v = bufs.map((b, i) => {
      const view = b.view();
      view.set(arrs[i]!);
      return view;
    });
    return { v, free: () => bufs.forEach((b) => b.free()) };
  }

  // (rows, dim): rows that do not divide the segment; a row longer than the window (the window
  // then holds one row); a single row; dweight blocks of 32 rows cut by segments.
  const SHAPES: [number, number][] = [
    [97, 17],
    [200, 100],
    [33, 1000],
    [5, 3000],
    [1, 64],
    [130, 31],
  ];

  for (const [rows, dim] of SHAPES) {
    it(`${rows}×${dim}: forward and backward on plain arrays have the bits of the zero-copy call`, () => {
      const n = rows * dim;
      const x = testRows(rows, dim, rows + dim);
      const w = testWeight(dim, 7);
      const dy = randn(n, 11);
      const vs = views([x, w, new Float32Array(n), new Float32Array(rows), dy, new Float32Array(n), new Float32Array(dim)]);
      const [vx, vw, vy, vr, vdy, vdx, vdw] = vs.v;
      zc.rmsNorm(vx!, vw!, { out: vy!, rstd: vr! });
      zc.rmsNormBackward(vdy!, vx!, vw!, { dx: vdx!, dweight: vdw! });
      const before = small.wasm.memory.buffer.byteLength;
      const rstd = new Float32Array(rows);
      const y = small.rmsNorm(x, w, { rstd });
      expect(firstBitDiff(y, vy!)).toBe(-1);
      expect(firstBitDiff(rstd, vr!)).toBe(-1);
      for (const withRstd of [false, true]) {
        const b = small.rmsNormBackward(dy, x, w, withRstd ? { rstd } : {});
        expect(firstBitDiff(b.dx, vdx!)).toBe(-1);
        expect(firstBitDiff(b.dweight!, vdw!)).toBe(-1);
      }
      // without a weight, and in place on plain arrays (dx = dy, y = x)
      const xc = x.slice();
      small.rmsNorm(xc, null, { dim, out: xc });
      expect(firstBitDiff(xc, zc.rmsNorm(x, null, { dim }))).toBe(-1);
      const dyc = dy.slice();
      small.rmsNormBackward(dyc, x, null, { dim, dx: dyc });
      expect(firstBitDiff(dyc, zc.rmsNormBackward(dy, x, null, { dim }).dx)).toBe(-1);
      // the memory grew by at most one row's regions (a row longer than the window: x or dy,
      // x, weight, dweight, workspace) and the allocator's rounding to 64 KiB pages
      const grown = small.wasm.memory.buffer.byteLength - before;
      expect(grown).toBeLessThanOrEqual(4 * 6 * dim + 2 * 65536);
      vs.free();
    });
  }

  it('mixes of views and plain arrays give the same bits as all views', () => {
    const [rows, dim] = [70, 48];
    const n = rows * dim;
    const x = testRows(rows, dim, 3);
    const w = testWeight(dim, 4);
    const dy = randn(n, 5);
    const want = zc.rmsNorm(x, w);
    const wantB = zc.rmsNormBackward(dy, x, w);
    for (const mask of [1, 2, 3, 4, 5, 6]) {
      // bit 0: x a view; bit 1: weight a view; bit 2: the output a view
      const vs = views([x, w, new Float32Array(n), dy, new Float32Array(dim)]);
      const [vx, vw, vout, vdy, vdw] = vs.v;
      const xa = mask & 1 ? vx! : x;
      const wa = mask & 2 ? vw! : w;
      const out = mask & 4 ? vout! : new Float32Array(n);
      const y = small.rmsNorm(xa, wa, { out });
      expect(firstBitDiff(y, want), `mask ${mask}`).toBe(-1);
      const b = small.rmsNormBackward(mask & 4 ? vdy! : dy, xa, wa, { dx: out, dweight: mask & 2 ? vdw! : new Float32Array(dim) });
      expect(firstBitDiff(b.dx, wantB.dx), `mask ${mask} dx`).toBe(-1);
      expect(firstBitDiff(b.dweight!, wantB.dweight!), `mask ${mask} dweight`).toBe(-1);
      vs.free();
    }
  });

  it('a plain output that overlaps its plain input partly (one buffer) is right: the input is read first', () => {
    const [rows, dim] = [64, 40];
    const n = rows * dim;
    const x = testRows(rows, dim, 9);
    const want = zc.rmsNorm(x, null, { dim });
    // out starts one row into x, and one row before it: later segments would read rows that
    // earlier ones overwrote, if the input were streamed from where it is
    for (const shift of [dim, -dim, 1]) {
      const buf = new Float32Array(n + Math.abs(shift));
      const xa = buf.subarray(shift > 0 ? 0 : -shift, (shift > 0 ? 0 : -shift) + n);
      xa.set(x);
      const out = buf.subarray(shift > 0 ? shift : 0, (shift > 0 ? shift : 0) + n);
      small.rmsNorm(xa, null, { dim, out });
      expect(firstBitDiff(out, want), `shift ${shift}`).toBe(-1);
    }
    // the backward's dx over x shifted by a row
    const dy = randn(n, 10);
    const wantDx = zc.rmsNormBackward(dy, x, null, { dim }).dx;
    const buf = new Float32Array(n + dim);
    const xa = buf.subarray(dim);
    xa.set(x);
    const dx = buf.subarray(0, n);
    small.rmsNormBackward(dy, xa, null, { dim, dx });
    expect(firstBitDiff(dx, wantDx)).toBe(-1);
  });
});
