/**
 * Small float32 calls in one piece through the window: the inputs copied in at a layout fixed
 * by the call's size, one kernel call, the outputs copied out — no placement, no snapshot (every
 * input is read into the window before anything is written, so outputs may overlap inputs as
 * they like). The short ways of the default call, of the pool's inline call and of the layer use
 * it; the kernel and the parameters are the general path's, so the bits are too.
 * @module
 */
import type { CallBlock } from '../call-block.js';
import type { KernelExports } from '../../glue/load.js';
import { regionFloats, type Heap, type Scratch } from '../../glue/memory.js';
import { type Params } from '../op.js';
import { F, FORWARD } from '../operations/forward.js';
import { B, BACKWARD } from '../operations/backward.js';
import { checkStatus } from '../../glue/status.js';

/** Rows up to this many are copied out of the window element by element (a view would cost more). */
const FEW = 16;

/** A view of the window kept between calls of the same size (making one costs ~50 ns). */
class Kept {
  private from: Float32Array | null = null;
  private at = -1;
  private view: Float32Array = new Float32Array(0);

  /** `f32.subarray(at, at + n)`, made again only when the memory, `at` or `n` changed. */
  of(f32: Float32Array, at: number, n: number): Float32Array {
    if (f32 !== this.from || at !== this.at || n !== this.view.length) {
      this.view = f32.subarray(at, at + n);
      this.from = f32;
      this.at = at;
    }
    return this.view;
  }
}

/** `n` floats from `f32[at…]` into `dst`. */
function copyOut(dst: Float32Array, f32: Float32Array, at: number, n: number, kept: Kept): void {
  if (n <= FEW) for (let i = 0; i < n; i++) dst[i] = f32[at + i]!;
  else dst.set(kept.of(f32, at, n));
}

/** One instance's calls through its window: see the module doc. */
export class WindowCalls {
  private readonly y = new Kept();
  private readonly row = new Kept();

  constructor(
    private readonly heap: Heap,
    private readonly window: Scratch,
    /** The window's size in floats. */
    private readonly floats: number,
    private readonly block: CallBlock,
    private readonly k: KernelExports,
  ) {}

  /**
   * The forward of float32 `x` (`rows × q.dim`, rows ≥ 1) into `y` (and `rstd`, one per row,
   * when not null): the weight `w` copied in (null: none), or already in memory at byte `wAt`
   * (then `w` is null). False, having done nothing, when the call does not fit the window.
   */
  forward(fn: string, x: Float32Array, w: Float32Array | null, wAt: number, q: Params, y: Float32Array, rstd: Float32Array | null): boolean {
    const n = x.length;
    const dim = q.dim;
    const rows = n / dim;
    const yOff = regionFloats(n);
    const rOff = yOff + regionFloats(n);
    const wOff = rOff + regionFloats(rows);
    if (wOff + (w === null ? 0 : dim) > this.floats) return false;
    const base = this.window.carveOne(this.floats);
    const heap = this.heap;
    const f32 = heap.f32();
    const i32 = heap.i32();
    const at = base >>> 2;
    f32.set(x, at);
    if (w !== null) f32.set(w, at + wOff);
    const b = this.block;
    b.params(i32, f32, q);
    const a = b.operands(i32, FORWARD);
    i32[a + F.x] = base;
    i32[a + F.weight] = w !== null ? base + 4 * wOff : wAt;
    i32[a + F.y] = base + 4 * yOff;
    i32[a + F.rstd] = rstd !== null ? base + 4 * rOff : 0;
    checkStatus(fn, FORWARD.span(this.k, b.at, 0, rows, rows));
    copyOut(y, f32, at + yOff, n, this.y);
    if (rstd !== null) copyOut(rstd, f32, at + rOff, rows, this.row);
    return true;
  }

  /**
   * The backward of float32 `dy` and `x` (`rows × q.dim`, rows ≥ 1) with the weight `w` (null:
   * none) and the forward's `rstd` (null: recomputed) into `dx` and, with a weight, `dweight`
   * (`dim`). False, having done nothing, when the call does not fit the window.
   */
  backward(
    fn: string, dy: Float32Array, x: Float32Array, w: Float32Array | null, rstd: Float32Array | null, q: Params,
    dx: Float32Array, dweight: Float32Array | null,
  ): boolean {
    const n = x.length;
    const dim = q.dim;
    const rows = n / dim;
    const xOff = regionFloats(n);
    const dxOff = xOff + regionFloats(n);
    const rOff = dxOff + regionFloats(n);
    const wOff = rOff + regionFloats(rows);
    const dwOff = wOff + regionFloats(dim);
    // The weight's workspace: the f64 sum of finished dweight blocks and the open block.
    const workOff = dwOff + regionFloats(dim);
    if (workOff + (w === null ? 0 : BACKWARD.syncWork(dim, NO_ARRAYS_BUT_WEIGHT)) > this.floats) return false;
    const base = this.window.carveOne(this.floats);
    const heap = this.heap;
    const f32 = heap.f32();
    const i32 = heap.i32();
    const at = base >>> 2;
    f32.set(dy, at);
    f32.set(x, at + xOff);
    if (rstd !== null) f32.set(rstd, at + rOff);
    if (w !== null) f32.set(w, at + wOff);
    const b = this.block;
    b.params(i32, f32, q);
    const a = b.operands(i32, BACKWARD);
    i32[a + B.dy] = base;
    i32[a + B.x] = base + 4 * xOff;
    i32[a + B.dx] = base + 4 * dxOff;
    if (rstd !== null) i32[a + B.rstd] = base + 4 * rOff;
    if (w !== null) {
      i32[a + B.weight] = base + 4 * wOff;
      i32[a + B.dweight] = base + 4 * dwOff;
      i32[a + B.work] = base + 4 * workOff;
    }
    checkStatus(fn, BACKWARD.span(this.k, b.at, 0, rows, rows));
    copyOut(dx, f32, at + dxOff, n, this.y);
    if (dweight !== null) copyOut(dweight, f32, at + dwOff, dim, this.row);
    return true;
  }
}

/** An operand list in which only the weight is present (what the backward's workspace size depends on). */
const NO_ARRAYS_BUT_WEIGHT = BACKWARD.operands.map((_, i) => (i === B.weight ? new Float32Array(0) : null));
