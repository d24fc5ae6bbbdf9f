/**
 * Sharded or inline: for calls big enough to shard, the pool measures both ways and takes the
 * faster (see tuning.ts, PROBE_EVERY). Kept per kind of call (forward/backward × arrays in
 * wasm memory or plain): the last few times per element of work of each way. Medians, and a
 * margin in favour of sharding, because single timings on a shared machine vary by 2×.
 * @module
 */
import { INLINE_MARGIN, PROBE_EVERY, PROBE_MS, SAMPLES } from './tuning.js';

/** Which way one call went, and when it started, for {@link Choice.record}. */
export interface Pick {
  bucket: number;
  sharded: boolean;
  start: number;
  work: number;
}

class Samples {
  private readonly v: number[] = [];
  private at = 0;
  add(x: number): void {
    if (this.v.length < SAMPLES) this.v.push(x);
    else this.v[this.at++ % SAMPLES] = x;
  }
  get count(): number {
    return this.v.length;
  }
  median(): number {
    const s = [...this.v].sort((a, b) => a - b);
    return s[s.length >> 1] ?? NaN;
  }
}

/** See the module doc. */
export class Choice {
  private readonly sharded = [0, 1, 2, 3].map(() => new Samples());
  private readonly inline = [0, 1, 2, 3].map(() => new Samples());
  private readonly since = [0, 0, 0, 0];
  private readonly lastProbe = [0, 0, 0, 0];

  /** Decides how a call that could be sharded runs; pass the result to record() when done. */
  pick(backward: boolean, plain: boolean, work: number): Pick {
    const bucket = (backward ? 2 : 0) + (plain ? 1 : 0);
    const s = this.sharded[bucket]!;
    const i = this.inline[bucket]!;
    const now = performance.now();
    let sharded: boolean;
    if (s.count < 3) sharded = true;
    else if (i.count < 3) sharded = false; // a first comparison, three calls
    else {
      // Sharding unless the calling thread alone has clearly been faster lately.
      sharded = !(i.median() < INLINE_MARGIN * s.median());
      // Now and then the other way, so that a change of load (a neighbour comes or goes) is seen.
      if (++this.since[bucket]! >= PROBE_EVERY && now - this.lastProbe[bucket]! >= PROBE_MS) {
        this.since[bucket] = 0;
        this.lastProbe[bucket] = now;
        sharded = !sharded;
      }
    }
    return { bucket, sharded, start: now, work };
  }

  /** Notes how long a call took the way `p` says it went. */
  record(p: Pick): void {
    const rate = ((performance.now() - p.start) * 1e6) / Math.max(p.work, 1);
    (p.sharded ? this.sharded : this.inline)[p.bucket]!.add(rate);
  }
}
