// One cold start, timed from inside a fresh Node process (not Node's own start-up): for a
// package entry, `import` + `init()` + the first `rmsNorm(x, w)` call; for onnxruntime
// (`ort-node`, `ort-web`), its import + `InferenceSession.create` on the model file + the first
// `session.run`. Prints one line of JSON, ms. Run by bench/cold-start.ts:
//   node bench/cold-start-child.mjs entry FILE DIM | ort-node MODEL DIM | ort-web MODEL DIM
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [kind, file, dimArg] = process.argv.slice(2);
const dim = Number(dimArg);
const x = new Float32Array(dim).map((_, i) => Math.sin(i));
const w = new Float32Array(dim).fill(1.25);
const t0 = performance.now();
let t1;
let t2;
let y;
if (kind === 'entry') {
  const m = await import(pathToFileURL(file).href);
  t1 = performance.now();
  await m.init();
  t2 = performance.now();
  y = m.rmsNorm(x, w);
} else {
  const ort = await import(kind === 'ort-node' ? 'onnxruntime-node' : 'onnxruntime-web');
  t1 = performance.now();
  if (kind === 'ort-web') ort.env.wasm.numThreads = 1;
  const session = await ort.InferenceSession.create(readFileSync(file), kind === 'ort-web' ? { executionProviders: ['wasm'] } : {});
  t2 = performance.now();
  y = (await session.run({ X: new ort.Tensor('float32', x, [1, dim]) })).Y.data;
}
const t3 = performance.now();
// A result that is not the normalized row would time nothing useful.
const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / dim + 1e-6);
const ok = y.length === dim && Math.abs(y[1] - (x[1] / rms) * 1.25) < 1e-4;
process.stdout.write(JSON.stringify({ importMs: t1 - t0, initMs: t2 - t1, firstCallMs: t3 - t2, totalMs: t3 - t0, ok }) + '\n');
process.exit(0);
