// @ts-check
/**
 * A page's time to its first result, from the start of its script (`npm run bench:browser`
 * opens it cold: a new page, every response `Cache-Control: no-store`). The query says what:
 *
 *   ?lib=URL&dim=D   import the package entry at URL, `init()`, one `rmsNorm(x, w)` of one row
 *   ?ort=1&dim=D     onnxruntime-web (one thread): import, `InferenceSession.create` on the
 *                    server's model of that row, one `run`
 *
 * The result is published as `globalThis.coldStart = { ms, ok, steps }` (ok: the row came out
 * normalized; steps: when the import and the initialization ended, ms), or `{ error }`.
 * @module
 */
const t0 = performance.now();
const q = new URLSearchParams(location.search);
const dim = Number(q.get('dim') ?? 896);
const x = new Float32Array(dim).map((_, i) => Math.sin(i));

/** Times (ms from the start) at which each step ended. */
const steps = {};

/** The first result of the package entry at `url`. */
async function viaPackage(url) {
  // The weight the server's model has (bench/onnx-model.ts's case): fetched as the model is.
  const w = weight();
  const lib = await import(url);
  steps.import = performance.now() - t0;
  await lib.init();
  steps.init = performance.now() - t0;
  return lib.rmsNorm(x, await w);
}

/** The weight of the server's model for one row of `dim`. */
async function weight() {
  const r = await fetch(`/ort-weight?rows=1&dim=${dim}`);
  return new Float32Array(await r.arrayBuffer());
}

/** The first result of onnxruntime-web, one thread, on the server's model. */
async function viaOrt() {
  const dist = new URL('../../node_modules/onnxruntime-web/dist/', import.meta.url).href;
  const ort = await import(`${dist}ort.min.mjs`);
  ort.env.wasm.wasmPaths = dist;
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  steps.import = performance.now() - t0;
  const model = new Uint8Array(await (await fetch(`/ort-model?rows=1&dim=${dim}`)).arrayBuffer());
  const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'] });
  steps.init = performance.now() - t0;
  const out = await session.run({ X: new ort.Tensor('float32', x, [1, dim]) });
  return /** @type {Float32Array} */ (out.Y.data);
}

try {
  const y = q.has('ort') ? await viaOrt() : await viaPackage(/** @type {string} */ (q.get('lib')));
  const ms = performance.now() - t0;
  const w = await weight();
  const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / dim + 1e-6);
  const ok = y.length === dim && y.every((v, i) => Math.abs(v - (x[i] / rms) * w[i]) <= 1e-4 + 1e-4 * Math.abs(v));
  Object.assign(globalThis, { coldStart: { ms, ok, steps } });
} catch (e) {
  Object.assign(globalThis, { coldStart: { error: String(e) } });
}
