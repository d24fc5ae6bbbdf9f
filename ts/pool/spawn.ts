/**
 * Starting one pool worker in Node (worker_threads) or a browser (module Web Worker), behind
 * one small handle: messages, death, termination, and (Node) whether it keeps the process alive.
 * @module
 */
import { isNode } from '../platform.js';
import type { InitMessage, WorkerMessage } from './messages.js';

/** A running worker. */
export interface WorkerHandle {
  post(m: InitMessage): void;
  /** Ends the worker; resolves when it has stopped (Node) or at once (browsers). */
  terminate(): Promise<void>;
  /** Ends the worker as a crash would: its death is reported (tests). */
  kill(): void;
  /** Node: let the process exit while this worker is idle (unref), or not (ref). */
  keepAlive(on: boolean): void;
}

/** What the pool hears from a worker. */
export interface WorkerEvents {
  message(m: WorkerMessage): void;
  /** The worker died (threw, or exited without being asked). */
  death(reason: string): void;
}

/** Starts a worker running dist/pool/worker-node.js (Node) or dist/pool/worker.js (browsers). */
export async function spawnWorker(events: WorkerEvents): Promise<WorkerHandle> {
  if (isNode) {
    const { Worker } = await import(/* @vite-ignore */ 'node:worker_threads');
    // Workers inherit the process's exec flags; `--input-type` (node -e with ESM) would stop
    // a file-based worker from starting, so it is left out.
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    // Hidden from bundlers (they would copy the Node entry into a browser build).
    const url = new URL(/* @vite-ignore */ './worker-node.js', import.meta.url);
    const w = new Worker(url, { execArgv });
    let stopping = false;
    w.on('message', (m: WorkerMessage) => events.message(m));
    w.on('error', (e: Error) => {
      if (!stopping) events.death(`it threw: ${e?.message ?? String(e)}`);
      stopping = true;
    });
    w.on('exit', (code: number) => {
      if (!stopping) events.death(`it exited with code ${code}`);
      stopping = true;
    });
    return {
      post: (m) => w.postMessage(m),
      async terminate() {
        stopping = true;
        await w.terminate();
      },
      kill: () => void w.terminate(),
      keepAlive: (on) => (on ? w.ref() : w.unref()),
    };
  }
  // The literal `new Worker(new URL('./worker.js', import.meta.url), { type: 'module' })` is
  // what bundlers look for to emit the worker as its own entry.
  const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  let stopped = false;
  w.addEventListener('message', (e: MessageEvent) => events.message(e.data as WorkerMessage));
  w.addEventListener('error', (e: ErrorEvent) => {
    e.preventDefault();
    if (!stopped) events.death(`it threw: ${e.message || 'error event'}`);
    stopped = true;
  });
  w.addEventListener('messageerror', () => {
    if (!stopped) events.death('a message to it could not be deserialized');
    stopped = true;
  });
  return {
    post: (m) => w.postMessage(m),
    async terminate() {
      stopped = true;
      w.terminate();
    },
    kill() {
      w.terminate(); // fires no event in browsers: report the death ourselves
      if (!stopped) events.death('it was terminated');
      stopped = true;
    },
    keepAlive: () => {},
  };
}
