/**
 * The arrays a call's results are written to and returned as: the caller's (`options.out`,
 * `dx`, `dweight`), or new ones: the array of their dtype's facts, seen as JavaScript's own
 * array of it (a Float16Array) when the caller gave those, allocated as platform.ts says; and a checked call turned into
 * its operation's arrays ({@link forwardCall}, {@link backwardCall}). Shared by the sync API and
 * the pool, so that neither spells out an operand order.
 * @module
 */
import { DTYPE_MASK } from '../generated/abi.js';
import { B, BACKWARD, F, FORWARD, type Data, type Op, type Params, type Placed } from './ops.js';
import type { Placement } from './placement/placer.js';
import { jsArrayOver, resultOf } from '../glue/platform.js';
import type { BackwardArgs, ForwardArgs } from './check/calls.js';
import type { FloatArray, RmsNormBackwardResult } from '../types.js';

/**
 * The forward's output: `y` as the kernel writes it (half results as bits) and `given`, what
 * the caller gets. `resident`: `y` is what the caller gets, so a view of wasm memory detached
 * by growth can be re-made (Placement.result); otherwise `given` is final.
 */
function forwardResult(a: ForwardArgs, shared = false): { y: Placed; given: FloatArray | Placed; resident: boolean } {
  const out = a.arrs[F.y] ?? null;
  if (out !== null) return { y: out, given: a.outGiven!, resident: a.outGiven === out };
  // A new array of the output's dtype: a quantized one's, else the activations' (seen as
  // JavaScript's own array of it when x was one).
  const q = a.params.out_dtype;
  const y = resultOf(q !== 0 ? q : a.params.dtypes & DTYPE_MASK, a.x.length, shared);
  if (!a.xJs || q !== 0) return { y, given: y, resident: true };
  return { y, given: jsArrayOver(y, a.params.dtypes & DTYPE_MASK) as FloatArray, resident: false };
}

/** A matrix output of the backward: the array given, or a new one of the activations' dtype (as the caller's kind of array). */
function matrixOut(a: BackwardArgs, placed: Placed | null, given: FloatArray | null, shared: boolean): { placed: Data; given: FloatArray } {
  if (placed !== null) return { placed: placed as Data, given: given! };
  const act = a.params.dtypes & DTYPE_MASK;
  const y = resultOf(act, a.x.length, shared) as Data;
  return { placed: y, given: (a.xJs ? jsArrayOver(y, act) : y) as FloatArray };
}

/**
 * The backward's output arrays as the kernel writes them (`dx`, `dweight`, `dgate`: given or
 * new, half ones as bits) and the result the caller gets (new half arrays of the caller's kind:
 * a Float16Array over the bits for Float16Array inputs). `resident`: every output is a
 * Float32Array or Uint16Array the caller gave or a float32 one made here, so a view detached by
 * growth can be re-made (Placement.result); otherwise `result` is final.
 */
function backwardResults(a: BackwardArgs, shared = false): {
  dx: Data;
  dweight: Data | null;
  dgate: Data | null;
  result: RmsNormBackwardResult<FloatArray, FloatArray>;
  resident: boolean;
} {
  const { arrs } = a;
  const dxIn = arrs[B.dx] as Data | null;
  const dwIn = arrs[B.dweight] as Data | null;
  const dzIn = arrs[B.dz] as Data | null;
  if (!a.xJs && !a.wJs && a.dxGiven === dxIn && a.dweightGiven === dwIn && a.dgateGiven === dzIn) {
    // Every output the caller's or the array of its dtype's facts.
    const act = a.params.dtypes & DTYPE_MASK;
    const dx = dxIn ?? (resultOf(act, a.x.length, shared) as Data);
    const dweight = arrs[B.weight] ? (dwIn ?? (resultOf(a.params.wdt, a.dim) as Data)) : null;
    const dgate = arrs[B.z] ? (dzIn ?? (resultOf(act, a.x.length, shared) as Data)) : null;
    return { dx, dweight, dgate, result: withGate({ dx, dweight }, dgate), resident: true };
  }
  const dx = matrixOut(a, dxIn, a.dxGiven, shared);
  const dgate = arrs[B.z] ? matrixOut(a, dzIn, a.dgateGiven, shared) : null;
  let dweight: Data | null = null;
  let dwUser: FloatArray | null = null;
  if (arrs[B.weight] !== null) {
    if (dwIn !== null) {
      dweight = dwIn;
      dwUser = a.dweightGiven!;
    } else {
      dweight = resultOf(a.params.wdt, a.dim) as Data;
      dwUser = (a.wJs ? jsArrayOver(dweight, a.params.wdt) : dweight) as FloatArray;
    }
  }
  const result = withGate({ dx: dx.given, dweight: dwUser }, dgate?.given ?? null);
  return { dx: dx.placed, dweight, dgate: dgate?.placed ?? null, result, resident: false };
}

/** `r` with `dgate` when there is one (a call without a gate has no such key). */
function withGate<T extends FloatArray>(r: RmsNormBackwardResult<T, FloatArray>, dgate: T | null): RmsNormBackwardResult<T, FloatArray> {
  if (dgate !== null) r.dgate = dgate;
  return r;
}

/**
 * A checked call as its operation runs it: the arrays in operand order, and what it returns.
 * The sync API (rmsnorm.ts `runChecked`), the layer and the pool run any operation's calls
 * through this alone.
 */
export interface Call<R> {
  readonly op: Op;
  readonly arrs: readonly (Placed | null)[];
  /** The checked call's `x`: where it is decides how the pool runs it. */
  readonly x: Data;
  readonly rows: number;
  readonly params: Params;
  /** Bit `i` set: operand `i` is an output the library allocated (see Placer.place). */
  readonly fresh: number;
  /** The caller's result, once the placement `p` has run every segment. */
  result(p: Placement): R;
  /** The caller's result of a call with no rows (nothing to place or run). */
  empty(): R;
}

/** A checked forward as {@link FORWARD} runs it (a class: one object per call, no closures). */
class ForwardCall implements Call<FloatArray | Placed> {
  readonly op = FORWARD;
  readonly arrs: (Placed | null)[];
  readonly rows: number;
  readonly params: Params;
  readonly fresh: number;
  private readonly r: ReturnType<typeof forwardResult>;

  readonly x: Data;

  constructor(a: ForwardArgs, shared: boolean) {
    this.x = a.x;
    this.rows = a.rows;
    this.params = a.params;
    const r = (this.r = forwardResult(a, shared));
    // The checked call's arrays are this call's (each check makes them anew).
    const arrs = (this.arrs = a.arrs);
    // New outputs (and outputs known to be apart) need no address lookup and no overlap check.
    this.fresh = (arrs[F.y] === null || a.outputsApart ? 1 << F.y : 0) | (a.outputsApart && arrs[F.rstd] ? 1 << F.rstd : 0);
    arrs[F.y] = r.y;
  }

  result(p: Placement): FloatArray | Placed {
    const { r } = this;
    return r.resident ? p.result(F.y, r.y) : r.given;
  }

  empty(): FloatArray | Placed {
    return this.r.given;
  }
}

/** A checked backward as {@link BACKWARD} runs it. */
class BackwardCall implements Call<RmsNormBackwardResult<FloatArray, FloatArray>> {
  readonly op = BACKWARD;
  readonly arrs: (Placed | null)[];
  readonly rows: number;
  readonly params: Params;
  readonly fresh: number;
  private readonly r: ReturnType<typeof backwardResults>;

  readonly x: Data;

  constructor(a: BackwardArgs, shared: boolean) {
    this.x = a.x;
    this.rows = a.rows;
    this.params = a.params;
    const r = (this.r = backwardResults(a, shared));
    const arrs = (this.arrs = a.arrs);
    this.fresh =
      (arrs[B.dx] === null || a.outputsApart ? 1 << B.dx : 0) |
      (arrs[B.weight] && (!arrs[B.dweight] || a.outputsApart) ? 1 << B.dweight : 0) |
      (arrs[B.z] && (!arrs[B.dz] || a.outputsApart) ? 1 << B.dz : 0);
    arrs[B.dx] = r.dx;
    arrs[B.dweight] = r.dweight;
    arrs[B.dz] = r.dgate;
  }

  result(p: Placement): RmsNormBackwardResult<FloatArray, FloatArray> {
    const { dx, dweight, dgate, resident, result } = this.r;
    if (!resident) return result;
    return withGate({ dx: p.result(B.dx, dx), dweight: dweight && p.result(B.dweight, dweight) }, dgate && p.result(B.dz, dgate));
  }

  /** No rows: dweight is a sum of nothing. */
  empty(): RmsNormBackwardResult<FloatArray, FloatArray> {
    this.r.dweight?.fill(0);
    return this.r.result;
  }
}

/** A checked forward as {@link FORWARD} runs it; `shared`: new results in SharedArrayBuffers. */
export const forwardCall = (a: ForwardArgs, shared = false): Call<FloatArray | Placed> => new ForwardCall(a, shared);
/** A checked backward as {@link BACKWARD} runs it; `shared`: new matrix results in SharedArrayBuffers. */
export const backwardCall = (a: BackwardArgs, shared = false): Call<RmsNormBackwardResult<FloatArray, FloatArray>> => new BackwardCall(a, shared);
