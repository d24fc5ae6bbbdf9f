/**
 * The worker pool gives the same bits as the sync API (forward y and rstd, backward dx and
 * dweight) for any shape and any thread count, on plain arrays and on zero-copy views, and
 * keeps calls apart when many are in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, init, instance, type RmsNormPool, type RmsNorm } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { randn, rng } from '../shared/reference.js';

let sync: RmsNorm;
beforeAll(async () => {
  // the pool's shared instance, so that its views are used in place by the pool
  await init({ build: 'simd-threads' });
  sync = instance()!;
  expect(sync.build).toBe('simd-threads');
});

/** Index of the first element whose bits differ, or -1. */
function firstDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

/** The pool's test hook that makes calls big enough to shard go one way (see pool.ts). */
type Way = 'sharded' | 'alone';
const forceWay = (p: RmsNormPool, way: Way | null) =>
  poolHooks(p).forceWay(way);

// Shapes below the inline threshold run on the calling thread; the others are sharded, or
// run on the calling thread alone, as the pool measures faster (choice.ts): each is run both
// ways, forced. Odd row counts and lengths make chunks and dweight blocks end mid-way.
const SHAPES: [number, number][] = [
  [1, 4096],
  [3, 17],
  [64, 4096],
  [129, 517],
  [300, 1000],
  [1000, 64],
  [257, 4097],
  [2048, 33],
];

describe.each([1, 2, 3, 4])('pool with %i threads', (threads) => {
  let pool: RmsNormPool;
  beforeAll(async () => {
    pool = await createPool({ threads });
    expect(pool.mode).toBe('threads');
    expect(pool.threads).toBe(threads);
  });
  afterAll(() => pool.destroy());

  const cases = SHAPES.flatMap(([rows, dim]) => (['sharded', 'alone'] as const).map((way) => [rows, dim, way] as const));

  it.each(cases)('forward %i x %i, %s: same bits as sync (y and rstd)', async (rows, dim, way) => {
    forceWay(pool, way);
    const x = randn(rows * dim, rows * 7919 + dim);
    const w = randn(dim, dim, 0.5);
    const r0 = new Float32Array(rows);
    const r1 = new Float32Array(rows);
    const y0 = sync.rmsNorm(x, w, { rstd: r0 });
    const y1 = await pool.rmsNorm(x, w, { rstd: r1 });
    expect(firstDiff(y0, y1)).toBe(-1);
    expect(firstDiff(r0, r1)).toBe(-1);
    const y2 = await pool.rmsNorm(x, null, { dim, eps: 1e-3 });
    expect(firstDiff(sync.rmsNorm(x, null, { dim, eps: 1e-3 }), y2)).toBe(-1);
    forceWay(pool, null);
  });

  it.each(cases)('backward %i x %i, %s: same bits as sync (dx and dweight)', async (rows, dim, way) => {
    forceWay(pool, way);
    const x = randn(rows * dim, rows + 31 * dim);
    const dy = randn(rows * dim, rows * 3 + dim);
    const w = randn(dim, 5 * dim, 0.5);
    const rstd = new Float32Array(rows);
    sync.rmsNorm(x, w, { rstd });
    for (const opts of [{}, { rstd }]) {
      const a = sync.rmsNormBackward(dy, x, w, opts);
      const b = await pool.rmsNormBackward(dy, x, w, opts);
      expect(firstDiff(a.dx, b.dx)).toBe(-1);
      expect(firstDiff(a.dweight!, b.dweight!)).toBe(-1);
    }
    const c = await pool.rmsNormBackward(dy, x, null, { dim });
    expect(c.dweight).toBeNull();
    expect(firstDiff(sync.rmsNormBackward(dy, x, null, { dim }).dx, c.dx)).toBe(-1);
    forceWay(pool, null);
  });

  it('zero-copy views are used in place, and results equal the plain-array path', async () => {
    const rows = 256;
    const dim = 1024;
    const x = randn(rows * dim, 99);
    const w = randn(dim, 98);
    const bx = sync.allocF32(rows * dim);
    const by = sync.allocF32(rows * dim);
    const bw = sync.allocF32(dim);
    try {
      bx.view().set(x);
      bw.view().set(w);
      const out = by.view();
      const got = await pool.rmsNorm(bx.view(), bw.view(), { out });
      expect(got).toBe(out);
      expect(firstDiff(by.view(), sync.rmsNorm(x, w))).toBe(-1);
      // in place: out is x itself
      await pool.rmsNorm(bx.view(), bw.view(), { out: bx.view() });
      expect(firstDiff(bx.view(), sync.rmsNorm(x, w))).toBe(-1);
    } finally {
      bx.free();
      by.free();
      bw.free();
    }
  });
});

describe('many calls in flight', () => {
  let pool: RmsNormPool;
  beforeAll(async () => {
    pool = await createPool({ threads: 2 });
  });
  afterAll(() => pool.destroy());

  it('200 concurrent mixed calls all complete with their own results', async () => {
    const rand = rng(2024);
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      const dim = [16, 100, 1024, 4096][i % 4]!;
      const rows = 1 + Math.floor(rand() * (i % 3 === 0 ? 200 : 20));
      const x = randn(rows * dim, 1000 + i);
      const w = i % 5 === 0 ? null : randn(dim, 2000 + i);
      if (i % 2 === 0) {
        const want = sync.rmsNorm(x, w, { dim });
        calls.push(pool.rmsNorm(x, w, { dim }).then((y) => void expect(firstDiff(y, want)).toBe(-1)));
      } else {
        const dy = randn(rows * dim, 3000 + i);
        const want = sync.rmsNormBackward(dy, x, w, { dim });
        calls.push(
          pool.rmsNormBackward(dy, x, w, { dim }).then((g) => {
            expect(firstDiff(g.dx, want.dx)).toBe(-1);
            if (w) expect(firstDiff(g.dweight!, want.dweight!)).toBe(-1);
            else expect(g.dweight).toBeNull();
          }),
        );
      }
    }
    await Promise.all(calls);
  });
});
