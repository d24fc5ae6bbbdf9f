// The variants in a pre-norm transformer block: the fused residual add (vLLM's
// fused_add_rms_norm), Gemma's 1 + weight, and pRMSNorm.
import { init, rmsNorm, rmsNormBackward } from 'rmsnorm-wasm';

await init();
const rows = 4, dim = 64;
const norm = new Float32Array(dim).fill(1);
const hidden = new Float32Array(rows * dim).map((_, i) => Math.sin(i));  // the residual stream
const attn = new Float32Array(rows * dim).map((_, i) => Math.cos(i) / 4); // a sub-layer's output

// h = hidden + attn, written into hidden; y = RMSNorm(h). One pass instead of an add and a norm.
const expectH = hidden.map((v, i) => Math.fround(v + attn[i]));
const y = rmsNorm(attn, norm, { residual: hidden });
console.log('h written into the residual:', hidden.every((v, i) => v === expectH[i]));
console.log('y equals RMSNorm(h):', y.every((v, i) => v === rmsNorm(expectH, norm)[i]));

// Its backward: the gradient on the residual stream is added to dx.
const dy = new Float32Array(rows * dim).fill(0.1);
const dresidual = new Float32Array(rows * dim).fill(0.01);
const { dx } = rmsNormBackward(dy, hidden, norm, { dresidual });
console.log('dx[0] =', dx[0].toFixed(6));

// Gemma: the gain is 1 + weight (weights stored as offsets from 1).
const gemma = rmsNorm(hidden, new Float32Array(dim), { offset: 1 });
console.log('Gemma with zero weights = plain RMSNorm:', gemma[5] === rmsNorm(hidden, norm)[5]);

// pRMSNorm: rstd estimated from the first 25% of each row.
console.log('pRMSNorm y[0] =', rmsNorm(hidden, norm, { partial: 0.25 })[0].toFixed(6));
