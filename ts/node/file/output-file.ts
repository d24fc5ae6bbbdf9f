/**
 * An output file written front to back: its format's bytes around the data of each array, the
 * data in order, a running position, and the SHA-256 of everything written (`checksum`). One
 * writer per output file (the normalized data, or the rstd file). A file (not a stream) may
 * leave an array's bytes to be filled later: a container's row scales, which its format puts
 * before the data they are computed with.
 * @module
 */
import { createHash, type Hash } from 'node:crypto';
import type { FormatWriter } from '../formats/index.js';
import { AtomicFile } from '../io/atomic.js';
import type { Sink } from '../io/sink.js';

/** Data of at most this many bytes is gathered with what follows (see OutputFile.data). */
const SMALL_WRITE = 16 << 10;
/** Bytes gathered before they are written. */
const GATHER_BYTES = 256 << 10;

/** See the module doc. */
export class OutputFile {
  /** Bytes written so far. */
  at = 0;
  private readonly hash: Hash | null;
  /** Bytes of the format's own, waiting to go out with the next data (one write instead of two). */
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private array = -1;
  /** Whether bytes were left to fill (the SHA-256 is then read back from the file). */
  private holes = false;

  constructor(
    readonly sink: Sink,
    private readonly format: FormatWriter,
    checksum: boolean,
  ) {
    this.hash = checksum ? createHash('sha256') : null;
    this.queue(format.start());
  }

  private queue(b: Uint8Array): void {
    if (b.length > 0) {
      this.pending.push(b);
      this.pendingBytes += b.length;
    }
  }

  /** Starts array `i` (its format bytes go out with its first data). */
  begin(i: number): void {
    this.array = i;
    this.queue(this.format.before(i));
  }

  /**
   * Writes `bytes` of the current array's data after what was written. Small data (the arrays
   * of a container of thousands of tiny ones) is copied and kept to go out with what follows,
   * up to {@link GATHER_BYTES}: one write for many arrays instead of one each.
   */
  async data(bytes: Uint8Array): Promise<void> {
    this.format.data?.(this.array, bytes);
    if (bytes.length <= SMALL_WRITE) {
      this.pending.push(bytes.slice());
      this.pendingBytes += bytes.length;
      if (this.pendingBytes < GATHER_BYTES) return;
      bytes = new Uint8Array(0);
    }
    const parts = this.pending.length ? [...this.pending, bytes] : [bytes];
    this.pending = [];
    this.pendingBytes = 0;
    await this.put(parts);
  }

  /** Ends the current array. */
  finish(): void {
    this.queue(this.format.after(this.array));
  }

  /** Writes the trailer and whatever is pending. */
  async end(): Promise<void> {
    this.queue(this.format.end());
    const parts = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    if (parts.length) await this.put(parts);
  }

  /**
   * Leaves the current array's `bytes` to be written later by {@link fill} (an output that is a
   * file, of a format whose bytes do not depend on the data); returns where they start.
   */
  async reserve(bytes: number): Promise<number> {
    if (!this.sink.seekable || this.format.data || this.format.dataCrc) throw new Error('rmsnorm-wasm: internal error: bytes left to fill in an output that cannot have them');
    const parts = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    if (parts.length) await this.put(parts);
    const at = this.at;
    this.at += bytes;
    this.holes = true;
    return at;
  }

  /** Writes `parts` where {@link reserve} left room for them. */
  async fill(at: number, parts: readonly Uint8Array[]): Promise<void> {
    if (parts.length) await this.sink.write(parts, at);
  }

  /** The SHA-256 of the whole file (hex), with `checksum`: of what was written, or read back from the file after {@link fill}. */
  async digest(): Promise<string | undefined> {
    if (!this.hash || !this.holes || !(this.sink instanceof AtomicFile)) return this.hash?.digest('hex');
    const h = createHash('sha256');
    const buf = new Uint8Array(4 << 20);
    for (let at = 0; at < this.at; ) {
      const { bytesRead } = await this.sink.fh.read(buf, 0, Math.min(buf.length, this.at - at), at);
      if (bytesRead === 0) throw new Error(`rmsnorm-wasm: internal error: ${this.at} bytes written, ${at} read back`);
      h.update(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
    return h.digest('hex');
  }

  private async put(parts: Uint8Array[]): Promise<void> {
    const at = this.at;
    this.at += parts.reduce((a, b) => a + b.length, 0);
    // Hashed before the write is awaited: a view of wasm memory that is not shared is detached
    // (length 0) when another file's chunks grow the memory meanwhile.
    for (const p of parts) this.hash?.update(p);
    await this.sink.write(parts, at);
  }
}
