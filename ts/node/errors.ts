/**
 * The error the file functions reject with for a bad file.
 * @module
 */

/** An error in the files or the arguments of a {@link normalizeFile} call; the message says what and where. */
export class NormalizeError extends Error {
  /** `'NormalizeError'`. */
  override name = 'NormalizeError';
}
