/**
 * The arrays a layer hands out and reuses ({@link Owned}), and the Float16Array a caller who
 * gave Float16Arrays gets over their bits ({@link asKind}).
 * @module
 */
import { BY_CODE } from './dtypes.js';
import { KIND_F16 } from './check/arrays.js';
import type { FloatArray } from './types.js';

/** A Float16Array over the bits of `a` when `kind` is KIND_F16 (the caller gave one), else `a`. */
export function asKind<A extends Owns>(a: A, kind: number): FloatArray | A {
  if (kind !== KIND_F16) return a;
  const F16 = (globalThis as unknown as { Float16Array: new (b: ArrayBufferLike, o: number, n: number) => FloatArray }).Float16Array;
  return new F16(a.buffer, a.byteOffset, a.length);
}

/** The arrays a layer owns: of its dtypes' facts (half data as bit patterns). */
type Owns = Float32Array | Uint16Array | Int8Array | Uint8Array;

/**
 * An output array the layer reuses (the array of its dtype's facts: a Uint16Array for half
 * data, an Int8Array for int8): it grows to
 * the largest size asked for, and a smaller size is a view of its start (kept while the size
 * repeats), so alternating shapes do not allocate either.
 */
export class Owned {
  private backing: Owns;
  /** The backing array's buffer: every array handed out is a view of it. */
  buffer: ArrayBufferLike;
  /** The array last handed out. */
  last: Owns;
  /** A Float16Array over `last`, made when a caller gave Float16Arrays. */
  private lastF16: FloatArray | Owns | null = null;

  constructor(private readonly dt: number) {
    this.backing = this.make(0);
    this.buffer = this.backing.buffer;
    this.last = this.backing;
  }

  private make(n: number): Owns {
    return new (BY_CODE[this.dt]!.Array as new (n: number) => Owns)(n);
  }

  take(n: number): Owns {
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
  given(kind: number): FloatArray | Owns {
    if (kind !== KIND_F16) return this.last;
    return (this.lastF16 ??= asKind(this.last, kind));
  }
}
