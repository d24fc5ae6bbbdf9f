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
 * - Half-precision data (Uint16Array bit patterns) is placed like float32 data, two bytes an
 *   element, and the kernel reads it as such — except a one-row operand (the weight, dweight):
 *   the kernel takes those as float32, so a half one always goes through the window, widened
 *   there once per call (`widen_half`) or, for dweight, rounded into the array at the end.
 *
 * A placement is the operands' addresses for the current segment ({@link Placement.addrs},
 * in the kernel's order, then the workspace) plus the copies; see {@link Placement}.
 * @module
 */
import { REGION_PAD_FLOATS, type Heap, type Scratch } from './memory.js';
import { checkStatus } from './status.js';
import { MATRIX, MAX_ADDRS, OPS, PER_ROW, ROW, type Data, type Op, type Params } from './ops.js';

/**
 * The sync API's window: 256 KiB (65536 floats). Chosen by `npm run bench:window` (bench/window.ts) on this
 * project's machine (1 MiB L2 per core): from 128 KiB to 1 MiB the plain-array call is within a few percent;
 * smaller windows pay the per-segment cost, larger ones leave L2.
 */
export const SYNC_WINDOW_FLOATS = 1 << 16;
/**
 * The pool's window: 32 MiB. The calling thread copies a chunk in while workers compute the chunk
 * before, so a segment must hold several chunks per thread; larger windows buy nothing.
 */
export const POOL_WINDOW_FLOATS = 1 << 23;

const ABSENT = 0;
const RESIDENT = 1;
const COPIED = 2;

/** Rules for one placer: window size, segment alignment, which workspace. */
export interface WindowRules {
  /** Floats the window holds (it grows past this only when a single segment needs more). */
  floats: number;
  /** Segments start on multiples of this many rows (the pool's backward: dweight blocks). */
  rowAlign(op: Op): number;
  /** Workspace floats for a segment of `rows` rows (after the operands). */
  work(op: Op, rows: number, dim: number, arrs: readonly (Data | null)[]): number;
}

/** Floats of a one-row region that holds a half operand: its float32 values, then its bits. */
const convertedFloats = (dim: number) => dim + Math.ceil(dim / 2);

/** A placed call: see the module doc. One at a time per {@link Placer}: the object is reused. */
export class Placement {
  op!: Op;
  rows = 0;
  dim = 0;
  /** Rows per segment (all rows when nothing streams). */
  segRows = 0;
  /** Whether any array is streamed through the window. */
  streams = false;
  /** Operand addresses for the current segment ({@link seek}), then the workspace's. */
  readonly addrs: number[] = new Array<number>(MAX_ADDRS).fill(0);
  // Arrays of a fixed size, filled from the start: V8 keeps them packed and in bounds, which
  // the per-call loops over them need to stay cheap.
  /** The arrays (inputs that had to be copied aside replaced by their snapshots). */
  readonly arrs: (Data | null)[] = new Array<Data | null>(MAX_ADDRS).fill(null);
  /** Bytes per element of each operand as the kernel reads it (a converted half row: 4). */
  private readonly es: number[] = new Array<number>(MAX_ADDRS).fill(4);
  /** The weight's storage code (abi.ts Dtype), for converting half one-row operands. */
  wdt = 0;
  private readonly kind: number[] = new Array<number>(MAX_ADDRS).fill(0);
  /** Resident: the array's byte address. Copied: its region's. */
  private readonly base: number[] = new Array<number>(MAX_ADDRS).fill(0);
  private start = 0;
  private readonly views: (Data | null)[] = new Array<Data | null>(MAX_ADDRS).fill(null);
  private readonly viewAt: number[] = new Array<number>(MAX_ADDRS).fill(0);

  constructor(private readonly heap: Heap) {}

  /**
   * The segment that starts at row `s` (0, then each end returned): points the addresses at
   * it and returns its end row. Every runner (the sync API, the pool) walks segments with it:
   * `for (let s = 0, e; s < rows; s = e) { e = p.segment(s); copy in, run, copy out }`.
   */
  segment(s: number): number {
    if (s > 0) this.seek(s);
    return Math.min(this.rows, s + this.segRows);
  }

  /** The addresses for the segment that starts at row `s`. */
  seek(s: number): void {
    this.start = s;
    const { dim, op } = this;
    for (let i = 0; i < op.operands.length; i++) {
      const b = this.base[i]!;
      if (this.kind[i] !== RESIDENT) this.addrs[i] = b;
      else {
        const shape = op.operands[i]!.shape;
        this.addrs[i] = shape === MATRIX ? b + s * dim * this.es[i]! : shape === PER_ROW ? b + s * 4 : b;
      }
    }
  }

  /** Copies the streamed inputs' rows `[r0, r1)` (inside the current segment) into the window. */
  copyIn(r0: number, r1: number): void {
    if (!this.streams) return;
    const { dim, op } = this;
    const whole = r0 === 0 && r1 === this.rows;
    for (let i = 0; i < op.operands.length; i++) {
      const o = op.operands[i]!;
      if (this.kind[i] !== COPIED || o.out || o.shape === ROW) continue;
      const w = o.shape === MATRIX ? dim : 1;
      const a = this.arrs[i]!;
      const es = this.es[i]!;
      const mem = this.heap.view(es);
      // A call that fits the window (most small ones) copies whole arrays: no subarray to make.
      mem.set(whole ? a : a.subarray(r0 * w, r1 * w), this.base[i]! / es + (r0 - this.start) * w);
    }
  }

  /** Copies the streamed outputs' rows `[r0, r1)` (inside the current segment) out of the window. */
  copyOut(r0: number, r1: number): void {
    if (!this.streams) return;
    const { dim, op } = this;
    for (let i = 0; i < op.operands.length; i++) {
      const o = op.operands[i]!;
      if (this.kind[i] !== COPIED || !o.out || o.shape === ROW) continue;
      const w = o.shape === MATRIX ? dim : 1;
      const es = this.es[i]!;
      this.arrs[i]!.set(this.windowView(i, this.base[i]! / es + (r0 - this.start) * w, (r1 - r0) * w, es), r0 * w);
    }
  }

  /**
   * A view of `len` floats of wasm memory at float index `at`, kept per operand: calls that
   * repeat a shape copy results out through the same view instead of making one per call. A
   * kept view of non-shared memory that growth detached has length 0 and is re-made.
   */
  private windowView(i: number, at: number, len: number, es: number): Data {
    const v = this.views[i];
    if (v !== null && v!.length === len && this.viewAt[i] === at && v!.BYTES_PER_ELEMENT === es) return v!;
    const mem = this.heap.view(es);
    const nv = mem.subarray(at, at + len);
    this.views[i] = nv;
    this.viewAt[i] = at;
    return nv;
  }

  /** After the last segment: copies one-row results (dweight) out and lets go of the arrays; `fn` names the call in errors. */
  finish(fn: string): void {
    const { op } = this;
    // One-row outputs are copied only when something streams (else they are in place).
    for (let i = 0; this.streams && i < op.operands.length; i++) {
      const o = op.operands[i]!;
      if (this.kind[i] !== COPIED || !o.out || o.shape !== ROW) continue;
      const a = this.arrs[i]!;
      const at = this.base[i]!;
      if (a.BYTES_PER_ELEMENT === 2) {
        // A half dweight: the kernel's float32 sums rounded into the region's bits, then out.
        const bits = at + 4 * this.dim;
        checkStatus(fn, this.heap.wasm.exports.narrow_half(at, bits, this.dim, this.wdt));
        a.set(this.heap.u16().subarray(bits >>> 1, (bits >>> 1) + this.dim));
      } else a.set(this.heap.f32().subarray(at >>> 2, (at >>> 2) + this.dim));
    }
    // Keep no caller's array (nor snapshot) alive past the call.
    for (let i = 0; i < op.operands.length; i++) this.arrs[i] = null;
  }

  /**
   * Output `i` as the caller should see it: the array given, or — when it is a view of
   * non-shared memory that this call's growth detached — a fresh view of the same storage
   * (never an empty array).
   */
  result<T extends Data>(i: number, given: T): T {
    if (this.kind[i] !== RESIDENT || given.length !== 0) return given;
    const shape = this.op.operands[i]!.shape;
    const n = shape === MATRIX ? this.rows * this.dim : shape === PER_ROW ? this.rows : this.dim;
    if (n === 0) return given;
    const Type = given.constructor as new (b: ArrayBufferLike, at: number, n: number) => T;
    return new Type(this.heap.f32().buffer, this.base[i]!, n);
  }

  /** @internal Used by Placer: operand `i`'s placement, and its element size as the kernel reads it. */
  set(i: number, kind: number, base: number, es = this.es[i]!): void {
    this.kind[i] = kind;
    this.base[i] = base;
    this.es[i] = es;
  }

  /** @internal */
  esOf(i: number): number {
    return this.es[i]!;
  }

  /** @internal */
  kindOf(i: number): number {
    return this.kind[i]!;
  }

  /** @internal */
  baseOf(i: number): number {
    return this.base[i]!;
  }
}

/** Places calls in one module's memory through one window; see the module doc. */
export class Placer {
  private readonly p: Placement;
  // Per operation and operand, the last view of wasm memory placed there and its address: a
  // call repeated on the same views reads no typed-array getter (buffer and byteOffset cost
  // 10-15 ns each in Node 20; a view's byteOffset never changes).
  private readonly seen: (Data | null)[] = new Array<Data | null>(OPS.length * MAX_ADDRS).fill(null);
  private readonly seenAt: number[] = new Array<number>(OPS.length * MAX_ADDRS).fill(0);
  private readonly sizes: number[] = [];
  private readonly region: number[] = [];
  // The last window layout, reused while a call of the same kind and shape repeats.
  private lastKey = -1;
  private lastRows = 0;
  private lastDim = 0;
  private lastGen = -1;
  private lastSeg = 0;
  private lastWork = 0;
  private readonly lastBase: number[] = new Array<number>(MAX_ADDRS).fill(0);
  // The last call whose arrays were all views used in place: the same views again (the loop
  // over layers and tokens) reuse its addresses and its overlap verdict, which depend only on
  // the views (a view's buffer, offset and length never change).
  private memoOp: Op | null = null;
  private memoRows = 0;
  private memoDim = 0;
  private memoWork = 0;
  private memoGen = -1;
  private memoDt = -1;
  private readonly memoArrs: (Data | null)[] = new Array<Data | null>(MAX_ADDRS).fill(null);
  private readonly memoBase: number[] = new Array<number>(MAX_ADDRS).fill(0);

  constructor(
    private readonly heap: Heap,
    private readonly window: Scratch,
    private readonly rules: WindowRules,
  ) {
    this.p = new Placement(heap);
  }

  /**
   * Places `arrs` (in `op`'s operand order, null for absent) for a call of `rows × dim`
   * (`rows` ≥ 1) and seeks to row 0. `fresh`: bit i set when operand i is an output the
   * library has just allocated (a plain array that overlaps nothing: no checks needed).
   * Throws a TypeError naming `fn` and the array on a stale view of wasm memory, before
   * anything is written.
   */
  place(fn: string, op: Op, arrs: readonly (Data | null)[], rows: number, dim: number, q: Params, fresh = 0): Placement {
    const p = this.p;
    const heap = this.heap;
    const n = op.operands.length;
    p.op = op;
    p.rows = rows;
    p.dim = dim;
    p.wdt = q.wdt;
    const dt = q.dtypes * 4 + q.wdt;
    if (this.repeats(op, arrs, rows, dim, fresh, dt)) {
      for (let i = 0; i < n; i++) {
        p.arrs[i] = arrs[i]!;
        p.set(i, arrs[i] === null ? ABSENT : RESIDENT, this.memoBase[i]!);
      }
      p.streams = false;
      p.segRows = rows;
      p.addrs[n] = this.memoWork;
      p.seek(0);
      return p;
    }
    this.memoOp = null;
    let copied = false;
    let cur: ArrayBufferLike | null = null;
    for (let i = 0; i < n; i++) {
      const a = arrs[i]!;
      p.arrs[i] = a;
      if (a === null) {
        p.set(i, ABSENT, 0, 4);
        continue;
      }
      const shape = op.operands[i]!.shape;
      const es = shape === MATRIX ? a.BYTES_PER_ELEMENT : 4;
      // A half one-row operand is converted in the window (see the module doc).
      if (fresh & (1 << i) || (shape === ROW && a.BYTES_PER_ELEMENT === 2)) {
        p.set(i, COPIED, -1, es);
        copied = true;
        continue;
      }
      const slot = op.id * MAX_ADDRS + i;
      let off = a === this.seen[slot] && (heap.wasm.shared || a.length !== 0) ? this.seenAt[slot]! : -1;
      if (off < 0) {
        // Read before the window is carved: growing non-shared memory detaches its views.
        off = heap.addressOf(fn, op.operands[i]!.name, a, (cur ??= heap.f32().buffer));
        if (off >= 0) {
          this.seen[slot] = a;
          this.seenAt[slot] = off;
        }
      }
      if (off >= 0) p.set(i, RESIDENT, off, es);
      else {
        p.set(i, COPIED, -1, es);
        copied = true;
      }
    }
    if (this.snapshotConflicts(p, fresh)) copied = true;
    p.streams = copied;
    if (!copied) {
      // Everything in place: one segment, only the workspace to find.
      p.segRows = rows;
      const w = this.rules.work(op, rows, dim, p.arrs);
      p.addrs[n] = w === 0 ? 0 : this.window.carveOne(w);
      p.seek(0);
      this.memoOp = op;
      this.memoRows = rows;
      this.memoDim = dim;
      this.memoWork = p.addrs[n]!;
      this.memoGen = this.window.generation;
      this.memoDt = dt;
      for (let i = 0; i < n; i++) {
        this.memoArrs[i] = p.arrs[i]!;
        this.memoBase[i] = p.baseOf(i);
      }
      return p;
    }
    this.carveWindow(p);
    p.seek(0);
    // One-row inputs (the weight) once, now; a half one as bits after its region's floats,
    // then widened into them.
    for (let i = 0; i < n; i++) {
      const o = op.operands[i]!;
      if (p.kindOf(i) !== COPIED || o.out || o.shape !== ROW) continue;
      const a = p.arrs[i]!;
      const at = p.baseOf(i);
      if (a.BYTES_PER_ELEMENT === 2) {
        const bits = at + 4 * dim;
        heap.u16().set(a, bits >>> 1);
        checkStatus(fn, heap.wasm.exports.widen_half(bits, at, dim, q.wdt));
      } else heap.f32().set(a, at >>> 2);
    }
    return p;
  }

  /**
   * Whether this call is the last all-in-place call again: the same operation, shape and view
   * objects, no output allocated by the library, the window where it was, and (non-shared
   * memory) no view detached since — a detached view has length 0.
   */
  private repeats(op: Op, arrs: readonly (Data | null)[], rows: number, dim: number, fresh: number, dt: number): boolean {
    if (op !== this.memoOp || rows !== this.memoRows || dim !== this.memoDim || fresh !== 0 || dt !== this.memoDt) return false;
    if (this.window.generation !== this.memoGen) return false;
    const shared = this.heap.wasm.shared;
    for (let i = 0; i < op.operands.length; i++) {
      const a = arrs[i]!;
      if (a !== this.memoArrs[i] || (a !== null && !shared && a.length === 0)) return false;
    }
    return true;
  }

  /**
   * Replaces each input that some output would overwrite before the kernel reads it by a
   * snapshot (a JavaScript copy, then streamed). Safe pairs: disjoint ranges, or exactly the
   * same range where the operation allows that alias. One-row inputs copied into the window
   * and one-row outputs copied out at the end cannot be overwritten early. Returns whether it
   * made a snapshot.
   */
  private snapshotConflicts(p: Placement, fresh: number): boolean {
    const ops = p.op.operands;
    let given = false;
    for (let o = 0; o < ops.length; o++) if (ops[o]!.out && p.arrs[o] !== null && !(fresh & (1 << o))) given = true;
    if (!given) return false;
    let made = false;
    for (let i = 0; i < ops.length; i++) {
      const inp = ops[i]!;
      const a = p.arrs[i]!;
      if (inp.out || a === null) continue;
      const ki = p.kindOf(i);
      for (let o = 0; o < ops.length; o++) {
        const out = ops[o]!;
        const b = p.arrs[o]!;
        if (!out.out || b === null || p.kindOf(o) !== ki || fresh & (1 << o)) continue;
        if (ki === COPIED && (inp.shape === ROW || out.shape === ROW)) continue;
        const io = ki === RESIDENT ? p.baseOf(i) : a.byteOffset;
        const oo = ki === RESIDENT ? p.baseOf(o) : b.byteOffset;
        const il = a.BYTES_PER_ELEMENT * a.length;
        const ol = b.BYTES_PER_ELEMENT * b.length;
        if (io >= oo + ol || oo >= io + il) continue;
        if (ki === COPIED && a.buffer !== b.buffer) continue;
        if (io === oo && il === ol && out.alias.includes(i)) continue;
        p.arrs[i] = a.slice();
        p.set(i, COPIED, -1, p.esOf(i));
        made = true;
        break;
      }
    }
    return made;
  }

  /** Sizes the segment to the window and gives each copied array its region. */
  private carveWindow(p: Placement): void {
    const { op, rows, dim } = p;
    const ops = op.operands;
    const n = ops.length;
    let key = op.id;
    for (let i = 0; i < n; i++) key = key * 8 + p.kindOf(i) + (p.arrs[i]?.BYTES_PER_ELEMENT === 2 ? 4 : 0);
    if (key === this.lastKey && rows === this.lastRows && dim === this.lastDim && this.window.generation === this.lastGen) {
      for (let i = 0; i < n; i++) if (p.kindOf(i) === COPIED) p.set(i, COPIED, this.lastBase[i]!);
      p.segRows = this.lastSeg;
      p.addrs[n] = this.lastWork;
      return;
    }
    // Floats per row of the segment, and fixed: a copied output computed where the input it
    // may alias was copied (y at x's copy) needs no region of its own.
    let perRow = 0;
    let fixed = 0;
    let regions = 1; // the workspace's, if any
    const shareOf = this.region;
    shareOf.length = n;
    for (let i = 0; i < n; i++) {
      shareOf[i] = -1;
      if (p.kindOf(i) !== COPIED) continue;
      const o = ops[i]!;
      if (o.out && o.shape === MATRIX) {
        for (const j of o.alias) {
          if (p.kindOf(j) === COPIED && shareOf.indexOf(j) < 0 && ops[j]!.shape === MATRIX) {
            shareOf[i] = j;
            break;
          }
        }
        if (shareOf[i]! >= 0) continue;
      }
      regions++;
      if (o.shape === MATRIX) perRow += (dim * p.esOf(i)) / 4;
      else if (o.shape === PER_ROW) perRow += 1;
      else fixed += p.arrs[i]!.BYTES_PER_ELEMENT === 2 ? convertedFloats(dim) : dim;
    }
    const align = this.rules.rowAlign(op);
    // The workspace may grow with the segment (the pool's partials): size by one aligned block.
    const workPerBlock = this.rules.work(op, align, dim, p.arrs);
    const workFixed = this.rules.work(op, 0, dim, p.arrs);
    const perAligned = perRow * align + workPerBlock - workFixed;
    // Each region may be padded (Scratch.carve): the window holds the regions with their padding.
    const room = this.rules.floats - fixed - workFixed - regions * REGION_PAD_FLOATS;
    let seg = Math.floor(Math.max(0, room) / Math.max(1, perAligned)) * align;
    seg = Math.max(align, seg);
    if (seg >= rows) seg = rows;
    p.segRows = seg;
    const sizes = this.sizes;
    sizes.length = 0;
    const slotOf: number[] = [];
    for (let i = 0; i < n; i++) {
      if (p.kindOf(i) !== COPIED || shareOf[i]! >= 0) {
        slotOf.push(-1);
        continue;
      }
      const shape = ops[i]!.shape;
      const floats =
        shape === MATRIX
          ? Math.ceil((seg * dim * p.esOf(i)) / 4)
          : shape === PER_ROW
            ? seg
            : p.arrs[i]!.BYTES_PER_ELEMENT === 2
              ? convertedFloats(dim)
              : dim;
      slotOf.push(sizes.push(floats) - 1);
    }
    const work = this.rules.work(op, seg, dim, p.arrs);
    if (work > 0) sizes.push(work);
    const at = this.window.carve(sizes);
    for (let i = 0; i < n; i++) if (slotOf[i]! >= 0) p.set(i, COPIED, at[slotOf[i]!]!);
    for (let i = 0; i < n; i++) if (shareOf[i]! >= 0) p.set(i, COPIED, p.baseOf(shareOf[i]!));
    p.addrs[n] = work > 0 ? at[sizes.length - 1]! : 0;
    this.lastKey = key;
    this.lastRows = rows;
    this.lastDim = dim;
    this.lastGen = this.window.generation;
    this.lastSeg = seg;
    this.lastWork = p.addrs[n]!;
    for (let i = 0; i < n; i++) this.lastBase[i] = p.baseOf(i);
  }
}
