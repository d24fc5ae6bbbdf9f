/**
 * Where a call's arrays are while the kernel runs — decided here and nowhere else, for the
 * sync API and the pool alike.
 *
 * - An array that is a view of the module's memory (allocF32) is used **in place**.
 * - Any other array is **streamed through a window**: a fixed region of wasm memory that holds
 *   a segment of rows of every such array at once. Rows are copied in, the kernel runs on the
 *   segment, results are copied out, next segment. One-row operands (the weight) are copied
 *   in once, one-row results (dweight) out at the end. So a call on plain arrays uses a fixed
 *   amount of wasm memory whatever its size, and a segment's copies and the kernel's pass over
 *   it stay in the core's L2 cache.
 * - An input that an output would overwrite before it is read (a partial overlap; an exact
 *   match is an in-place call the kernel allows) is first copied aside in JavaScript — a
 *   snapshot, then streamed like any plain array.
 * - Data of every storage dtype (float32; half bits in a Uint16Array) is placed as it is, its
 *   elements' own width, and the kernel reads it as such — except a one-row operand (the
 *   weight, dweight): the kernel takes those as float32, so one of another dtype always goes
 *   through the window, widened there once per call (`widen`) or, for dweight, rounded into
 *   the array at the end.
 *
 * **The one cache.** The placer keeps one {@link Placement} per operation, and each keeps what
 * its last call was placed as. A loop calls with the same shape again and again, often on the
 * same views, and a typed array's `buffer` and `byteOffset` getters cost 10-15 ns each in
 * Node 20, so what depends only on the arrays is not worked out again:
 * - a slot's address is reused when the same view of wasm memory comes back to it (a view's
 *   buffer and offset never change; a view that growth detached has length 0 and is looked up
 *   again);
 * - the window layout (segment rows, regions, workspace) is reused while the rows, dim,
 *   dtypes, the window's generation and every slot's kind and element size are those it was
 *   made for;
 * - the overlap check is skipped when every array is the same view as in the last call, which
 *   needed no snapshot.
 * @module
 */
import { REGION_PAD_FLOATS, type Heap, type Scratch } from '../../glue/memory.js';
import { BY_CODE } from '../../glue/dtypes.js';
import { checkStatus } from '../../glue/status.js';
import { Dtype as DT } from '../../generated/abi.js';
import { MATRIX, PER_ROW, ROW, type Op, type Params, type Placed } from '../op.js';
import { OPS } from '../ops.js';
import { ABSENT, COPIED, EXTERNAL, Placement, RESIDENT, throughWindow } from './placement.js';
import { snapshotConflicts } from './snapshot.js';

import type { WindowRules } from './window.js';

export type { Placement } from './placement.js';
export { POOL_WINDOW_FLOATS, SYNC_WINDOW_FLOATS, type WindowRules } from './window.js';

/** What a placement's window layout was made for, and the layout: see the module doc. */
class Layout {
  rows = -1;
  dim = 0;
  dt = -1;
  gen = -1;
  segRows = 0;
  work = 0;
  /** The call it was made for had every array in place, the same views as its slots' `seen`, and needed no snapshot. */
  clean = false;
}

/** Places calls in one module's memory through one window; see the module doc. */
export class Placer {
  private readonly placements: readonly Placement[];
  private readonly layouts: readonly Layout[];
  private readonly sizes: number[] = [];
  private readonly region: number[] = [];
  private readonly slotOf: number[] = [];

  constructor(
    private readonly heap: Heap,
    private readonly window: Scratch,
    private readonly rules: WindowRules,
  ) {
    this.placements = OPS.map((op) => new Placement(op, heap));
    this.layouts = OPS.map(() => new Layout());
  }

  /**
   * Places `arrs` (in `op`'s operand order, null for absent) for a call of `rows × q.dim`
   * (`rows` ≥ 1) and seeks to row 0. `fresh`: bit i set when operand i is an output the
   * library has just allocated, or one known to be apart (a plain array that overlaps nothing:
   * no checks needed).
   * Throws a TypeError naming `fn` and the array on a stale view of wasm memory, before
   * anything is written. One call at a time: the returned placement is reused.
   */
  place(fn: string, op: Op, arrs: readonly (Placed | null)[], rows: number, q: Params, fresh = 0): Placement {
    const dim = q.dim;
    const p = this.placements[op.id]!;
    const lay = this.layouts[op.id]!;
    const heap = this.heap;
    const slots = p.slots;
    const n = slots.length;
    p.rows = rows;
    p.dim = dim;
    p.wdt = q.wdt;
    const dt = q.dtypes * 4 + q.wdt;
    // Cleared first: a call that throws half-way must not leave the last verdict standing.
    const wasClean = lay.clean;
    lay.clean = false;
    const shared = heap.wasm.shared;
    let copied = false;
    let external = false;
    let allSeen = true;
    let cur: ArrayBufferLike | null = null;
    for (let i = 0; i < n; i++) {
      const t = slots[i]!;
      const a = arrs[i]!;
      t.arr = a;
      if (a === null) {
        t.kind = ABSENT;
        t.base = 0; // address 0: the kernel's "absent"
        t.es = 4;
        continue;
      }
      const shape = op.operands[i]!.shape;
      t.es = shape === MATRIX ? a.BYTES_PER_ELEMENT : 4;
      if (a === t.seen && (shared || a.length !== 0)) {
        t.kind = RESIDENT;
        t.base = t.seenAt;
        continue;
      }
      allSeen = false;
      // A fresh output, and a half one-row operand (converted in the window), are copied.
      let off = -1;
      if (!(fresh & (1 << i)) && !(shape === ROW && q.wdt !== DT.float32)) {
        // Read before the window is carved: growing non-shared memory detaches its views.
        off = heap.addressOf(fn, op.operands[i]!.name, a, (cur ??= heap.f32().buffer));
      }
      if (off >= 0) {
        t.kind = RESIDENT;
        t.base = off;
        t.seen = a;
        t.seenAt = off;
      } else if (this.rules.external && shape !== ROW && isShared(a.buffer)) {
        t.kind = EXTERNAL;
        external = true;
      } else {
        t.kind = COPIED;
        copied = true;
      }
    }
    let same = rows === lay.rows && dim === lay.dim && dt === lay.dt && this.window.generation === lay.gen;
    for (let i = 0; same && i < n; i++) same = slots[i]!.kind === slots[i]!.laidKind && slots[i]!.es === slots[i]!.laidEs;
    // The overlap verdict depends only on the arrays: the same views as last time need none.
    if (!(same && allSeen && wasClean) && snapshotConflicts(p, fresh)) {
      copied = true;
      same = false;
    }
    p.streams = copied;
    p.external = external;
    if (same) {
      for (let i = 0; i < n; i++) if (throughWindow(slots[i]!.kind)) slots[i]!.base = slots[i]!.laidBase;
      p.segRows = lay.segRows;
      p.addrs[n] = lay.work;
    } else {
      if (copied || external) this.carveWindow(p, arrs);
      else {
        // Everything in place: one segment, only the workspace to find.
        p.segRows = rows;
        const w = this.rules.work(op, rows, dim, arrs);
        p.addrs[n] = w === 0 ? 0 : this.window.carveOne(w);
      }
      lay.rows = rows;
      lay.dim = dim;
      lay.dt = dt;
      lay.gen = this.window.generation;
      lay.segRows = p.segRows;
      lay.work = p.addrs[n]!;
      for (let i = 0; i < n; i++) {
        const t = slots[i]!;
        t.laidKind = t.kind;
        t.laidEs = t.es;
        t.laidBase = t.base;
      }
    }
    lay.clean = !copied && !external && allSeen;
    p.seek(0);
    if (copied) this.copyRowInputs(fn, p, q.wdt);
    return p;
  }

  /** One-row inputs (the weight) into the window, once per call; one of another dtype than float32 as its elements after its region's floats, then widened into them. */
  private copyRowInputs(fn: string, p: Placement, wdt: number): void {
    const heap = this.heap;
    for (let i = 0; i < p.slots.length; i++) {
      const o = p.op.operands[i]!;
      const t = p.slots[i]!;
      if (t.kind !== COPIED || o.out || o.shape !== ROW) continue;
      const a = t.arr!;
      if (wdt !== DT.float32) {
        const f = BY_CODE[wdt]!;
        const at = t.base + 4 * p.dim;
        heap.view(f.Array).set(a, at / f.bytes);
        checkStatus(fn, heap.wasm.exports.widen(at, t.base, p.dim, wdt));
      } else heap.f32().set(a, t.base >>> 2);
    }
  }

  /** Sizes the segment to the window and gives each copied array its region. */
  private carveWindow(p: Placement, arrs: readonly (Placed | null)[]): void {
    const { op, rows, dim, slots } = p;
    const ops = op.operands;
    const n = ops.length;
    // Floats per row of the segment, and fixed: a copied output computed where the input it
    // may alias was copied (y at x's copy) needs no region of its own — when its elements are
    // as wide: a quantized y (1 byte) in x's floats would overwrite rows not yet read.
    let perRow = 0;
    let fixed = 0;
    let regions = 1; // the workspace's, if any
    const shareOf = this.region;
    shareOf.length = n;
    for (let i = 0; i < n; i++) {
      shareOf[i] = -1;
      const t = slots[i]!;
      if (!throughWindow(t.kind)) continue;
      const o = ops[i]!;
      if (o.out && o.shape === MATRIX) {
        for (const j of o.alias) {
          if (throughWindow(slots[j]!.kind) && shareOf.indexOf(j) < 0 && ops[j]!.shape === MATRIX && slots[j]!.es === t.es) {
            shareOf[i] = j;
            break;
          }
        }
        if (shareOf[i]! >= 0) continue;
      }
      regions++;
      if (o.shape === MATRIX) perRow += (dim * t.es) / 4;
      else if (o.shape === PER_ROW) perRow += 1;
      else fixed += rowFloats(p.wdt, dim);
    }
    const align = this.rules.rowAlign(op);
    // The workspace may grow with the segment (the pool's partials): size by one aligned block.
    const workPerBlock = this.rules.work(op, align, dim, arrs);
    const workFixed = this.rules.work(op, 0, dim, arrs);
    const perAligned = perRow * align + workPerBlock - workFixed;
    // Each region may be padded (Scratch.carve): the window holds the regions with their padding.
    const room = this.rules.floats - fixed - workFixed - regions * REGION_PAD_FLOATS;
    let seg = Math.floor(Math.max(0, room) / Math.max(1, perAligned)) * align;
    seg = Math.max(align, seg);
    if (seg >= rows) seg = rows;
    p.segRows = seg;
    const sizes = this.sizes;
    const slotOf = this.slotOf;
    sizes.length = 0;
    slotOf.length = n;
    for (let i = 0; i < n; i++) {
      const t = slots[i]!;
      slotOf[i] = -1;
      if (!throughWindow(t.kind) || shareOf[i]! >= 0) continue;
      const shape = ops[i]!.shape;
      slotOf[i] = sizes.push(shape === MATRIX ? Math.ceil((seg * dim * t.es) / 4) : shape === PER_ROW ? seg : rowFloats(p.wdt, dim)) - 1;
    }
    const work = this.rules.work(op, seg, dim, arrs);
    if (work > 0) sizes.push(work);
    const at = this.window.carve(sizes);
    for (let i = 0; i < n; i++) if (slotOf[i]! >= 0) slots[i]!.base = at[slotOf[i]!]!;
    for (let i = 0; i < n; i++) if (shareOf[i]! >= 0) slots[i]!.base = slots[shareOf[i]!]!.base;
    p.addrs[n] = work > 0 ? at[sizes.length - 1]! : 0;
  }
}

/**
 * Floats of the window a copied one-row operand takes: a weight stored as another type than
 * float32 is converted there, so its region holds its float32 values, then its elements.
 */
const rowFloats = (wdt: number, dim: number): number => (wdt !== DT.float32 ? dim + Math.ceil((dim * BY_CODE[wdt]!.bytes) / 4) : dim);

/** Whether `b` is a SharedArrayBuffer (where there are any). */
const isShared = (b: ArrayBufferLike): boolean => typeof SharedArrayBuffer !== 'undefined' && b instanceof SharedArrayBuffer;
