/**
 * What the zero-copy short ways remember of the views they were given: each operand position's
 * last view and its byte address (a view's buffer and offset never change), and the test that
 * two byte ranges are apart.
 * @module
 */

/** The last views seen in one operand position, and their byte addresses. */
export class Seen {
  /** Starts as no value any call can pass. */
  view: unknown = Seen;
  at = 0;

  /** `a`'s byte address if it is a Float32Array view of `buf` with elements, else -1 (a view's buffer and offset never change). */
  addressOf(a: unknown, buf: ArrayBufferLike): number {
    if (a === this.view) return (a as Float32Array).length !== 0 ? this.at : -1;
    if (!(a instanceof Float32Array) || a.buffer !== buf || a.length === 0) return -1;
    this.view = a;
    this.at = a.byteOffset;
    return this.at;
  }
}

/** Whether `[a, a + an)` and `[b, b + bn)` (bytes) share none. */
export const apart = (a: number, an: number, b: number, bn: number) => a + an <= b || b + bn <= a;
