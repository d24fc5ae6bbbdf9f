/**
 * The backward's short way: a float32 call whose options are only parameters (PARAM_KEYS),
 * `rstd`, `dx` and `dweight` — the default call `rmsNormBackward(dy, x, w)` among them — on
 * arrays that are not views of the module's memory (those are used in place by the general
 * path) and small enough for the window, in one piece through it (window-calls.ts), the
 * parameters checked again only when the weight or an option's value changed
 * (params-memo.ts). Anything else returns undefined having done nothing, for the general path;
 * the same kernel and parameters, so the same bits. See forward.ts.
 * @module
 */
import { Dtype as DT } from '../abi.js';
import { overlaps } from '../check/overlap.js';
import type { Heap } from '../memory.js';
import { resultArray } from '../platform.js';
import type { RmsNormBackwardResult } from '../types.js';
import { ParamsMemo } from './params-memo.js';
import type { WindowCalls } from './window-calls.js';

/** The options this way takes besides the parameters: the forward's rstd and the float32 outputs. */
const ARRAYS: readonly string[] = ['rstd', 'dx', 'dweight'];

/** One instance's backward short way: see the module doc. */
export class ShortBackward {
  private readonly memo = new ParamsMemo('dy', ARRAYS);

  constructor(
    private readonly heap: Heap,
    private readonly window: WindowCalls,
  ) {}

  /**
   * `rmsNormBackward(dy, x, weight, options)` the short way, returning `{ dx, dweight }` (the
   * given arrays or new ones, in SharedArrayBuffers when `shared`); undefined, having done
   * nothing, when the call is not one this way takes.
   */
  run(fn: string, dy: unknown, x: unknown, weight: unknown, options: unknown, shared = false): RmsNormBackwardResult<Float32Array, Float32Array> | undefined {
    if (!(dy instanceof Float32Array) || !(x instanceof Float32Array) || !(weight === null || weight instanceof Float32Array)) return undefined;
    const n = dy.length;
    if (n === 0 || x.length !== n) return undefined;
    const c = this.memo.of(fn, options, dy, weight);
    if (c === null) return undefined;
    const q = c.params;
    if ((c.act | q.wdt | q.out_dtype) !== DT.float32 || n % q.dim !== 0) return undefined;
    const rows = n / q.dim;
    const o = options as { rstd?: unknown; dx?: unknown; dweight?: unknown } | undefined;
    const rstd = o?.rstd;
    const dxGiven = o?.dx;
    const dwGiven = o?.dweight;
    if (rstd !== undefined && !(rstd instanceof Float32Array && rstd.length === rows)) return undefined;
    if (dxGiven !== undefined && !(dxGiven instanceof Float32Array && dxGiven.length === n)) return undefined;
    if (dwGiven !== undefined && !(weight !== null && dwGiven instanceof Float32Array && dwGiven.length === q.dim)) return undefined;
    if (dxGiven !== undefined && dwGiven !== undefined && overlaps(dxGiven, dwGiven)) return undefined;
    // Views of the module's memory are used in place by the general path: no copies.
    const mem = this.heap.f32().buffer;
    if (dy.buffer === mem || x.buffer === mem) return undefined;
    const dx = dxGiven ?? resultArray(n, shared);
    const dweight = weight === null ? null : (dwGiven ?? resultArray(q.dim, shared));
    if (!this.window.backward(fn, dy, x, weight, rstd ?? null, q, dx, dweight)) return undefined;
    return { dx, dweight };
  }
}
