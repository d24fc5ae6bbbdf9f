/**
 * The SHA-256 of a file whose pieces are written out of order (positioned.ts's workers): the
 * longest complete prefix is read back and hashed as it grows.
 * @module
 */
import { createHash } from 'node:crypto';
import type { AtomicFile } from '../io/atomic.js';
import { shown } from '../io/paths.js';

/**
 * The SHA-256 of a file written out of order: ranges are reported complete as they are, and
 * the longest complete prefix is read back and hashed as it grows.
 */
export class Follower {
  private readonly h = createHash('sha256');
  private at = 0;
  private readonly ready = new Map<number, number>();
  private running: Promise<void> = Promise.resolve();
  private readonly buf = new Uint8Array(4 << 20);

  constructor(private readonly f: AtomicFile) {}

  complete(pos: number, bytes: number): void {
    if (bytes === 0) return;
    this.ready.set(pos, bytes);
    const next = this.running.then(() => this.advance());
    // Its error is {@link finish}'s; a run stopped before that (its file closed under a read) must not end the process as an unhandled rejection.
    next.catch(() => {});
    this.running = next;
  }

  private async advance(): Promise<void> {
    for (let n = this.ready.get(this.at); n !== undefined; n = this.ready.get(this.at)) {
      this.ready.delete(this.at);
      for (let off = 0; off < n; ) {
        const k = Math.min(this.buf.length, n - off);
        const { bytesRead } = await this.f.fh.read(this.buf, 0, k, this.at + off);
        if (bytesRead !== k) throw new Error(`rmsnorm-wasm: internal error: ${shown(this.f.path)} is shorter than what was written`);
        this.h.update(this.buf.subarray(0, k));
        off += k;
      }
      this.at += n;
    }
  }

  /** The hex digest once the whole file (`size` bytes) is hashed. */
  async finish(size: number): Promise<string> {
    await this.running;
    if (this.at !== size) throw new Error(`rmsnorm-wasm: internal error: hashed ${this.at} of ${size} bytes`);
    return this.h.digest('hex');
  }
}
