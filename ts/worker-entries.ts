/**
 * Where the pool's worker entries are. Written relative to this module because it sits at the
 * top of the compiled package in both of its forms: tsc's modules in dist/ and the bundle in
 * bundle/ (this code lands in a chunk at its top), each with the entries at pool/worker-node.js
 * and pool/worker.js below it. From pool/spawn.ts the path would differ between the two.
 * @module
 */

/** The Node worker's entry (hidden from bundlers: they would copy a Node entry into a browser build). */
export function nodeWorkerUrl(): URL {
  return new URL(/* @vite-ignore */ './pool/worker-node.js', import.meta.url);
}

/** Starts a browser worker. */
export function startWebWorker(): Worker {
  // The literal `new Worker(new URL('…', import.meta.url), { type: 'module' })` is what
  // bundlers look for to emit the worker as its own entry.
  return new Worker(new URL('./pool/worker.js', import.meta.url), { type: 'module' });
}
