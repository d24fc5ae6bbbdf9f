/**
 * Running one job on the pool: cutting its rows into chunks, publishing it in the control
 * block (control.ts), waking the workers, taking part from the calling thread where it may
 * block, and waiting for completion without ever holding the event loop for long.
 * @module
 */
import type { KernelExports, WasmMemoryLike } from '../../glue/load.js';
import { yieldToEventLoop } from '../../glue/platform.js';
import { NO_PARAMS } from '../../call/op.js';
import { writeAddrs, writeParams } from '../../call/call-block.js';
import { checkStatus } from '../../glue/status.js';
import * as C from '../control.js';
import type { SabTable } from '../control.js';
import { MAX_ADDRS } from '../../call/op.js';
import {
  CHUNKS_PER_THREAD,
  MAX_CHUNK_ELEMS,
  MIN_CHUNK_ELEMS,
  SLICE_MS,
  SPIN_POLLS,
  THREAD_WORK,
} from '../tuning.js';
import type { Workers } from './workers.js';
import type { JobSpec, Stream } from './job-spec.js';

const NO_SABS: SabTable = new Map();

/** Runs jobs on the control block, one at a time; see the module doc. */
export class Dispatcher {
  private jobId = 0;
  /** Threads of the last kernel job: the workers woken, and the calling thread if it took part (a test hook reads it). */
  lastThreads = 0;
  /** Why the running job must stop (a worker died, the pool was destroyed), once known. */
  private failure: Error | null = null;
  private interrupt: ((e: Error) => void) | null = null;
  private doneByMessage: (() => void) | null = null;
  /** Workers that take part in the running job, and those of them that died. */
  private participants = new Set<number>();
  private readonly deadInJob = new Set<number>();
  private destroyed = false;
  private readonly hasWaitAsync = typeof Atomics.waitAsync === 'function';
  /** The control block's words as float32 (the call block's float parameters). */
  private readonly ctlF32: Float32Array;
  /** The running job's buffers of the caller's (JobSpec.sabs). */
  private sabs: SabTable = NO_SABS;

  constructor(
    private readonly k: KernelExports,
    /** The shared memory (its current buffer: the memory may have grown since the control block was made). */
    private readonly memory: WasmMemoryLike,
    private readonly ctl: Int32Array,
    private readonly workers: Workers,
    private readonly threads: number,
    private readonly cores: number,
    private readonly blockRows: number,
    /** Whether this thread may block in Atomics.wait (Node, workers; not a page's main thread). */
    private readonly canBlock: boolean,
  ) {
    this.ctlF32 = new Float32Array(ctl.buffer, ctl.byteOffset, ctl.length);
  }

  /** A worker died: fail the running job if it took part. */
  workerDied(i: number, reason: string): void {
    if (!this.participants.has(i)) return;
    this.deadInJob.add(i);
    this.fail(new Error(`rmsnorm-wasm pool: worker ${i} died during the job (${reason}); the job was abandoned and the worker replaced`));
  }

  /** A worker said by message that the job completed (engines without Atomics.waitAsync). */
  messageDone(): void {
    this.doneByMessage?.();
  }

  /** The pool is being destroyed: the running job fails at once with `e`. */
  destroy(e: Error): void {
    this.destroyed = true;
    this.fail(e);
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.interrupt?.(e);
  }

  /**
   * Makes sure every worker holds `sabs` (the caller's buffers a job's operands are in): sends
   * what they lack, and where a worker reads such messages only through its event loop, runs
   * an ATTACH job that has it do so.
   */
  async attach(sabs: ReadonlyMap<number, SharedArrayBuffer>): Promise<void> {
    await this.workers.ready();
    if (this.workers.attach(sabs)) {
      await this.run({ op: C.Op.ATTACH, addrs: [], naddrs: 0, rows: 0, params: NO_PARAMS, work: 0, blockAligned: false });
    }
  }

  /** Runs one job to completion; throws if a worker died, the pool was destroyed or a kernel refused. */
  async run(spec: JobSpec): Promise<void> {
    await this.workers.ready();
    if (this.destroyed) throw this.failure!;
    const ctl = this.ctl;
    const { rows } = spec;
    const stream = spec.stream ?? null;
    // Where it may block, this thread takes chunks too (it is one of the `threads`).
    const callerHelps = this.canBlock && rows > 0 && this.threads > 1 && spec.only === undefined;
    // A kernel job wakes as many threads as it has work for (THREAD_WORK each): waking a
    // thread costs more than a small share of work saves, so a call is never slower on many
    // threads than on a few.
    const wanted = rows > 0 ? Math.max(1, Math.ceil(spec.work / THREAD_WORK)) : this.threads;
    const nWorkers = spec.only !== undefined ? 1 : Math.max(callerHelps ? 1 : 0, Math.min(wanted, this.threads) - (callerHelps ? 1 : 0));
    const ids = spec.only !== undefined ? [spec.only] : Array.from({ length: nWorkers }, (_, i) => i);
    const parts = ids.length + (callerHelps ? 1 : 0);
    if (rows > 0) this.lastThreads = parts;
    let chunk = 0;
    let chunks = ids.length; // NOOP: one answer from each worker
    if (rows > 0) {
      const perRow = spec.work / rows;
      chunk = Math.max(Math.ceil(rows / (parts * CHUNKS_PER_THREAD)), Math.ceil(MIN_CHUNK_ELEMS / perRow));
      chunk = Math.min(chunk, Math.max(1, Math.floor(MAX_CHUNK_ELEMS / perRow)));
      if (spec.blockAligned) chunk = Math.ceil(chunk / this.blockRows) * this.blockRows;
      chunk = Math.max(chunk, Math.ceil(rows / C.MAX_CHUNKS));
      chunks = Math.ceil(rows / chunk);
    }
    if (spec.op === C.Op.FAIL) chunks = 1;
    ctl[C.OP] = spec.op;
    writeParams(ctl, this.ctlF32, C.CALL, spec.params);
    writeAddrs(ctl, C.CALL, spec.addrs, spec.naddrs);
    ctl[C.ACCUMULATE] = spec.accumulate ? 1 : 0;
    ctl[C.FAIL_WORKER] = spec.op === C.Op.FAIL ? spec.only! : -1;
    ctl[C.ROWS] = rows;
    ctl[C.CHUNK_ROWS] = chunk;
    ctl[C.N_CHUNKS] = chunks;
    // Workers poll briefly for the next job only where that leaves this thread a core.
    ctl[C.SPIN] = this.canBlock && ids.length < this.cores ? SPIN_POLLS : 0;
    ctl[C.MESSAGE] = this.hasWaitAsync ? 0 : 1;
    Atomics.store(ctl, C.COMPLETED, 0);
    Atomics.store(ctl, C.STATUS, 0);
    Atomics.store(ctl, C.DONE, 0);
    ctl[C.STREAM] = stream ? 1 : 0;
    ctl[C.FLAG0] = C.flagsAt(this.threads);
    const ext = new Float64Array(ctl.buffer, ctl.byteOffset + 4 * C.EXT0, MAX_ADDRS * C.EXT_FIELDS);
    ext.fill(0);
    let nExt = 0;
    spec.ext?.forEach((e, i) => {
      if (!e) return;
      ext.set([e.id, e.byteOffset, e.rowBytes], i * C.EXT_FIELDS);
      nExt++;
    });
    ctl[C.EXT_COUNT] = nExt;
    this.sabs = spec.sabs ?? NO_SABS;
    Atomics.store(ctl, C.READY, 0);
    const job = (this.jobId = (this.jobId + 1) & 0xffff);
    Atomics.store(ctl, C.JOB, (spec.op << 16) | job);
    Atomics.store(ctl, C.NEXT, job << 16); // opens the job: chunks can be claimed from here on
    this.participants = new Set(ids);
    this.deadInJob.clear();
    this.failure = null;
    const failed = new Promise<never>((_, reject) => {
      this.interrupt = reject;
    });
    failed.catch(() => {});
    for (const i of ids) this.workers.wake(i, job);
    try {
      if (this.canBlock && !spec.background) await this.takePart(job, rows, chunk, chunks, stream, callerHelps, failed);
      else await this.waitDone(failed);
    } catch (e) {
      if (!this.destroyed) await this.drain(job);
      throw e;
    } finally {
      this.interrupt = null;
      this.doneByMessage = null;
      this.participants = new Set();
    }
    checkStatus('rmsnorm-wasm pool', ctl[C.STATUS]!);
  }

  /**
   * The calling thread's part where it may block: copy inputs in (streaming), compute chunks
   * nobody has claimed, copy results out as chunks finish; when nothing is left to do, wait a
   * little for the other threads. It yields to the event loop every SLICE_MS, so that timers,
   * I/O, aborts and worker deaths are seen, and never waits for a chunk it could compute itself.
   */
  private async takePart(
    job: number,
    rows: number,
    chunk: number,
    chunks: number,
    stream: Stream | null,
    callerHelps: boolean,
    failed: Promise<never>,
  ): Promise<void> {
    const ctl = this.ctl;
    const flag0 = ctl[C.FLAG0]!;
    const raised = job | 0x10000;
    let copiedIn = 0;
    let copiedOut = 0;
    let slice = performance.now();
    for (;;) {
      if (this.failure) throw this.failure;
      let progressed = false;
      if (stream && copiedIn < chunks) {
        stream.copyIn(copiedIn * chunk, Math.min(rows, (copiedIn + 1) * chunk));
        Atomics.store(ctl, C.READY, ++copiedIn);
        Atomics.notify(ctl, C.READY);
        progressed = true;
      } else if (callerHelps && C.workOne(ctl, this.k, job, this.sabs, this.memory)) {
        progressed = true;
      }
      if (stream) {
        while (copiedOut < chunks && Atomics.load(ctl, flag0 + copiedOut) === raised) {
          stream.copyOut(copiedOut * chunk, Math.min(rows, (copiedOut + 1) * chunk));
          copiedOut++;
          progressed = true;
        }
      }
      const complete = Atomics.load(ctl, C.DONE) === 1 && (!stream || copiedOut === chunks);
      if (complete) return;
      if (!progressed) {
        // The rest is in other threads' hands: poll briefly, then sleep on what comes next.
        const at = stream && copiedOut < chunks ? flag0 + copiedOut : C.DONE;
        const want = at === C.DONE ? 1 : raised;
        for (let i = SPIN_POLLS; i > 0 && Atomics.load(ctl, at) !== want; i--);
        const v = Atomics.load(ctl, at);
        if (v !== want) Atomics.wait(ctl, at, v, 1);
      }
      if (performance.now() - slice > SLICE_MS) {
        await Promise.race([yieldToEventLoop(), failed]);
        slice = performance.now();
      }
    }
  }

  /**
   * Waits for DONE without blocking (a browser's main thread). A wake-up proves nothing: the
   * thread that completed the previous job stores DONE, then notifies (or posts its message);
   * when this thread saw the store and moved on, that late notification (or message) arrives
   * while the next job runs. So DONE itself is read again after every wake-up.
   */
  private async waitDone(failed: Promise<never>): Promise<void> {
    const ctl = this.ctl;
    for (;;) {
      // Engines without Atomics.waitAsync: the completing worker posts a message after it
      // stores DONE; listening before the load below means that message cannot be missed.
      const message = this.hasWaitAsync ? null : new Promise<void>((r) => (this.doneByMessage = r));
      if (Atomics.load(ctl, C.DONE) === 1) return;
      if (message) await Promise.race([message, failed]);
      else {
        const w = Atomics.waitAsync(ctl, C.DONE, 0);
        if (w.async) await Promise.race([w.value, failed]);
      }
    }
  }

  /** After a failed job: close it, and let live workers finish their chunks before memory is reused. */
  private async drain(job: number): Promise<void> {
    const ctl = this.ctl;
    Atomics.store(ctl, C.NEXT, (job << 16) | 0xffff);
    Atomics.store(ctl, C.READY, 1 << 30); // release workers waiting for streamed input
    Atomics.notify(ctl, C.READY);
    Atomics.store(ctl, C.TASK_WORDS.closed, 1); // and those serving a task ring
    Atomics.notify(ctl, C.TASK_WORDS.tail);
    const deadline = Date.now() + 5000;
    const busy = () => [...this.participants].some((i) => !this.deadInJob.has(i) && this.workers.busy(i));
    while (busy() && Date.now() < deadline && !this.destroyed) await new Promise((r) => setTimeout(r, 1));
  }
}
