/**
 * Entry of a pool worker in Node (a worker_threads Worker).
 * @module
 */
import { parentPort } from 'node:worker_threads';
import { startWorker } from './serve.js';

const port = parentPort!;
startWorker({
  post: (m) => port.postMessage(m),
  onMessage: (cb) => port.on('message', cb),
  // Deno's node:worker_threads gives parentPort no close(); its workers end by the web
  // worker's global close() instead.
  close: () => (typeof port.close === 'function' ? port.close() : (globalThis as { close?: () => void }).close?.()),
});
