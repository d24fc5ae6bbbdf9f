// The benchmark's hand-written roofs (bench/roofs/roofs.wat) compute what the package computes,
// in the same order: on ordinary data their outputs have the package's bits, so "% of roof" in
// `npm run bench` and `bench:half` compares two ways of doing the same work.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadRmsNorm } from '../dist/index.js';
import { roofs } from '../bench/roofs.js';
import { rng } from '../shared/reference.js';

const SHAPES = [[3, 7], [4, 16], [5, 100], [3, 1025], [2, 4099], [64, 4096], [70, 33], [3, 1028], [2, 4100]] as const;

describe.each(SHAPES)('%i × %i', (rows, dim) => {
  it('fwd_f32, bwd_f32, fwd_bf16 and fwd_f16 give the simd build’s bits', async () => {
    const r = await roofs();
    const rn = await loadRmsNorm('simd');
    const rand = rng(rows * 1000 + dim);
    const n = rows * dim;
    const x = Float32Array.from({ length: n }, () => rand() * 2 - 1);
    const w = Float32Array.from({ length: dim }, () => 0.5 + rand());
    const dy = Float32Array.from({ length: n }, () => rand() * 2 - 1);
    r.reset();
    const [ax, aw, ay, ady, adx, adw, awork, abx, aby, ahx, ahy] = [4 * n, 4 * dim, 4 * n, 4 * n, 4 * n, 4 * dim, 12 * dim, 2 * n, 2 * n, 2 * n, 2 * n].map((b) => r.alloc(b));
    r.f32(ax!, n).set(x);
    r.f32(aw!, dim).set(w);
    r.f32(ady!, n).set(dy);
    const xb = rn.float32ToHalf(x, 'bfloat16');
    r.u16(abx!, n).set(xb);
    r.k.fwd_f32(ax!, aw!, ay!, rows, dim, 1e-6);
    r.k.bwd_f32(ady!, ax!, aw!, adx!, adw!, awork!, rows, dim, 1e-6);
    r.k.fwd_bf16(abx!, aw!, aby!, rows, dim, 1e-6);
    const g = rn.rmsNormBackward(dy, x, w);
    expect(r.f32(ay!, n)).toEqual(rn.rmsNorm(x, w));
    expect(r.f32(adx!, n)).toEqual(g.dx);
    expect(r.f32(adw!, dim)).toEqual(g.dweight);
    expect(r.u16(aby!, n)).toEqual(rn.rmsNorm(xb, w, { dtype: 'bfloat16', weightDtype: 'float32' }));
    if (dim % 4 === 0) {
      // float16 rows of the same values (fwd_f16 takes a dim of a multiple of 4)
      const xh = rn.float32ToHalf(x, 'float16');
      r.u16(ahx!, n).set(xh);
      r.k.fwd_f16(ahx!, aw!, ahy!, rows, dim, 1e-6);
      expect(r.u16(ahy!, n)).toEqual(rn.rmsNorm(xh, w, { dtype: 'float16', weightDtype: 'float32' }));
    }
    const copy = r.alloc(4 * n);
    r.k.copy(ax!, copy, 4 * n - ((4 * n) % 16));
    expect(r.f32(copy, n - (n % 4))).toEqual(x.subarray(0, n - (n % 4)));
  });
});

// The roofs address `base + 16` with the loads' offset immediates; so must the package, or V8
// spends an add per access (build.sh's fold_offsets: LLVM leaves those adds in its unrolled loops).
describe('the builds’ memory accesses', () => {
  it.each(['simd', 'simd-threads', 'simd-relaxed', 'simd-relaxed-threads'])('%s: no v128 load or store behind an add of a constant', async (build) => {
    const wabt = await (await import('wabt')).default();
    const bytes = readFileSync(new URL(`../wasm/${build}/rmsnorm_wasm_bg.wasm`, import.meta.url));
    const mod = wabt.readWasm(bytes, { simd: true, threads: true, bulk_memory: true, relaxed_simd: true });
    const text = mod.toText({});
    mod.destroy();
    expect((text.match(/\bv128\.(load|store)\b/g) ?? []).length, 'v128 accesses').toBeGreaterThan(1000);
    const behindAdd = text.match(/i32\.const \d+\n\s*i32\.add\n\s*v128\.(load|store)\b(?![^\n]*offset=)/g) ?? [];
    expect(behindAdd.length).toBe(0);
  });
});
