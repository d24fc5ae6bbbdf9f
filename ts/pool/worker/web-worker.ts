/**
 * Entry of a pool worker in browsers (a module Web Worker). No Node imports and no top-level
 * await, so that bundlers can emit it as a plain worker script.
 * @module
 */
import { startWorker } from './serve.js';

const scope = globalThis as unknown as {
  postMessage(m: unknown): void;
  addEventListener(t: 'message', cb: (e: MessageEvent) => void): void;
  close(): void;
};
startWorker({
  post: (m) => scope.postMessage(m),
  onMessage: (cb) => scope.addEventListener('message', (e) => cb(e.data)),
  close: () => scope.close(),
});
