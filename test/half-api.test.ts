/**
 * Half precision (float16, bfloat16) through the public API: argument errors, numerics against
 * the float64 reference, the same bits from every build / placement / thread count / way of
 * cutting the rows, the variants, and memory.
 *
 * References: inputs are half patterns; the float64 reference (shared/reference.js) runs on
 * them widened exactly (`toF32Array`) and its results are rounded as the kernel stores them,
 * float64 → float32 → half (`f32ToHalf(Math.fround(v))`). Tolerances:
 * - y: within 1 half ulp of that rounded reference (double rounding may move it by one).
 * - rstd: relative 2e-6.
 * - dx: |dx − ref| ≤ 1 half ulp at ref + 2^-18 · dxTerms[i] (64 float32 roundoffs of the
 *   sizes of the terms dx is made of: covers the cancellation inside rstd·(gy − x·rstd²·m)).
 * - dweight: 1 ulp of the weight's dtype at ref (none for a float32 weight) +
 *   dweightTolerance (the float32 block sum's bound; +12 roundoffs when rstd is recomputed);
 *   and, given the forward's rstd, bit for bit the float32 32-row-block sum (`dweightF32`)
 *   rounded once to the weight's dtype.
 * - castingMode 'llama' (y = round(round(x·rstd)·w)): emulated exactly from the kernel's own
 *   float32 rstd (x·rstd in float32 → half, times the gain in float32 → half): same bits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allocU16,
  createPool,
  init,
  instance,
  loadRmsNorm,
  rmsNorm,
  rmsNormBackward,
  statOf,
  type Dtype,
  type HalfDtype,
  type RmsNorm,
  type RmsNormPool,
} from '../dist/index.js';
import {
  dweightF32,
  dweightTolerance,
  f32ToHalf,
  fromF32Array,
  gaussian,
  halfToF32,
  halfUlp,
  halfUlpDiff,
  mismatch,
  randn,
  refBackward,
  refForward,
  rng,
  testRows,
  testWeight,
  toF32Array,
  type Tolerance,
} from '../shared/reference.js';
import { BUILDS } from '../ts/glue/load.js';
import { rejection, thrown } from './thrown.js';

const EPS = 1e-6;
const RSTD_REL = 2e-6;
/** dx's float32 allowance, times dxTerms: 64 roundoffs of float32. */
const DX_K = 2 ** -18;
/** Float16Array exists in Chromium, Firefox, Deno, Bun — not in Node 20. */
const F16: (new (n: number) => ArrayBufferView & { length: number }) | undefined = (
  globalThis as { Float16Array?: new (n: number) => ArrayBufferView & { length: number } }
).Float16Array;

type Arr = Float32Array | Uint16Array;
// The typed API's generics do not cover a union of array types: tests call through `any`-free
// loose signatures instead.
type Fwd = (x: Arr, w: Arr | null, o?: Record<string, unknown>) => Arr;
type Bwd = (dy: Arr, x: Arr, w: Arr | null, o?: Record<string, unknown>) => { dx: Arr; dweight: Arr | null };
const fwd = (m: RmsNorm): Fwd => m.rmsNorm.bind(m) as unknown as Fwd;
const bwd = (m: RmsNorm): Bwd => m.rmsNormBackward.bind(m) as unknown as Bwd;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const hex = (b: number) => '0x' + b.toString(16).padStart(4, '0');
/** A float64 value as the kernel stores it: rounded to float32, then to the half dtype. */
const toHalf = (v: number, dt: HalfDtype) => f32ToHalf(Math.fround(v), dt);
/** `v` rounded to `dt` and widened back. */
const viaHalf = (v: number, dt: HalfDtype) => halfToF32(toHalf(v, dt), dt);
/** One ulp of `dt` at `v` (after rounding `v` to it). */
const ulpAt = (v: number, dt: HalfDtype) => halfUlp(toHalf(v, dt), dt);
const isHalf = (d: Dtype | null): d is HalfDtype => d === 'float16' || d === 'bfloat16';

/** null when every `got[i]` is within `maxUlp` half ulps of float64 `want[i]` rounded; else the worst offender. */
function ulpMismatch(got: Uint16Array, want: ArrayLike<number>, dt: HalfDtype, maxUlp: number, label: string): string | null {
  if (got.length !== want.length) return `${label}: length ${got.length}, expected ${want.length}`;
  let bad = 0;
  let worst = -1;
  let worstD = -1;
  for (let i = 0; i < got.length; i++) {
    const d = halfUlpDiff(got[i]!, toHalf(want[i]!, dt), dt);
    if (d > maxUlp) bad++;
    if (d > worstD) {
      worstD = d;
      worst = i;
    }
  }
  if (bad === 0) return null;
  const g = got[worst]!;
  const w = toHalf(want[worst]!, dt);
  return `${label}: ${bad} of ${got.length} more than ${maxUlp} ulp (${dt}) off; worst ${worstD} ulp at [${worst}]: got ${hex(g)} (${halfToF32(g, dt)}), want ${hex(w)} (${halfToF32(w, dt)}, float64 ${want[worst]})`;
}

/** Index of the first element whose bits differ (0 for different types or lengths), or -1. */
function firstDiff(a: Arr | null | undefined, b: Arr | null | undefined): number {
  if (a == null || b == null) return a == b ? -1 : 0;
  if (a.constructor !== b.constructor || a.length !== b.length) return 0;
  const ua = a instanceof Float32Array ? new Uint32Array(a.buffer, a.byteOffset, a.length) : a;
  const ub = b instanceof Float32Array ? new Uint32Array(b.buffer, b.byteOffset, b.length) : b;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

/** "same" or where the bits first differ, for expect(...).toBe('same'). */
function same(a: Arr | null | undefined, b: Arr | null | undefined): string {
  const i = firstDiff(a, b);
  if (i < 0) return 'same';
  if (a == null || b == null || a.constructor !== b.constructor || a.length !== b.length) {
    return `differ in kind: ${a?.constructor.name}(${a?.length}) vs ${b?.constructor.name}(${b?.length})`;
  }
  return `first difference at [${i}]: ${a instanceof Uint16Array ? hex(a[i]!) : a[i]} vs ${b instanceof Uint16Array ? hex(b[i]!) : b[i]}`;
}

/** Widens a weight / dweight of dtype `wdt` to float32 values. */
const widenW = (a: Arr, wdt: Dtype): Float32Array => (a instanceof Float32Array ? a : toF32Array(a, wdt as HalfDtype));

// ---------------------------------------------------------------------------------------------
// Problems
// ---------------------------------------------------------------------------------------------

interface Setup {
  label: string;
  dtype: HalfDtype;
  /** The weight's storage, or null for no weight. */
  wdt: Dtype | null;
}
const SETUPS: Setup[] = [
  { label: 'bfloat16, bfloat16 weight', dtype: 'bfloat16', wdt: 'bfloat16' },
  { label: 'bfloat16, float32 weight', dtype: 'bfloat16', wdt: 'float32' },
  { label: 'bfloat16, no weight', dtype: 'bfloat16', wdt: null },
  { label: 'float16, float16 weight', dtype: 'float16', wdt: 'float16' },
  { label: 'float16, float32 weight', dtype: 'float16', wdt: 'float32' },
  { label: 'float16, no weight', dtype: 'float16', wdt: null },
  { label: 'bfloat16, float16 weight (mixed halves)', dtype: 'bfloat16', wdt: 'float16' },
];

interface Problem {
  s: Setup;
  rows: number;
  dim: number;
  dtype: HalfDtype;
  x: Uint16Array;
  dy: Uint16Array;
  weight: Arr | null;
  /** Exact float32 values of x, dy, weight. */
  xw: Float32Array;
  dyw: Float32Array;
  ww: Float32Array | null;
  /** The dtype options a caller passes: dtype always; weightDtype only for mixed halves; dim without a weight. */
  opts: Record<string, unknown>;
}

/** Rows of varied scale (10^-3..10^3, some with a mean) and a gain near 1, as half patterns. */
function problem(s: Setup, rows: number, dim: number, seed: number, w32: Float32Array = testWeight(dim, seed + 2)): Problem {
  const n = rows * dim;
  const x = fromF32Array(testRows(rows, dim, seed), s.dtype);
  const dy = fromF32Array(randn(n, seed + 1), s.dtype);
  const weight = s.wdt === null ? null : s.wdt === 'float32' ? w32.slice() : fromF32Array(w32, s.wdt);
  const opts: Record<string, unknown> = { dtype: s.dtype };
  if (isHalf(s.wdt) && s.wdt !== s.dtype) opts.weightDtype = s.wdt;
  if (weight === null) opts.dim = dim;
  return {
    s, rows, dim, dtype: s.dtype, x, dy, weight,
    xw: toF32Array(x, s.dtype),
    dyw: toF32Array(dy, s.dtype),
    ww: weight === null ? null : widenW(weight, s.wdt!),
    opts,
  };
}

/** dweight as the kernel must make it: float32 32-row-block sums of dy·(x·rstd), rounded once to the weight's dtype. */
function dweightExact(p: Problem, dyw: Float32Array, xw: Float32Array, rstd: Float32Array, llama = false): Arr {
  let xs = xw;
  let a = rstd;
  if (llama) {
    // x·rstd in float32, rounded to the activations' dtype (the forward's y before the gain)
    xs = new Float32Array(xw.length);
    for (let i = 0; i < xw.length; i++) xs[i] = viaHalf(Math.fround(xw[i]! * rstd[Math.floor(i / p.dim)]!), p.dtype);
    a = new Float32Array(rstd.length).fill(1);
    if (p.s.wdt === p.dtype) {
      // A weight of the activations' own half dtype: PyTorch's weight * y_half multiplies two
      // half tensors, so autograd rounds each row's term dy·round(x·rstd) to that dtype before
      // the rows are summed.
      const t = new Float32Array(xw.length);
      for (let i = 0; i < xw.length; i++) t[i] = viaHalf(Math.fround(dyw[i]! * xs[i]!), p.dtype);
      const f = dweightF32(t, new Float32Array(xw.length).fill(1), a, p.dim);
      return fromF32Array(f, p.dtype);
    }
  }
  const f = dweightF32(dyw, xs, a, p.dim);
  return p.s.wdt === 'float32' ? f : fromF32Array(f, p.s.wdt as HalfDtype);
}

const dxTol = (p: Problem, terms: ArrayLike<number>): Tolerance => (i, r) => ulpAt(r, p.dtype) + DX_K * terms[i]!;
const dwTol = (p: Problem, abs: ArrayLike<number>, extra: number): Tolerance => {
  const f32 = dweightTolerance(abs, p.rows, extra);
  return (i, r) => (isHalf(p.s.wdt) ? ulpAt(r, p.s.wdt) : 0) + f32(i, r);
};
const rstdTol: Tolerance = (_i, r) => RSTD_REL * Math.abs(r);

interface Outputs {
  y: Arr;
  rstd: Float32Array;
  dx: Arr;
  dweight: Arr | null;
}

/** Forward (rstd saved) and backward (with that rstd) of `p` on plain arrays. */
function runPlain(m: RmsNorm, p: Problem, extra: Record<string, unknown> = {}): Outputs {
  const rstd = new Float32Array(p.rows);
  const y = fwd(m)(p.x, p.weight, { ...p.opts, ...extra, rstd });
  const b = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, ...extra, rstd });
  return { y, rstd, ...b };
}

async function runPool(pool: RmsNormPool, p: Problem, extra: Record<string, unknown> = {}): Promise<Outputs> {
  const rstd = new Float32Array(p.rows);
  const y = (await pool.rmsNorm(p.x, p.weight, { ...p.opts, ...extra, rstd } as never)) as Arr;
  const b = (await pool.rmsNormBackward(p.dy, p.x, p.weight as never, { ...p.opts, ...extra, rstd } as never)) as Outputs;
  return { y, rstd, dx: b.dx, dweight: b.dweight };
}

function expectSameOutputs(got: Outputs, want: Outputs, what: string) {
  expect(same(got.y, want.y), `${what}: y`).toBe('same');
  expect(same(got.rstd, want.rstd), `${what}: rstd`).toBe('same');
  expect(same(got.dx, want.dx), `${what}: dx`).toBe('same');
  expect(same(got.dweight, want.dweight), `${what}: dweight`).toBe('same');
}

type Alloc = { allocU16(n: number): { view(): Uint16Array; free(): void }; allocF32(n: number): { view(): Float32Array; free(): void } };

/**
 * The same calls on views of wasm memory (allocU16 / allocF32 from `a`): nothing copied. With
 * `inPlace`, `out: x` (on a copy of x) and `dx: dy`.
 */
async function runViews(
  a: Alloc,
  call: { f: (x: Arr, w: Arr | null, o: Record<string, unknown>) => unknown; b: (dy: Arr, x: Arr, w: Arr | null, o: Record<string, unknown>) => unknown },
  p: Problem,
  extra: Record<string, unknown>,
  inPlace: boolean,
): Promise<Outputs> {
  const n = p.rows * p.dim;
  const wAlloc = (len: number) => (p.weight === null ? null : p.weight instanceof Float32Array ? a.allocF32(len) : a.allocU16(len));
  // every allocation first, then views (an allocation may grow memory and detach older views)
  const bx = a.allocU16(n);
  const bxo = a.allocU16(n); // forward's out, or the copy of x it overwrites in place
  const bdy = a.allocU16(n);
  const bdx = inPlace ? null : a.allocU16(n);
  const br = a.allocF32(p.rows);
  const bw = wAlloc(p.dim);
  const bdw = wAlloc(p.dim);
  bx.view().set(p.x);
  bdy.view().set(p.dy);
  if (inPlace) bxo.view().set(p.x);
  if (bw) (bw.view() as Arr).set(p.weight!);
  const wv = () => (bw ? (bw.view() as Arr) : null);
  await call.f(inPlace ? bxo.view() : bx.view(), wv(), { ...p.opts, ...extra, out: bxo.view(), rstd: br.view() });
  const dxv = () => (inPlace ? bdy.view() : bdx!.view());
  await call.b(bdy.view(), bx.view(), wv(), { ...p.opts, ...extra, rstd: br.view(), dx: dxv(), ...(bdw ? { dweight: bdw.view() } : {}) });
  const out: Outputs = {
    y: bxo.view().slice(),
    rstd: br.view().slice(),
    dx: dxv().slice(),
    dweight: bdw ? (bdw.view() as Arr).slice() : null,
  };
  for (const b of [bx, bxo, bdy, bdx, br, bw, bdw]) b?.free();
  return out;
}

// ---------------------------------------------------------------------------------------------
// 1. Errors
// ---------------------------------------------------------------------------------------------

describe('bad half-precision arguments: named, thrown before anything is written, module still works', () => {
  const ROWS = 4;
  const DIM = 8;
  const N = ROWS * DIM;
  const SENT16 = 0xbeef;
  const SENT32 = Math.fround(-12345.678);
  const xh = fromF32Array(randn(N, 1), 'bfloat16');
  const dyh = fromF32Array(randn(N, 2), 'bfloat16');
  const resh = fromF32Array(randn(N, 4, 0.5), 'bfloat16');
  const wh = fromF32Array(testWeight(DIM, 3), 'bfloat16');
  const x32 = randn(N, 1);
  const w32 = testWeight(DIM, 3);

  /** Arrays for one call, each recorded with a copy of its bytes; outputs pre-filled with a sentinel. */
  class Ctx {
    private readonly seen: [string, Arr, Uint8Array][] = [];
    private at16 = 0;
    private at32 = 0;
    constructor(private readonly src: null | { u16: () => Uint16Array; f32: () => Float32Array }) {}
    private reg<T extends Arr>(name: string, a: T): T {
      this.seen.push([name, a, new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice()]);
      return a;
    }
    u16(n: number, name: string, values?: Uint16Array): Uint16Array {
      let a: Uint16Array;
      if (this.src) {
        a = this.src.u16().subarray(this.at16, this.at16 + n);
        this.at16 += n + 5;
      } else a = new Uint16Array(n);
      if (values) a.set(values);
      else a.fill(SENT16);
      return this.reg(name, a);
    }
    f32(n: number, name: string, values?: Float32Array): Float32Array {
      let a: Float32Array;
      if (this.src) {
        a = this.src.f32().subarray(this.at32, this.at32 + n);
        this.at32 += n + 3;
      } else a = new Float32Array(n);
      if (values) a.set(values);
      else a.fill(SENT32);
      return this.reg(name, a);
    }
    /** Names of recorded arrays whose bytes changed. */
    changed(): string[] {
      return this.seen
        .filter(([, a, copy]) => {
          const now = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
          return now.some((v, i) => v !== copy[i]);
        })
        .map(([n]) => n);
    }
  }

  interface Api {
    rmsNorm: (x: unknown, w: unknown, o?: unknown) => unknown;
    rmsNormBackward: (dy: unknown, x: unknown, w: unknown, o?: unknown) => unknown;
  }
  interface Bad {
    what: string;
    cls: typeof TypeError | typeof RangeError;
    fn: 'rmsNorm' | 'rmsNormBackward';
    names: string[];
    call: (api: Api, c: Ctx) => unknown;
  }
  const BAD: Bad[] = [
    {
      what: 'a Uint16Array x without dtype', cls: TypeError, fn: 'rmsNorm',
      names: ['x is a Uint16Array', 'options.dtype', "'float16' or 'bfloat16'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "a Float32Array x with dtype 'bfloat16'", cls: TypeError, fn: 'rmsNorm',
      names: ['x is a Float32Array(32)', "options.dtype is 'bfloat16'", 'Uint16Array'],
      call: (a, c) => a.rmsNorm(c.f32(N, 'x', x32), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "a Uint16Array x with dtype 'float32'", cls: TypeError, fn: 'rmsNorm',
      names: ['x is a Uint16Array(32)', "options.dtype is 'float32'", 'Float32Array'],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.f32(DIM, 'weight', w32), { dtype: 'float32', out: c.f32(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      // both x and the weight are wrong: the first argument is the one named
      what: "a Uint16Array x and weight with dtype 'float32'", cls: TypeError, fn: 'rmsNorm',
      names: ['x is a Uint16Array(32)', "options.dtype is 'float32'", 'Float32Array'],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'float32', out: c.f32(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "an unknown dtype 'bf16'", cls: TypeError, fn: 'rmsNorm',
      names: ['options.dtype', '"bf16"', "'float32', 'float16' or 'bfloat16'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bf16', out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "an unknown weightDtype 'half'", cls: TypeError, fn: 'rmsNorm',
      names: ['options.weightDtype', '"half"', "'float32', 'float16' or 'bfloat16'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', weightDtype: 'half', out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: 'a Uint16Array weight with float32 activations and no weightDtype', cls: TypeError, fn: 'rmsNorm',
      names: ['weight is a Uint16Array', 'options.weightDtype'],
      call: (a, c) => a.rmsNorm(c.f32(N, 'x', x32), c.u16(DIM, 'weight', wh), { out: c.f32(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "a Float32Array weight with weightDtype 'float16'", cls: TypeError, fn: 'rmsNorm',
      names: ['weight is a Float32Array(8)', "options.weightDtype is 'float16'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.f32(DIM, 'weight', w32), { dtype: 'bfloat16', weightDtype: 'float16', out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: 'a Float32Array out for bfloat16 x', cls: TypeError, fn: 'rmsNorm',
      names: ['options.out is a Float32Array(32)', "options.dtype is 'bfloat16'", 'Uint16Array'],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', out: c.f32(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: 'a Uint16Array out for float32 x', cls: TypeError, fn: 'rmsNorm',
      names: ['options.out is a Uint16Array(32)', "options.dtype is 'float32'"],
      call: (a, c) => a.rmsNorm(c.f32(N, 'x', x32), c.f32(DIM, 'weight', w32), { out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: 'a Float32Array residual for bfloat16 x', cls: TypeError, fn: 'rmsNorm',
      names: ['options.residual is a Float32Array(32)', "'bfloat16'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', residual: c.f32(N, 'residual', x32), out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: "castingMode 'foo' (the residual, which would receive h, untouched)", cls: TypeError, fn: 'rmsNorm',
      names: ['options.castingMode', '"foo"', "'none', 'llama' or 'gemma'"],
      call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', castingMode: 'foo', residual: c.u16(N, 'residual', resh), out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') }),
    },
    {
      what: 'a Uint16Array dy without dtype', cls: TypeError, fn: 'rmsNormBackward',
      names: ['dy is a Uint16Array', 'options.dtype'],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dx: c.u16(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: 'a Float32Array x with bfloat16 dy', cls: TypeError, fn: 'rmsNormBackward',
      names: ['x is a Float32Array(32)', "options.dtype is 'bfloat16'"],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.f32(N, 'x', x32), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', dx: c.u16(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: "an unknown dtype 'float64' (backward)", cls: TypeError, fn: 'rmsNormBackward',
      names: ['options.dtype', '"float64"'],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'float64', dx: c.u16(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: 'a Float32Array dx for bfloat16 dy', cls: TypeError, fn: 'rmsNormBackward',
      names: ['options.dx is a Float32Array(32)', "'bfloat16'"],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', dx: c.f32(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: 'a Float32Array dweight for a bfloat16 weight', cls: TypeError, fn: 'rmsNormBackward',
      names: ['options.dweight is a Float32Array(8)', "'bfloat16'", 'Uint16Array'],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', dx: c.u16(N, 'dx'), dweight: c.f32(DIM, 'dweight') }),
    },
    {
      what: 'a Uint16Array dweight for a float32 weight', cls: TypeError, fn: 'rmsNormBackward',
      names: ['options.dweight is a Uint16Array(8)', "options.weightDtype is 'float32'"],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.f32(DIM, 'weight', w32), { dtype: 'bfloat16', dx: c.u16(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: 'a Uint16Array weight with float32 dy and no weightDtype (backward)', cls: TypeError, fn: 'rmsNormBackward',
      names: ['weight is a Uint16Array', 'options.weightDtype'],
      call: (a, c) => a.rmsNormBackward(c.f32(N, 'dy', x32), c.f32(N, 'x', x32), c.u16(DIM, 'weight', wh), { dx: c.f32(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: "castingMode 'foo' (backward)", cls: TypeError, fn: 'rmsNormBackward',
      names: ['options.castingMode', '"foo"'],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', castingMode: 'foo', dx: c.u16(N, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
    {
      what: 'a bfloat16 dx of the wrong length', cls: RangeError, fn: 'rmsNormBackward',
      names: ['options.dx.length must be 32', 'got 31'],
      call: (a, c) => a.rmsNormBackward(c.u16(N, 'dy', dyh), c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', dx: c.u16(N - 1, 'dx'), dweight: c.u16(DIM, 'dweight') }),
    },
  ];
  // Only where the engine has Float16Array (not Node 20: these are then skipped, see below).
  const BAD_F16: Bad[] = F16
    ? [
        {
          what: "a Float16Array x with dtype 'bfloat16'", cls: TypeError, fn: 'rmsNorm',
          names: ['x is a Float16Array(32)', "options.dtype is 'bfloat16'"],
          call: (a, c) => {
            const x = new F16(N);
            return a.rmsNorm(x, c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', out: c.u16(N, 'out'), rstd: c.f32(ROWS, 'rstd') });
          },
        },
        {
          what: 'a Float16Array out for bfloat16 x', cls: TypeError, fn: 'rmsNorm',
          names: ['options.out is a Float16Array(32)', "options.dtype is 'bfloat16'"],
          call: (a, c) => a.rmsNorm(c.u16(N, 'x', xh), c.u16(DIM, 'weight', wh), { dtype: 'bfloat16', out: new F16(N), rstd: c.f32(ROWS, 'rstd') }),
        },
      ]
    : [];

  it.skipIf(F16 !== undefined)('Float16Array cases are not run: this engine has no Float16Array (Node 20)', () => {
    expect(F16).toBeUndefined();
  });

  describe.each(BUILDS)('%s build', (build) => {
    let m: RmsNorm;
    let u16buf: { view(): Uint16Array; free(): void };
    let f32buf: { view(): Float32Array; free(): void };
    let goodY: Uint16Array;
    let goodB: { dx: Arr; dweight: Arr | null };
    beforeAll(async () => {
      m = await loadRmsNorm(build);
      goodY = fwd(m)(xh, wh, { dtype: 'bfloat16' }) as Uint16Array;
      goodB = bwd(m)(dyh, xh, wh, { dtype: 'bfloat16' });
      // one allocation each up front: the view contexts carve from them without growing memory
      u16buf = m.allocU16(1024);
      f32buf = m.allocF32(256);
    });
    afterAll(() => {
      u16buf.free();
      f32buf.free();
    });

    for (const where of ['plain arrays', 'wasm views'] as const) {
      it.each([...BAD, ...BAD_F16].map((b) => [b.what, b] as const))(`${where}: %s`, (_w, bad) => {
        const c = new Ctx(where === 'plain arrays' ? null : { u16: () => u16buf.view(), f32: () => f32buf.view() });
        const e = thrown(() => bad.call(m as unknown as Api, c));
        expect(e).toBeInstanceOf(bad.cls);
        expect(e.message.startsWith(`${bad.fn}: `), e.message).toBe(true);
        for (const s of bad.names) expect(e.message).toContain(s);
        expect(c.changed(), 'arrays written before the error').toEqual([]);
        // the module still works, with the same bits
        expect(same(fwd(m)(xh, wh, { dtype: 'bfloat16' }), goodY)).toBe('same');
        const b = bwd(m)(dyh, xh, wh, { dtype: 'bfloat16' });
        expect(same(b.dx, goodB.dx)).toBe('same');
        expect(same(b.dweight, goodB.dweight)).toBe('same');
      });
    }
  });

  describe('pool (threads 2): the same calls reject', () => {
    let pool: RmsNormPool;
    let goodY: Uint16Array;
    beforeAll(async () => {
      pool = await createPool({ threads: 2 });
      goodY = (await pool.rmsNorm(xh, wh, { dtype: 'bfloat16' })) as Uint16Array;
    });
    afterAll(() => pool?.destroy());
    it.each([...BAD, ...BAD_F16].map((b) => [b.what, b] as const))('%s', async (_w, bad) => {
      const c = new Ctx(null);
      const e = await rejection(bad.call(pool as unknown as Api, c) as Promise<unknown>);
      expect(e).toBeInstanceOf(bad.cls);
      expect(e.message).toContain(bad.fn);
      for (const s of bad.names) expect(e.message).toContain(s);
      expect(c.changed(), 'arrays written before the error').toEqual([]);
      expect(same((await pool.rmsNorm(xh, wh, { dtype: 'bfloat16' })) as Uint16Array, goodY)).toBe('same');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// 2. Numerics vs the float64 reference
// ---------------------------------------------------------------------------------------------

/** Checks y (≤ 1 ulp) and rstd (2e-6) against refForward on p's widened inputs (or `xw` instead of them). */
function checkForwardRef(p: Problem, y: Arr, rstd: Float32Array, v: { offset?: number; stat?: number } = {}, xw = p.xw) {
  expect(y).toBeInstanceOf(Uint16Array);
  const ref = refForward(xw, p.ww, p.dim, EPS, v);
  expect(ulpMismatch(y as Uint16Array, ref.y, p.dtype, 1, 'y')).toBeNull();
  expect(mismatch(rstd, ref.rstd, rstdTol, 'rstd')).toBeNull();
}

/** Checks dx and dweight against refBackward (tolerances in the module doc); `rstd` null: recomputed. */
function checkBackwardRef(
  p: Problem,
  b: { dx: Arr; dweight: Arr | null },
  rstd: Float32Array | null,
  v: { offset?: number; stat?: number; dresidual?: Float32Array } = {},
  xw = p.xw,
) {
  expect(b.dx).toBeInstanceOf(Uint16Array);
  const rb = refBackward(p.dyw, xw, p.ww, p.dim, EPS, rstd, v);
  expect(mismatch(toF32Array(b.dx as Uint16Array, p.dtype), rb.dx, dxTol(p, rb.dxTerms), 'dx')).toBeNull();
  if (p.weight === null) {
    expect(b.dweight).toBeNull();
    return;
  }
  expect(b.dweight).toBeInstanceOf(p.s.wdt === 'float32' ? Float32Array : Uint16Array);
  expect(mismatch(widenW(b.dweight!, p.s.wdt!), rb.dweight!, dwTol(p, rb.dweightAbs!, rstd ? 0 : 12), 'dweight')).toBeNull();
  if (rstd) expect(same(b.dweight, dweightExact(p, p.dyw, xw, rstd)), 'dweight: float32 32-row blocks, rounded once').toBe('same');
}

describe('numerics vs the float64 reference (simd build)', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });
  // 64 × 4099 half rows are 512 KiB per array, far past the 256 KiB (65536-float) window: the
  // plain-array call streams them through it in several segments.
  const SHAPES: [number, number][] = [[40, 1], [40, 3], [40, 8], [24, 17], [6, 4096], [6, 4099], [64, 4099]];

  describe.each(SETUPS)('$label', (s) => {
    it.each(SHAPES)('%i x %i: y ≤ 1 ulp, rstd 2e-6, dx / dweight (saved and recomputed rstd)', (rows, dim) => {
      const p = problem(s, rows, dim, 100 * rows + dim);
      const rstd = new Float32Array(rows);
      const y = fwd(m)(p.x, p.weight, { ...p.opts, rstd });
      checkForwardRef(p, y, rstd);
      // the default y is of x's type, and so is dx; dweight of the weight's
      const b = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, rstd });
      checkBackwardRef(p, b, rstd);
      const b2 = bwd(m)(p.dy, p.x, p.weight, { ...p.opts });
      checkBackwardRef(p, b2, null);
    });
  });

  it('defaults: a Uint16Array weight takes the half dtype; a float32 weight gives a Float32Array dweight', () => {
    const p = problem(SETUPS[0]!, 5, 17, 7);
    const a = fwd(m)(p.x, p.weight, { dtype: 'bfloat16' });
    const b = fwd(m)(p.x, p.weight, { dtype: 'bfloat16', weightDtype: 'bfloat16' });
    expect(same(a, b)).toBe('same');
    const q = problem(SETUPS[1]!, 5, 17, 7);
    const g = bwd(m)(q.dy, q.x, q.weight, { dtype: 'bfloat16' });
    expect(g.dx).toBeInstanceOf(Uint16Array);
    expect(g.dweight).toBeInstanceOf(Float32Array);
  });
});

// ---------------------------------------------------------------------------------------------
// 3. The same bits: builds, placements, thread counts, cuts
// ---------------------------------------------------------------------------------------------

/** castingMode / variant combinations compared across paths (offset only with a weight). */
const MODES = (s: Setup): [string, Record<string, unknown>][] => [
  ['none', {}],
  ['llama', { castingMode: 'llama' }],
  ...(s.wdt !== null
    ? ([['gemma, offset 1, partial 0.5', { castingMode: 'gemma', offset: 1, partial: 0.5 }]] as [string, Record<string, unknown>][])
    : ([['partial 0.5', { partial: 0.5 }]] as [string, Record<string, unknown>][])),
];
const BIT_SHAPES: [number, number][] = [[5, 17], [64, 4099]];
const BIT_CASES = SETUPS.flatMap((s) => BIT_SHAPES.flatMap(([r, d]) => MODES(s).map(([mn, extra]) => [`${s.label}, ${r} x ${d}, ${mn}`, s, r, d, extra] as const)));

describe('the same bits from every build', () => {
  const ms: Partial<Record<(typeof BUILDS)[number], RmsNorm>> = {};
  beforeAll(async () => {
    for (const b of BUILDS) ms[b] = await loadRmsNorm(b);
  });
  it.each(BIT_CASES)('%s', (_n, s, rows, dim, extra) => {
    const p = problem(s, rows, dim, 7 * rows + dim);
    const want = runPlain(ms.simd!, p, extra);
    for (const b of BUILDS.filter((b) => b !== 'simd')) expectSameOutputs(runPlain(ms[b]!, p, extra), want, `${b} vs simd`);
  });
});

describe('float16 forward and backward: the bits of the float32 path on the widened rows, rounded once', () => {
  // A float16 row is widened into float32 once (rows up to 8192 elements) or twice (longer
  // rows); either way every output and rstd must be the float32 path's. Rows of random bit
  // patterns (NaN, Inf and subnormals included), ordinary values, and subnormals only. A NaN
  // output must be a NaN; which NaN's payload survives a multiply of two NaNs is the engine's
  // choice of operand order, not the kernel's.
  const isNaN16 = (v: number) => (v & 0x7c00) === 0x7c00 && (v & 0x3ff) !== 0;
  const ROW_KINDS = ['bits', 'normal', 'subnormal'] as const;
  function row16(kind: (typeof ROW_KINDS)[number], dim: number, next: () => number): Uint16Array {
    const r = new Uint16Array(dim);
    const normal = gaussian(next);
    for (let i = 0; i < dim; i++) {
      const u = Math.floor(next() * 65536);
      r[i] = kind === 'bits' ? u : kind === 'subnormal' ? u & 0x83ff : f32ToHalf(Math.fround(normal()), 'float16');
    }
    return r;
  }
  it.each(BUILDS)('%s build: dims 7 to 8193, with and without weight and offset', async (build) => {
    const m = await loadRmsNorm(build);
    for (const dim of [7, 1024, 4099, 8192, 8193]) {
      const next = rng(dim);
      const rows = ROW_KINDS.length;
      const x = new Uint16Array(rows * dim);
      ROW_KINDS.forEach((k, r) => x.set(row16(k, dim, next), r * dim));
      const weight = Float32Array.from({ length: dim }, () => 0.5 + next());
      for (const [w, offset] of [[weight, 0], [weight, 1], [null, 0]] as const) {
        const rstd = new Float32Array(rows);
        const y = m.rmsNorm(x, w, { dim, dtype: 'float16', offset, rstd });
        const want32 = new Float32Array(rows);
        const y32 = m.rmsNorm(toF32Array(x, 'float16'), w, { dim, offset, rstd: want32 });
        const what = `dim ${dim}, ${w ? `weight, offset ${offset}` : 'no weight'}`;
        expect(Array.from(rstd), what).toEqual(Array.from(want32));
        const want = fromF32Array(y32, 'float16');
        const bad = y.findIndex((v, i) => v !== want[i] && !(isNaN16(v) && isNaN16(want[i]!)));
        expect(bad, `${what}: element ${bad} is 0x${y[bad]?.toString(16)}, want 0x${want[bad]?.toString(16)}`).toBe(-1);
      }
    }
  });

  it.each(BUILDS)('%s build, backward: dx the float32 backward of the widened rows rounded once, dweight its bits', async (build) => {
    // The float16 backward also widens a row's x and dy once (rows up to 8192 elements).
    const m = await loadRmsNorm(build);
    for (const dim of [7, 1024, 4099, 8192, 8193]) {
      const next = rng(dim + 1);
      const rows = ROW_KINDS.length;
      const [x, dy, dh] = [0, 1, 2].map(() => {
        const a = new Uint16Array(rows * dim);
        ROW_KINDS.forEach((k, r) => a.set(row16(k === 'bits' ? 'normal' : k, dim, next), r * dim));
        return a;
      }) as [Uint16Array, Uint16Array, Uint16Array];
      x.set(row16('bits', dim, next), 0); // NaN, Inf and subnormal x in the first row only
      const weight = Float32Array.from({ length: dim }, () => 0.5 + next());
      const rstd = new Float32Array(rows);
      m.rmsNorm(toF32Array(x, 'float16'), weight, { dim, rstd });
      const cases = [
        { w: weight, o: { offset: 0 } },
        { w: weight, o: { offset: 1, rstd } },
        { w: weight, o: { partial: 0.5 } },
        { w: weight, o: { dresidual: dh } },
        { w: null, o: { rstd } },
      ];
      for (const { w, o } of cases) {
        const what = `dim ${dim}, ${w ? 'weight' : 'no weight'}, ${Object.keys(o).join(' ')}`;
        const got = m.rmsNormBackward(dy, x, w, { dim, dtype: 'float16', ...o });
        const o32 = 'dresidual' in o ? { ...o, dresidual: toF32Array(dh, 'float16') } : o;
        const want32 = m.rmsNormBackward(toF32Array(dy, 'float16'), toF32Array(x, 'float16'), w, { dim, ...o32 });
        const want = fromF32Array(want32.dx, 'float16');
        const dx = got.dx as Uint16Array;
        const bad = dx.findIndex((v, i) => v !== want[i] && !(isNaN16(v) && isNaN16(want[i]!)));
        expect(bad, `${what}: dx[${bad}] is 0x${dx[bad]?.toString(16)}, want 0x${want[bad]?.toString(16)}`).toBe(-1);
        if (w) {
          const dw = got.dweight as Float32Array;
          const dw32 = want32.dweight!;
          const badW = dw.findIndex((v, i) => !Object.is(v, dw32[i]) && !(Number.isNaN(v) && Number.isNaN(dw32[i])));
          expect(badW, `${what}: dweight[${badW}]`).toBe(-1);
        }
      }
    }
  });
});

describe.each(BUILDS.filter((b) => b !== 'scalar'))('%s build: plain arrays, zero-copy views (allocU16), in place: the same bits', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });
  it.each(BIT_CASES)('%s', async (_n, s, rows, dim, extra) => {
    const p = problem(s, rows, dim, 7 * rows + dim);
    const want = runPlain(m, p, extra);
    // plain arrays in place: out: x, dx: dy
    const xc = p.x.slice();
    const dyc = p.dy.slice();
    const rstd = new Float32Array(rows);
    expect(fwd(m)(xc, p.weight, { ...p.opts, ...extra, out: xc, rstd })).toBe(xc);
    const b = bwd(m)(dyc, p.x, p.weight, { ...p.opts, ...extra, rstd, dx: dyc });
    expect(b.dx).toBe(dyc);
    expectSameOutputs({ y: xc, rstd, dx: dyc, dweight: b.dweight }, want, 'plain in place');
    // given outputs
    const out = new Uint16Array(p.x.length);
    const dx = new Uint16Array(p.x.length);
    const dweight = p.weight === null ? undefined : p.weight instanceof Float32Array ? new Float32Array(dim) : new Uint16Array(dim);
    const r2 = new Float32Array(rows);
    fwd(m)(p.x, p.weight, { ...p.opts, ...extra, out, rstd: r2 });
    bwd(m)(p.dy, p.x, p.weight, { ...p.opts, ...extra, rstd: r2, dx, ...(dweight ? { dweight } : {}) });
    expectSameOutputs({ y: out, rstd: r2, dx, dweight: dweight ?? null }, want, 'plain, outputs given');
    const call = { f: fwd(m), b: bwd(m) };
    expectSameOutputs(await runViews(m, call, p, extra, false), want, 'zero-copy views');
    expectSameOutputs(await runViews(m, call, p, extra, true), want, 'zero-copy views in place');
  });
});

describe('top-level API (init, rmsNorm, rmsNormBackward, allocU16): the same bits as the instance of the default build', () => {
  it('bfloat16 with a bfloat16 weight, 64 x 4099, plain and allocU16 views', async () => {
    await init();
    const m = await loadRmsNorm();
    expect(instance()).toBe(m);
    const p = problem(SETUPS[0]!, 64, 4099, 5);
    const want = runPlain(m, p);
    const rstd = new Float32Array(p.rows);
    const y = rmsNorm(p.x, p.weight, { dtype: 'bfloat16', rstd });
    const b = rmsNormBackward(p.dy, p.x, p.weight as Uint16Array, { dtype: 'bfloat16', rstd });
    expectSameOutputs({ y, rstd, ...b }, want, 'top-level plain');
    const alloc: Alloc = { allocU16, allocF32: (n) => m.allocF32(n) };
    const call = { f: rmsNorm as unknown as Fwd, b: rmsNormBackward as unknown as Bwd };
    expectSameOutputs(await runViews(alloc, call, p, {}, false), want, 'top-level views');
  });
});

const POOL_SHAPES: [number, number][] = [[3, 17], [64, 4099], [257, 1031], [2100, 64]];
const POOL_SETUPS = [SETUPS[0]!, SETUPS[2]!, SETUPS[4]!, SETUPS[6]!];
const POOL_CASES = POOL_SETUPS.flatMap((s) =>
  POOL_SHAPES.flatMap(([r, d]) => MODES(s).slice(0, 2).map(([mn, extra]) => [`${s.label}, ${r} x ${d}, ${mn}`, s, r, d, extra] as const)),
);

describe.each([1, 2, 3])('pool with %i threads: the same bits as the sync API', (threads) => {
  let pool: RmsNormPool;
  let sync: RmsNorm;
  beforeAll(async () => {
    sync = await loadRmsNorm('simd');
    pool = await createPool({ threads });
    expect(pool.mode).toBe('threads');
    expect(pool.threads).toBe(threads);
  });
  afterAll(() => pool?.destroy());

  // 64 × 4099, 257 × 1031 and 2100 × 64 are above the inline threshold (128 Ki elements): sharded.
  it.each(POOL_CASES)('%s: y, rstd, dx, dweight', async (_n, s, rows, dim, extra) => {
    const p = problem(s, rows, dim, 13 * rows + dim);
    expectSameOutputs(await runPool(pool, p, extra), runPlain(sync, p, extra), `pool ${threads} vs sync`);
  });

  it('zero-copy views from pool.allocU16 (bfloat16, 257 x 1031, bfloat16 and float32 weights)', async () => {
    for (const s of [SETUPS[0]!, SETUPS[1]!]) {
      const p = problem(s, 257, 1031, 3);
      const call = {
        f: (x: Arr, w: Arr | null, o: Record<string, unknown>) => pool.rmsNorm(x, w, o as never),
        b: (dy: Arr, x: Arr, w: Arr | null, o: Record<string, unknown>) => pool.rmsNormBackward(dy, x, w as never, o as never),
      };
      expectSameOutputs(await runViews(pool as unknown as Alloc, call, p, {}, false), runPlain(sync, p), `pool ${threads} views`);
      expectSameOutputs(await runViews(pool as unknown as Alloc, call, p, {}, true), runPlain(sync, p), `pool ${threads} views in place`);
    }
  });
});

describe('streaming through the window vs a few rows at a time (simd build)', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });
  // 64 × 4099 and 200 × 1031 half rows: 512 KiB / 400 KiB per array, several window segments.
  const CASES = [SETUPS[0]!, SETUPS[1]!, SETUPS[2]!, SETUPS[3]!, SETUPS[6]!].flatMap((s) =>
    ([[64, 4099], [200, 1031]] as const).flatMap(([r, d]) =>
      (['none', 'llama'] as const).map((mode) => [`${s.label}, ${r} x ${d}, ${mode}`, s, r, d, mode] as const),
    ),
  );
  it.each(CASES)('%s', (_n, s, rows, dim, mode) => {
    const p = problem(s, rows, dim, 31 + rows);
    const o = { ...p.opts, castingMode: mode };
    const rstd = new Float32Array(rows);
    const y = fwd(m)(p.x, p.weight, { ...o, rstd }) as Uint16Array;
    const b = bwd(m)(p.dy, p.x, p.weight, { ...o, rstd });
    for (let r0 = 0; r0 < rows; r0 += 3) {
      const r1 = Math.min(rows, r0 + 3);
      const rc = new Float32Array(r1 - r0);
      const yc = fwd(m)(p.x.subarray(r0 * dim, r1 * dim), p.weight, { ...o, rstd: rc });
      expect(same(yc, y.subarray(r0 * dim, r1 * dim)), `y rows ${r0}..${r1}`).toBe('same');
      expect(same(rc, rstd.subarray(r0, r1)), `rstd rows ${r0}..${r1}`).toBe('same');
      const bc = bwd(m)(p.dy.subarray(r0 * dim, r1 * dim), p.x.subarray(r0 * dim, r1 * dim), p.weight, { ...o, rstd: rc });
      expect(same(bc.dx, (b.dx as Uint16Array).subarray(r0 * dim, r1 * dim)), `dx rows ${r0}..${r1}`).toBe('same');
    }
    // dweight of the streamed call (the open 32-row block carried across segments): the
    // exact float32 block sum, rounded once
    if (p.weight !== null) expect(same(b.dweight, dweightExact(p, p.dyw, p.xw, rstd, mode === 'llama')), 'dweight').toBe('same');
  });
});

// ---------------------------------------------------------------------------------------------
// 4. Variants with halves
// ---------------------------------------------------------------------------------------------

describe('variants with half activations (simd build)', () => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm('simd');
  });
  const VSETUPS = [SETUPS[0]!, SETUPS[1]!, SETUPS[3]!, SETUPS[4]!, SETUPS[6]!];
  const VCASES = VSETUPS.flatMap((s) => [17, 4099].map((dim) => [`${s.label}, dim ${dim}`, s, dim] as const));
  const ROWS = 8;

  it.each(VCASES)('%s: fused residual add (h rounded to the dtype, written to residual / residualOut)', (_n, s, dim) => {
    const p = problem(s, ROWS, dim, 41 + dim);
    const n = ROWS * dim;
    const res = fromF32Array(randn(n, 42 + dim, 0.5), p.dtype);
    const resw = toF32Array(res, p.dtype);
    const h = new Uint16Array(n);
    for (let i = 0; i < n; i++) h[i] = toHalf(p.xw[i]! + resw[i]!, p.dtype);
    const hw = toF32Array(h, p.dtype);

    const residual = res.slice();
    const rstd = new Float32Array(ROWS);
    const y = fwd(m)(p.x, p.weight, { ...p.opts, residual, rstd });
    expect(same(residual, h), 'h = round(x + residual) written into residual').toBe('same');
    checkForwardRef(p, y, rstd, {}, hw);

    const residual2 = res.slice();
    const residualOut = new Uint16Array(n);
    const y2 = fwd(m)(p.x, p.weight, { ...p.opts, residual: residual2, residualOut });
    expect(same(residualOut, h), 'h in residualOut').toBe('same');
    expect(same(residual2, res), 'residual untouched with residualOut').toBe('same');
    expect(same(y2, y)).toBe('same');

    const dres = fromF32Array(randn(n, 43 + dim, 0.3), p.dtype);
    const b = bwd(m)(p.dy, h, p.weight, { ...p.opts, rstd, dresidual: dres });
    checkBackwardRef(p, b, rstd, { dresidual: toF32Array(dres, p.dtype) }, hw);
  });

  it.each(VCASES)("%s: offset 1 with castingMode 'gemma' (a weight near 0)", (_n, s, dim) => {
    const p = problem(s, ROWS, dim, 51 + dim, randn(dim, 52 + dim, 0.1));
    const rstd = new Float32Array(ROWS);
    const y = fwd(m)(p.x, p.weight, { ...p.opts, offset: 1, castingMode: 'gemma', rstd });
    checkForwardRef(p, y, rstd, { offset: 1 });
    // gemma is 'none''s single rounding: the same bits as 'none' and as no castingMode
    expect(same(fwd(m)(p.x, p.weight, { ...p.opts, offset: 1, castingMode: 'none' }), y)).toBe('same');
    expect(same(fwd(m)(p.x, p.weight, { ...p.opts, offset: 1 }), y)).toBe('same');
    const b = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, offset: 1, castingMode: 'gemma', rstd });
    checkBackwardRef(p, b, rstd, { offset: 1 });
    const bn = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, offset: 1, rstd });
    expect(same(bn.dx, b.dx)).toBe('same');
    expect(same(bn.dweight, b.dweight)).toBe('same');
  });

  it.each(VCASES)('%s: partial 0.5 (pRMSNorm)', (_n, s, dim) => {
    const p = problem(s, ROWS, dim, 61 + dim);
    const stat = statOf(0.5, dim);
    const rstd = new Float32Array(ROWS);
    const y = fwd(m)(p.x, p.weight, { ...p.opts, partial: 0.5, rstd });
    checkForwardRef(p, y, rstd, { stat });
    const b = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, partial: 0.5, rstd });
    checkBackwardRef(p, b, rstd, { stat });
    const b2 = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, partial: 0.5 });
    checkBackwardRef(p, b2, null, { stat });
  });

  it.each(VCASES)("%s: castingMode 'llama' = round(round(x·rstd)·w), exactly; differs from 'none'", (_n, s, dim) => {
    const p = problem(s, ROWS, dim, 71 + dim);
    const n = ROWS * dim;
    const rstd = new Float32Array(ROWS);
    const y = fwd(m)(p.x, p.weight, { ...p.opts, castingMode: 'llama', rstd }) as Uint16Array;
    const rstdNone = new Float32Array(ROWS);
    const yNone = fwd(m)(p.x, p.weight, { ...p.opts, rstd: rstdNone }) as Uint16Array;
    expect(same(rstd, rstdNone), 'rstd does not depend on castingMode').toBe('same');
    expect(mismatch(rstd, refForward(p.xw, null, dim, EPS).rstd, rstdTol, 'rstd')).toBeNull();
    // exact emulation from the kernel's own float32 rstd
    const want = new Uint16Array(n);
    const t = new Float32Array(n); // round(x·rstd), widened
    for (let i = 0; i < n; i++) {
      t[i] = viaHalf(Math.fround(p.xw[i]! * rstd[Math.floor(i / dim)]!), p.dtype);
      want[i] = toHalf(t[i]! * p.ww![i % dim]!, p.dtype);
    }
    expect(same(y, want), "llama y vs round(round(x·rstd)·w) from the kernel's rstd").toBe('same');
    // and within 2 ulp of the float64 reference (two roundings)
    expect(ulpMismatch(y, refForward(p.xw, p.ww, dim, EPS).y, p.dtype, 2, 'llama y vs float64')).toBeNull();
    let differ = 0;
    for (let i = 0; i < n; i++) if (y[i] !== yNone[i]) differ++;
    if (isHalf(s.wdt)) expect(differ, "llama and 'none' differ somewhere for a half weight").toBeGreaterThan(0);

    // backward: gy = round(dy·w), dweight from round(x·rstd)
    const b = bwd(m)(p.dy, p.x, p.weight, { ...p.opts, castingMode: 'llama', rstd });
    const gy = new Float32Array(n);
    for (let i = 0; i < n; i++) gy[i] = viaHalf(p.dyw[i]! * p.ww![i % dim]!, p.dtype);
    const rb = refBackward(gy, p.xw, null, dim, EPS, rstd);
    expect(mismatch(toF32Array(b.dx as Uint16Array, p.dtype), rb.dx, dxTol(p, rb.dxTerms), 'llama dx')).toBeNull();
    expect(same(b.dweight, dweightExact(p, p.dyw, p.xw, rstd, true)), 'llama dweight: Σ dy·round(x·rstd), float32 blocks').toBe('same');
  });

  it('without a weight castingMode changes nothing (half activations)', () => {
    for (const s of [SETUPS[2]!, SETUPS[5]!]) {
      const p = problem(s, ROWS, 4099, 81);
      const want = runPlain(m, p);
      for (const castingMode of ['llama', 'gemma']) expectSameOutputs(runPlain(m, p, { castingMode }), want, `${s.label} ${castingMode}`);
    }
  });

  it('float32 activations: every castingMode gives identical bits (float32, bfloat16, float16 weights)', () => {
    const rows = 8;
    for (const dim of [17, 4099]) {
      const x = testRows(rows, dim, 91);
      const dy = randn(rows * dim, 92);
      const w32 = testWeight(dim, 93);
      const weights: [string, Arr, Record<string, unknown>][] = [
        ['float32', w32, {}],
        ['bfloat16', fromF32Array(w32, 'bfloat16'), { weightDtype: 'bfloat16' }],
        ['float16', fromF32Array(w32, 'float16'), { weightDtype: 'float16' }],
      ];
      for (const [wn, w, wo] of weights) {
        const run = (extra: Record<string, unknown>): Outputs => {
          const rstd = new Float32Array(rows);
          const y = fwd(m)(x, w, { ...wo, ...extra, rstd });
          return { y, rstd, ...bwd(m)(dy, x, w, { ...wo, ...extra, rstd }) };
        };
        const want = run({});
        expect(want.y).toBeInstanceOf(Float32Array);
        expect(want.dweight).toBeInstanceOf(wn === 'float32' ? Float32Array : Uint16Array);
        for (const castingMode of ['none', 'llama', 'gemma']) expectSameOutputs(run({ castingMode }), want, `dim ${dim}, ${wn} weight, ${castingMode}`);
        expectSameOutputs(run({ castingMode: 'llama', offset: 1 }), run({ offset: 1 }), `dim ${dim}, ${wn} weight, llama offset 1`);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 5. Memory
// ---------------------------------------------------------------------------------------------

describe.each(BUILDS)('%s build: half-precision calls on plain arrays do not grow memory', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
  });
  it('1000 bfloat16 forward + backward calls (bf16 / f32 / no weight, llama), plus streamed large ones', () => {
    const bytes = () => m.wasm.memory.buffer.byteLength;
    const small = [SETUPS[0]!, SETUPS[1]!, SETUPS[2]!, SETUPS[6]!].map((s, k) => problem(s, 8, 1024, 200 + k));
    const big = problem(SETUPS[0]!, 64, 4099, 210);
    const rand = rng(5);
    const once = (p: Problem, extra: Record<string, unknown> = {}) => {
      const rstd = new Float32Array(p.rows);
      fwd(m)(p.x, p.weight, { ...p.opts, ...extra, rstd });
      bwd(m)(p.dy, p.x, p.weight, { ...p.opts, ...extra, rstd });
      bwd(m)(p.dy, p.x, p.weight, { ...p.opts, ...extra });
    };
    // warm-up: every shape once (sizes the scratch region)
    for (const p of small) once(p);
    once(big);
    const before = bytes();
    for (let i = 0; i < 1000; i++) {
      const p = small[i % small.length]!;
      once(p, rand() < 0.5 ? {} : { castingMode: 'llama' });
      if (i % 100 === 0) once(big);
    }
    expect(bytes()).toBe(before);
  });
});
