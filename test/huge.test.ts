/**
 * Inputs far beyond what the wasm memory can hold (the threads build's maximum is 2 GiB): a
 * 3 GiB plain input through rmsNorm, rmsNormBackward and the pool, streamed through their
 * fixed windows. The input repeats a block of 1024 random rows, so every result row can be
 * checked bit for bit against the same call on the block alone (rows are independent), and
 * dweight against a float64 reference of the block times the number of repeats.
 *
 * Needs about 7 GiB of RAM: it runs where the machine has 16 GiB or more (this project's CI
 * machine has 24 GiB).
 */
import { totalmem } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, loadRmsNorm, type RmsNorm, type RmsNormPool } from '../dist/index.js';
import { dweightTolerance, refBackward, testRows, testWeight } from '../shared/reference.js';

const DIM = 4096;
const BLOCK = 1024;
const ROWS = (3 * 2 ** 30) / 4 / DIM; // 3 GiB of float32: 196608 rows
const N = ROWS * DIM;
const REPEATS = ROWS / BLOCK;

/** The first row (of `got`, rows × DIM) whose bits differ from the block's row at the same place in the period, or -1. */
function firstBadRow(got: Float32Array, block: Float32Array): number {
  const g = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const b = new Uint32Array(block.buffer, block.byteOffset, block.length);
  const period = b.length;
  for (let off = 0; off < g.length; off += period) {
    for (let i = 0; i < period; i++) if (g[off + i] !== b[i]) return (off + i) / DIM | 0;
  }
  return -1;
}

describe.runIf(totalmem() >= 16 * 2 ** 30)('a 3 GiB plain input (196608 × 4096)', () => {
  let m: RmsNorm;
  let pool: RmsNormPool;
  let x: Float32Array;
  let out: Float32Array;
  let block: Float32Array;
  const w = testWeight(DIM, 2);

  beforeAll(async () => {
    m = await loadRmsNorm('simd');
    pool = await createPool({ threads: 2 });
    block = testRows(BLOCK, DIM, 1);
    x = new Float32Array(N);
    for (let r = 0; r < ROWS; r += BLOCK) x.set(block, r * DIM);
    out = new Float32Array(N);
  }, 120_000);
  afterAll(async () => {
    await pool?.destroy();
  });

  it('rmsNorm: every row has the bits of the call on the block; the memory grows by at most the window', () => {
    const before = m.wasm.memory.buffer.byteLength;
    const y = m.rmsNorm(x, w);
    expect(m.wasm.memory.buffer.byteLength - before).toBeLessThanOrEqual(256 * 1024);
    expect(y.length).toBe(N);
    expect(firstBadRow(y, m.rmsNorm(block, w))).toBe(-1);
  }, 300_000);

  it('pool.rmsNorm: the same bits; the shared memory grows by at most the pool window', async () => {
    const shared = await loadRmsNorm('simd-threads');
    const before = shared.wasm.memory.buffer.byteLength;
    out.fill(0);
    await pool.rmsNorm(x, w, { out });
    expect(shared.wasm.memory.buffer.byteLength - before).toBeLessThanOrEqual(33 * 2 ** 20);
    expect(firstBadRow(out, m.rmsNorm(block, w))).toBe(-1);
  }, 300_000);

  it('rmsNormBackward and pool.rmsNormBackward: dx row by row, dweight the same bits and within its bound of float64', async () => {
    const before = m.wasm.memory.buffer.byteLength;
    // dy = x: any gradient will do, and it saves 3 GiB
    const s = m.rmsNormBackward(x, x, w, { dx: out });
    expect(m.wasm.memory.buffer.byteLength - before).toBeLessThanOrEqual(256 * 1024);
    const b = m.rmsNormBackward(block, block, w);
    expect(firstBadRow(out, b.dx)).toBe(-1);
    // float64: the block's dweight times the repeats; the bound of the README's numerics
    // section, (32 + blocks + 2) · 2^-24 · Σ|dy·x·rstd|, with 6144 blocks of 32 rows
    const ref = refBackward(block, block, w, DIM, 1e-6);
    const tol = dweightTolerance(ref.dweightAbs!, ROWS);
    for (let c = 0; c < DIM; c++) {
      const bound = tol(c, 0) * REPEATS;
      expect(Math.abs(s.dweight![c]! - ref.dweight![c]! * REPEATS), `column ${c}`).toBeLessThanOrEqual(bound);
    }
    out.fill(0);
    const p = await pool.rmsNormBackward(x, x, w, { dx: out });
    expect(firstBadRow(out, b.dx)).toBe(-1);
    expect(Array.from(new Uint32Array(p.dweight!.buffer))).toEqual(Array.from(new Uint32Array(s.dweight!.buffer)));
  }, 600_000);
});
