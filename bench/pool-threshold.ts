/**
 * Measures where the worker pool starts to pay: sync call vs pool with the inline threshold
 * switched off, forward and backward, for growing sizes. Prints a table and the crossover
 * (the smallest size from which the pool is faster), which sets INLINE_BELOW in
 * ts/pool/pool.ts. Run: `npm run bench:threshold` (after `npm run build`).
 * @module
 */
import { availableParallelism } from 'node:os';
import { createPool, init, instance } from '../dist/index.js';

interface Hooks {
  setInlineBelow(elems: number): void;
}

/** Median wall time in µs of `f` over `n` runs after `warm` warm-up runs. */
async function median(f: () => unknown, n = 300, warm = 50): Promise<number> {
  for (let i = 0; i < warm; i++) await f();
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return t[n >> 1]! * 1000;
}

await init();
const rn = instance()!;
const threads = Number(process.env.THREADS ?? availableParallelism());
const pool = await createPool({ threads });
(pool as unknown as Record<symbol, Hooks>)[Symbol.for('rmsnorm-wasm.test')]!.setInlineBelow(0);

const dim = 1024;
const rowsList = [2, 4, 8, 16, 32, 64, 128, 256, 512];
console.log(`pool of ${threads} threads vs sync, zero-copy, dim ${dim}; median µs`);
console.log('elements  rows | fwd sync  fwd pool  ratio | bwd sync  bwd pool  ratio');
const wins = { fwd: Infinity, bwd: Infinity };
for (const rows of rowsList) {
  const n = rows * dim;
  const bufs = [rn.allocF32(n), rn.allocF32(n), rn.allocF32(n), rn.allocF32(dim), rn.allocF32(dim)];
  const [x, y, dy, w, dw] = bufs.map((b) => b.view()) as Float32Array[];
  x!.forEach((_, i) => (x![i] = Math.sin(i)));
  dy!.fill(0.25);
  w!.fill(1.5);
  const fs = await median(() => rn.rmsNorm(x!, w!, { out: y! }));
  const fp = await median(() => pool.rmsNorm(x!, w!, { out: y! }));
  const bs = await median(() => rn.rmsNormBackward(dy!, x!, w!, { dx: y!, dweight: dw! }));
  const bp = await median(() => pool.rmsNormBackward(dy!, x!, w!, { dx: y!, dweight: dw! }));
  if (fs / fp > 1.05 && wins.fwd === Infinity) wins.fwd = n;
  if (bs / bp > 1.05 && wins.bwd === Infinity) wins.bwd = n;
  console.log(
    `${String(n).padStart(8)} ${String(rows).padStart(5)} | ${fs.toFixed(1).padStart(8)} ${fp.toFixed(1).padStart(9)} ${(fs / fp).toFixed(2).padStart(6)} |` +
      ` ${bs.toFixed(1).padStart(8)} ${bp.toFixed(1).padStart(9)} ${(bs / bp).toFixed(2).padStart(6)}`,
  );
  for (const b of bufs) b.free();
}
console.log(`pool ≥ 5% faster from: forward ${wins.fwd} elements, backward ${wins.bwd} elements`);
await pool.destroy();
