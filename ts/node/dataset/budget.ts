/**
 * A byte budget shared by the files in flight: a file waits until its chunk memory fits beside
 * the others', so that many small files overlap while big ones do not multiply the memory.
 * @module
 */

/** See the module doc. A request bigger than the whole budget is granted when nothing else holds any. */
export class ByteBudget {
  private used = 0;
  private readonly waiting: { bytes: number; go: () => void }[] = [];

  constructor(private readonly limit: number) {}

  /** Resolves once `bytes` are reserved; give them back with {@link release}. */
  acquire(bytes: number): Promise<void> {
    if (this.fits(bytes) && this.waiting.length === 0) {
      this.used += bytes;
      return Promise.resolve();
    }
    return new Promise((go) => this.waiting.push({ bytes, go }));
  }

  /** Returns `bytes` reserved by {@link acquire}, and starts the waiters that now fit, in order. */
  release(bytes: number): void {
    this.used -= bytes;
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const w = this.waiting.shift()!;
      this.used += w.bytes;
      w.go();
    }
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.limit;
  }
}
