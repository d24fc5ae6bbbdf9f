// The same normalization again and again (every token, every layer): a layer keeps its weight in
// wasm memory and reuses its outputs, so the loop allocates nothing.
import { init, createRmsNorm } from 'rmsnorm-wasm';

await init();
const dim = 896;
const layers = Array.from({ length: 4 }, (_, l) => createRmsNorm(new Float32Array(dim).fill(1 + l / 10), { eps: 1e-6 }));
let h = new Float32Array(dim).map((_, i) => Math.sin(i));
for (let token = 0; token < 8; token++) {
  for (const norm of layers) {
    const y = norm.forward(h);       // valid until this layer's next forward
    h = y.slice();                   // what a model would do: feed it on (here: a copy)
  }
}
const rms = Math.sqrt(h.reduce((s, v) => s + v * v, 0) / dim);
console.log(`after 8 tokens × 4 layers: rms of the output ${rms.toFixed(4)} (the last gain is 1.3)`);
for (const norm of layers) norm.free();
