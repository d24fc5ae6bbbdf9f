/**
 * What the one-off default call (`rmsNorm(x, w)`, result allocated by the library) pays for
 * its fresh result. Per
 * default shape, in one process, interleaved rounds, medians (µs):
 *
 *   js-naive     the plain JS loop writing into a preallocated output (the bench's baseline)
 *   out          `rmsNorm(x, w, { out })`: plain arrays, nothing allocated
 *   layer        `createRmsNorm(w).forward(x)`: the reusing path
 *   default      `rmsNorm(x, w)`: the one-off call
 *   fresh        `new Float32Array` of the result's size written once (`.fill`), no kernel:
 *                what any function that returns a new array of that size pays
 *   faults/call  minor page faults per default call (process.resourceUsage): a fresh result's
 *                pages are new to the process and fault in as the result is written
 *
 * Timed with pairs.ts's `median` (a short tinybench run per round, as bench:half and
 * bench:variants do). Run: `npm run bench:fresh` (after `npm run build`).
 * @module
 */
import { createRmsNorm, init, rmsNorm } from '../dist/index.js';
import { resultArray } from '../dist/glue/platform.js';
import { naiveForward } from '../shared/naive.js';
import { DEFAULT_SHAPES } from './defaults.js';
import { median, quantile } from './pairs.js';
import { rng, uniform } from '../shared/reference.js';

/** Minor page faults per call of `f` over `calls` calls. */
function faultsPerCall(f: () => unknown, calls: number): number {
  const before = process.resourceUsage().minorPageFault;
  for (let i = 0; i < calls; i++) f();
  return (process.resourceUsage().minorPageFault - before) / calls;
}

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(us < 10 ? 2 : 1)} µs`).padStart(10);
await init();
const rounds = Number(process.env.ROUNDS ?? 3);
console.log(`fresh results, Node ${process.version}: medians of ${rounds} interleaved rounds`);
console.log('shape      |   js-naive |        out |      layer |    default |      fresh | faults/call | default ÷ naive');
for (const { rows, dim } of DEFAULT_SHAPES) {
  const n = rows * dim;
  const x = uniform(rng(1), n, -1, 1);
  const w = uniform(rng(2), dim, 0.5, 1.5);
  const y = new Float32Array(n);
  const layer = createRmsNorm(w);
  let sink: unknown;
  const cases: Record<string, () => unknown> = {
    naive: () => naiveForward(x, w, y, rows, dim, 1e-6),
    out: () => rmsNorm(x, w, { out: y }),
    layer: () => (sink = layer.forward(x)),
    dflt: () => (sink = rmsNorm(x, w)),
    fresh: () => (sink = resultArray(n).fill(1)),
  };
  const t: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) for (const [k, f] of Object.entries(cases)) (t[k] ??= []).push(1000 * (await median(f, n)));
  const med = (k: string) => quantile(t[k]!, 0.5);
  const faults = faultsPerCall(cases.dflt!, Math.max(3, Math.min(2000, Math.floor((1 << 24) / n))));
  layer.free();
  void sink;
  console.log(
    `${`${rows}x${dim}`.padEnd(10)} |${fmt(med('naive'))} |${fmt(med('out'))} |${fmt(med('layer'))} |${fmt(med('dflt'))} |${fmt(med('fresh'))} |${faults.toFixed(1).padStart(12)} | ${(med('naive') / med('dflt')).toFixed(2)}×`,
  );
}
