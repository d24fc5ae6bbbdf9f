// A training loop on a toy problem: learn the gain g of an RMSNorm so that RMSNorm(x) · g matches
// a target made with a hidden gain. The forward, the backward and a plain gradient step; the
// loss falls, which shows the backward is the gradient.
import { init, createRmsNorm, rmsNorm } from 'rmsnorm-wasm';

await init();
const rows = 64, dim = 32;
const rand = (() => { let s = 1; return () => ((s = (s * 48271) % 2147483647) / 2147483647) * 2 - 1; })();
const x = new Float32Array(rows * dim).map(() => rand());
const hidden = new Float32Array(dim).map(() => 1 + rand());
const target = rmsNorm(x, hidden);                       // what the model should learn to give

const norm = createRmsNorm(new Float32Array(dim).fill(1)); // start from g = 1
const g = new Float32Array(dim).fill(1);
// dL/dg is about (2/dim)·(g − hidden): a rate of dim/4 halves the error every step.
const lr = dim / 4;
const losses = [];
for (let step = 0; step < 50; step++) {
  const y = norm.forward(x);
  // Loss: mean squared error; its gradient with respect to y.
  const dy = new Float32Array(y.length);
  let loss = 0;
  for (let i = 0; i < y.length; i++) {
    const d = y[i] - target[i];
    loss += d * d;
    dy[i] = (2 * d) / y.length;
  }
  losses.push(loss / y.length);
  const { dweight } = norm.backward(dy, x, { rstd: norm.rstd });
  for (let i = 0; i < dim; i++) g[i] -= lr * dweight[i]; // dweight = dL/dg: a plain gradient step
  norm.setWeight(g);
}
norm.free();
console.log(`loss: step 0 ${losses[0].toExponential(3)}, step 10 ${losses[10].toExponential(3)}, step 49 ${losses[49].toExponential(3)}`);
if (!(losses[49] < losses[0] / 100)) {
  console.error('the loss did not fall');
  process.exit(1);
}
