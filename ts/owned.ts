/**
 * The arrays a layer hands out and reuses ({@link Owned}), and the Float16Array a caller who
 * gave Float16Arrays gets over their bits ({@link asKind}).
 * @module
 */
import { Dtype as DT } from './abi.js';
import { KIND_F16 } from './check/arrays.js';
import type { FloatArray } from './types.js';

/** A Float16Array over the bits of `a` when `kind` is KIND_F16 (the caller gave one), else `a`. */
export function asKind(a: Float32Array | Uint16Array, kind: number): FloatArray {
  if (kind !== KIND_F16) return a;
  const F16 = (globalThis as unknown as { Float16Array: new (b: ArrayBufferLike, o: number, n: number) => FloatArray }).Float16Array;
  return new F16(a.buffer, a.byteOffset, a.length);
}

/**
 * An output array the layer reuses (Float32Array, or Uint16Array for half data): it grows to
 * the largest size asked for, and a smaller size is a view of its start (kept while the size
 * repeats), so alternating shapes do not allocate either.
 */
export class Owned {
  private backing: Float32Array | Uint16Array;
  /** The backing array's buffer: every array handed out is a view of it. */
  buffer: ArrayBufferLike;
  /** The array last handed out. */
  last: Float32Array | Uint16Array;
  /** A Float16Array over `last`, made when a caller gave Float16Arrays. */
  private lastF16: FloatArray | null = null;

  constructor(private readonly dt: number) {
    this.backing = this.make(0);
    this.buffer = this.backing.buffer;
    this.last = this.backing;
  }

  private make(n: number): Float32Array | Uint16Array {
    return this.dt === DT.float32 ? new Float32Array(n) : new Uint16Array(n);
  }

  take(n: number): Float32Array | Uint16Array {
    if (this.last.length === n) return this.last;
    if (this.backing.length < n) {
      this.backing = this.make(n);
      this.buffer = this.backing.buffer;
    }
    this.last = n === this.backing.length ? this.backing : this.backing.subarray(0, n);
    this.lastF16 = null;
    return this.last;
  }

  /** `last` as the caller's kind of array (KIND_F16: a Float16Array over it, the same one while `last` stays). */
  given(kind: number): FloatArray {
    if (kind !== KIND_F16) return this.last;
    return (this.lastF16 ??= asKind(this.last, kind));
  }
}
