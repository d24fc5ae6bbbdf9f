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
  close: () => port.close(),
});
