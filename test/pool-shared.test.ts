/**
 * The pool on arrays in the caller's SharedArrayBuffers (docs/pool.md): every worker copies its
 * own chunks' rows between them and the wasm memory, and the results have the sync call's bits
 * — forward and backward, float32 and half storage, the fused residual add (its buffer updated
 * in place), the gate, rstd, in place and mixed with plain arrays and views, past one window;
 * results the pool allocates for such calls are in SharedArrayBuffers too. Buffers come to the
 * workers by message: read at once where messages can be (Node), or through an ATTACH job
 * (browsers: test/browser/pool.test.ts). And a job wakes as many threads as it has work for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, loadRmsNorm, type RmsNorm, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { sameBits } from '../shared/reference.js';

let pool: RmsNormPool;
let rn: RmsNorm;
beforeAll(async () => {
  pool = await createPool({ threads: 2 });
  rn = await loadRmsNorm('simd');
  // Every call sharded, whatever its size: the workers' copies are what is tested.
  poolHooks(pool).setInlineBelow(0);
  poolHooks(pool).forceWay('sharded');
});
afterAll(() => pool.destroy());

/** A Float32Array (or Uint16Array of half bits) of `n` elements in a SharedArrayBuffer of its own, or plain, filled by `f`. */
function arr(n: number, f: (i: number) => number, shared = true, half = false): Float32Array | Uint16Array {
  const a = half ? new Uint16Array(shared ? new SharedArrayBuffer(2 * n) : new ArrayBuffer(2 * n)) : new Float32Array(shared ? new SharedArrayBuffer(4 * n) : new ArrayBuffer(4 * n));
  for (let i = 0; i < n; i++) a[i] = f(i);
  return a;
}
const isShared = (a: ArrayBufferView) => a.buffer instanceof SharedArrayBuffer;

describe('arrays in SharedArrayBuffers', () => {
  for (const [rows, dim] of [
    [96, 700],
    [3000, 1024], // 12 MiB: more than one window of the pool
  ] as const) {
    it(`forward and backward, ${rows} × ${dim}: the sync call's bits; new results are shared`, async () => {
      const n = rows * dim;
      const x = arr(n, (i) => Math.sin(i * 0.37) * 3) as Float32Array;
      const dy = arr(n, (i) => Math.cos(i * 0.11)) as Float32Array;
      const w = arr(dim, (i) => 0.5 + i / dim) as Float32Array;
      const y = (await pool.rmsNorm(x, w, { eps: 1e-5 })) as Float32Array;
      expect(isShared(y)).toBe(true);
      expect(sameBits(y, rn.rmsNorm(x.slice(), w.slice(), { eps: 1e-5 }))).toBe(true);
      const rstd = arr(rows, () => 0) as Float32Array;
      await pool.rmsNorm(x, w, { out: y, rstd, eps: 1e-5 });
      const ref = rn.rmsNormBackward(dy.slice(), x.slice(), w.slice(), { rstd: rstd.slice(), eps: 1e-5 });
      const g = await pool.rmsNormBackward(dy, x, w, { rstd, eps: 1e-5 });
      expect(isShared(g.dx)).toBe(true);
      expect(sameBits(g.dx, ref.dx)).toBe(true);
      expect(sameBits(g.dweight!, ref.dweight!)).toBe(true);
      // In place: the result over x, in its buffer.
      const xi = arr(n, (i) => x[i]!) as Float32Array;
      expect(await pool.rmsNorm(xi, w, { out: xi, eps: 1e-5 })).toBe(xi);
      expect(sameBits(xi, y)).toBe(true);
    });
  }

  it('the fused residual add updates its shared buffer; the gate; half storage', async () => {
    const rows = 200;
    const dim = 640;
    const n = rows * dim;
    const x = arr(n, (i) => Math.sin(i)) as Float32Array;
    const res = arr(n, (i) => Math.cos(i * 0.7)) as Float32Array;
    const resRef = res.slice();
    const w = new Float32Array(dim).fill(1.25);
    const y = await pool.rmsNorm(x, w, { residual: res, offset: 1 });
    const yRef = rn.rmsNorm(x.slice(), w, { residual: resRef, offset: 1 });
    expect(sameBits(y, yRef)).toBe(true);
    expect(sameBits(res, resRef)).toBe(true);
    const z = arr(n, (i) => (i % 17) / 5 - 1.5) as Float32Array;
    for (const gateMode of ['after', 'before'] as const) {
      expect(sameBits(await pool.rmsNorm(x, w, { gate: z, gateMode }), rn.rmsNorm(x.slice(), w, { gate: z.slice(), gateMode }))).toBe(true);
      const dy = arr(n, (i) => Math.sin(i * 0.3)) as Float32Array;
      const g = await pool.rmsNormBackward(dy, x, w, { gate: z, gateMode });
      const r = rn.rmsNormBackward(dy.slice(), x.slice(), w, { gate: z.slice(), gateMode });
      expect(sameBits(g.dx, r.dx) && sameBits(g.dgate!, r.dgate!) && sameBits(g.dweight!, r.dweight!)).toBe(true);
    }
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const hx = rn.float32ToHalf(x, dtype);
      const sx = arr(n, (i) => hx[i]!, true, true) as Uint16Array;
      const hy = (await pool.rmsNorm(sx, w, { dtype, castingMode: 'llama' })) as Uint16Array;
      expect(isShared(hy)).toBe(true);
      expect(sameBits(hy, rn.rmsNorm(hx, w, { dtype, castingMode: 'llama' }))).toBe(true);
    }
  });

  it('mixed with plain arrays and views of the pool: the same bits', async () => {
    const rows = 150;
    const dim = 1000;
    const n = rows * dim;
    const x = arr(n, (i) => Math.sin(i * 0.9)) as Float32Array;
    const w = arr(dim, (i) => 1 + (i % 3)) as Float32Array;
    const ref = rn.rmsNorm(x.slice(), w.slice());
    const plainOut = new Float32Array(n);
    await pool.rmsNorm(x, w, { out: plainOut });
    expect(sameBits(plainOut, ref)).toBe(true);
    const sharedOut = arr(n, () => 0) as Float32Array;
    await pool.rmsNorm(x.slice(), w, { out: sharedOut });
    expect(sameBits(sharedOut, ref)).toBe(true);
    const buf = pool.allocF32(n);
    try {
      await pool.rmsNorm(x, w, { out: buf.view() });
      expect(sameBits(buf.view(), ref)).toBe(true);
    } finally {
      buf.free();
    }
    // Overlapping ranges of one shared buffer: the output over a later part of the input.
    const big = new Float32Array(new SharedArrayBuffer(4 * (n + dim)));
    big.set(x);
    const over = big.subarray(dim, dim + n);
    await pool.rmsNorm(big.subarray(0, n), w, { out: over });
    expect(sameBits(over, ref)).toBe(true);
  });

  it('many buffers: the workers keep the last ones, and calls on older ones still work', async () => {
    const dim = 256;
    const w = new Float32Array(dim).fill(1);
    const xs = Array.from({ length: 40 }, (_, k) => arr(64 * dim, (i) => Math.sin(i + k)) as Float32Array);
    for (const x of [...xs, ...xs.slice(0, 5)]) expect(sameBits(await pool.rmsNorm(x, w), rn.rmsNorm(x.slice(), w))).toBe(true);
  });
});

describe('threads per job', () => {
  it('a job wakes as many threads as it has work for', async () => {
    const four = await createPool({ threads: 4 });
    try {
      poolHooks(four).setInlineBelow(0);
      poolHooks(four).forceWay('sharded');
      const lastThreads = () => poolHooks(four).lastJobThreads();
      const dim = 1024;
      const run = async (rows: number) => {
        const x = four.allocF32(rows * dim);
        try {
          await four.rmsNorm(x.view().fill(1), null, { dim, out: x.view() });
        } finally {
          x.free();
        }
        return lastThreads();
      };
      // The calling thread takes part: a job has at least it and one worker.
      expect(await run(64)).toBe(2);
      expect(await run(256)).toBe(2); // 256 Ki elements: two threads' work
      expect(await run(384)).toBe(3);
      expect(await run(4096)).toBe(4);
    } finally {
      await four.destroy();
    }
  });
});
