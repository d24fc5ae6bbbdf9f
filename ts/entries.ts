/**
 * Where the package's own files are: the wasm builds with their glue, the pool's worker
 * entries and package.json. Written relative to this module because it sits at the top of the compiled package
 * in both of its forms: tsc's modules in dist/ and the bundle in bundle/ (this code lands in a
 * chunk at its top), with the builds at ../wasm/BUILD/ beside them and the entries at
 * node/pool-worker.js and pool/worker/web-worker.js below. From a module deeper down the paths would
 * differ between the two. Literal import() and new URL(..., import.meta.url), so that bundlers
 * can see and copy them.
 * @module
 */
import type { Build } from './types.js';

/** What load.ts calls of a build's wasm-bindgen glue. */
interface Glue {
  initSync(opts: { module: WebAssembly.Module; memory?: WebAssembly.Memory; thread_stack_size?: number }): unknown;
}

/** Each build's glue module. */
export const GLUE: Record<Build, () => Promise<Glue>> = {
  simd: () => import('../wasm/simd/rmsnorm_wasm.js') as Promise<Glue>,
  'simd-threads': () => import('../wasm/simd-threads/rmsnorm_wasm.js') as Promise<Glue>,
  'simd-relaxed': () => import('../wasm/simd-relaxed/rmsnorm_wasm.js') as Promise<Glue>,
  'simd-relaxed-threads': () => import('../wasm/simd-relaxed-threads/rmsnorm_wasm.js') as Promise<Glue>,
  scalar: () => import('../wasm/scalar/rmsnorm_wasm.js') as Promise<Glue>,
};

/** Each build's module. */
export const WASM_URL: Record<Build, () => URL> = {
  simd: () => new URL('../wasm/simd/rmsnorm_wasm_bg.wasm', import.meta.url),
  'simd-threads': () => new URL('../wasm/simd-threads/rmsnorm_wasm_bg.wasm', import.meta.url),
  'simd-relaxed': () => new URL('../wasm/simd-relaxed/rmsnorm_wasm_bg.wasm', import.meta.url),
  'simd-relaxed-threads': () => new URL('../wasm/simd-relaxed-threads/rmsnorm_wasm_bg.wasm', import.meta.url),
  scalar: () => new URL('../wasm/scalar/rmsnorm_wasm_bg.wasm', import.meta.url),
};

/** The package's package.json. */
export const packageJsonUrl = (): URL => new URL('../package.json', import.meta.url);

/** The Node worker's entry (hidden from bundlers: they would copy a Node entry into a browser build). */
export function nodeWorkerUrl(): URL {
  return new URL(/* @vite-ignore */ './node/pool-worker.js', import.meta.url);
}

/** Starts a browser worker. */
export function startWebWorker(): Worker {
  // The literal `new Worker(new URL('…', import.meta.url), { type: 'module' })` is what
  // bundlers look for to emit the worker as its own entry.
  return new Worker(new URL('./pool/worker/web-worker.js', import.meta.url), { type: 'module' });
}
