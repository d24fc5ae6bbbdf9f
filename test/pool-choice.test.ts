/**
 * The pool's choice between sharding a call and running it on the calling thread alone
 * (ts/pool/choice.ts), driven by a simulated clock: it settles on the faster way, probes a
 * way that keeps losing less and less often, and still follows a change of load.
 */
import { describe, expect, it } from 'vitest';
import { Choice } from '../dist/pool/caller/shard-choice.js';
import { PROBE_BACKOFF_MAX, PROBE_MS, PROBE_RUN } from '../dist/pool/tuning.js';

/** A Choice on a simulated clock; `call(msSharded, msAlone)` makes one call and says how it went. */
function simulated() {
  let t = 0;
  const choice = new Choice(() => t);
  return {
    call(msSharded: number, msAlone: number, elems = 1 << 20): boolean {
      const p = choice.pick(0, 'plain', elems, elems);
      t += p.sharded ? msSharded : msAlone;
      choice.record(p);
      return p.sharded;
    },
  };
}

describe('pool choice (sharded or alone)', () => {
  it('settles on the faster way and probes a losing way less and less often', () => {
    const s = simulated();
    // sharding plain arrays at 0.45× the calling thread alone, as measured on 2 cores
    const ways = Array.from({ length: 4000 }, () => s.call(7, 3));
    const sharded = (from: number, to: number) => ways.slice(from, to).filter(Boolean).length;
    // the last 1000 calls (3 s): at most one probe of PROBE_RUN calls, once backed off
    expect(sharded(3000, 4000)).toBeLessThanOrEqual(PROBE_RUN);
    // (without the backoff, a probe every max(PROBE_EVERY calls, PROBE_MS ms) = 34 calls here)
    // but it still probes now and then
    expect(sharded(1000, 4000)).toBeGreaterThan(0);
    expect(sharded(0, 4000) / 4000).toBeLessThan(0.03);
  });

  it('still sees a change of load: a way that starts winning is taken within one backed-off probe period', () => {
    const s = simulated();
    for (let i = 0; i < 4000; i++) s.call(7, 3);
    // the neighbour leaves: sharding is now faster
    let switchedAt = -1;
    for (let i = 0; i < 3000 && switchedAt < 0; i++) if (s.call(1.5, 3)) switchedAt = i;
    expect(switchedAt).toBeGreaterThanOrEqual(0);
    // bounded by PROBE_MS × PROBE_BACKOFF_MAX of 3-ms calls, plus one probe
    expect(switchedAt).toBeLessThanOrEqual(Math.ceil((PROBE_MS * PROBE_BACKOFF_MAX) / 3) + PROBE_RUN);
    // and once switched, it stays (the probe that switched it reset the backoff; the other way keeps losing)
    const after = Array.from({ length: 500 }, () => s.call(1.5, 3));
    expect(after.filter((x) => !x).length).toBeLessThanOrEqual(6 * PROBE_RUN);
    // the probe that changed the choice reset the backoff: the next change that only a probe
    // can show (the calling thread alone gets faster) is seen within a base period again
    let backAt = -1;
    for (let i = 0; i < 3000 && backAt < 0; i++) if (!s.call(1.5, 0.5)) backAt = i;
    expect(backAt).toBeGreaterThanOrEqual(0);
    expect(backAt).toBeLessThanOrEqual(8 * Math.ceil(PROBE_MS / 1.5));
  });

  it('decides per size class: a way that loses on small calls still wins on large ones', () => {
    const s = simulated();
    // Small calls lose when sharded, large ones win (as zero-copy views do from a few MiB).
    for (let i = 0; i < 2000; i++) {
      s.call(0.1, 0.05, 64 << 10);
      s.call(1, 2, 4 << 20);
    }
    const small = Array.from({ length: 200 }, () => s.call(0.1, 0.05, 64 << 10));
    const large = Array.from({ length: 200 }, () => s.call(1, 2, 4 << 20));
    expect(small.filter(Boolean).length).toBeLessThanOrEqual(PROBE_RUN);
    expect(large.filter((x) => !x).length).toBeLessThanOrEqual(PROBE_RUN);
    // Calls of another kind of array have choices of their own.
    const t = new Choice(() => 0);
    expect(t.pick(0, 'view', 4 << 20, 4 << 20).bucket).not.toBe(t.pick(0, 'shared', 4 << 20, 4 << 20).bucket);
    expect(t.pick(0, 'view', 4 << 20, 4 << 20).bucket).not.toBe(t.pick(0, 'view', 8 << 20, 8 << 20).bucket);
    expect(t.pick(0, 'view', 4 << 20, 4 << 20).bucket).toBe(t.pick(0, 'view', (8 << 20) - 1, 8 << 20).bucket);
  });

  it('leaves a way at once when its own timings get worse (no probe needed)', () => {
    const s = simulated();
    for (let i = 0; i < 2000; i++) s.call(1.5, 3);
    // a neighbour takes a core: sharded calls now take 10 ms
    const ways = Array.from({ length: 20 }, () => s.call(10, 3));
    // from the sixth call on alone, but for at most one probe of the other way
    expect(ways.slice(5).filter(Boolean).length).toBeLessThanOrEqual(PROBE_RUN);
  });
});
