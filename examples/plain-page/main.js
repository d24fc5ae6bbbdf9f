// rmsnorm-wasm in a page with no build step: the one-off call, a layer in a loop and the pool,
// each checked against a float64 computation of the same formula.
import { init, instance, rmsNorm, createRmsNorm, createPool } from 'rmsnorm-wasm';

const out = document.getElementById('out');
const lines = [];
const show = (line) => { lines.push(line); out.textContent = lines.join('\n'); };

/** RMSNorm of each row in float64: x / sqrt(mean(x²) + eps) · weight. */
function reference(x, weight, eps = 1e-5) {
  const dim = weight.length;
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[r * dim + i] ** 2;
    const rstd = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) y[r * dim + i] = x[r * dim + i] * rstd * weight[i];
  }
  return y;
}

/** Largest |a − b| / (1 + |b|) over the elements. */
function maxError(a, b) {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  return worst;
}

try {
  await init();
  show(`build: ${instance().build}, cross-origin isolated: ${globalThis.crossOriginIsolated}`);

  const rows = 64, dim = 1024;
  const x = new Float32Array(rows * dim).map((_, i) => Math.sin(i) * 3);
  const weight = new Float32Array(dim).map((_, i) => 1 + (i % 7) / 10);
  const expected = reference(x, weight);

  // One call now and then: a new array each time.
  show(`rmsNorm: max error ${maxError(rmsNorm(x, weight), expected).toExponential(1)}`);

  // The same shape again and again: the layer reuses its output, so a call allocates nothing.
  const norm = createRmsNorm(weight);
  let y;
  for (let step = 0; step < 100; step++) y = norm.forward(x);
  show(`layer (100 calls): max error ${maxError(y, expected).toExponential(1)}`);
  norm.free();

  // Many rows off the main thread: threads on an isolated page, one thread otherwise.
  const pool = await createPool();
  const fromPool = await pool.rmsNorm(x, weight);
  show(`pool (${pool.mode}, ${pool.threads} workers): max error ${maxError(fromPool, expected).toExponential(1)}`);
  await pool.destroy();

  document.body.dataset.state = 'done';
} catch (err) {
  show(`failed: ${err}`);
  document.body.dataset.state = 'error';
}
