// The normalizations of a pre-norm transformer decoder, token by token, as Llama, Qwen and
// Gemma place them: each block's two RMSNorms take the residual stream with a fused add
// (h = hidden + residual, normalized; h becomes the residual), so a block is two layer calls
// and no extra pass over the activations. The attention and MLP here are stand-ins (a fixed
// mix of each row); the point is the residual stream and that nothing is allocated per token.
// Runs under Node (`node decoder.mjs`) and, unchanged, as a module script in a page: it prints
// into the page when there is one. Checked against the same loop in float64.
import { init, createRmsNorm, instance } from 'rmsnorm-wasm';

const print = globalThis.document
  ? (line) => { document.body.append(line + '\n'); }
  : (line) => console.log(line);

const dim = 256, blocks = 4, tokens = 16, eps = 1e-6;
const gain = (b, k) => Float32Array.from({ length: dim }, (_, i) => 1 + 0.1 * Math.sin(i + 7 * b + k));
/** A stand-in for attention or an MLP: each output mixes two inputs (fixed weights). */
const mix = (v, out, salt) => {
  for (let i = 0; i < dim; i++) out[i] = 0.6 * v[i] - 0.3 * v[(i * 5 + salt) % dim];
  return out;
};

await init();
const norms = Array.from({ length: blocks }, (_, b) => [createRmsNorm(gain(b, 0), { eps }), createRmsNorm(gain(b, 1), { eps })]);
const finalNorm = createRmsNorm(gain(blocks, 0), { eps });

const hidden = new Float32Array(dim);
const residual = new Float32Array(dim);
const scratch = new Float32Array(dim);
let y;
for (let t = 0; t < tokens; t++) {
  // The token's embedding starts the residual stream.
  for (let i = 0; i < dim; i++) residual[i] = Math.cos(i * 0.37 + t);
  hidden.fill(0);
  for (const [n1, n2] of norms) {
    mix(n1.forward(hidden, { residual }), hidden, 1); // residual += hidden; attention(rmsnorm(residual))
    mix(n2.forward(hidden, { residual }), hidden, 2); // residual += hidden; mlp(rmsnorm(residual))
  }
  y = finalNorm.forward(hidden, { residual, out: scratch });
}

// The same loop in float64, for the last token.
const ref = (() => {
  const norm = (v, g) => {
    const rstd = 1 / Math.sqrt(v.reduce((s, a) => s + a * a, 0) / dim + eps);
    return v.map((a, i) => a * rstd * g[i]);
  };
  const mix64 = (v, salt) => v.map((_, i) => 0.6 * v[i] - 0.3 * v[(i * 5 + salt) % dim]);
  let res = Array.from({ length: dim }, (_, i) => Math.fround(Math.cos(i * 0.37 + tokens - 1)));
  let h = new Array(dim).fill(0);
  for (let b = 0; b < blocks; b++) {
    for (const k of [0, 1]) {
      res = res.map((a, i) => a + h[i]);
      h = mix64(norm(res, gain(b, k)), k + 1);
    }
  }
  res = res.map((a, i) => a + h[i]);
  return norm(res, gain(blocks, 0));
})();
let worst = 0;
for (let i = 0; i < dim; i++) worst = Math.max(worst, Math.abs(y[i] - ref[i]) / (1 + Math.abs(ref[i])));
const rms = Math.sqrt(y.reduce((s, v) => s + v * v, 0) / dim);
print(`build ${instance().build}: ${tokens} tokens × ${blocks} blocks, ${2 * blocks + 1} normalizations per token`);
print(`last token: rms ${rms.toFixed(4)}, max error against float64 ${worst < 1e-5 ? 'below 1e-5' : worst.toExponential(2)}`);
for (const [n1, n2] of norms) { n1.free(); n2.free(); }
finalNorm.free();
if (globalThis.document) document.body.dataset.state = worst < 1e-5 ? 'done' : 'error';
else if (worst >= 1e-5) process.exitCode = 1;
