/**
 * The error of a `.npy` header this package cannot read.
 * @module
 */

/** A file that is not an `.npy` this package can read; the message says what is wrong. */
export class NpyError extends Error {
  /** `'NpyError'`. */
  override name = 'NpyError';
}
