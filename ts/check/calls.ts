/**
 * The checks of whole calls: a forward, a backward, a layer's creation. Each returns one record
 * (the arrays as the kernel takes them, the row count and the kernel's {@link Params}), which
 * the sync API, the pool, the layer and the file functions all use as is.
 * @module
 */
import { Dtype as DT, LLAMA_W } from '../abi.js';
import type { Data, Params } from '../ops.js';
import type { FloatArray } from '../types.js';
import { f32, kindOf, KIND_F32, optF32, optTyped, rowsOf, typed } from './arrays.js';
import { NO_EXTRA_KEYS, options } from './options.js';
import { disjointOrSame, distinctOutputs } from './overlap.js';
import { actDtype, castingBits, dimOf, eps, offsetOf, partialOf, weightDtype, weightOf } from './scalars.js';

/** A checked forward call. */
export interface ForwardArgs {
  x: Data;
  weight: Data | null;
  out: Data | null;
  /** `options.out` as the caller gave it (returned as is). */
  outGiven: FloatArray | null;
  rstd: Float32Array | null;
  /** The residual (fused add), or null. */
  residual: Data | null;
  /** Where h goes: residualOut, or the residual itself; null without a residual. */
  h: Data | null;
  rows: number;
  dim: number;
  params: Params;
  /** How `x` was given (KIND_*): the type of a result the library allocates. */
  xKind: number;
  /**
   * The outputs (out, rstd) are plain arrays that share no memory with the call's other arrays,
   * known without looking (a layer's own outputs, when x is not one of them): placement skips
   * their address lookup and the overlap check.
   */
  outputsApart: boolean;
}

/** A checked backward call. */
export interface BackwardArgs {
  dy: Data;
  x: Data;
  weight: Data | null;
  rstd: Float32Array | null;
  dresidual: Data | null;
  dx: Data | null;
  dxGiven: FloatArray | null;
  dweight: Data | null;
  dweightGiven: FloatArray | null;
  rows: number;
  dim: number;
  params: Params;
  /** How `dy` and the weight were given (KIND_*): the types of results the library allocates. */
  xKind: number;
  wKind: number;
  /** The outputs (dx, dweight) are plain arrays apart from the call's other arrays: as ForwardArgs's. */
  outputsApart: boolean;
}

const DTYPE_KEYS = ['dtype', 'weightDtype', 'castingMode'];
const FORWARD_KEYS: readonly string[] = ['dim', 'eps', 'out', 'rstd', 'residual', 'residualOut', 'offset', 'partial', ...DTYPE_KEYS];
const BACKWARD_KEYS: readonly string[] = ['dim', 'eps', 'rstd', 'dx', 'dweight', 'dresidual', 'offset', 'partial', ...DTYPE_KEYS];
const DTN = 'options.dtype';

/** Checks a forward call; `extraKeys` are further option names the caller handles itself. */
export function checkForward(
  fn: string,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): ForwardArgs {
  const o = options(fn, opts, FORWARD_KEYS, extraKeys);
  const act = actDtype(fn, 'x', x, o.dtype);
  const xa = typed(fn, 'x', x, act, DTN);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  const rows = rowsOf(fn, 'x', xa, dim);
  const out = optTyped(fn, 'options.out', o.out, xa.length, 'x.length', act, DTN);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  distinctOutputs(fn, 'options.out', out, 'options.rstd', rstd);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const dtypes = act | castingBits(fn, o.castingMode);
  const { residual, h } = fusedAdd(fn, o, xa, act, DTN, out, rstd, w);
  const outGiven = out === null ? null : (o.out as FloatArray);
  const params: Params = { eps: e, offset, stat, dtypes, wdt };
  return { x: xa, weight: w, out, outGiven, rstd, residual, h, rows, dim, params, xKind: kindOf(x), outputsApart: false };
}

/**
 * The fused residual add's arrays of a forward (`options.residual`, `options.residualOut`),
 * checked against x and the outputs: the residual and where `h = x + residual` goes (the
 * residual itself by default), both null without one. `dtn` names what says their dtype.
 */
function fusedAdd(
  fn: string, o: Readonly<Record<string, unknown>>, xa: Data, act: number, dtn: string, out: Data | null, rstd: Float32Array | null, w: Data | null,
): { residual: Data | null; h: Data | null } {
  const residual = optTyped(fn, 'options.residual', o.residual, xa.length, 'x.length', act, dtn);
  if (residual === null && o.residualOut !== undefined) {
    throw new TypeError(`${fn}: options.residualOut was given without options.residual (it receives x + residual)`);
  }
  const given = optTyped(fn, 'options.residualOut', o.residualOut, xa.length, 'x.length', act, dtn);
  const h = given ?? residual;
  if (h !== null) {
    // The plain forward's out may overlap x anyhow (that input is copied aside first); the
    // fused add's arrays are new, and an overlap there is a mistake to report.
    const hn = given ? 'options.residualOut' : 'options.residual (which receives x + residual)';
    distinctOutputs(fn, 'options.out', out, hn, h);
    distinctOutputs(fn, 'options.rstd', rstd, hn, h);
    disjointOrSame(fn, hn, h, 'x', xa, true);
    disjointOrSame(fn, hn, h, 'options.residual', given ? residual : null, true);
    disjointOrSame(fn, hn, h, 'weight', w, false);
    disjointOrSame(fn, 'options.out', out, 'options.residual', given ? residual : null, false);
  }
  return { residual, h };
}

/** Checks a backward call; `extraKeys` as in {@link checkForward}. */
export function checkBackward(
  fn: string,
  dy: unknown,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): BackwardArgs {
  const o = options(fn, opts, BACKWARD_KEYS, extraKeys);
  const act = actDtype(fn, 'dy', dy, o.dtype);
  const dya = typed(fn, 'dy', dy, act, DTN);
  const xa = typed(fn, 'x', x, act, DTN);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  if (dya.length !== xa.length) {
    throw new RangeError(`${fn}: dy.length (${dya.length}) must equal x.length (${xa.length})`);
  }
  const rows = rowsOf(fn, 'x', xa, dim);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  const dx = optTyped(fn, 'options.dx', o.dx, xa.length, 'x.length', act, DTN);
  if (w === null && o.dweight !== undefined) {
    throw new TypeError(`${fn}: options.dweight was given but weight is null (there is no weight gradient)`);
  }
  const dweight = optTyped(fn, 'options.dweight', o.dweight, dim, 'dim', wdt, 'options.weightDtype');
  distinctOutputs(fn, 'options.dx', dx, 'options.dweight', dweight);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const llama = castingBits(fn, o.castingMode);
  const dtypes = act | llama | (llama !== 0 && w !== null && wdt === act && act !== DT.float32 ? LLAMA_W : 0);
  const dresidual = optTyped(fn, 'options.dresidual', o.dresidual, xa.length, 'x.length', act, DTN);
  disjointOrSame(fn, 'options.dx', dx, 'options.dresidual', dresidual, true);
  disjointOrSame(fn, 'options.dweight', dweight, 'options.dresidual', dresidual, false);
  const params: Params = { eps: e, offset, stat, dtypes, wdt };
  return {
    dy: dya, x: xa, weight: w, rstd, dresidual, dx, dxGiven: dx === null ? null : (o.dx as FloatArray),
    dweight, dweightGiven: dweight === null ? null : (o.dweight as FloatArray),
    rows, dim, params, xKind: kindOf(dy), wKind: w === null ? KIND_F32 : kindOf(weight), outputsApart: false,
  };
}

const LAYER_KEYS: readonly string[] = ['dim', 'eps', 'offset', 'partial', ...DTYPE_KEYS];

/** createRmsNorm's checked arguments. */
export interface LayerArgs {
  /** The weight as the kernel reads it (half data as a Uint16Array), or null. */
  weight: Data | null;
  dim: number;
  /** The activations' dtype code (DT). */
  act: number;
  /** The forward's and the backward's kernel scalars (they differ in the llama casting bit). */
  forward: Params;
  backward: Params;
}

/**
 * Checks createRmsNorm's arguments: the weight (or null), dim, eps, offset, partial and the
 * dtypes, as the forward and backward check them (the activations' dtype is options.dtype,
 * float32 when absent: there is no x yet to tell).
 */
export function checkLayerOptions(fn: string, weight: unknown, opts: unknown): LayerArgs {
  const o = options(fn, opts, LAYER_KEYS);
  const act = actDtype(fn, 'x', undefined, o.dtype);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const llama = castingBits(fn, o.castingMode);
  const llamaW = llama !== 0 && w !== null && wdt === act && act !== DT.float32 ? LLAMA_W : 0;
  const forward: Params = Object.freeze({ eps: e, offset, stat, dtypes: act | llama, wdt });
  const backward: Params = Object.freeze({ eps: e, offset, stat, dtypes: act | llama | llamaW, wdt });
  return { weight: w, dim, act, forward, backward };
}

const LAYER_FORWARD_KEYS: readonly string[] = ['out', 'residual', 'residualOut'];
const LAYER_BACKWARD_KEYS: readonly string[] = ['rstd', 'dresidual'];
const LAYER_DTN = "the layer's dtype";

/** A layer forward's options: `out` (null: the layer's own array) and the fused residual add's arrays. */
export interface LayerForwardArgs {
  out: Data | null;
  outGiven: FloatArray | null;
  residual: Data | null;
  h: Data | null;
}
const NO_LAYER_FORWARD: LayerForwardArgs = Object.freeze({ out: null, outGiven: null, residual: null, h: null });

/**
 * A layer forward's options (`out`, `residual`, `residualOut`, as {@link rmsNorm}'s), checked
 * against its `x` (of the layer's dtype `act`), its weight and its own `rstd`; unknown keys
 * are a TypeError. No options: nothing to check.
 */
export function checkLayerForward(fn: string, opts: unknown, xa: Data, act: number, w: Data | null, rstd: Float32Array): LayerForwardArgs {
  if (opts === undefined) return NO_LAYER_FORWARD;
  const o = options(fn, opts, LAYER_FORWARD_KEYS);
  const out = optTyped(fn, 'options.out', o.out, xa.length, 'x.length', act, LAYER_DTN);
  distinctOutputs(fn, 'options.out', out, 'the layer\'s rstd', rstd);
  const { residual, h } = fusedAdd(fn, o, xa, act, LAYER_DTN, out, rstd, w);
  return { out, outGiven: out === null ? null : (o.out as FloatArray), residual, h };
}

/** A layer backward's options: the forward's rstd (one float per row) and the gradient arriving on the residual stream, each or null. */
export function checkLayerBackward(fn: string, opts: unknown, xa: Data, act: number, rows: number): { rstd: Float32Array | null; dresidual: Data | null } {
  if (opts === undefined) return { rstd: null, dresidual: null };
  const o = options(fn, opts, LAYER_BACKWARD_KEYS);
  return {
    rstd: optF32(fn, 'options.rstd', o.rstd, rows, 'one per row'),
    dresidual: optTyped(fn, 'options.dresidual', o.dresidual, xa.length, 'x.length', act, LAYER_DTN),
  };
}
