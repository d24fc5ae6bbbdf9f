/**
 * The worker pool's public face: createPool, the RmsNormPool methods, and the order in which
 * calls run. Rows of one call are cut into chunks computed by workers that all run the
 * simd-threads module on one shared WebAssembly.Memory, so a job passes addresses, not data.
 *
 * - routes.ts: where a call runs (now on this thread, or sharded, as shard-choice.ts learns);
 * - workers.ts: starting, replacing and stopping the workers;
 * - dispatch.ts: running one job (chunks, wake-ups, the calling thread's part, waiting);
 * - operands.ts: placing a call's arrays and copying results back;
 * - queue.ts: the FIFO and AbortSignals; tuning.ts: every size and time the pool decides by;
 * - control.ts: the control block the threads share; serve.ts: the worker's loop.
 * @module
 */
import { canBlock, yieldToEventLoop } from '../../glue/platform.js';
import type { RmsNorm } from '../../rmsnorm.js';
import type { Build } from '../../types.js';
import { heapOf, Scratch, type F32Buffer, type Heap, type U16Buffer } from '../../glue/memory.js';
import { NO_PARAMS, type Call, type CheckedArgs, type Op } from '../../call/op.js';
import { PoolMethods } from '../../generated/operations.js';
import * as C from '../control.js';
import { Dispatcher } from './dispatch.js';
import { PoolCalls } from './operands.js';
import { CallQueue, abortReason, type Settle } from './queue.js';
import { SLICE_MS } from '../tuning.js';
import { Ways } from './routes.js';
import { Workers } from './workers.js';
import { registerPoolHooks, type PoolHooks } from './hooks.js';
import { registerTaskRing, TaskRing } from './task-ring.js';

import { checkSignal, POOL_KEYS, type RmsNormPool } from '../api.js';

type Job =
  | { kind: 'tasks'; settle: Settle<void>; signal?: undefined }
  // A kernel call of any operation: `make` checks its arguments again when it runs (an input
  // may have been detached while it was queued) and makes its Call (op.ts).
  | { kind: 'call'; fn: string; make: () => Call<unknown>; settle: Settle<unknown>; signal?: AbortSignal }
  | { kind: 'ping'; settle: Settle<void>; signal?: undefined }
  | { kind: 'fail'; worker: number; settle: Settle<void>; signal?: undefined };

const destroyedError = () => new Error('rmsnorm-wasm pool: the pool was destroyed');

/** The pool: see {@link createPool} (create.ts). @internal */
export class Pool extends PoolMethods implements RmsNormPool {
  readonly threads: number;
  readonly mode: 'threads' | 'single';
  readonly build: Build;
  private readonly heap: Heap;
  private readonly scratch: Scratch;
  private readonly blockRows: number;
  private readonly calls: PoolCalls;
  /** The instance whose memory the workers share (a threads build; its plain twin in single mode). */
  private readonly rn: RmsNorm;
  private ctlAddr = 0;
  private ctl: Int32Array | null = null;
  private workers: Workers | null = null;
  private dispatcher: Dispatcher | null = null;
  private taskRing: TaskRing | null = null;
  private readonly queue = new CallQueue<Job>();
  private busy = false;
  private destroyed = false;
  private readonly joinAllowed = canBlock();
  /** Where each call runs: see routes.ts. */
  private readonly ways: Ways;

  constructor(rn: RmsNorm, plain: RmsNorm, threads: number, private readonly cores: number) {
    super();
    this.rn = rn;
    this.heap = heapOf(rn.wasm);
    this.blockRows = rn.wasm.exports.dg_block_rows();
    this.mode = threads > 0 ? 'threads' : 'single';
    this.build = rn.build;
    this.threads = threads;
    this.scratch = new Scratch(this.heap);
    this.calls = new PoolCalls(this.heap, this.scratch, this.blockRows);
    this.ways = new Ways(rn, plain, this.heap, threads, this.blockRows, this.joinAllowed);
    registerPoolHooks(this, this.hooks());
  }

  /** Allocates the control block and starts the workers; resolves when all are ready. */
  async start(): Promise<void> {
    if (this.threads === 0) return;
    const words = C.controlWords(this.threads);
    this.ctlAddr = this.heap.alloc(words);
    const ctl = (this.ctl = new Int32Array(this.rn.wasm.memory.buffer, this.ctlAddr, words));
    ctl.fill(0);
    const workers = (this.workers = new Workers(this.rn.wasm, ctl, this.ctlAddr, this.threads, {
      died: (i, reason) => this.dispatcher?.workerDied(i, reason),
      doneByMessage: () => this.dispatcher?.messageDone(),
    }));
    this.dispatcher = new Dispatcher(this.rn.wasm.exports, this.rn.wasm.memory, ctl, workers, this.threads, this.cores, this.blockRows, this.joinAllowed);
    try {
      await workers.start();
    } catch (e) {
      await this.destroy();
      throw e;
    }
    workers.keepAlive(false);
    this.taskRing = new TaskRing(this.heap, ctl, {
      threads: this.threads,
      run: () => this.enqueue<void>((settle) => ({ kind: 'tasks', settle }), undefined),
    });
    registerTaskRing(this, this.taskRing);
  }

  /**
   * A call of operation `op` with its positional arguments (`options` its options): one too
   * small to shard, with nothing ahead of it, runs now — the sync API's short way for a
   * float32 call, else checked and run here (no queue round trip); any other is checked,
   * queued, and checked again when it runs. Rejects with what the check throws.
   */
  protected submitOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown, options: unknown): Promise<unknown> {
    try {
      if (this.idle() && a instanceof Float32Array && this.ways.small(a.length)) {
        const kind = this.ways.kindOf(a);
        const r = this.ways.instanceFor(kind).shortWay(op, fn, a, b, c, d, kind === 'shared');
        if (r !== undefined) return Promise.resolve(r);
      }
      const args = op.check(fn, a, b, c, d, POOL_KEYS);
      const signal = checkSignal(fn, options);
      if (this.idle() && !signal?.aborted && this.ways.inline(args.rows, args.rows * args.dim, op)) {
        return Promise.resolve(this.ways.inlineFor(args.x).runChecked(fn, op.call(args, this.ways.kindOf(args.x) === 'shared')));
      }
      const make = (): Call<unknown> => {
        const again = op.check(fn, a, b, c, d, POOL_KEYS);
        return op.call(again, this.ways.kindOf(again.x) === 'shared');
      };
      return this.enqueue<unknown>((settle) => ({ kind: 'call', fn, make, settle, signal }), signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * A call of arguments checked already (what the file functions lay out for their chunks, from
   * a run's options checked once): run as {@link submitOp} runs a call, never checked again.
   * @internal
   */
  runArgs<A extends CheckedArgs>(fn: string, op: Op<A>, args: A, signal?: AbortSignal): Promise<unknown> {
    if (this.idle() && !signal?.aborted && this.ways.inline(args.rows, args.rows * args.dim, op)) {
      try {
        return Promise.resolve(this.ways.inlineFor(args.x).runChecked(fn, op.call(args, this.ways.kindOf(args.x) === 'shared')));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    const make = (): Call<unknown> => op.call(args, this.ways.kindOf(args.x) === 'shared');
    return this.enqueue<unknown>((settle) => ({ kind: 'call', fn, make, settle, signal }), signal);
  }

  allocF32(length: number): F32Buffer {
    if (this.destroyed) throw destroyedError();
    return this.rn.allocF32(length);
  }

  allocU16(length: number): U16Buffer {
    if (this.destroyed) throw destroyedError();
    return this.rn.allocU16(length);
  }

  /** Nothing queued or running, and not destroyed. */
  private idle(): boolean {
    return !this.busy && this.queue.length === 0 && !this.destroyed;
  }

  ping(): Promise<void> {
    return this.enqueue<void>((settle) => ({ kind: 'ping', settle }), undefined);
  }

  private enqueue<T>(make: (s: Settle<T>) => Job, signal: AbortSignal | undefined): Promise<T> {
    if (this.destroyed) return Promise.reject(destroyedError());
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      this.queue.push(make({ resolve, reject }));
      void this.pump();
    });
  }

  /**
   * Runs queued calls one at a time, in order. Between calls, once SLICE_MS have passed, it
   * lets the event loop turn, so that a burst of calls never starves timers, I/O or aborts.
   */
  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.workers?.keepAlive(true);
    let slice = performance.now();
    try {
      for (let job = this.queue.shift(); job && !this.destroyed; job = this.queue.shift()) {
        try {
          await this.execute(job);
        } catch (e) {
          job.settle.reject(e);
        }
        if (performance.now() - slice > SLICE_MS && this.queue.length > 0) {
          await yieldToEventLoop();
          slice = performance.now();
        }
      }
    } finally {
      this.busy = false;
      if (!this.destroyed) this.workers?.keepAlive(false);
    }
  }

  private async execute(job: Job): Promise<void> {
    if (job.kind === 'tasks') {
      const spec = { op: C.Op.TASKS, addrs: [], naddrs: 0, rows: 0, params: NO_PARAMS, work: 0, blockAligned: false, background: true };
      await this.dispatcher!.run(spec);
      job.settle.resolve();
      return;
    }
    if (job.kind === 'ping' || job.kind === 'fail') {
      if (this.threads > 0) {
        const spec = { op: job.kind === 'ping' ? C.Op.NOOP : C.Op.FAIL, addrs: [], naddrs: 0, rows: 0, params: NO_PARAMS, work: 0, blockAligned: false };
        await this.dispatcher!.run(job.kind === 'fail' ? { ...spec, only: job.worker } : spec);
      }
      job.settle.resolve();
      return;
    }
    const c = job.make();
    job.settle.resolve(await this.ways.run(c, () => this.ways.inlineFor(c.x).runChecked(job.fn, c), () => this.calls.run(this.dispatcher!, job.fn, c, this.joinAllowed)));
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    const err = destroyedError();
    for (const job of this.queue.clear()) job.settle.reject(err);
    this.taskRing?.close();
    this.dispatcher?.destroy(err);
    const stopped = (await this.workers?.stop()) ?? true;
    // Nothing can touch the pool's memory any more (unless a browser worker would not stop).
    if (stopped) {
      this.scratch.release();
      this.taskRing?.free();
      if (this.ctlAddr !== 0) this.heap.free(this.ctlAddr, this.ctl!.length);
    }
    this.ctlAddr = 0;
    this.ctl = null;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.destroy();
  }

  /** This pool's hooks.ts controls (registered there, not reachable from the pool object). */
  private hooks(): PoolHooks {
    return {
      failWorker: (i: number): Promise<unknown> =>
        this.enqueue<void>((settle) => ({ kind: 'fail', worker: i, settle }), undefined).then(
          () => new Error('worker did not fail'),
          (e: unknown) => e,
        ),
      setInlineBelow: (elems: number): void => {
        this.ways.inlineBelow = elems;
      },
      forceWay: (way: 'sharded' | 'alone' | null): void => {
        this.ways.forced = way === null ? null : way === 'sharded';
      },
      hold: (i: number): void => {
        if (this.ctl) Atomics.store(this.ctl, C.HOLD, i + 1);
      },
      release: (): void => {
        if (this.ctl) {
          Atomics.store(this.ctl, C.HOLD, 0);
          Atomics.notify(this.ctl, C.HOLD);
        }
      },
      busy: (i: number): boolean => !!this.workers && this.workers.busy(i),
      killWorker: (i: number): void => {
        if (!this.workers) throw new RangeError(`no worker ${i}`);
        this.workers.kill(i);
      },
      taskRecords: (): number => this.taskRing?.finished ?? 0,
      lastJobThreads: (): number => this.dispatcher?.lastThreads ?? 0,
    };
  }
}

/** Whether `p` is a pool this package made (createPool), whose {@link Pool.runArgs} the file functions use. */
export const isPool = (p: unknown): p is Pool => p instanceof Pool;
