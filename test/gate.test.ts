// The gated RMSNorm (options.gate / gateMode): against golden vectors from real PyTorch 2.15 on the
// CPU running Qwen3-Next's and Mamba-2's own code (test/fixtures/gate/golden.json, made by
// scripts/make-gate-golden.py), against the float64 reference at larger shapes, the same bits on
// every build, through the layer and through a pool of 2 threads (sharded), and its argument errors.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, loadRmsNorm, relaxedSimdSupported, type Build, type RmsNorm, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { allclose, halfToF32, randn, refGated, type HalfDtype } from '../shared/reference.js';

type Dtype = HalfDtype | 'float32';
type Arr = Float32Array | Uint16Array;
interface Raw {
  name: string;
  model: string;
  dtype: Dtype;
  weightDtype: Dtype;
  castingMode: 'none' | 'llama';
  gateMode: 'after' | 'before';
  rows: number;
  dim: number;
  eps: number;
  [array: string]: unknown;
}

function bytes(b64: string): ArrayBuffer {
  const b = Buffer.from(b64, 'base64');
  const out = new ArrayBuffer(b.length);
  new Uint8Array(out).set(b);
  return out;
}
const ofDtype = (s: string, dt: Dtype): Arr => (dt === 'float32' ? new Float32Array(bytes(s)) : new Uint16Array(bytes(s)));
const values = (a: Arr, dt: Dtype): Float64Array => Float64Array.from(a, (v) => (dt === 'float32' ? v : halfToF32(v, dt as HalfDtype)));

const golden = JSON.parse(readFileSync(new URL('./fixtures/gate/golden.json', import.meta.url), 'utf8')) as { torch: string; cases: Raw[] };
const CASES = golden.cases.map((c) => {
  const act = (k: string) => ofDtype(c[k] as string, c.dtype);
  const wt = (k: string) => ofDtype(c[k] as string, c.weightDtype);
  return { ...c, x: act('x'), z: act('z'), dy: act('dy'), y: act('y'), dx: act('dx'), dz: act('dz'), weight: wt('weight'), dweight: wt('dweight') };
});
type Case = (typeof CASES)[number];

const BUILDS: Build[] = ['simd', 'scalar', ...(relaxedSimdSupported() ? (['simd-relaxed'] as const) : [])];
const opts = (c: Case) => ({ dtype: c.dtype, weightDtype: c.weightDtype, castingMode: c.castingMode, gateMode: c.gateMode, eps: c.eps, gate: c.z });
const sameBits = (a: Arr, b: Arr) => a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

/**
 * The worst |ours − torch| / allowed over `a`: allowed is `k` units of the dtype's last place at
 * the larger of |torch| and `floor` (a row's scale: results near zero come out of cancellation
 * and differ in absolute, not relative, terms). float32: units of 2^-23·|v|.
 */
function worst(a: Arr, g: Arr, dt: Dtype, k: number, floor: (i: number) => number): number {
  let w = 0;
  const av = values(a, dt);
  const gv = values(g, dt);
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(gv[i]!) || Number.isNaN(av[i]!)) {
      if (Number.isNaN(gv[i]!) !== Number.isNaN(av[i]!)) return Infinity;
      continue;
    }
    const m = Math.max(Math.abs(gv[i]!), floor(i));
    w = Math.max(w, Math.abs(av[i]! - gv[i]!) / (k * ulpAt(m, dt)));
  }
  return w;
}

/** The dtype's last place at magnitude `m` (subnormals: the smallest step). */
function ulpAt(m: number, dt: Dtype): number {
  const [minExp, frac] = dt === 'float32' ? [-126, 23] : dt === 'float16' ? [-14, 10] : [-126, 7];
  return 2 ** (Math.max(m > 0 ? Math.floor(Math.log2(m)) : minExp, minExp) - frac);
}
const rowMax = (a: Arr, dt: Dtype, dim: number) => {
  const v = values(a, dt);
  const m = new Float64Array(v.length / dim);
  for (let i = 0; i < v.length; i++) m[(i / dim) | 0] = Math.max(m[(i / dim) | 0]!, Math.abs(v[i]!));
  return (i: number) => m[(i / dim) | 0]!;
};

const inst: Partial<Record<Build, RmsNorm>> = {};
beforeAll(async () => {
  for (const b of BUILDS) inst[b] = await loadRmsNorm(b);
});

describe('against PyTorch running the models’ own code', () => {
  it('the golden file is torch 2.15’s, with every model, dtype and gate mode', () => {
    expect(golden.torch).toBe('2.15.0');
    expect(new Set(CASES.map((c) => `${c.model}/${c.dtype}/${c.gateMode}`)).size).toBe(12);
  });

  // Tolerances in units of the dtype's last place. Forward: the SiLU here and torch's differ in
  // the last float32 bits, so a result may round to the neighbouring half (1 ulp), and float32
  // results differ by a few ulps. Backward: the library computes in float32 and rounds once;
  // autograd through the llama casting rounds the intermediate gradients (and, with a half
  // weight, each row's weight-gradient term) to the half dtype, so results differ by a few ulps
  // at the larger of their own size and a fraction of the row's largest value (results that
  // come out of cancellation differ in absolute terms). The worst seen: dx 2.5, dgate 2, dweight
  // 10 half ulps (llama); float32 96 ulps at 2^-10 of the row's largest value.
  it('forward: y within 1 half ulp (float32: 8 ulps) of torch', () => {
    for (const c of CASES) {
      const y = inst.simd!.rmsNorm(c.x, c.weight, opts(c));
      const k = c.dtype === 'float32' ? 8 : 1;
      expect({ case: c.name, worst: worst(y, c.y, c.dtype, k, () => 0) <= 1 }).toEqual({ case: c.name, worst: true });
    }
  });

  it('backward: dx, dgate, dweight within a few ulps of the row’s scale', () => {
    for (const c of CASES) {
      const r = inst.simd!.rmsNormBackward(c.dy, c.x, c.weight, opts(c));
      const half = c.dtype !== 'float32';
      const llama = c.castingMode === 'llama' && half;
      const k = half ? (llama ? 4 : 1) : 128;
      const floor = (a: Arr) => {
        const m = rowMax(a, c.dtype, c.dim);
        return (i: number) => m(i) * (half ? 2 ** -6 : 2 ** -10);
      };
      for (const [what, a, g] of [['dx', r.dx, c.dx], ['dgate', r.dgate!, c.dz]] as const) {
        expect({ case: c.name, what, ok: worst(a, g, c.dtype, k, floor(g)) <= 1 }).toEqual({ case: c.name, what, ok: true });
      }
      const wMax = Math.max(...values(c.dweight, c.weightDtype).map(Math.abs));
      const kw = c.weightDtype === 'float32' ? 64 : 16;
      expect({ case: c.name, ok: worst(r.dweight!, c.dweight, c.weightDtype, kw, () => wMax * 2 ** -8) <= 1 }).toEqual({ case: c.name, ok: true });
    }
  });

  it('every build gives the simd build’s bits', () => {
    for (const c of CASES) {
      const y = inst.simd!.rmsNorm(c.x, c.weight, opts(c));
      const r = inst.simd!.rmsNormBackward(c.dy, c.x, c.weight, opts(c));
      for (const b of BUILDS.slice(1)) {
        const y2 = inst[b]!.rmsNorm(c.x, c.weight, opts(c));
        const r2 = inst[b]!.rmsNormBackward(c.dy, c.x, c.weight, opts(c));
        const same = sameBits(y, y2) && sameBits(r.dx, r2.dx) && sameBits(r.dgate!, r2.dgate!) && sameBits(r.dweight!, r2.dweight!);
        expect({ case: c.name, build: b, same }).toEqual({ case: c.name, build: b, same: true });
      }
    }
  });
});

describe('against float64', () => {
  const rows = 64;
  const dim = 4096;
  const x = randn(rows * dim, 1, 2);
  const z = randn(rows * dim, 2, 3);
  const dy = randn(rows * dim, 3);
  const w = Float32Array.from(randn(dim, 4, 0.2), (v) => 1 + v);
  for (const gateMode of ['after', 'before'] as const) {
    for (const v of [{}, { offset: 1 }, { partial: 0.25 }] as const) {
      it(`${gateMode}, ${JSON.stringify(v)}: y within float32 tolerance, dx, dgate, dweight within their terms' rounding`, () => {
        const o = { gate: z, gateMode, ...v };
        const rstd = new Float32Array(rows);
        const y = inst.simd!.rmsNorm(x, w, { ...o, rstd });
        const r = inst.simd!.rmsNormBackward(dy, x, w, o);
        const stat = v.partial !== undefined ? Math.ceil(v.partial * dim) : dim;
        const ref = refGated(x, z, dy, w, dim, 1e-6, gateMode, { offset: 'offset' in v ? v.offset : 0, stat });
        const tol = allclose(1e-5, 1e-5);
        const bad = (a: Arr, b: Float64Array, t: (i: number, r: number) => number) => a.findIndex((av, i) => !(Math.abs(av - b[i]!) <= t(i, b[i]!)));
        expect(bad(y, ref.y, tol)).toBe(-1);
        expect(bad(r.dx, ref.dx, (i) => 64 * 2 ** -24 * ref.dxTerms[i]! + 1e-30)).toBe(-1);
        expect(bad(r.dgate!, ref.dz, (i) => 64 * 2 ** -24 * ref.dzTerms[i]! + 1e-30)).toBe(-1);
        expect(bad(r.dweight!, ref.dweight!, (i) => (34 + rows / 32 + 64) * 2 ** -24 * ref.dweightAbs![i]!)).toBe(-1);
        // the forward's rstd given to the backward: the bits of recomputing it
        const r2 = inst.simd!.rmsNormBackward(dy, x, w, { ...o, rstd });
        expect(sameBits(r.dx, r2.dx) && sameBits(r.dgate!, r2.dgate!) && sameBits(r.dweight!, r2.dweight!)).toBe(true);
      });
    }
  }
});

describe('the layer and the pool give the one-off call’s bits', () => {
  let pool: RmsNormPool;
  beforeAll(async () => {
    pool = await createPool({ threads: 2 });
    poolHooks(pool).forceWay('sharded');
    poolHooks(pool).setInlineBelow(0);
  });
  afterAll(async () => {
    await pool?.destroy();
  });

  it('every golden case, its rows repeated to 256 (sharded over both threads)', async () => {
    for (const c of CASES) {
      const k = Math.ceil(256 / c.rows);
      const rep = <T extends Arr>(a: T): T => {
        const out = new (a.constructor as new (n: number) => T)(a.length * k);
        for (let j = 0; j < k; j++) out.set(a, j * a.length);
        return out;
      };
      const [x, z, dy] = [rep(c.x), rep(c.z), rep(c.dy)];
      const o = { ...opts(c), gate: z };
      const y = inst.simd!.rmsNorm(x, c.weight, o);
      const r = inst.simd!.rmsNormBackward(dy, x, c.weight, o);
      const yp = await pool.rmsNorm(x, c.weight, o);
      const rp = await pool.rmsNormBackward(dy, x, c.weight, o);
      const layer = inst.simd!.createLayer(c.weight, { dtype: c.dtype, weightDtype: c.weightDtype, castingMode: c.castingMode, gateMode: c.gateMode, eps: c.eps });
      const yl = layer.forward(x, { gate: z });
      const sameY = sameBits(y, yp) && sameBits(y, yl);
      const rl = layer.backward(dy, x, { gate: z, rstd: layer.rstd });
      const sameB = [[r, rp], [r, rl]].every(([a, b]) => sameBits(a!.dx, b!.dx) && sameBits(a!.dgate!, b!.dgate!) && sameBits(a!.dweight!, b!.dweight!));
      layer.free();
      expect({ case: c.name, sameY, sameB }).toEqual({ case: c.name, sameY: true, sameB: true });
    }
  });
});

describe('argument errors', () => {
  const x = new Float32Array(8);
  const w = new Float32Array(4).fill(1);
  const z = new Float32Array(8);
  it('a TypeError or RangeError naming the option, and the module keeps working', () => {
    const rn = inst.simd!;
    expect(() => rn.rmsNorm(x, w, { gateMode: 'after' })).toThrow(new TypeError('rmsNorm: options.gateMode was given without options.gate (the z whose silu(z) gates the norm)'));
    expect(() => rn.rmsNorm(x, w, { gate: z, gateMode: 'inside' as never })).toThrow(new TypeError('rmsNorm: options.gateMode must be \'after\' or \'before\', got string "inside"'));
    expect(() => rn.rmsNorm(x, w, { gate: new Float32Array(4) })).toThrow(RangeError);
    expect(() => rn.rmsNorm(x, w, { gate: z, residual: new Float32Array(8) })).toThrow(
      new TypeError('rmsNorm: options.gate and options.residual cannot be used together (the gated RMSNorm has no fused residual add)'),
    );
    expect(() => rn.rmsNormBackward(x, x, w, { dgate: z })).toThrow(new TypeError('rmsNormBackward: options.dgate was given without options.gate (there is no gate gradient)'));
    expect(() => rn.rmsNormBackward(x, x, w, { gate: z, dresidual: new Float32Array(8) })).toThrow(TypeError);
    const layer = rn.createLayer(w, { gateMode: 'before' });
    expect(layer.gateMode).toBe('before');
    expect(() => layer.forward(x, { gate: z, residual: new Float32Array(8) })).toThrow(TypeError);
    expect(() => layer.backward(x, x, { dgate: z } as never)).toThrow(new TypeError('layer.backward: unknown option "dgate" (known: rstd, dresidual, gate)'));
    layer.free();
    expect(() => rn.createLayer(w, { gateMode: 'sideways' as never })).toThrow(TypeError);
    // without a gate the result has no dgate key; the module still works
    expect(Object.keys(rn.rmsNormBackward(x, x, w))).toEqual(['dx', 'dweight']);
    expect(rn.rmsNorm(x, w, { gate: z }).length).toBe(8);
  });
});
