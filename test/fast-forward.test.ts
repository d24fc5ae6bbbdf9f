// The zero-copy float32 forward's short way (ts/fast-path.ts) must give the general path's bits
// and accept nothing the general path would refuse: same results with options that send the
// call the general way (an explicit `dim`), in place, with rstd, after the remembered views go
// stale (memory growth), and the same errors for near misses.
import { describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { firstBitDiff, testRows, testWeight } from '../shared/reference.js';

const bitsEqual = (a: Float32Array, b: Float32Array) => firstBitDiff(a, b) === -1;

describe.each(['simd', 'scalar'] as const)('the %s build', (build) => {
  let m: RmsNorm;
  const view = (a: Float32Array) => {
    const b = m.allocF32(a.length);
    b.view().set(a);
    return b;
  };

  it('the short way and the general way give the same bits, in place and with rstd', async () => {
    m = await loadRmsNorm(build);
    for (const [rows, dim] of [[1, 896], [3, 7], [8, 1024], [2, 4099]] as const) {
      const xs = testRows(rows, dim, rows * dim);
      const [bx, bw, by, br] = [view(xs), view(testWeight(dim, dim)), view(new Float32Array(rows * dim)), view(new Float32Array(rows))];
      const [x, w, y, rstd] = [bx.view(), bw.view(), by.view(), br.view()];
      for (const eps of [undefined, 1e-5]) {
        expect(m.rmsNorm(x, w, { out: y, eps, rstd })).toBe(y);
        const fast = y.slice();
        const fastRstd = rstd.slice();
        m.rmsNorm(x, w, { out: y, eps, rstd, dim }); // `dim` given: the general way
        expect([firstBitDiff(y, fast), firstBitDiff(rstd, fastRstd), rows, dim, eps]).toEqual([-1, -1, rows, dim, eps]);
      }
      // in place: out is x
      m.rmsNorm(x, w, { out: x, eps: 1e-5 }); // the last eps above
      expect(bitsEqual(x, y)).toBe(true);
      for (const b of [bx, bw, by, br]) b.free();
    }
  });

  it('remembered views that went stale are refused as the general way refuses them', async () => {
    m = await loadRmsNorm(build);
    const [bx, bw, by] = [view(testRows(2, 64, 1)), view(testWeight(64, 2)), view(new Float32Array(128))];
    const [x, w, y] = [bx.view(), bw.view(), by.view()];
    m.rmsNorm(x, w, { out: y });
    const big = m.allocF32(1 << 24); // grows the memory: the views above are detached
    if (x.length === 0) {
      expect(() => m.rmsNorm(x, w, { out: y })).toThrow(/detached ArrayBuffer/);
    }
    const y2 = m.rmsNorm(bx.view(), bw.view(), { out: by.view() });
    expect(y2.length).toBe(128);
    for (const b of [bx, bw, by, big]) b.free();
  });

  it('near misses take the general way and its errors', async () => {
    m = await loadRmsNorm(build);
    const [bx, bw, by] = [view(testRows(2, 64, 1)), view(testWeight(64, 2)), view(new Float32Array(128))];
    const [x, w, y] = [bx.view(), bw.view(), by.view()];
    expect(() => m.rmsNorm(x, w, { out: y.subarray(1) })).toThrow(RangeError);
    expect(() => m.rmsNorm(x, w, { out: y, eps: -1 })).toThrow(RangeError);
    expect(() => m.rmsNorm(x, w, { out: y, epsilon: 1 } as never)).toThrow(TypeError);
    expect(() => m.rmsNorm(x, x.subarray(0, 64), { out: x })).not.toThrow(); // out overlaps the weight: snapshot, still right
    expect(() => m.rmsNorm(x.subarray(1, 65), w, { out: x.subarray(0, 64) })).not.toThrow();
    for (const b of [bx, bw, by]) b.free();
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
      const ref = m.rmsNorm(x, w, { rstd });
      const y = layer.forward(x);
      expect([firstBitDiff(y, ref), firstBitDiff(layer.rstd, rstd)]).toEqual([-1, -1]);
      // its own output as the next input: read before the output is written
      const again = m.rmsNorm(ref, w);
      expect(firstBitDiff(layer.forward(y), again)).toBe(-1);
      layer.free();
    }
  });
});
