/**
 * Entry of a pool worker in Node (a worker_threads Worker): the pool's worker loop, with the
 * file functions' task kinds registered (they read and write files with Node's `fs`).
 * @module
 */
import { readSync, writeSync } from 'node:fs';
import * as threads from 'node:worker_threads';
import * as zlib from 'node:zlib';
import { startWorker } from '../pool/worker/serve.js';
import { registerTaskKind } from '../pool/worker/tasks.js';
import { Kind, type TaskIo } from './file/task-records.js';
import { runFileTask } from './file/task-run.js';

const io: TaskIo = {
  readSync,
  writeSync,
  // A runtime whose node:zlib lacks crc32 (an older Bun or Deno) cannot write zip members
  // through task jobs: the pool then keeps such files on the calling thread (normalize-file.ts).
  crc32: typeof zlib.crc32 === 'function' ? zlib.crc32 : () => Number.NaN,
};
for (const kind of Object.values(Kind)) registerTaskKind(kind, (t) => runFileTask(t, io));

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
});
