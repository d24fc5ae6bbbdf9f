/**
 * What a pool worker does, in Node or a browser: join the threads module on the pool's
 * shared memory, say ready, then serve jobs from the control block forever (spin a little,
 * then sleep in Atomics.wait on its own word). The two entry files (worker.ts for browsers,
 * worker-node.ts for Node) only supply the message port.
 * @module
 */
// Static import of one glue file: a worker bundles without code-splitting. The pool sends the
// compiled module, so this glue serves both threads builds: wasm-bindgen writes the same file
// for both (they differ in target features only; test/relaxed.test.ts compares them).
import { initSync } from '../../wasm/simd-threads/rmsnorm_wasm.js';
import type { KernelExports } from '../load.js';
import { BUSY, COMPLETED, DONE, EXITING, FAIL_WORKER, JOB, MESSAGE, N_CHUNKS, Op, OP, REGION, SEQ0, SPIN, STRIDE, TASK_WORDS, work } from './control.js';
import type { InitMessage, WorkerMessage } from './messages.js';
import { serveTasks, type TaskIo } from './tasks.js';

/** The worker's end of its channel to the pool. */
export interface Port {
  post(m: WorkerMessage): void;
  onMessage(cb: (m: unknown) => void): void;
  close(): void;
}

/** What wasm-bindgen's threads transform adds to the exports of the simd-threads build. */
export interface ThreadExports {
  __tls_base: WebAssembly.Global;
  __stack_alloc: WebAssembly.Global;
  /**
   * Releases a thread's TLS block and stack: this thread's without arguments, or those at
   * `tls` and `stack` (another thread's, which must have stopped) with them.
   */
  __wbindgen_thread_destroy(tls?: number, stack?: number): void;
}

function serve(port: Port, ctl: Int32Array, k: KernelExports & ThreadExports, index: number, memory: WebAssembly.Memory, io: TaskIo | null): void {
  const seqAt = SEQ0 + STRIDE * index;
  let seen = Atomics.load(ctl, seqAt);
  port.post({
    type: 'rmsnorm-wasm:ready',
    index,
    tls: k.__tls_base.value as number,
    stack: k.__stack_alloc.value as number,
  });
  for (;;) {
    let s = Atomics.load(ctl, seqAt);
    // Polling for a while after a small job makes the next one start at once instead of after
    // a futex wake-up (tens of microseconds on a VM); the pool sets SPIN to 0 after large jobs
    // and whenever polling would take a core the calling thread needs.
    for (let spins = ctl[SPIN]!; s === seen && spins > 0; spins--) s = Atomics.load(ctl, seqAt);
    while (s === seen) {
      Atomics.wait(ctl, seqAt, seen);
      s = Atomics.load(ctl, seqAt);
    }
    seen = s;
    const job = Atomics.load(ctl, JOB);
    const op = ctl[OP];
    if (op === Op.EXIT) {
      // Release this thread's stack and TLS: every pool would otherwise leave its workers'
      // (about 2 MiB each) in the shared memory. EXITING first, so that a pool that terminates
      // this worker meanwhile does not release them a second time (a leak is the worst case).
      Atomics.store(ctl, seqAt + EXITING, 1);
      k.__wbindgen_thread_destroy();
      // Done with the allocator: only now may the pool terminate this thread (terminating it
      // inside free() would leave the shared allocator's lock held and hang every thread).
      Atomics.store(ctl, seqAt + EXITING, 2);
      return;
    }
    if (op === Op.FAIL) {
      if (ctl[FAIL_WORKER] === index) throw new Error(`rmsnorm-wasm worker ${index}: failure requested by the pool (test hook)`);
      continue;
    }
    Atomics.store(ctl, seqAt + BUSY, 1);
    let completed: boolean;
    if (op === Op.TASKS) {
      // Serve the ring until it is closed (only where files can be read: the pool starts task
      // jobs only in Node), then count as one finished chunk.
      if (io) serveTasks(ctl, TASK_WORDS, memory, k, io, ctl[seqAt + REGION]!, index);
      completed = Atomics.add(ctl, COMPLETED, 1) + 1 === ctl[N_CHUNKS];
      if (completed) {
        Atomics.store(ctl, DONE, 1);
        Atomics.notify(ctl, DONE);
      }
    } else completed = work(ctl, k, job, op === Op.NOOP, index);
    Atomics.store(ctl, seqAt + BUSY, 0);
    if (completed && ctl[MESSAGE] === 1) port.post({ type: 'rmsnorm-wasm:done' });
  }
}

/**
 * Waits for the pool's init message on `port`, then serves jobs until told to exit. `io`: the
 * file calls of task jobs (Node's worker entry passes them; a browser's has none).
 */
export function startWorker(port: Port, io: TaskIo | null = null): void {
  port.onMessage((m) => {
    const msg = m as InitMessage;
    if (msg?.type !== 'rmsnorm-wasm:init') return;
    let k: KernelExports & ThreadExports;
    try {
      k = initSync({ module: msg.module, memory: msg.memory }) as unknown as KernelExports & ThreadExports;
    } catch (e) {
      port.post({ type: 'rmsnorm-wasm:failed', message: String((e as Error)?.message ?? e) });
      return;
    }
    serve(port, new Int32Array(msg.memory.buffer, msg.ctl, msg.words), k, msg.index, msg.memory, io);
    port.close();
  });
}
