/**
 * An open regular file by its descriptor, and where each of its system calls runs: the small
 * ones on the calling thread, the large ones in the file system's thread pool.
 *
 * Why: Node's promise calls (`fs/promises`) each make a round trip through libuv's thread pool
 * — a thread woken, its answer posted back — and on a 2-core VM that trip costs 20–70 µs of
 * latency and most of that in main-thread time, where the same call made synchronously takes
 * 1–4 µs (a `read` of 64 KiB from the page cache: 3.6 µs; of 256 KiB: 11 µs). A dataset's file
 * of one row made a dozen such trips (open, stat, a header read, a write, a close each), which
 * was most of its cost. Reads and writes of more than {@link SYNC_BYTES} bytes and `fsync`
 * stay in the pool: they take long enough that the trip is noise, and the calling thread has
 * other files to feed meanwhile.
 *
 * Only regular files come here (an open that could block, a FIFO's without a writer, never
 * does); a file read from a cold disk blocks the calling thread for that one small read.
 * @module
 */
import { closeSync, fsync, read, readSync, write, writeSync, writev, writevSync } from 'node:fs';
import { promisify } from 'node:util';

/** The largest read or write made on the calling thread; see the module doc. */
export const SYNC_BYTES = 256 << 10;

const readP = promisify(read);
const writeP = promisify(write);
const writevP = promisify(writev);
const fsyncP = promisify(fsync);

/** A regular file open as descriptor `fd`, closed once by {@link close}. */
export class FdFile {
  private closed = false;

  constructor(
    /** The descriptor, also for reads and writes at positions from other threads. */
    readonly fd: number,
  ) {}

  /** Reads up to `len` bytes at byte `pos` (null: where the last read ended) into `into` at `off`; resolves to the count (0 at the end). */
  async read(into: Uint8Array, off: number, len: number, pos: number | null): Promise<{ bytesRead: number }> {
    if (len <= SYNC_BYTES) return { bytesRead: readSync(this.fd, into, off, len, pos) };
    return { bytesRead: (await readP(this.fd, into, off, len, pos)).bytesRead };
  }

  /** Writes `len` bytes of `b` from `off` at byte `pos` (null: where the last write ended); resolves to the count written (a short write is the caller's to continue). */
  async write(b: Uint8Array, off: number, len: number, pos: number | null): Promise<{ bytesWritten: number }> {
    if (len <= SYNC_BYTES) return { bytesWritten: writeSync(this.fd, b, off, len, pos) };
    return { bytesWritten: (await writeP(this.fd, b, off, len, pos)).bytesWritten };
  }

  /** Writes the buffers `parts` one after the other at byte `pos` (undefined: where the last write ended); as {@link write}. */
  async writev(parts: readonly Uint8Array[], pos?: number): Promise<{ bytesWritten: number }> {
    const total = parts.reduce((a, b) => a + b.length, 0);
    if (total <= SYNC_BYTES) return { bytesWritten: writevSync(this.fd, parts as Uint8Array[], pos) };
    return { bytesWritten: (await writevP(this.fd, parts as Uint8Array[], pos)).bytesWritten };
  }

  /** Flushes the file's data and metadata to the device (`fsync`, in the pool: it waits for the device). */
  async sync(): Promise<void> {
    await fsyncP(this.fd);
  }

  /** Closes the descriptor; once (later calls do nothing). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
