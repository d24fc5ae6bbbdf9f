/**
 * Getting arrays into wasm memory for one call and results back out. Arrays that already live
 * in the module's memory are used where they are; plain arrays are copied into the scratch
 * region before the kernel runs and outputs copied back after it.
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
  extra: readonly number[] = [],
): Staged {
  for (const a of [...inputs, ...outputs]) heap.checkNotStale(fn, a.name, a.arr);
  const inRes = inputs.map((i) => heap.holds(i.arr));
  const outRes = outputs.map((o) => heap.holds(o.arr));
  // A resident input that a resident output overlaps (other than an allowed exact alias) is
  // copied first, so the kernel never reads what it has already overwritten.
  for (let i = 0; i < inputs.length; i++) {
    if (!inRes[i]) continue;
    const a = inputs[i]!.arr;
    for (let o = 0; o < outputs.length; o++) {
      const out = outputs[o]!;
      if (!outRes[o] || !overlaps(a, out.arr)) continue;
      const exact = a.byteOffset === out.arr.byteOffset && a.length === out.arr.length;
      if (!(exact && out.alias?.includes(a))) inRes[i] = false;
    }
  }
  const sizes: number[] = [];
  const inSlot = inputs.map((inp, i) => (inRes[i] ? -1 : sizes.push(inp.arr.length) - 1));
  const taken = new Set<number>();
  const outSlot = outputs.map((out, o) => {
    if (outRes[o]) return -1;
    // An output staged in scratch can share the region of an input it may alias.
    for (let i = 0; i < inputs.length; i++) {
      const s = inSlot[i]!;
      if (s >= 0 && !taken.has(s) && out.alias?.includes(inputs[i]!.arr) && inputs[i]!.arr.length === out.arr.length) {
        taken.add(s);
        return s;
      }
    }
    return sizes.push(out.arr.length) - 1;
  });
  const extraSlot = extra.map((n) => sizes.push(n) - 1);
  const addr = sizes.length > 0 ? scratch.carve(sizes) : [];
  const mem = sizes.length > 0 ? heap.f32() : null;
  const inAddr = inputs.map((inp, i) => {
    const s = inSlot[i]!;
    if (s < 0) return inp.arr.byteOffset;
    mem!.set(inp.arr, addr[s]! >>> 2);
    return addr[s]!;
  });
  const outAddr = outputs.map((out, o) => (outSlot[o]! < 0 ? out.arr.byteOffset : addr[outSlot[o]!]!));
  return {
    inputs: inAddr,
    outputs: outAddr,
    extra: extraSlot.map((s) => addr[s]!),
    finish() {
      let m: Float32Array | null = null;
      for (let o = 0; o < outputs.length; o++) {
        if (outSlot[o]! < 0) continue;
        m ??= heap.f32();
        const start = outAddr[o]! >>> 2;
        outputs[o]!.arr.set(m.subarray(start, start + outputs[o]!.arr.length));
      }
    },
  };
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
 * decisions as stage at a fraction of the cost: each typed-array getter is read once
 * (10-15 ns each in Node 20), and nothing is allocated but the result.
 */
export function residentForward(
  heap: Heap,
  x: Float32Array,
  w: Float32Array | null,
  y: Float32Array,
  rstd: Float32Array | null,
): ResidentForward | null {
  // f32() as stage's stale check calls it: it notes a grown memory's old buffer.
  const buf = heap.f32().buffer;
  if (x.buffer !== buf || y.buffer !== buf || (w !== null && w.buffer !== buf) || (rstd !== null && rstd.buffer !== buf)) {
    return null;
  }
  const xo = x.byteOffset;
  const yo = y.byteOffset;
  const wo = w === null ? 0 : w.byteOffset;
  const ro = rstd === null ? 0 : rstd.byteOffset;
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
  const dyo = dy.byteOffset;
  const xo = x.byteOffset;
  const dxo = dx.byteOffset;
  const wo = w === null ? 0 : w.byteOffset;
  const ro = rstd === null ? 0 : rstd.byteOffset;
  const dwo = dw === null ? 0 : dw.byteOffset;
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
