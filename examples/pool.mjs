// Many rows on all cores: the worker pool. Same arguments as the sync calls, async.
import { createPool } from 'rmsnorm-wasm';

const pool = await createPool();                   // one worker per core
console.log(`pool: ${pool.mode}, ${pool.threads} threads`);
const rows = 1024, dim = 4096;
const weight = new Float32Array(dim).fill(1);
// Views of the pool's memory are used in place by every thread.
const xb = pool.allocF32(rows * dim);
const x = xb.view();
for (let i = 0; i < x.length; i++) x[i] = Math.sin(i);
const t = performance.now();
await pool.rmsNorm(x, weight, { out: x });
console.log(`${rows}×${dim} normalized in place in ${(performance.now() - t).toFixed(2)} ms`);
// Plain arrays work too (the pool picks the fastest way to run them).
const y = await pool.rmsNorm(new Float32Array(rows * dim).fill(2), weight);
console.log('a row of 2s normalizes to', y[0]);
xb.free();
await pool.destroy();
