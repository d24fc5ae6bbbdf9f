/**
 * What a pool worker does, in Node or a browser: join the threads module on the pool's
 * shared memory, say ready, then serve jobs from the control block forever (spin a little,
 * then sleep in Atomics.wait on its own word). The two entry files (worker/web-worker.ts, and
 * node/pool-worker.ts for Node, which also registers the file tasks) supply the message port.
 * @module
 */
// Static import of one glue file: a worker bundles without code-splitting. The pool sends the
// compiled module, so this glue serves both threads builds: wasm-bindgen writes the same file
// for both (they differ in target features only; test/relaxed.test.ts compares them).
import { initSync } from '../../../wasm/simd-threads/rmsnorm_wasm.js';
import type { KernelExports } from '../../glue/load.js';
import { BUSY, COMPLETED, DONE, EXITING, FAIL_WORKER, JOB, MESSAGE, N_CHUNKS, Op, OP, REGION, SEQ0, SPIN, STRIDE, work, type SabTable } from '../control.js';
import type { AttachMessage, InitMessage, ResumeMessage, WorkerMessage } from '../messages.js';
import { serveTasks } from './tasks.js';

/** The worker's end of its channel to the pool. */
export interface Port {
  post(m: WorkerMessage): void;
  onMessage(cb: (m: unknown) => void): void;
  close(): void;
  /**
   * The next message already sent, taken without the event loop (Node's
   * `receiveMessageOnPort`), or undefined when there is none; absent where messages come only
   * through the event loop (browsers).
   */
  receiveSync?: () => unknown;
}

/**
 * The caller's SharedArrayBuffers a worker holds, by id. Where messages can be read without
 * the event loop, a buffer not held yet is read from the messages the pool sent before the
 * job (an AttachMessage): no ATTACH job is needed.
 */
class WorkerSabs implements SabTable {
  private readonly map = new Map<number, SharedArrayBuffer>();
  constructor(private readonly port: Port) {}

  apply(m: AttachMessage): void {
    for (const id of m.drop) this.map.delete(id);
    this.map.set(m.id, m.buffer);
  }

  get(id: number): SharedArrayBuffer | undefined {
    const b = this.map.get(id);
    if (b || !this.port.receiveSync) return b;
    for (let m = this.port.receiveSync(); m !== undefined; m = this.port.receiveSync()) {
      if ((m as AttachMessage).type === 'rmsnorm-wasm:attach') this.apply(m as AttachMessage);
    }
    return this.map.get(id);
  }
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

/** Where a worker's serve loop is: `seen` is the last value of its wake-up word it acted on. */
interface Serving {
  port: Port;
  ctl: Int32Array;
  k: KernelExports & ThreadExports;
  index: number;
  memory: WebAssembly.Memory;
  seen: number;
  /** The caller's SharedArrayBuffers this worker holds (messages.ts AttachMessage), by id. */
  sabs: WorkerSabs;
}

/**
 * Serves jobs until told to exit (returns true) or until an ATTACH job asks it to read its
 * messages (returns false: the caller's buffers come by message, which a thread blocked in
 * this loop never receives; the ResumeMessage that follows them re-enters the loop).
 */
function serve(w: Serving, resumed = false): boolean {
  const { port, ctl, k, index } = w;
  const seqAt = SEQ0 + STRIDE * index;
  if (resumed) finishAttach(w);
  for (;;) {
    let s = Atomics.load(ctl, seqAt);
    // Polling for a while after a small job makes the next one start at once instead of after
    // a futex wake-up (tens of microseconds on a VM); the pool sets SPIN to 0 after large jobs
    // and whenever polling would take a core the calling thread needs.
    for (let spins = ctl[SPIN]!; s === w.seen && spins > 0; spins--) s = Atomics.load(ctl, seqAt);
    while (s === w.seen) {
      Atomics.wait(ctl, seqAt, w.seen);
      s = Atomics.load(ctl, seqAt);
    }
    w.seen = s;
    if (Atomics.load(ctl, OP) === Op.EXIT) {
      // Release this thread's stack and TLS: every pool would otherwise leave its workers'
      // (about 2 MiB each) in the shared memory. EXITING first, so that a pool that terminates
      // this worker meanwhile does not release them a second time (a leak is the worst case).
      Atomics.store(ctl, seqAt + EXITING, 1);
      k.__wbindgen_thread_destroy();
      // Done with the allocator: only now may the pool terminate this thread (terminating it
      // inside free() would leave the shared allocator's lock held and hang every thread).
      Atomics.store(ctl, seqAt + EXITING, 2);
      return true;
    }
    // Only the job this wake-up was for: a worker that wakes late, when that job is over and
    // the pool is setting up the next, must not act on the next one's opcode (an ATTACH job
    // taken twice, or one it was not woken for, counts a part it did not do: the next job
    // would then complete before its last chunk).
    const jw = Atomics.load(ctl, JOB);
    const job = jw & 0xffff;
    if (job !== (s & 0xffff)) continue;
    const op = jw >>> 16;
    if (op === Op.FAIL) {
      if (ctl[FAIL_WORKER] === index) throw new Error(`rmsnorm-wasm worker ${index}: failure requested by the pool (test hook)`);
      continue;
    }
    if (op === Op.ATTACH) return false;
    Atomics.store(ctl, seqAt + BUSY, 1);
    let completed: boolean;
    if (op === Op.TASKS) {
      // Serve the ring until it is closed (with the task kinds this worker's entry registered),
      // then count as one finished chunk.
      serveTasks(ctl, w.memory, k, ctl[seqAt + REGION]!, index);
      completed = countDone(ctl);
    } else completed = work(ctl, k, job, op === Op.NOOP, index, w.sabs, w.memory);
    Atomics.store(ctl, seqAt + BUSY, 0);
    if (completed && ctl[MESSAGE] === 1) port.post({ type: 'rmsnorm-wasm:done' });
  }
}

/** Counts this worker's part of a job that is one part per worker; returns whether it completed the job. */
function countDone(ctl: Int32Array): boolean {
  const completed = Atomics.add(ctl, COMPLETED, 1) + 1 === ctl[N_CHUNKS];
  if (completed) {
    Atomics.store(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
  }
  return completed;
}

/** The ATTACH job this worker left its loop for: its buffers have arrived; its part is done. */
function finishAttach(w: Serving): void {
  if (countDone(w.ctl) && w.ctl[MESSAGE] === 1) w.port.post({ type: 'rmsnorm-wasm:done' });
}

/**
 * Waits for the pool's init message on `port`, then serves jobs until told to exit. The task
 * kinds a task job runs are those registered before (worker/tasks.ts).
 */
export function startWorker(port: Port): void {
  let w: Serving | null = null;
  port.onMessage((m) => {
    const msg = m as InitMessage | AttachMessage | ResumeMessage;
    if (msg?.type === 'rmsnorm-wasm:attach' && w) {
      w.sabs.apply(msg);
      return;
    }
    if (msg?.type === 'rmsnorm-wasm:resume' && w) {
      if (serve(w, true)) port.close();
      return;
    }
    if (msg?.type !== 'rmsnorm-wasm:init') return;
    let k: KernelExports & ThreadExports;
    try {
      k = initSync({ module: msg.module, memory: msg.memory }) as unknown as KernelExports & ThreadExports;
    } catch (e) {
      port.post({ type: 'rmsnorm-wasm:failed', message: String((e as Error)?.message ?? e) });
      return;
    }
    const ctl = new Int32Array(msg.memory.buffer, msg.ctl, msg.words);
    w = { port, ctl, k, index: msg.index, memory: msg.memory, seen: Atomics.load(ctl, SEQ0 + STRIDE * msg.index), sabs: new WorkerSabs(port) };
    port.post({
      type: 'rmsnorm-wasm:ready',
      index: msg.index,
      tls: k.__tls_base.value as number,
      stack: k.__stack_alloc.value as number,
      syncMessages: port.receiveSync !== undefined,
    });
    if (serve(w)) port.close();
  });
}
