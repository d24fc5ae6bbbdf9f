// The wasm heap: repeated calls must not leak (the memory's byteLength stays put once the
// scratch region has grown to the largest call), allocF32/free must recycle, and a view made
// before the memory grew must either keep working (shared memory) or be refused with a clear
// TypeError (non-shared memory, where growth detaches it) — never silently misused.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { firstBitDiff, randn, testWeight } from '../shared/reference.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;
const CALLS = 3000;

describe.each(BUILDS)('%s build: heap', (build) => {
  let m: RmsNorm;
  const bytes = () => m.wasm.memory.buffer.byteLength;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });

  // 8 × 1024 floats (32 KiB per array): leaking even one array per call would need ~96 MiB
  // over 3000 calls, far more than any slack the allocator keeps.
  const dim = 1024;
  const rows = 8;
  const x = randn(rows * dim, 1);
  const dy = randn(rows * dim, 2);
  const w = testWeight(dim, 3);

  it(`${CALLS} plain forward and backward calls of one shape do not grow memory`, () => {
    const rstd = new Float32Array(rows);
    m.rmsNorm(x, w, { rstd });
    m.rmsNormBackward(dy, x, w, { rstd });
    const before = bytes();
    for (let i = 0; i < CALLS; i++) {
      m.rmsNorm(x, w, { rstd });
      m.rmsNorm(x, null, { dim });
      m.rmsNormBackward(dy, x, w, { rstd });
      m.rmsNormBackward(dy, x, null, { dim });
    }
    expect(bytes()).toBe(before);
  });

  it(`${CALLS} zero-copy forward and backward calls do not grow memory`, () => {
    const n = rows * dim;
    // every array a view (weight too): nothing is copied; the backward's dim-float workspace
    // comes from the scratch region, which this plain call has sized (before any view exists:
    // growth would detach the simd build's views)
    m.rmsNormBackward(dy, x, w);
    const buf = m.allocF32(4 * n + 2 * dim + rows);
    const v = buf.view();
    const [xv, dyv, out, dx] = [0, 1, 2, 3].map((k) => v.subarray(k * n, (k + 1) * n)) as [
      Float32Array, Float32Array, Float32Array, Float32Array,
    ];
    const dweight = v.subarray(4 * n, 4 * n + dim);
    const wv = v.subarray(4 * n + dim, 4 * n + 2 * dim);
    const rstd = v.subarray(4 * n + 2 * dim);
    xv.set(x);
    dyv.set(dy);
    wv.set(w);
    const before = bytes();
    for (let i = 0; i < CALLS; i++) {
      m.rmsNorm(xv, wv, { out, rstd });
      m.rmsNormBackward(dyv, xv, wv, { rstd, dx, dweight });
    }
    expect(bytes()).toBe(before);
    buf.free();
  });

  it('after one large call, smaller and alternating shapes reuse the scratch region', () => {
    m.rmsNorm(randn(64 * 1024, 4), null, { dim: 1024 });
    m.rmsNormBackward(randn(64 * 1024, 5), randn(64 * 1024, 4), testWeight(1024, 1));
    const before = bytes();
    for (let i = 0; i < 300; i++) {
      const d = 1 + (i % 97);
      const r = 1 + (i % 13);
      m.rmsNorm(randn(r * d, i), null, { dim: d });
      m.rmsNormBackward(randn(r * d, i), randn(r * d, i + 1), testWeight(d, i));
    }
    expect(bytes()).toBe(before);
  });

  it(`allocF32 + free, ${CALLS} times, does not grow memory; without free it does`, () => {
    m.allocF32(10_000).free();
    const before = bytes();
    for (let i = 0; i < CALLS; i++) {
      const b = m.allocF32(10_000 + (i % 7));
      b.view()[0] = i;
      b.free();
    }
    expect(bytes()).toBe(before);
    // the control: the same allocations kept alive need ~120 MiB
    const kept = Array.from({ length: CALLS }, () => m.allocF32(10_000));
    expect(bytes()).toBeGreaterThan(before + CALLS * 40_000 * 0.9);
    for (const b of kept) b.free();
  });
});

/** A new instance of `build` in a fresh copy of the package: no scratch region yet. */
async function freshInstance(build: (typeof BUILDS)[number]): Promise<RmsNorm> {
  vi.resetModules();
  const pkg: typeof import('../dist/index.js') = await import('../dist/index.js');
  return pkg.loadRmsNorm(build);
}

describe.each(BUILDS)('%s build: scratch growth', (build) => {
  it('500 calls of ever larger plain arrays: each outgrown scratch region is given back', async () => {
    // Every call is 1024 floats larger than the last, so every call outgrows the scratch
    // region and replaces it. Freed regions merge and are reused: the memory ends up around
    // the size of the last region (600 Ki floats). Keeping them would need ~175 Mi floats.
    const m = await freshInstance(build);
    const data = randn(600 * 1024, 6);
    const before = m.wasm.memory.buffer.byteLength;
    for (let r = 100; r < 600; r++) m.rmsNorm(data.subarray(0, r * 1024), null, { dim: 1024 });
    expect(m.wasm.memory.buffer.byteLength - before).toBeLessThan(3 * 600 * 1024 * 4);
  });
});

/** Allocates enough to force the memory to grow; returns the handle (free it afterwards). */
function grow(m: RmsNorm) {
  const before = m.wasm.memory.buffer.byteLength;
  const big = m.allocF32(before / 4 + (1 << 20));
  expect(m.wasm.memory.buffer.byteLength).toBeGreaterThan(before);
  return big;
}

describe.each(['simd', 'scalar'] as const)('%s build (non-shared memory): a view from before growth', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });

  it('is detached by growth, and every argument position refuses it with a TypeError naming it', () => {
    const dim = 16;
    const a = m.allocF32(4 * dim);
    const stale = a.view();
    stale.fill(1);
    const big = grow(m);
    expect(stale.length).toBe(0); // detached: this is what makes silent misuse possible
    const x = randn(4 * dim, 1);
    const w = testWeight(dim, 2);
    const out = new Float32Array(4 * dim).fill(5);
    const dx = new Float32Array(4 * dim).fill(5);
    const cases: [string, string, () => unknown][] = [
      ['rmsNorm', 'x', () => m.rmsNorm(stale, w, { out })],
      ['rmsNorm', 'x', () => m.rmsNorm(stale, null, { dim })],
      ['rmsNorm', 'weight', () => m.rmsNorm(x, stale, { dim, out })],
      ['rmsNorm', 'options.out', () => m.rmsNorm(x, w, { out: stale })],
      ['rmsNorm', 'options.rstd', () => m.rmsNorm(x, w, { out, rstd: stale })],
      ['rmsNormBackward', 'dy', () => m.rmsNormBackward(stale, x, w, { dx })],
      ['rmsNormBackward', 'x', () => m.rmsNormBackward(x, stale, w, { dx })],
      ['rmsNormBackward', 'options.dx', () => m.rmsNormBackward(x, x, w, { dx: stale })],
      ['rmsNormBackward', 'options.dweight', () => m.rmsNormBackward(x, x, w, { dx, dweight: stale })],
      ['rmsNormBackward', 'options.rstd', () => m.rmsNormBackward(x, x, w, { dx, rstd: stale })],
    ];
    for (const [fn, name, call] of cases) {
      let err: unknown = null;
      try {
        call();
      } catch (e) {
        err = e;
      }
      expect(err, `${fn} ${name}`).toBeInstanceOf(TypeError);
      const msg = (err as Error).message;
      expect(msg.startsWith(`${fn}: ${name} `), msg).toBe(true);
      expect(msg).toMatch(/detached/);
      expect(msg).toMatch(/view\(\)/); // tells the user what to do
    }
    expect(out.every((v) => v === 5) && dx.every((v) => v === 5)).toBe(true);
    // a fresh view of the same allocation works, and still holds what was written before
    const fresh = a.view();
    expect(fresh.every((v) => v === 1)).toBe(true);
    m.rmsNorm(fresh, null, { dim, out: fresh, eps: 0 });
    expect(fresh.every((v) => v === 1)).toBe(true); // a row of ones has rms 1
    big.free();
    a.free();
  });
});

describe('simd-threads build (shared memory): a view from before growth', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd-threads');
  });

  it('keeps working, in place: the result shows through a new view of the same allocation', () => {
    const dim = 33;
    const rows = 5;
    const a = m.allocF32(rows * dim);
    const old = a.view();
    const x = randn(rows * dim, 7);
    old.set(x);
    const big = grow(m);
    expect(old.length).toBe(rows * dim); // shared memory never detaches
    expect(old.buffer === m.wasm.memory.buffer).toBe(false); // but it is the old buffer object
    const expected = m.rmsNorm(x, null, { dim });
    const dy = randn(rows * dim, 8);
    const expectedDx = m.rmsNormBackward(dy, x, null, { dim }).dx;

    expect(m.rmsNorm(old, null, { dim, out: old })).toBe(old);
    expect(firstBitDiff(a.view(), expected)).toBe(-1);
    expect(firstBitDiff(old, expected)).toBe(-1);

    old.set(x);
    const dyOld = big.view().subarray(0, rows * dim); // a current view as dy, old one as x and dx
    dyOld.set(dy);
    m.rmsNormBackward(dyOld, old, null, { dim, dx: old });
    expect(firstBitDiff(a.view(), expectedDx)).toBe(-1);
    big.free();
    a.free();
  });

  it('is still used in place, not copied (the memory does not grow for it)', async () => {
    const m2 = await freshInstance('simd-threads');
    const dim = 1024;
    const rows = 1024; // 4 MiB
    const a = m2.allocF32(rows * dim);
    const old = a.view();
    const x = randn(rows * dim, 9);
    old.set(x);
    const big = m2.allocF32(m2.wasm.memory.buffer.byteLength / 4); // grows; kept, so no free room
    expect(old.buffer === m2.wasm.memory.buffer).toBe(false);
    const before = m2.wasm.memory.buffer.byteLength;
    m2.rmsNorm(old, null, { dim, out: old });
    expect(m2.wasm.memory.buffer.byteLength).toBe(before); // a copy would need 4 MiB of scratch
    expect(firstBitDiff(a.view(), m.rmsNorm(x, null, { dim }))).toBe(-1);
    big.free();
    a.free();
  });
});
