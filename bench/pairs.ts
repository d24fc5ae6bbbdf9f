/**
 * Timing a pair of ways to do the same thing (bench/variants.ts, bench/half.ts): alternating
 * rounds (A then B, then B then A, ...) of short tinybench runs, so both sides see the same
 * machine load; the figure is the median over rounds of the per-round ratio of medians.
 * @module
 */
import { Bench } from 'tinybench';

/** Median latency (ms) of `f` over a short tinybench run sized for `n` elements of work. */
export async function median(f: () => void, n: number): Promise<number> {
  const budget = Math.min(400, Math.max(60, n / 2e5));
  const bench = new Bench({ time: budget, warmupTime: 20, iterations: 5, throws: true });
  bench.add('t', f);
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (r.state !== 'completed') throw new Error(`tinybench task ended in state ${r.state}`);
  return r.latency.p50;
}

/** The `p` quantile (0..1, nearest rank below) of `a`. */
export const quantile = (a: number[], p: number): number => [...a].sort((u, v) => u - v)[Math.floor(p * (a.length - 1))]!;

/** One pair timed over `rounds` alternating rounds: medians (ms) of each side and the ratio slow / fast with its IQR. */
export interface PairTiming {
  slowMs: number;
  fastMs: number;
  ratio: number;
  iqr: [number, number];
}

/** Times `slow` against `fast` (`n` elements of work each) in `rounds` alternating rounds. */
export async function timePair(slow: () => void, fast: () => void, n: number, rounds: number): Promise<PairTiming> {
  const ratios: number[] = [];
  const s: number[] = [];
  const f: number[] = [];
  for (let k = 0; k < rounds; k++) {
    const order = k % 2 === 0 ? [slow, fast] : [fast, slow];
    const t0 = await median(order[0]!, n);
    const t1 = await median(order[1]!, n);
    const [a, b] = k % 2 === 0 ? [t0, t1] : [t1, t0];
    s.push(a);
    f.push(b);
    ratios.push(a / b);
  }
  return { slowMs: quantile(s, 0.5), fastMs: quantile(f, 0.5), ratio: quantile(ratios, 0.5), iqr: [quantile(ratios, 0.25), quantile(ratios, 0.75)] };
}
