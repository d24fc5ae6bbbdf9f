/**
 * The forward's short way: a float32 call whose options are only parameters (check/params.ts's
 * PARAM_KEYS), `out` and `rstd` — the default call `rmsNorm(x, w)` and the zero-copy call
 * among them — skips what does not change between calls of a loop: the parameters are checked
 * again only when the weight or an option's value changed (params-memo.ts), and the arrays need
 * no placement. When `x`, the weight and `out` are views of the module's memory the kernel runs
 * on them in place (their addresses remembered with the views); otherwise a call small enough
 * goes through the window in one piece (window-calls.ts).
 *
 * Recognized by positive checks: anything else — another option, another array type, an array
 * of the wrong length, outputs that overlap, a call too big for the window — returns undefined
 * having done nothing, and the general path checks everything and says what is wrong. A changed
 * parameter is checked by the general path's own check, which throws what it would throw there.
 * Same kernel, same parameters: the same bits as the general path.
 *
 * It exists for the per-token calls of a model: one row of ~1000 floats takes the kernel
 * ~0.15 µs, where the general path's checks and placement cost several times that.
 * @module
 */
import { Dtype as DT } from '../../generated/abi.js';
import type { CallBlock } from '../call-block.js';
import { overlaps } from '../check/overlap.js';
import type { KernelExports } from '../../glue/load.js';
import type { Heap } from '../../glue/memory.js';
import { F, FORWARD } from '../operations/forward.js';
import type { Params, ShortWay } from '../op.js';
import { resultArray } from '../../glue/platform.js';
import { checkStatus } from '../../glue/status.js';
import { PARAM_KEYS } from '../check/params.js';
import { ParamsMemo } from './params-memo.js';
import { apart, Seen } from './views.js';
import type { WindowCalls } from './window-calls.js';

/** The options this way takes besides the parameters: the float32 outputs. */
const ARRAYS: readonly string[] = ['out', 'rstd'];

/** One instance's forward short way: see the module doc. */
export class ShortForward implements ShortWay {
  private readonly memo = new ParamsMemo('x', PARAM_KEYS, ARRAYS);
  private readonly x = new Seen();
  private readonly w = new Seen();
  private readonly out = new Seen();
  private readonly rstd = new Seen();
  /** The last zero-copy call's arrays, whose addresses the call block may still hold. */
  private last: readonly unknown[] = [];

  constructor(
    private readonly heap: Heap,
    private readonly block: CallBlock,
    private readonly k: KernelExports,
    private readonly window: WindowCalls,
  ) {}

  /**
   * `rmsNorm(x, weight, options)` the short way, returning `options.out` or a new array (in a
   * SharedArrayBuffer when `shared`); undefined, having done nothing, when the call is not one
   * this way takes.
   */
  run(fn: string, x: unknown, weight: unknown, options: unknown, _unused?: unknown, shared = false): Float32Array | undefined {
    if (!(x instanceof Float32Array) || !(weight === null || weight instanceof Float32Array)) return undefined;
    const n = x.length;
    if (n === 0) return undefined;
    const c = this.memo.of(fn, options, x, weight);
    if (c === null) return undefined;
    const q = c.params;
    if ((c.act | q.wdt | q.out_dtype) !== DT.float32 || n % q.dim !== 0) return undefined;
    const rows = n / q.dim;
    const o = options as { out?: unknown; rstd?: unknown } | undefined;
    const out = o?.out;
    const rstd = o?.rstd;
    if (out !== undefined && !(out instanceof Float32Array && out.length === n)) return undefined;
    if (rstd !== undefined && !(rstd instanceof Float32Array && rstd.length === rows)) return undefined;
    if (out !== undefined && rstd !== undefined && overlaps(out, rstd)) return undefined;
    if (out !== undefined && this.inPlace(fn, x, weight, out, rstd, q.dim, rows, q)) return out;
    const y = out ?? resultArray(n, shared);
    if (!this.window.forward(fn, x, weight, 0, q, y, rstd ?? null)) return undefined;
    return y;
  }

  /** The zero-copy call: true, having run it, when x, the weight (or none), out (and rstd) are views of the current memory that the kernel may take as they are. */
  private inPlace(
    fn: string, x: Float32Array, weight: Float32Array | null, out: Float32Array, rstd: Float32Array | undefined,
    dim: number, rows: number, q: Params,
  ): boolean {
    const b = this.block;
    // The same views as the last zero-copy call, its addresses still in the block: checked then.
    const last = this.last;
    if (b.holds(this, q) && x === last[0] && weight === last[1] && out === last[2] && rstd === last[3]) {
      checkStatus(fn, FORWARD.span(this.k, b.at, 0, rows, rows));
      return true;
    }
    const heap = this.heap;
    const f32 = heap.f32();
    const buf = f32.buffer;
    const n = x.length;
    const xa = this.x.addressOf(x, buf);
    const ya = this.out.addressOf(out, buf);
    const wa = weight === null ? 0 : this.w.addressOf(weight, buf);
    if (xa < 0 || ya < 0 || wa < 0) return false;
    // The kernel reads each element of a row before writing it: y may be exactly x, or apart.
    if ((ya !== xa && !apart(ya, 4 * n, xa, 4 * n)) || (weight !== null && !apart(ya, 4 * n, wa, 4 * dim))) return false;
    let ra = 0;
    if (rstd !== undefined) {
      ra = this.rstd.addressOf(rstd, buf);
      if (ra < 0 || !apart(ra, 4 * rows, xa, 4 * n) || (weight !== null && !apart(ra, 4 * rows, wa, 4 * dim))) return false;
    }
    const i32 = heap.i32();
    b.params(i32, f32, q);
    const a = b.operands(i32, FORWARD);
    i32[a + F.x] = xa;
    i32[a + F.weight] = wa;
    i32[a + F.y] = ya;
    i32[a + F.rstd] = ra;
    b.heldBy(this);
    this.last = [x, weight, out, rstd];
    checkStatus(fn, FORWARD.span(this.k, b.at, 0, rows, rows));
    return true;
  }
}
