/**
 * The arrays a call's results are written to and returned as: the caller's (`options.out`,
 * `dx`, `dweight`), or new ones of the caller's kind (Float32Array, Uint16Array of half bits,
 * Float16Array over such bits), allocated as platform.ts says; and a checked call turned into
 * its operation's arrays ({@link forwardCall}, {@link backwardCall}). Shared by the sync API and
 * the pool, so that neither spells out an operand order.
 * @module
 */
import { B, BACKWARD, F, FORWARD, type Data, type Op } from './ops.js';
import type { Placement } from './place/placer.js';
import { resultArray, resultOfKind } from './platform.js';
import { KIND_F32 } from './check/arrays.js';
import type { BackwardArgs, ForwardArgs } from './check/calls.js';
import type { FloatArray, RmsNormBackwardResult } from './types.js';

/**
 * The forward's output: `y` as the kernel writes it (half results as bits) and `given`, what
 * the caller gets. `resident`: `y` is what the caller gets, so a view of wasm memory detached
 * by growth can be re-made (Placement.result); otherwise `given` is final.
 */
export function forwardResult(a: ForwardArgs): { y: Data; given: FloatArray; resident: boolean } {
  if (a.out !== null) return { y: a.out, given: a.outGiven!, resident: a.outGiven === a.out };
  if (a.xKind === KIND_F32) {
    const y = resultArray(a.x.length);
    return { y, given: y, resident: true };
  }
  const r = resultOfKind(a.xKind, a.x.length);
  return { y: r.placed, given: r.given as FloatArray, resident: false };
}

/**
 * The backward's output arrays as the kernel writes them (`dx`, `dweight`: given or new, half
 * ones as bits) and the result the caller gets (new half arrays of the caller's kind: a
 * Float16Array over the bits for Float16Array inputs). `resident`: every output is a
 * Float32Array or Uint16Array the caller gave or a float32 one made here, so a view detached by
 * growth can be re-made (Placement.result); otherwise `result` is final.
 */
export function backwardResults(a: BackwardArgs): {
  dx: Data;
  dweight: Data | null;
  result: RmsNormBackwardResult<FloatArray, FloatArray>;
  resident: boolean;
} {
  if (a.xKind === KIND_F32 && a.wKind === KIND_F32 && a.dxGiven === a.dx && a.dweightGiven === a.dweight) {
    const dx = a.dx ?? resultArray(a.x.length);
    const dweight = a.weight ? (a.dweight ?? new Float32Array(a.dim)) : null;
    return { dx, dweight, result: { dx, dweight }, resident: true };
  }
  let dx: Data;
  let dxUser: FloatArray;
  if (a.dx !== null) {
    dx = a.dx;
    dxUser = a.dxGiven!;
  } else {
    const r = resultOfKind(a.xKind, a.x.length);
    dx = r.placed;
    dxUser = r.given as FloatArray;
  }
  let dweight: Data | null = null;
  let dwUser: FloatArray | null = null;
  if (a.weight !== null) {
    if (a.dweight !== null) {
      dweight = a.dweight;
      dwUser = a.dweightGiven!;
    } else {
      const r = resultOfKind(a.wKind, a.dim);
      dweight = r.placed;
      dwUser = r.given as FloatArray;
    }
  }
  return { dx, dweight, result: { dx: dxUser, dweight: dwUser }, resident: false };
}

/** A checked call as its operation runs it: the arrays in operand order, and what it returns. */
export interface Call<R> {
  readonly op: Op;
  readonly arrs: readonly (Data | null)[];
  /** Bit `i` set: operand `i` is an output the library allocated (see Placer.place). */
  readonly fresh: number;
  /** The caller's result, once the placement `p` has run every segment. */
  result(p: Placement): R;
}

/** A checked forward as {@link FORWARD} runs it (a class: one object per call, no closures). */
class ForwardCall implements Call<FloatArray> {
  readonly op = FORWARD;
  readonly arrs: (Data | null)[];
  readonly fresh: number;
  private readonly r: ReturnType<typeof forwardResult>;

  constructor(a: ForwardArgs) {
    const r = (this.r = forwardResult(a));
    const arrs: (Data | null)[] = (this.arrs = [null, null, null, null, null, null]);
    arrs[F.x] = a.x;
    arrs[F.residual] = a.residual;
    arrs[F.weight] = a.weight;
    arrs[F.y] = r.y;
    arrs[F.h] = a.h;
    arrs[F.rstd] = a.rstd;
    // New outputs (and outputs known to be apart) need no address lookup and no overlap check.
    this.fresh = (a.out === null || a.outputsApart ? 1 << F.y : 0) | (a.outputsApart && a.rstd ? 1 << F.rstd : 0);
  }

  result(p: Placement): FloatArray {
    const { r } = this;
    return r.resident ? p.result(F.y, r.y as Float32Array) : r.given;
  }
}

/** A checked backward as {@link BACKWARD} runs it. */
class BackwardCall implements Call<RmsNormBackwardResult<FloatArray, FloatArray>> {
  readonly op = BACKWARD;
  readonly arrs: (Data | null)[];
  readonly fresh: number;
  private readonly r: ReturnType<typeof backwardResults>;

  constructor(a: BackwardArgs) {
    const r = (this.r = backwardResults(a));
    const arrs: (Data | null)[] = (this.arrs = [null, null, null, null, null, null, null]);
    arrs[B.dy] = a.dy;
    arrs[B.x] = a.x;
    arrs[B.weight] = a.weight;
    arrs[B.rstd] = a.rstd;
    arrs[B.dresidual] = a.dresidual;
    arrs[B.dx] = r.dx;
    arrs[B.dweight] = r.dweight;
    this.fresh = (a.dx === null || a.outputsApart ? 1 << B.dx : 0) | (a.weight && (!a.dweight || a.outputsApart) ? 1 << B.dweight : 0);
  }

  result(p: Placement): RmsNormBackwardResult<FloatArray, FloatArray> {
    const { dx, dweight, resident, result } = this.r;
    return resident ? { dx: p.result(B.dx, dx), dweight: dweight && p.result(B.dweight, dweight) } : result;
  }
}

/** A checked forward as {@link FORWARD} runs it. */
export const forwardCall = (a: ForwardArgs): Call<FloatArray> => new ForwardCall(a);
/** A checked backward as {@link BACKWARD} runs it. */
export const backwardCall = (a: BackwardArgs): Call<RmsNormBackwardResult<FloatArray, FloatArray>> => new BackwardCall(a);
