// One call now and then: rmsNorm(x, weight) checks its arguments and returns a new array.
import { init, rmsNorm, rmsNormBackward } from 'rmsnorm-wasm';

await init();
const dim = 4;
const x = new Float32Array([1, 2, 3, 4, -4, -3, -2, -1]); // 2 rows of 4, row-major
const weight = new Float32Array([1, 0.5, 2, 1]);
const rstd = new Float32Array(2);                            // optional: each row's 1/rms
const y = rmsNorm(x, weight, { rstd });
console.log('y    =', Array.from(y, (v) => v.toFixed(4)).join(' '));
console.log('rstd =', Array.from(rstd, (v) => v.toFixed(4)).join(' '));

// The backward: the gradient of a loss with respect to x and to the weight.
const dy = new Float32Array(x.length).fill(1);
const { dx, dweight } = rmsNormBackward(dy, x, weight, { rstd });
console.log('dx   =', Array.from(dx, (v) => v.toFixed(4)).join(' '));
console.log('dw   =', Array.from(dweight, (v) => v.toFixed(4)).join(' '));
