/**
 * The backward's short way: a float32 call whose options are only parameters (PARAM_KEYS),
 * `rstd`, `dx` and `dweight` — the default call `rmsNormBackward(dy, x, w)` and the zero-copy
 * call among them — the parameters checked again only when the weight or an option's value
 * changed (params-memo.ts). When every array is a view of the module's memory and the outputs
 * are given, the kernel runs on them in place, its workspace in the window; otherwise a call
 * small enough goes through the window in one piece (window-calls.ts). Anything else returns
 * undefined having done nothing, for the general path; the same kernel and parameters, so the
 * same bits. See forward.ts.
 * @module
 */
import { Dtype as DT } from '../../generated/abi.js';
import type { CallBlock } from '../call-block.js';
import { overlaps } from '../check/overlap.js';
import type { KernelExports } from '../../glue/load.js';
import type { Heap, Scratch } from '../../glue/memory.js';
import { B, BACKWARD } from '../operations/backward.js';
import type { Params, ShortWay } from '../op.js';
import { resultArray } from '../../glue/platform.js';
import type { RmsNormBackwardResult } from '../../types.js';
import { checkStatus } from '../../glue/status.js';
import { BACKWARD_PARAM_KEYS } from '../check/params.js';
import { ParamsMemo } from './params-memo.js';
import { apart, Seen } from './views.js';
import type { WindowCalls } from './window-calls.js';

/** The options this way takes besides the parameters: the forward's rstd and the float32 outputs. */
const ARRAYS: readonly string[] = ['rstd', 'dx', 'dweight'];

/** One instance's backward short way: see the module doc. */
export class ShortBackward implements ShortWay {
  private readonly memo = new ParamsMemo('dy', BACKWARD_PARAM_KEYS, ARRAYS);
  private readonly seen = { dy: new Seen(), x: new Seen(), w: new Seen(), rstd: new Seen(), dx: new Seen(), dw: new Seen() };
  /** The last zero-copy call's arrays, whose addresses the call block may still hold. */
  private last: readonly unknown[] = [];

  constructor(
    private readonly heap: Heap,
    private readonly block: CallBlock,
    private readonly k: KernelExports,
    /** The window: the in-place call's workspace. */
    private readonly scratch: Scratch,
    /** The window's size in floats. */
    private readonly floats: number,
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
    if (dxGiven !== undefined && (weight === null || dwGiven !== undefined) && this.inPlace(fn, dy, x, weight, rstd, dxGiven, dwGiven ?? null, rows, q)) {
      return { dx: dxGiven, dweight: (dwGiven ?? null) as Float32Array | null };
    }
    // Other calls on views of the module's memory go the general way, which places them without copies.
    const mem = this.heap.f32().buffer;
    if (dy.buffer === mem || x.buffer === mem) return undefined;
    const dx = dxGiven ?? resultArray(n, shared);
    const dweight = weight === null ? null : (dwGiven ?? resultArray(q.dim, shared));
    if (!this.window.backward(fn, dy, x, weight, rstd ?? null, q, dx, dweight)) return undefined;
    return { dx, dweight };
  }

  /**
   * The zero-copy call: true, having run it, when dy, x, the weight (or none), rstd (or none),
   * dx and dweight (with a weight) are views of the current memory that the kernel may take as
   * they are: dx exactly dy or x, or apart from every input; dweight apart from everything.
   */
  private inPlace(
    fn: string, dy: Float32Array, x: Float32Array, weight: Float32Array | null, rstd: unknown, dx: Float32Array, dweight: Float32Array | null,
    rows: number, q: Params,
  ): boolean {
    const b = this.block;
    const last = this.last;
    if (b.holds(this, q) && dy === last[0] && x === last[1] && weight === last[2] && rstd === last[3] && dx === last[4] && dweight === last[5]) {
      checkStatus(fn, BACKWARD.span(this.k, b.at, 0, rows, rows));
      return true;
    }
    const dim = q.dim;
    const work = weight === null ? 0 : BACKWARD.syncWork(dim, WITH_WEIGHT);
    if (work > this.floats) return false;
    const heap = this.heap;
    const f32 = heap.f32();
    const buf = f32.buffer;
    const s = this.seen;
    const n = x.length;
    const [dya, xa, dxa] = [s.dy.addressOf(dy, buf), s.x.addressOf(x, buf), s.dx.addressOf(dx, buf)];
    if (dya < 0 || xa < 0 || dxa < 0) return false;
    const wa = weight === null ? 0 : s.w.addressOf(weight, buf);
    const ra = rstd === undefined ? 0 : s.rstd.addressOf(rstd, buf);
    const dwa = dweight === null ? 0 : s.dw.addressOf(dweight, buf);
    if (wa < 0 || ra < 0 || dwa < 0) return false;
    // The kernel reads each element of a row before writing it: dx may be exactly dy or x, and
    // is otherwise apart from every input; dweight and the workspace are apart from everything.
    const base = work === 0 ? 0 : this.scratch.carveOne(this.floats);
    const dwLen = dweight === null ? 0 : 4 * dim;
    const ranges: [number, number][] = [[dya, 4 * n], [xa, 4 * n], [wa, weight === null ? 0 : 4 * dim], [ra, rstd === undefined ? 0 : 4 * rows], [dxa, 4 * n], [dwa, dwLen], [base, 4 * work]];
    for (let i = 0; i < ranges.length; i++) {
      for (let j = Math.max(i + 1, INPUTS); j < ranges.length; j++) {
        const [[a, al], [c, cl]] = [ranges[i]!, ranges[j]!];
        if (al === 0 || cl === 0 || apart(a, al, c, cl)) continue;
        if (j === 4 && i < 2 && a === c) continue; // dx exactly dy or x
        return false;
      }
    }
    const i32 = heap.i32();
    b.params(i32, heap.f32(), q);
    const a = b.operands(i32, BACKWARD);
    i32[a + B.dy] = dya;
    i32[a + B.x] = xa;
    i32[a + B.weight] = wa;
    i32[a + B.rstd] = ra;
    i32[a + B.dx] = dxa;
    i32[a + B.dweight] = dwa;
    i32[a + B.work] = base;
    b.heldBy(this);
    this.last = [dy, x, weight, rstd, dx, dweight];
    checkStatus(fn, BACKWARD.span(this.k, b.at, 0, rows, rows));
    return true;
  }
}

/** How many of the in-place call's ranges are inputs (dy, x, the weight, rstd), which may overlap each other. */
const INPUTS = 4;

/** An operand list in which only the weight is present (what the backward's workspace size depends on). */
const WITH_WEIGHT = BACKWARD.operands.map((_, i) => (i === B.weight ? new Float32Array(0) : null));
