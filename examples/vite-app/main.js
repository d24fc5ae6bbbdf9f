// The package imported by name: Vite bundles the JavaScript and emits the .wasm builds and the
// pool's worker as separate files. vite.config.js only adds the COOP/COEP headers.
import { init, instance, rmsNorm, createPool } from 'rmsnorm-wasm';

const text = (id, value) => { document.getElementById(id).textContent = value; };
const format = (a) => Array.from(a, (v) => v.toFixed(5)).join(' ');

const dim = 8;
const x = Float32Array.from({ length: 2 * dim }, (_, i) => Math.cos(i) * (i + 1)); // 2 rows
const weight = new Float32Array(dim).fill(1);

await init();
text('build', instance().build);
text('x', format(x));
text('y', format(rmsNorm(x, weight)));

// On an isolated page the pool runs on worker threads; its results are the same bits.
const pool = await createPool({ threads: 2 });
text('mode', pool.mode);
text('y-pool', format(await pool.rmsNorm(x, weight)));
await pool.destroy();
document.body.dataset.state = 'done';
