/**
 * A placed call: one {@link Slot} per operand (where its array is while the kernel runs), the
 * operands' addresses for the current segment, and the copies in and out of the window. The
 * decisions are the {@link Placer}'s (placer.ts); this module carries them out.
 * @module
 */
import type { ArrayType, Heap } from '../../glue/memory.js';
import { checkStatus } from '../../glue/status.js';
import { Dtype as DT } from '../../generated/abi.js';
import { BY_CODE } from '../../glue/dtypes.js';
import { MATRIX, MAX_ADDRS, PER_ROW, ROW, type Op, type Placed } from '../op.js';

/** A slot's kind: no array (an absent optional operand). */
export const ABSENT = 0;
/** A slot's kind: a view of wasm memory, used where it is. */
export const RESIDENT = 1;
/** A slot's kind: streamed through a region of the window. */
export const COPIED = 2;
/**
 * A slot's kind (the pool's only): an array in a SharedArrayBuffer of the caller's, streamed
 * through a region of the window like a copied one, but by the threads that compute each chunk
 * (pool/control.ts EXT0), not by the calling thread.
 */
export const EXTERNAL = 3;

/** Whether a slot of this kind goes through the window (copied by the calling thread or by the workers). */
export const throughWindow = (kind: number): boolean => kind === COPIED || kind === EXTERNAL;

/** Where one operand is. Each placement keeps its slots from call to call: see placer.ts. */
export class Slot {
  /** The array (an input that had to be copied aside: its snapshot); null when absent or after the call. */
  arr: Placed | null = null;
  /** {@link ABSENT}, {@link RESIDENT} or {@link COPIED}. */
  kind = ABSENT;
  /** Resident: the array's byte address. Copied: its window region's. */
  base = 0;
  /** Bytes per element as the kernel reads it (a matrix: its array's; anything converted to float32: 4). */
  es = 4;
  /** A view of all memory as the array copied in is (copies in go through it), kept while its element size and the memory's buffer stay. */
  mem: Placed | null = null;
  /** The last view of wasm memory this slot held in place, and its byte address (a view's never changes). */
  seen: Placed | null = null;
  seenAt = 0;
  /** The view of this slot's window region that results are copied out through, and its element index. */
  view: Placed | null = null;
  viewAt = 0;
  /** The kind, element size and (copied) region of the call the window layout was made for. */
  laidKind = -1;
  laidEs = 0;
  laidBase = 0;
}

/** A placed call of one operation; the {@link Placer} keeps one per operation and reuses it. */
export class Placement {
  rows = 0;
  dim = 0;
  /** Rows per segment (all rows when nothing streams). */
  segRows = 0;
  /** Whether any array is streamed through the window by the calling thread. */
  streams = false;
  /** Whether any array is streamed through it by the workers ({@link EXTERNAL}). */
  external = false;
  /** The weight's storage code (abi.ts Dtype), for converting half one-row operands. */
  wdt = 0;
  /** Operand addresses for the current segment ({@link seek}), then the workspace's. */
  readonly addrs: number[] = new Array<number>(MAX_ADDRS).fill(0);
  /** One per operand, in the operation's order. */
  readonly slots: readonly Slot[];
  private start = 0;

  constructor(
    readonly op: Op,
    private readonly heap: Heap,
  ) {
    this.slots = op.operands.map(() => new Slot());
  }

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
    const { dim, op, slots } = this;
    for (let i = 0; i < slots.length; i++) {
      const t = slots[i]!;
      if (t.kind !== RESIDENT) this.addrs[i] = t.base;
      else {
        const shape = op.operands[i]!.shape;
        this.addrs[i] = shape === MATRIX ? t.base + s * dim * t.es : shape === PER_ROW ? t.base + s * 4 : t.base;
      }
    }
  }

  /**
   * Where slot `i`'s rows of the current segment are, for the workers that copy them (an
   * {@link EXTERNAL} slot): the byte offset of the segment's first row in its buffer, and the
   * bytes of a row.
   */
  externalAt(i: number): { byteOffset: number; rowBytes: number } {
    const t = this.slots[i]!;
    const rowBytes = this.op.operands[i]!.shape === MATRIX ? this.dim * t.es : 4;
    return { byteOffset: t.arr!.byteOffset + this.start * rowBytes, rowBytes };
  }

  /** Copies the streamed inputs' rows `[r0, r1)` (inside the current segment) into the window. */
  copyIn(r0: number, r1: number): void {
    if (!this.streams) return;
    const { dim, op, slots } = this;
    const whole = r0 === 0 && r1 === this.rows;
    const buf = this.heap.f32().buffer;
    for (let i = 0; i < slots.length; i++) {
      const o = op.operands[i]!;
      const t = slots[i]!;
      if (t.kind !== COPIED || o.out || o.shape === ROW) continue;
      const w = o.shape === MATRIX ? dim : 1;
      const a = t.arr!;
      // (A kept view of another array type of the same width takes the elements with their bits.)
      const mem = t.mem !== null && t.mem.buffer === buf && t.mem.BYTES_PER_ELEMENT === t.es ? t.mem : (t.mem = this.heap.view(a.constructor as ArrayType<Placed>));
      // A call that fits the window (most small ones) copies whole arrays: no subarray to make.
      mem.set(whole ? a : a.subarray(r0 * w, r1 * w), t.base / t.es + (r0 - this.start) * w);
    }
  }

  /** Copies the streamed outputs' rows `[r0, r1)` (inside the current segment) out of the window. */
  copyOut(r0: number, r1: number): void {
    if (!this.streams) return;
    const { dim, op, slots } = this;
    for (let i = 0; i < slots.length; i++) {
      const o = op.operands[i]!;
      const t = slots[i]!;
      if (t.kind !== COPIED || !o.out || o.shape === ROW) continue;
      const w = o.shape === MATRIX ? dim : 1;
      t.arr!.set(this.windowView(t, t.base / t.es + (r0 - this.start) * w, (r1 - r0) * w), r0 * w);
    }
  }

  /**
   * A view of `len` elements of wasm memory at element index `at`, kept per slot: calls that
   * repeat a shape copy results out through the same view instead of making one per call. A
   * kept view of non-shared memory that growth detached has length 0 and is re-made.
   */
  private windowView(t: Slot, at: number, len: number): Placed {
    const v = t.view;
    if (v !== null && v.length === len && t.viewAt === at && v.BYTES_PER_ELEMENT === t.es) return v;
    const nv = this.heap.view(t.arr!.constructor as ArrayType<Placed>).subarray(at, at + len);
    t.view = nv;
    t.viewAt = at;
    return nv;
  }

  /** After the last segment: copies one-row results (dweight) out and lets go of the arrays; `fn` names the call in errors. */
  finish(fn: string): void {
    const { op, slots } = this;
    // One-row outputs are copied only when something streams (else they are in place).
    for (let i = 0; this.streams && i < slots.length; i++) {
      const o = op.operands[i]!;
      const t = slots[i]!;
      if (t.kind !== COPIED || !o.out || o.shape !== ROW) continue;
      const a = t.arr!;
      if (this.wdt !== DT.float32) {
        // A dweight of another dtype: the kernel's float32 sums rounded into the region's elements after them, then out.
        const f = BY_CODE[this.wdt]!;
        const at = t.base + 4 * this.dim;
        checkStatus(fn, this.heap.wasm.exports.narrow(t.base, at, this.dim, this.wdt));
        a.set(this.heap.view(f.Array).subarray(at / f.bytes, at / f.bytes + this.dim));
      } else a.set(this.heap.f32().subarray(t.base >>> 2, (t.base >>> 2) + this.dim));
    }
    // Keep no caller's array (nor snapshot) alive past the call.
    for (let i = 0; i < slots.length; i++) slots[i]!.arr = null;
  }

  /**
   * Output `i` as the caller should see it: the array given, or — when it is a view of
   * non-shared memory that this call's growth detached — a fresh view of the same storage
   * (never an empty array).
   */
  result<T extends Placed>(i: number, given: T): T {
    const t = this.slots[i]!;
    if (t.kind !== RESIDENT || given.length !== 0) return given;
    const shape = this.op.operands[i]!.shape;
    const n = shape === MATRIX ? this.rows * this.dim : shape === PER_ROW ? this.rows : this.dim;
    if (n === 0) return given;
    const Type = given.constructor as new (b: ArrayBufferLike, at: number, n: number) => T;
    return new Type(this.heap.f32().buffer, t.base, n);
  }
}
