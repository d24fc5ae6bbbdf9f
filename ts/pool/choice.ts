/**
 * Sharded or inline: for calls big enough to shard, the pool measures both ways and takes the
 * faster (see tuning.ts, PROBE_EVERY; re-tries that change nothing back off, PROBE_BACKOFF_MAX).
 * Kept per kind of call (each operation × arrays in wasm memory or plain): the latest times
 * per element of work of each way, from probes of PROBE_RUN calls in a row whose first call is
 * not counted: a first sharded call also pays for waking the workers, which calls arriving back
 * to back do not, and a first call alone after sharded ones shares the cores with workers still
 * polling for the next job (tuning.ts, SPIN_POLLS), which under contention made the calling
 * thread alone look slower than it is. Medians, and a margin in favour of sharding, because single timings on a shared
 * machine vary by 2×.
 * @module
 */
import { OPS } from '../ops.js';
import { INLINE_MARGIN, PROBE_BACKOFF_MAX, PROBE_EVERY, PROBE_MS, PROBE_RUN, SAMPLES } from './tuning.js';

/** Which way one call went, and when it started, for {@link Choice.record}. */
export interface Pick {
  bucket: number;
  sharded: boolean;
  /** Whether its time counts (not the first call of a probe). */
  counts: boolean;
  start: number;
  work: number;
}

class Samples {
  private v: number[] = [];
  add(x: number): void {
    this.v.push(x);
    if (this.v.length > SAMPLES) this.v.shift();
  }
  clear(): void {
    this.v = [];
  }
  get count(): number {
    return this.v.length;
  }
  median(): number {
    const s = [...this.v].sort((a, b) => a - b);
    return s[s.length >> 1] ?? NaN;
  }
}

interface Bucket {
  sharded: Samples;
  inline: Samples;
  /** Calls left in the running probe, and its way. */
  probeLeft: number;
  probeSharded: boolean;
  since: number;
  lastProbe: number;
  /** The way that was better when the running probe of the other way started (null: no such probe). */
  before: boolean | null;
  /** Multiplies PROBE_EVERY and PROBE_MS: doubled by each probe that changed nothing. */
  backoff: number;
}

/** See the module doc. */
export class Choice {
  private readonly buckets: Bucket[] = Array.from({ length: 2 * OPS.length }, () => ({
    sharded: new Samples(),
    inline: new Samples(),
    probeLeft: 0,
    probeSharded: true,
    since: 0,
    lastProbe: 0,
    before: null,
    backoff: 1,
  }));

  /** @param now The clock (ms), replaceable in tests. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Decides how a call of operation `op` (its id) that could be sharded runs; pass the result to record() when done. */
  pick(op: number, plain: boolean, work: number): Pick {
    const bucket = 2 * op + (plain ? 1 : 0);
    const b = this.buckets[bucket]!;
    const now = this.now();
    if (b.probeLeft === 0) {
      if (b.before !== null) {
        // A probe of the other way just ended: if it changed nothing, probe half as often (a
        // way that loses on this machine, such as sharding plain arrays on 2 cores, then costs
        // ~1% of calls instead of ~15%); if it changed the choice, the load has changed.
        b.backoff = this.shardedIsBetter(b) === b.before ? Math.min(2 * b.backoff, PROBE_BACKOFF_MAX) : 1;
        b.before = null;
      }
      if (b.sharded.count === 0) this.startProbe(b, true, now);
      else if (b.inline.count === 0) this.startProbe(b, false, now);
      else if (++b.since >= PROBE_EVERY * b.backoff && now - b.lastProbe >= PROBE_MS * b.backoff) {
        // Now and then the other way, so that a change of load (a neighbour comes or goes) is seen.
        b.before = this.shardedIsBetter(b);
        this.startProbe(b, !b.before, now);
      }
    }
    if (b.probeLeft > 0) {
      const first = b.probeLeft === PROBE_RUN;
      b.probeLeft--;
      return { bucket, sharded: b.probeSharded, counts: !first, start: now, work };
    }
    return { bucket, sharded: this.shardedIsBetter(b), counts: true, start: now, work };
  }

  /** Notes how long a call took the way `p` says it went. */
  record(p: Pick): void {
    if (!p.counts) return;
    const rate = ((this.now() - p.start) * 1e6) / Math.max(p.work, 1);
    const b = this.buckets[p.bucket]!;
    (p.sharded ? b.sharded : b.inline).add(rate);
  }

  /** Sharding unless the calling thread alone has clearly been faster lately. */
  private shardedIsBetter(b: Bucket): boolean {
    return !(b.inline.median() < INLINE_MARGIN * b.sharded.median());
  }

  /** A probe replaces what was known of its way: old timings may be from another load. */
  private startProbe(b: Bucket, sharded: boolean, now: number): void {
    (sharded ? b.sharded : b.inline).clear();
    b.probeSharded = sharded;
    b.probeLeft = PROBE_RUN;
    b.since = 0;
    b.lastProbe = now;
  }
}
