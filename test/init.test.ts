// The package's top-level functions before and after init(). init() sets module-level state, so
// every test imports its own fresh copy of the package (vi.resetModules + dynamic import).
import { describe, expect, it, vi } from 'vitest';
import { mismatch, randn, refForward, yTolerance } from '../shared/reference.js';
import { BUILDS } from '../ts/glue/load.js';
import { rejection, thrown } from './thrown.js';

type Pkg = typeof import('../dist/index.js');

/** A new, uninitialized instance of the package module (and of everything it imports). */
async function fresh(): Promise<Pkg> {
  vi.resetModules();
  return import('../dist/index.js');
}


describe('before init()', () => {
  it('fresh imports really are separate module instances', async () => {
    const a = await fresh();
    const b = await fresh();
    expect(a === b).toBe(false);
    await a.init({ build: 'simd' });
    expect(a.instance()).not.toBeNull();
    expect(b.instance()).toBeNull();
  });

  it('rmsNorm, rmsNormBackward, the allocators and the conversions throw a clear Error and write nothing', async () => {
    const p = await fresh();
    expect(p.instance()).toBeNull();
    const x = randn(16, 1);
    const out = new Float32Array(16).fill(7);
    const dx = new Float32Array(16).fill(7);
    const calls: [string, () => unknown][] = [
      ['rmsNorm', () => p.rmsNorm(x, null, { dim: 4, out })],
      ['rmsNormBackward', () => p.rmsNormBackward(x, x, null, { dim: 4, dx })],
      ['allocF32', () => p.allocF32(4)],
      ['allocU16', () => p.allocU16(4)],
      ['halfToFloat32', () => p.halfToFloat32(new Uint16Array(4), 'bfloat16')],
      ['float32ToHalf', () => p.float32ToHalf(x, 'float16')],
    ];
    for (const [fn, call] of calls) {
      const err = thrown(call);
      // a plain Error: the arguments are fine, the call came too early
      expect(err.constructor).toBe(Error);
      expect(err.message).toMatch(new RegExp(`^${fn}: rmsnorm-wasm is not initialized; call and await init\\(\\) first`));
    }
    expect(out.every((v) => v === 7) && dx.every((v) => v === 7)).toBe(true);
  });

  it('even with bad arguments, "not initialized" is what is reported', async () => {
    const p = await fresh();
    expect(() => p.rmsNorm(null as never, null)).toThrow(/not initialized/);
  });

  it('loadRmsNorm(build) gives an instance without initializing the top-level functions', async () => {
    const p = await fresh();
    const m = await p.loadRmsNorm('scalar');
    expect(m.build).toBe('scalar');
    expect(m.rmsNorm(randn(8, 2), null, { dim: 8 }).length).toBe(8);
    expect(p.instance()).toBeNull();
    expect(() => p.rmsNorm(randn(8, 2), null, { dim: 8 })).toThrow(/not initialized/);
  });

  it('a failed init (unknown build) leaves the package uninitialized; a good one then works', async () => {
    const p = await fresh();
    await expect(p.init({ build: 'avx512' as never })).rejects.toThrow(RangeError);
    const { message } = await rejection(p.init({ build: 'avx512' as never }));
    expect(message).toMatch(/^loadRmsNorm: build must be .*; got avx512$/);
    for (const b of BUILDS) expect(message).toContain(`'${b}'`);
    expect(() => p.rmsNorm(randn(8, 2), null, { dim: 8 })).toThrow(/not initialized/);
    await p.init({ build: 'simd' });
    expect(p.rmsNorm(randn(8, 2), null, { dim: 8 }).length).toBe(8);
  });
});

describe('after init()', () => {
  it('the top-level functions work and use the instance init() chose', async () => {
    const p = await fresh();
    await p.init();
    const m = p.instance()!;
    // SIMD128 and relaxed SIMD are there (vitest.config.ts gives Node 20 the flag): the default
    // is the simd-relaxed build, whose non-shared memory copies plain arrays faster than the
    // threads build's (the pool loads simd-relaxed-threads itself)
    expect(p.relaxedSimdSupported()).toBe(true);
    expect(m.build).toBe('simd-relaxed');
    expect(p.simdSupported()).toBe(true);
    expect(p.threadsAvailable()).toBe(true);
    const x = randn(64, 3);
    const y = p.rmsNorm(x, null, { dim: 16 });
    expect(mismatch(y, refForward(x, null, 16, p.DEFAULT_EPS).y, yTolerance)).toBeNull();
    expect(Array.from(y)).toEqual(Array.from(m.rmsNorm(x, null, { dim: 16 })));
    const b = p.rmsNormBackward(x, x, null, { dim: 16 });
    expect(Array.from(b.dx)).toEqual(Array.from(m.rmsNormBackward(x, x, null, { dim: 16 }).dx));
    const buf = p.allocF32(16);
    expect(buf.view().buffer).toBe(m.wasm.memory.buffer);
    buf.free();
  });

  it('init() again is cheap and keeps the same instance; init({build}) switches', async () => {
    const p = await fresh();
    await p.init({ build: 'simd' });
    const first = p.instance();
    await p.init({ build: 'simd' });
    expect(p.instance()).toBe(first);
    expect(await p.loadRmsNorm('simd')).toBe(first);
    await p.init({ build: 'scalar' });
    expect(p.instance()!.build).toBe('scalar');
    // (a boolean: vitest formats both operands of a passing .not.toBe, which for an instance
    // holding megabytes of wasm memory takes seconds)
    expect(p.instance() === first).toBe(false);
  });

  it('DEFAULT_EPS is 1e-6 and is what an omitted eps means', async () => {
    const p = await fresh();
    await p.init({ build: 'simd' });
    expect(p.DEFAULT_EPS).toBe(1e-6);
    const x = randn(32, 4, 1e-3); // small enough that eps shows in the result
    const a = p.rmsNorm(x, null, { dim: 32 });
    const b = p.rmsNorm(x, null, { dim: 32, eps: 1e-6 });
    const c = p.rmsNorm(x, null, { dim: 32, eps: 1e-5 });
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(Array.from(a)).not.toEqual(Array.from(c));
  });
});
