/**
 * The arrays a layer hands out and reuses ({@link Owned}), as the array of their dtype's facts
 * or, for a caller who gave JavaScript's own arrays of it (Float16Arrays), as one of those.
 * @module
 */
import { BY_CODE, type Placed } from '../glue/dtypes.js';
import { jsArrayOver } from '../glue/platform.js';
import type { FloatArray } from '../types.js';


/**
 * An output array the layer reuses (the array of its dtype's facts: a Uint16Array for half
 * data, an Int8Array for int8): it grows to
 * the largest size asked for, and a smaller size is a view of its start (kept while the size
 * repeats), so alternating shapes do not allocate either.
 */
export class Owned {
  private backing: Placed;
  /** The backing array's buffer: every array handed out is a view of it. */
  buffer: ArrayBufferLike;
  /** The array last handed out. */
  last: Placed;
  /** JavaScript's own array of the dtype (a Float16Array) over `last`, made when a caller gave such arrays. */
  private lastJs: FloatArray | null = null;

  constructor(private readonly dt: number) {
    this.backing = this.make(0);
    this.buffer = this.backing.buffer;
    this.last = this.backing;
  }

  private make(n: number): Placed {
    return new (BY_CODE[this.dt]!.Array as new (n: number) => Placed)(n);
  }

  take(n: number): Placed {
    if (this.last.length === n) return this.last;
    if (this.backing.length < n) {
      this.backing = this.make(n);
      this.buffer = this.backing.buffer;
    }
    this.last = n === this.backing.length ? this.backing : this.backing.subarray(0, n);
    this.lastJs = null;
    return this.last;
  }

  /** `last` as the caller's kind of array (`js`: JavaScript's own array of the dtype over it, the same one while `last` stays). */
  given(js: boolean): FloatArray | Placed {
    if (!js) return this.last;
    return (this.lastJs ??= jsArrayOver(this.last, this.dt) as FloatArray);
  }
}
