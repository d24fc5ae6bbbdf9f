/**
 * Entry of a pool worker in Node (a worker_threads Worker).
 * @module
 */
import { readSync, writeSync } from 'node:fs';
import * as threads from 'node:worker_threads';
import * as zlib from 'node:zlib';
import { startWorker } from './serve.js';

const port = threads.parentPort!;
// Deno's and Bun's node:worker_threads may lack it, or (Deno) give a parentPort that is not a
// MessagePort it takes: then buffers come through ATTACH jobs.
const receive = typeof threads.receiveMessageOnPort === 'function' && port instanceof threads.MessagePort ? threads.receiveMessageOnPort : null;
startWorker({
  post: (m) => port.postMessage(m),
  onMessage: (cb) => port.on('message', cb),
  // Deno's node:worker_threads gives parentPort no close(); its workers end by the web
  // worker's global close() instead.
  close: () => (typeof port.close === 'function' ? port.close() : (globalThis as { close?: () => void }).close?.()),
  ...(receive && { receiveSync: () => receive(port)?.message }),
}, {
  readSync,
  writeSync,
  // A runtime whose node:zlib lacks crc32 (an older Bun or Deno) cannot write zip members
  // through task jobs: the pool then keeps such files on the calling thread (task-queue.ts).
  crc32: typeof zlib.crc32 === 'function' ? zlib.crc32 : () => Number.NaN,
});
