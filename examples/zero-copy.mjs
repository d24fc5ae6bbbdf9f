// Data already in wasm memory: arrays from allocF32 are used where they are, with no copy.
import { init, allocF32, rmsNorm } from 'rmsnorm-wasm';

await init();
const rows = 64, dim = 4096;
const xb = allocF32(rows * dim);
const yb = allocF32(rows * dim);
const wb = allocF32(dim);
// Make the views after the allocations: growing the memory detaches older views.
const x = xb.view(), y = yb.view(), w = wb.view();
for (let i = 0; i < x.length; i++) x[i] = Math.cos(i);
w.fill(1);
rmsNorm(x, w, { out: y });           // reads x, writes y: no copy in or out
rmsNorm(x, w, { out: x });           // in place
console.log('first row, first values:', Array.from(y.subarray(0, 4), (v) => v.toFixed(4)).join(' '));
console.log('in place gives the same:', x[0] === y[0] && x[1] === y[1]);
xb.free();
yb.free();
wb.free();
