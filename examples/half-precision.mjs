// float16 and bfloat16 storage, the math in float32. Node 20 has no Float16Array: half data is a
// Uint16Array of bit patterns, and `dtype` says which half type it holds.
import { init, rmsNorm, float32ToHalf, halfToFloat32 } from 'rmsnorm-wasm';

await init();
const dim = 8;
const x = new Float32Array(2 * dim).map((_, i) => (i - 7) / 3);
const w = new Float32Array(dim).fill(1);
for (const dtype of ['bfloat16', 'float16']) {
  const bits = float32ToHalf(x, dtype);              // Uint16Array
  const yBits = rmsNorm(bits, w, { dtype });         // a float32 weight is fine with half data
  const y = halfToFloat32(yBits, dtype);
  const ref = rmsNorm(halfToFloat32(bits, dtype), w);
  const err = Math.max(...y.map((v, i) => Math.abs(v - ref[i])));
  console.log(`${dtype}: y[0] = ${y[0]}, largest difference from float32 storage ${err.toExponential(2)}`);
}
