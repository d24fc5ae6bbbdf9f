/**
 * The error the file functions reject with for a bad file, and the one wording of what a
 * file-system error means.
 * @module
 */
import { shown, type FsPath } from './paths.js';

/** An error in the files or the arguments of a {@link normalizeFile} call; the message says what and where. */
export class NormalizeError extends Error {
  /** `'NormalizeError'`. */
  override name = 'NormalizeError';

  /**
   * @param message What went wrong, naming the file.
   * @param code The system's error code behind it (`'ENOSPC'`, `'EROFS'`, …), when there is one.
   */
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** What an errno code means, in words a user reads. */
const MEANING: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENAMETOOLONG: 'the name is too long',
  ELOOP: 'too many levels of symbolic links',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in the system',
  EIO: 'an input/output error',
  EXDEV: 'it is on another file system',
};

/** The errno code of a Node error, if any. */
export const codeOf = (e: unknown): string | undefined => (e as { code?: string } | null)?.code;

/**
 * A NormalizeError for a failed file-system call: `cannot <what> <path>: <meaning> (<CODE>)`,
 * the path shown exactly (see `shown`). Anything that is not a file-system error is returned as
 * it is.
 */
export function fsError(e: unknown, what: string, path: FsPath, where = ''): Error {
  if (codeOf(e) === undefined || e instanceof NormalizeError) return e instanceof Error ? e : new Error(String(e));
  return new NormalizeError(`cannot ${what} ${shown(path)}${where}: ${meaningOf(e)}`, codeOf(e));
}

/** `meaning (CODE)` of a file-system error. */
export function meaningOf(e: unknown): string {
  const code = codeOf(e) ?? '';
  const meaning = MEANING[code] ?? String((e as Error).message).replace(/^\w+: /, '').replace(/, \w+ .*$/, '');
  return code ? `${meaning} (${code})` : meaning;
}
