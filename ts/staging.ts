/**
 * Getting arrays into wasm memory for one call and results back out. Arrays that already live
 * in the module's memory are used where they are; plain arrays are copied into the scratch
 * region before the kernel runs and outputs copied back after it.
 *
 * {@link stage} handles any mix. The sync API first tries two specialised paths that take the
 * same decisions for the common cases at a fraction of the fixed cost per call:
 * {@link residentForward} / {@link residentBackward} (every array a view of wasm memory) and
 * {@link plainForward} / {@link plainBackward} (no array in wasm memory).
 * @module
 */
import type { Heap, Scratch } from './memory.js';
import { overlaps } from './validate.js';

/** An array the kernel reads. */
export interface Input {
  name: string;
  arr: Float32Array;
}

/** An array the kernel writes; `alias` lists inputs it may be identical to (in-place). */
export interface Output {
  name: string;
  arr: Float32Array;
  alias?: readonly Float32Array[];
}

/** Where everything is for one call. */
export interface Staged {
  /** Byte address of each input, in the order given. */
  inputs: number[];
  /** Byte address of each output, in the order given. */
  outputs: number[];
  /** Byte address of each extra scratch region asked for. */
  extra: number[];
  /** Copies outputs that were staged through scratch back to their arrays. */
  finish(): void;
}

const NO_EXTRA: readonly number[] = [];

/**
 * Places inputs and outputs in wasm memory for one kernel call (see the module doc). Throws,
 * before anything is written, on a stale view. `extra` are float counts of further scratch
 * regions (workspace, pool partials).
 */
export function stage(
  fn: string,
  heap: Heap,
  scratch: Scratch,
  inputs: readonly Input[],
  outputs: readonly Output[],
  extra: readonly number[] = NO_EXTRA,
): Staged {
  const ni = inputs.length;
  const no = outputs.length;
  // Where each array lives in wasm memory (its byteOffset), or -1; stale views throw here,
  // before anything is written. Read before the scratch is carved: growing non-shared memory
  // detaches the views of it, and a detached view reads byteOffset 0 and length 0.
  const cur = heap.f32().buffer;
  const inAddr: number[] = [];
  const inLen: number[] = [];
  for (let i = 0; i < ni; i++) {
    const a = inputs[i]!.arr;
    inAddr.push(heap.addressOf(fn, inputs[i]!.name, a, cur));
    inLen.push(a.length);
  }
  const outAddr: number[] = [];
  let outsInPlace = true;
  for (let o = 0; o < no; o++) {
    const off = heap.addressOf(fn, outputs[o]!.name, outputs[o]!.arr, cur);
    outAddr.push(off);
    if (off < 0) outsInPlace = false;
  }
  // Scratch regions: float counts; per input its region (-1: read in place) and, for a
  // resident input copied aside, its own address (else -1).
  const sizes: number[] = [];
  const inSlot: number[] = [];
  const inFrom: number[] = [];
  for (let i = 0; i < ni; i++) {
    const off = inAddr[i]!;
    const a = inputs[i]!.arr;
    let inPlace = off >= 0;
    // A resident input that a resident output overlaps (other than an allowed exact alias) is
    // copied first, so the kernel never reads what it has already overwritten.
    for (let o = 0; inPlace && o < no; o++) {
      const out = outputs[o]!;
      if (outAddr[o]! < 0 || !overlaps(a, out.arr)) continue;
      const exact = off === outAddr[o] && inLen[i] === out.arr.length;
      if (!(exact && out.alias !== undefined && out.alias.includes(a))) inPlace = false;
    }
    inSlot.push(inPlace ? -1 : sizes.push(inLen[i]!) - 1);
    inFrom.push(inPlace ? -1 : off);
  }
  if (sizes.length === 0 && outsInPlace && extra.length === 0) {
    return new StagedCall(inAddr, outAddr, [], heap, outputs, null);
  }
  const outSlot: number[] = [];
  let taken = 0; // bit r: region r already shared by an output (calls have a few inputs)
  for (let o = 0; o < no; o++) {
    const out = outputs[o]!;
    let slot = -1;
    if (outAddr[o]! < 0) {
      // An output staged in scratch can share the region of an input it may alias.
      for (let i = 0; i < ni && slot < 0; i++) {
        const r = inSlot[i]!;
        if (r >= 0 && r < 31 && !(taken & (1 << r)) && out.alias !== undefined && out.alias.includes(inputs[i]!.arr) && inLen[i] === out.arr.length) {
          taken |= 1 << r;
          slot = r;
        }
      }
      if (slot < 0) slot = sizes.push(out.arr.length) - 1;
    }
    outSlot.push(slot);
  }
  const firstExtra = sizes.length;
  for (let e = 0; e < extra.length; e++) sizes.push(extra[e]!);
  const addr = scratch.carve(sizes);
  const mem = heap.f32();
  for (let i = 0; i < ni; i++) {
    const r = inSlot[i]!;
    if (r < 0) continue;
    // A resident input copied aside is read through the current view of memory: its own view
    // may have been detached by the carve.
    const from = inFrom[i]!;
    const src = from < 0 ? inputs[i]!.arr : mem.subarray(from >>> 2, (from >>> 2) + inLen[i]!);
    mem.set(src, addr[r]! >>> 2);
    inAddr[i] = addr[r]!;
  }
  for (let o = 0; o < no; o++) if (outSlot[o]! >= 0) outAddr[o] = addr[outSlot[o]!]!;
  return new StagedCall(inAddr, outAddr, addr.slice(firstExtra), heap, outputs, outSlot);
}

/** The result of {@link stage}; a class rather than a closure per call. */
class StagedCall implements Staged {
  constructor(
    readonly inputs: number[],
    readonly outputs: number[],
    readonly extra: number[],
    private readonly heap: Heap,
    private readonly outs: readonly Output[],
    /** Per output its scratch region, -1 if written in place; null: all in place. */
    private readonly outSlot: readonly number[] | null,
  ) {}

  finish(): void {
    if (this.outSlot === null) return;
    let m: Float32Array | null = null;
    for (let o = 0; o < this.outs.length; o++) {
      if (this.outSlot[o]! < 0) continue;
      m ??= this.heap.f32();
      const start = this.outputs[o]! >>> 2;
      const arr = this.outs[o]!.arr;
      arr.set(m.subarray(start, start + arr.length));
    }
  }
}

/**
 * Whether the kernel may read the byte range `[io, io + ilen)` where it is while writing
 * `[oo, oo + olen)` (same buffer): the ranges are disjoint, or they are the same range and
 * `sameOk` (a documented in-place alias). {@link stage} copies an input that fails this.
 */
export function readableInPlace(io: number, ilen: number, oo: number, olen: number, sameOk: boolean): boolean {
  if (io >= oo + olen || oo >= io + ilen) return true;
  return sameOk && io === oo && ilen === olen;
}

/** Byte addresses of a forward call whose arrays all stay where they are (0 for none). */
export interface ResidentForward {
  x: number;
  w: number;
  y: number;
  rstd: number;
}

/** Byte addresses of a backward call whose arrays all stay where they are (0 for none). */
export interface ResidentBackward {
  dy: number;
  x: number;
  w: number;
  rstd: number;
  dx: number;
  dw: number;
}

/**
 * The zero-copy fast path of {@link stage} for a forward (inputs x, weight?; outputs y
 * aliasing x, rstd?): the addresses when every array is a view of the memory's current buffer
 * and {@link stage} would copy none of them, else null (then call stage). Takes the same
 * decisions as stage at a fraction of the cost: typed-array getters (10-15 ns each in Node
 * 20) are read only when a view is not the one remembered at its position
 * ({@link Heap.remembered}), and nothing is allocated but the result.
 */
export function residentForward(
  heap: Heap,
  x: Float32Array,
  w: Float32Array | null,
  y: Float32Array,
  rstd: Float32Array | null,
): ResidentForward | null {
  let xo = heap.remembered(0, x);
  let yo = heap.remembered(1, y);
  let wo = w === null ? 0 : heap.remembered(2, w);
  let ro = rstd === null ? 0 : heap.remembered(3, rstd);
  if (xo < 0 || yo < 0 || wo < 0 || ro < 0) {
    // f32() as stage's stale check calls it: it notes a grown memory's old buffer.
    const buf = heap.f32().buffer;
    if (x.buffer !== buf || y.buffer !== buf || (w !== null && w.buffer !== buf) || (rstd !== null && rstd.buffer !== buf)) {
      return null;
    }
    heap.remember(0, x, (xo = x.byteOffset));
    heap.remember(1, y, (yo = y.byteOffset));
    if (w !== null) heap.remember(2, w, (wo = w.byteOffset));
    if (rstd !== null) heap.remember(3, rstd, (ro = rstd.byteOffset));
  }
  // An absent array is an empty range, which overlaps nothing.
  const xn = 4 * x.length;
  const yn = 4 * y.length;
  const wn = w === null ? 0 : 4 * w.length;
  const rn = rstd === null ? 0 : 4 * rstd.length;
  // y may be exactly x (the in-place forward); stage's alias test is by identity with x.
  const ok =
    readableInPlace(xo, xn, yo, yn, true) &&
    readableInPlace(xo, xn, ro, rn, false) &&
    readableInPlace(wo, wn, yo, yn, w === x) &&
    readableInPlace(wo, wn, ro, rn, false);
  return ok ? { x: xo, w: wo, y: yo, rstd: ro } : null;
}

/**
 * {@link residentForward} for a backward: inputs dy, x, weight?, rstd?; outputs dx (may be
 * exactly dy or x), dweight?. The workspace is not included: carve it after this (a carve
 * that grows non-shared memory detaches the views, whose byteOffset then reads 0).
 */
export function residentBackward(
  heap: Heap,
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array | null,
  rstd: Float32Array | null,
  dx: Float32Array,
  dw: Float32Array | null,
): ResidentBackward | null {
  let dyo = heap.remembered(4, dy);
  let xo = heap.remembered(5, x);
  let dxo = heap.remembered(6, dx);
  let wo = w === null ? 0 : heap.remembered(7, w);
  let ro = rstd === null ? 0 : heap.remembered(8, rstd);
  let dwo = dw === null ? 0 : heap.remembered(9, dw);
  if (dyo < 0 || xo < 0 || dxo < 0 || wo < 0 || ro < 0 || dwo < 0) {
    const buf = heap.f32().buffer;
    if (
      dy.buffer !== buf ||
      x.buffer !== buf ||
      dx.buffer !== buf ||
      (w !== null && w.buffer !== buf) ||
      (rstd !== null && rstd.buffer !== buf) ||
      (dw !== null && dw.buffer !== buf)
    ) {
      return null;
    }
    heap.remember(4, dy, (dyo = dy.byteOffset));
    heap.remember(5, x, (xo = x.byteOffset));
    heap.remember(6, dx, (dxo = dx.byteOffset));
    if (w !== null) heap.remember(7, w, (wo = w.byteOffset));
    if (rstd !== null) heap.remember(8, rstd, (ro = rstd.byteOffset));
    if (dw !== null) heap.remember(9, dw, (dwo = dw.byteOffset));
  }
  const dyn = 4 * dy.length;
  const xn = 4 * x.length;
  const dxn = 4 * dx.length;
  const wn = w === null ? 0 : 4 * w.length;
  const rn = rstd === null ? 0 : 4 * rstd.length;
  const dwn = dw === null ? 0 : 4 * dw.length;
  // dx's aliases are dy and x (by identity, as in stage); dweight has none.
  const ok =
    readableInPlace(dyo, dyn, dxo, dxn, true) &&
    readableInPlace(xo, xn, dxo, dxn, true) &&
    readableInPlace(wo, wn, dxo, dxn, w === dy || w === x) &&
    readableInPlace(ro, rn, dxo, dxn, rstd === dy || rstd === x) &&
    readableInPlace(dyo, dyn, dwo, dwn, false) &&
    readableInPlace(xo, xn, dwo, dwn, false) &&
    readableInPlace(wo, wn, dwo, dwn, false) &&
    readableInPlace(ro, rn, dwo, dwn, false);
  return ok ? { dy: dyo, x: xo, w: wo, rstd: ro, dx: dxo, dw: dwo } : null;
}

/** Scratch addresses of a forward whose arrays are all plain (y is computed at x's copy). */
export interface PlainForward {
  x: number;
  w: number;
  rstd: number;
}

/** Scratch addresses of a backward whose arrays are all plain (dx is computed at dy's copy). */
export interface PlainBackward {
  dy: number;
  x: number;
  w: number;
  rstd: number;
  dw: number;
  work: number;
}

/**
 * The copy path of {@link stage} for a forward when no array lives in wasm memory: the same
 * scratch layout (x, weight?, rstd?; y shares x's region, as stage lets an output share an
 * input it may alias), the inputs copied in, without stage's general bookkeeping. Null when
 * some array is a view of wasm memory (then call stage). Throws on a stale view as stage does.
 * After the kernel, {@link copyOut} y from `x` and rstd from `rstd`. With `copyRows` false, x
 * is left for the caller to copy in (the pool streams it in by chunks).
 */
export function plainForward(
  fn: string,
  heap: Heap,
  scratch: Scratch,
  x: Float32Array,
  w: Float32Array | null,
  y: Float32Array,
  rstd: Float32Array | null,
  copyRows = true,
): PlainForward | null {
  const cur = heap.f32().buffer;
  if (
    heap.addressOf(fn, 'x', x, cur) >= 0 ||
    (w !== null && heap.addressOf(fn, 'weight', w, cur) >= 0) ||
    heap.addressOf(fn, 'options.out', y, cur) >= 0 ||
    (rstd !== null && heap.addressOf(fn, 'options.rstd', rstd, cur) >= 0)
  ) {
    return null;
  }
  const sizes = [x.length];
  if (w !== null) sizes.push(w.length);
  if (rstd !== null) sizes.push(rstd.length);
  const addr = scratch.carve(sizes);
  const mem = heap.f32();
  if (copyRows) mem.set(x, addr[0]! >>> 2);
  if (w !== null) mem.set(w, addr[1]! >>> 2);
  return { x: addr[0]!, w: w === null ? 0 : addr[1]!, rstd: rstd === null ? 0 : addr[sizes.length - 1]! };
}

/**
 * {@link plainForward} for a backward: regions dy, x, weight?, rstd?, dweight?, then the
 * workspace (with a weight: `workFloats`, by default one row for the sync kernel; the pool
 * asks for its dweight block partials); dx shares dy's region. After the kernel,
 * {@link copyOut} dx from `dy` and dweight from `dw`. With `copyRows` false, dy and x are left
 * for the caller to copy in.
 */
export function plainBackward(
  fn: string,
  heap: Heap,
  scratch: Scratch,
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array | null,
  rstd: Float32Array | null,
  dx: Float32Array,
  dw: Float32Array | null,
  copyRows = true,
  workFloats = w === null ? 0 : w.length,
): PlainBackward | null {
  const cur = heap.f32().buffer;
  if (
    heap.addressOf(fn, 'dy', dy, cur) >= 0 ||
    heap.addressOf(fn, 'x', x, cur) >= 0 ||
    (w !== null && heap.addressOf(fn, 'weight', w, cur) >= 0) ||
    (rstd !== null && heap.addressOf(fn, 'options.rstd', rstd, cur) >= 0) ||
    heap.addressOf(fn, 'options.dx', dx, cur) >= 0 ||
    (dw !== null && heap.addressOf(fn, 'options.dweight', dw, cur) >= 0)
  ) {
    return null;
  }
  const sizes = [dy.length, x.length];
  if (w !== null) sizes.push(w.length);
  if (rstd !== null) sizes.push(rstd.length);
  if (dw !== null) sizes.push(dw.length);
  if (w !== null) sizes.push(workFloats);
  const addr = scratch.carve(sizes);
  const mem = heap.f32();
  if (copyRows) {
    mem.set(dy, addr[0]! >>> 2);
    mem.set(x, addr[1]! >>> 2);
  }
  let k = 2;
  const wa = w === null ? 0 : addr[k++]!;
  if (w !== null) mem.set(w, wa >>> 2);
  const ra = rstd === null ? 0 : addr[k++]!;
  if (rstd !== null) mem.set(rstd, ra >>> 2);
  const dwa = dw === null ? 0 : addr[k++]!;
  const work = w === null ? 0 : addr[k]!;
  return { dy: addr[0]!, x: addr[1]!, w: wa, rstd: ra, dw: dwa, work };
}

/** Copies `arr.length` floats at byte address `addr` of wasm memory into `arr`. */
export function copyOut(heap: Heap, addr: number, arr: Float32Array): void {
  const start = addr >>> 2;
  arr.set(heap.f32().subarray(start, start + arr.length));
}
