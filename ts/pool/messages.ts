/**
 * Messages between the pool and its workers. Namespaced, so they cannot be mistaken for an
 * application's own messages on the same channel. Jobs themselves never travel as messages:
 * see control.ts.
 * @module
 */

/** Pool → worker, once: join the shared module and memory, then serve jobs. */
export interface InitMessage {
  type: 'rmsnorm-wasm:init';
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  /** Byte address of the control block in the shared memory. */
  ctl: number;
  /** Control block length in int32 words. */
  words: number;
  /** This worker's index (selects its wake-up word). */
  index: number;
}

/**
 * Pool → worker: a SharedArrayBuffer of the caller's that jobs will copy rows of (control.ts
 * EXT0), under the pool's id for it; `drop`: ids the worker may let go of. Sent before an ATTACH
 * job, which makes the worker leave its loop to read its messages.
 */
export interface AttachMessage {
  type: 'rmsnorm-wasm:attach';
  id: number;
  buffer: SharedArrayBuffer;
  drop: number[];
}

/** Pool → worker, after its AttachMessages: count your part of the ATTACH job, and serve jobs again. */
export interface ResumeMessage {
  type: 'rmsnorm-wasm:resume';
}

/** Worker → pool: instantiated and waiting for jobs (the handshake). */
export interface ReadyMessage {
  type: 'rmsnorm-wasm:ready';
  index: number;
  /**
   * Where wasm-bindgen put this thread's TLS block and stack in the shared memory: the pool
   * releases them if the worker dies without releasing them itself.
   */
  tls: number;
  stack: number;
  /** Whether it reads AttachMessages without its event loop (so no ATTACH job is needed). */
  syncMessages: boolean;
}

/** Worker → pool: the job completed (only for engines without Atomics.waitAsync). */
interface DoneMessage {
  type: 'rmsnorm-wasm:done';
}

/** Worker → pool: setting up failed. */
interface FailedMessage {
  type: 'rmsnorm-wasm:failed';
  message: string;
}

export type WorkerMessage = ReadyMessage | DoneMessage | FailedMessage;
