/**
 * Sharded or inline: for calls big enough to shard, the pool measures both ways and takes the
 * faster (see tuning.ts, PROBE_EVERY; re-tries that change nothing back off, PROBE_BACKOFF_MAX).
 * Kept per kind of call (each operation × where its arrays are × size class): the latest times
 * per element of work of each way, from probes of PROBE_RUN calls in a row whose first call is
 * not counted: a first sharded call also pays for waking the workers, which calls arriving back
 * to back do not, and a first call alone after sharded ones shares the cores with workers still
 * polling for the next job (tuning.ts, SPIN_POLLS), which under contention made the calling
 * thread alone look slower than it is. Each way is judged by its second fastest recent call (see
 * Samples.typical), with a margin in favour of sharding, because single timings on a shared
 * machine vary by 2×.
 * @module
 */
import { INLINE_MARGIN, PROBE_BACKOFF_MAX, PROBE_EVERY, PROBE_MS, PROBE_RUN, SAMPLES } from '../tuning.js';

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
  /**
   * The second fastest of the samples (the only one when there is one): what happens to a call
   * on a busy machine — a page fault, a collection, a thread descheduled — only ever slows it,
   * so a low sample says more of the way than the median, while one lucky call does not decide.
   */
  typical(): number {
    const s = [...this.v].sort((a, b) => a - b);
    return s[Math.min(1, s.length - 1)] ?? NaN;
  }
}

interface Bucket {
  sharded: Samples;
  inline: Samples;
  /** Until both ways have SAMPLES times. */
  learning: boolean;
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

/** Where a call's arrays are, as the choice tells calls apart: views of the pool's memory, the caller's SharedArrayBuffers, plain arrays. */
export type ArrayKind = 'view' | 'shared' | 'plain';
const KINDS: readonly ArrayKind[] = ['view', 'shared', 'plain'];

/** The size class of a call of `elems` elements: calls within a factor of 2 share one. */
const sizeClass = (elems: number): number => Math.min(47, Math.max(0, Math.floor(Math.log2(Math.max(1, elems)))));

/** See the module doc. */
export class Choice {
  private readonly buckets = new Map<number, Bucket>();

  /** @param now The clock (ms), replaceable in tests. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Decides how a call of operation `op` (its id) that could be sharded runs: per operation,
   * kind of arrays and size class (`elems`: elements of its input; a way that wins at one size
   * may lose at another); pass the result to record() when done.
   */
  pick(op: number, kind: ArrayKind, elems: number, work: number): Pick {
    const bucket = (op * KINDS.length + KINDS.indexOf(kind)) * 48 + sizeClass(elems);
    let b = this.buckets.get(bucket);
    if (!b) {
      b = { sharded: new Samples(), inline: new Samples(), learning: true, probeLeft: 0, probeSharded: true, since: 0, lastProbe: 0, before: null, backoff: 1 };
      this.buckets.set(bucket, b);
    }
    const now = this.now();
    if (b.probeLeft === 0) {
      if (b.before !== null) {
        // A probe of the other way just ended: if it changed nothing, probe half as often (a
        // way that loses on this machine, such as sharding plain arrays on 2 cores, then costs
        // ~1% of calls instead of ~15%); if it changed the choice, the load has changed.
        b.backoff = this.shardedIsBetter(b) === b.before ? Math.min(2 * b.backoff, PROBE_BACKOFF_MAX) : 1;
        b.before = null;
      }
      // Learning a new kind of call: probes of each way in turn until both have SAMPLES times
      // (a first probe alone may meet cold workers and code: it must not decide).
      if (b.learning && b.sharded.count >= SAMPLES && b.inline.count >= SAMPLES) b.learning = false;
      if (b.learning && b.sharded.count <= b.inline.count) this.startProbe(b, true, now, true);
      else if (b.learning) this.startProbe(b, false, now, true);
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
    const b = this.buckets.get(p.bucket)!;
    (p.sharded ? b.sharded : b.inline).add(rate);
  }

  /** Sharding unless the calling thread alone has clearly been faster lately. */
  private shardedIsBetter(b: Bucket): boolean {
    return !(b.inline.typical() < INLINE_MARGIN * b.sharded.typical());
  }

  /** A probe replaces what was known of its way (old timings may be from another load), but while learning (`keep`). */
  private startProbe(b: Bucket, sharded: boolean, now: number, keep = false): void {
    if (!keep) (sharded ? b.sharded : b.inline).clear();
    b.probeSharded = sharded;
    b.probeLeft = PROBE_RUN;
    b.since = 0;
    b.lastProbe = now;
  }
}
