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
