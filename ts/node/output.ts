/**
 * An output file written front to back: its format's bytes around the data of each array, the
 * data in order, a running position, and the SHA-256 of everything written (`checksum`). One
 * writer per output file (the normalized data, or the rstd file).
 * @module
 */
import { createHash, type Hash } from 'node:crypto';
import type { FormatWriter } from './formats/index.js';
import type { Sink } from './sink.js';

/** See the module doc. */
export class OutputFile {
  /** Bytes written so far. */
  at = 0;
  private readonly hash: Hash | null;
  /** Bytes of the format's own, waiting to go out with the next data (one write instead of two). */
  private pending: Uint8Array[] = [];
  private array = -1;

  constructor(
    readonly sink: Sink,
    private readonly format: FormatWriter,
    checksum: boolean,
  ) {
    this.hash = checksum ? createHash('sha256') : null;
    this.queue(format.start());
  }

  private queue(b: Uint8Array): void {
    if (b.length > 0) this.pending.push(b);
  }

  /** Starts array `i` (its format bytes go out with its first data). */
  begin(i: number): void {
    this.array = i;
    this.queue(this.format.before(i));
  }

  /** Writes `bytes` of the current array's data after what was written. */
  async data(bytes: Uint8Array): Promise<void> {
    this.format.data?.(this.array, bytes);
    const parts = this.pending.length ? [...this.pending, bytes] : [bytes];
    this.pending = [];
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
    if (parts.length) await this.put(parts);
  }

  /** The SHA-256 of every byte written (hex), with `checksum`. */
  digest(): string | undefined {
    return this.hash?.digest('hex');
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
