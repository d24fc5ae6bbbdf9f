/**
 * An output file that appears under its name only when complete: written to a temporary file
 * beside it, then flushed and renamed into place ({@link AtomicFile.commit}); anything else
 * removes the temporary file ({@link AtomicFile.abort}, or the end of an `await using` block
 * that did not commit). A rename within one directory is atomic on POSIX file systems, so a
 * reader sees the old file or the whole new one, never a part.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { NormalizeError } from './errors.js';

/** See the module doc. */
export class AtomicFile {
  private done = false;

  private constructor(
    /** The name the file gets on commit. */
    readonly target: string,
    /** The temporary file's path: `.<name>.tmp-<pid>-<random>` beside the target. */
    readonly path: string,
    /** Write here. */
    readonly fh: FileHandle,
  ) {}

  /** Creates the temporary file beside `target`; a NormalizeError when its directory is not writable. */
  static async create(target: string): Promise<AtomicFile> {
    const path = join(dirname(target), `.${basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      return new AtomicFile(target, path, await open(path, 'wx'));
    } catch (e) {
      throw new NormalizeError(`cannot write ${target} (its directory ${dirname(target)}): ${(e as Error).message}`);
    }
  }

  /**
   * Flushes the data to the device (`fsync`; skipped when `durable` is false) and closes the
   * file; then {@link publish} renames it. Without the flush a killed process still never leaves
   * a partial file under the target's name (the kernel keeps what was written), but a power
   * failure may.
   */
  async flush(durable = true): Promise<void> {
    if (durable) await this.fh.sync();
    await this.fh.close();
  }

  /** After {@link flush}: gives the file its name. */
  async publish(): Promise<void> {
    await rename(this.path, this.target);
    this.done = true;
  }

  /** {@link flush} then {@link publish}. */
  async commit(): Promise<void> {
    await this.flush();
    await this.publish();
  }

  /** Closes and removes the temporary file (nothing after a commit). Never throws. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.fh.close().catch(() => {});
    await unlink(this.path).catch(() => {});
  }

  /** {@link abort}: for `await using out = await AtomicFile.create(path)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.abort();
  }
}

/** Whether `a` and `b` name the same file (b may not exist). */
export async function sameFile(a: string, b: string): Promise<boolean> {
  if (resolve(a) === resolve(b)) return true;
  try {
    const [sa, sb] = await Promise.all([stat(a), stat(b)]);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    // b does not exist yet: the same file only if it would be created where a is (a link to a's directory).
    try {
      return (await realpath(a)) === join(await realpath(dirname(b)), basename(b));
    } catch {
      return false;
    }
  }
}
