/**
 * Which arrays of a call may share bytes: outputs must not overlap each other or the inputs
 * they would overwrite before reading, except where an operation says an output may be
 * exactly an input.
 * @module
 */
import type { Placed } from '../op.js';

/** Throws unless `a` (an output) is disjoint from `b` or, when `sameOk`, exactly `b`. */
export function disjointOrSame(fn: string, na: string, a: Placed | null, nb: string, b: Placed | null, sameOk: boolean): void {
  if (!a || !b || !overlaps(a, b)) return;
  if (sameOk && a.byteOffset === b.byteOffset && a.length === b.length && a.BYTES_PER_ELEMENT === b.BYTES_PER_ELEMENT) return;
  throw new RangeError(`${fn}: ${na} must not overlap ${nb}${sameOk ? ' (it may be exactly that array)' : ''}`);
}

/** Whether `a` and `b` share bytes (same buffer, overlapping ranges). */
export function overlaps(a: Placed, b: Placed): boolean {
  // Each typed-array getter (buffer, byteOffset) is a call of 10-15 ns in V8 11 (Node 20):
  // read each once, byteOffsets first (buffer is the dearer one, and disjoint views of wasm
  // memory need no buffer at all). byteLength is BYTES_PER_ELEMENT (a constant) × length.
  const ao = a.byteOffset;
  const bo = b.byteOffset;
  return ao < bo + b.BYTES_PER_ELEMENT * b.length && bo < ao + a.BYTES_PER_ELEMENT * a.length && a.buffer === b.buffer;
}

/** Throws unless outputs `a` and `b` are disjoint. */
export function distinctOutputs(fn: string, na: string, a: Placed | null, nb: string, b: Placed | null): void {
  if (a && b && overlaps(a, b)) throw new RangeError(`${fn}: ${na} and ${nb} must not overlap`);
}
