/**
 * The worker pool: rows of one call are cut into chunks computed by workers that all run the
 * simd-threads module on one shared WebAssembly.Memory, so a job passes addresses, not data.
 * @module
 */
import { canBlock, coreCount, simdSupported, threadsAvailable } from '../platform.js';
import type { RmsNorm } from '../rmsnorm.js';
import { backwardAddrs, checkStatus, stageBackward, stageForward } from '../rmsnorm.js';
import { copyOut, plainBackward, plainForward } from '../staging.js';
import { Scratch } from '../memory.js';
import {
  checkBackward,
  checkForward,
  describe,
  type BackwardArgs,
  type ForwardArgs,
  type RmsNormBackwardOptions,
  type RmsNormBackwardResult,
  type RmsNormOptions,
} from '../validate.js';
import * as C from './control.js';
import { spawnWorker, type WorkerHandle } from './spawn.js';
import type { WorkerMessage } from './messages.js';

/** Options of {@link createPool}. */
export interface PoolOptions {
  /**
   * Threads that compute a job. Default: the number of logical cores
   * (`os.availableParallelism()` / `navigator.hardwareConcurrency`). Integer ≥ 1.
   */
  threads?: number;
}

/** Per-call option of the pool's methods, besides the sync API's options. */
export interface PoolCallOptions {
  /** Aborting rejects the call with the signal's reason (an AbortError) while it is queued. */
  signal?: AbortSignal;
}

/** A pool of workers sharing one wasm memory; see {@link createPool}. */
export interface RmsNormPool {
  /** Workers running: `threads` in 'threads' mode, 0 in 'single' mode. */
  readonly threads: number;
  /** 'threads': workers on shared memory. 'single': no SharedArrayBuffer here, so every call
   * runs on the calling thread with the `simd` build (same API and results). */
  readonly mode: 'threads' | 'single';
  /** As the sync {@link rmsNorm}, resolved when done. Arguments are checked before queueing. */
  rmsNorm(x: Float32Array, weight: Float32Array | null, options?: RmsNormOptions & PoolCallOptions): Promise<Float32Array>;
  /** As the sync {@link rmsNormBackward}; dweight has the same bits whatever the thread count. */
  rmsNormBackward(
    dy: Float32Array,
    x: Float32Array,
    weight: Float32Array | null,
    options?: RmsNormBackwardOptions & PoolCallOptions,
  ): Promise<RmsNormBackwardResult>;
  /**
   * Dispatches an empty job to every worker and resolves when all have answered: the pool's
   * fixed cost per call, for benchmarks.
   */
  ping(): Promise<void>;
  /** Rejects queued and running calls, stops every worker; later calls reject at once. */
  destroy(): Promise<void>;
}

/**
 * Below these sizes (elements) a call runs inline on the calling thread: a dispatch costs more
 * than the threads save. Measured with `npm run bench:pool` (bench/pool.ts) on
 * the 2-core machine: where the caller takes part (Node), the pool was ≥ 5% faster than the
 * sync call from 64Ki elements (dim 1024) in most runs but not all, and from 128Ki in every
 * run, which is the threshold used. A browser's main thread cannot
 * take part or wait synchronously, and `npm run bench:browser` put the crossover between
 * 1.5Mi and 2Mi elements both ways (2048×768 was slower threaded, 512×4096 faster).
 */
export const INLINE_BELOW = {
  join: { forward: 128 * 1024, backward: 128 * 1024 },
  async: { forward: 2 * 1024 * 1024, backward: 2 * 1024 * 1024 },
} as const;
/**
 * Calls below this much work (elements, backward counted twice) are shared with the calling
 * thread where it may block (Node, workers): it computes chunks too and then waits, at most
 * about a millisecond, instead of paying an event-loop round trip. Larger calls leave the
 * calling thread free and are awaited asynchronously.
 */
export const JOIN_BELOW = 4 * 1024 * 1024;
/**
 * Plain-array calls below this much work (elements, backward counted twice) stream where the
 * calling thread may block: it copies chunks in while workers compute, then copies results
 * out as chunks finish (Pool.streamJob). That holds the calling thread about as long as the
 * copies take, which a plain-array call costs anyway; larger calls copy in, then leave the
 * thread free while workers compute, then copy out.
 */
export const STREAM_BELOW = 16 * 1024 * 1024;
/**
 * Polls (one Atomics.load each, about 5 ns in optimized V8 code) that a worker spends waiting
 * for the next small job before it sleeps, and that the caller spends waiting for a small job
 * to complete: about 100 µs, more than the 40 µs a futex wake-up costs on a small VM.
 */
const SPIN_AFTER_SMALL = 20_000;
/** Chunks per participant: enough to balance a late wake-up, few enough to be cheap. */
const CHUNKS_PER_THREAD = 4;
/** Don't cut chunks below this many elements. */
const MIN_CHUNK_ELEMS = 8 * 1024;

/** A streaming job's copies, by rows: see Pool.streamJob. */
interface Stream {
  copyIn(r0: number, r1: number): void;
  copyOut(r0: number, r1: number): void;
}

type Job =
  | { kind: 'forward'; a: ForwardArgs; settle: Settle<Float32Array>; signal?: AbortSignal; onAbort?: () => void }
  | { kind: 'backward'; a: BackwardArgs; settle: Settle<RmsNormBackwardResult>; signal?: AbortSignal; onAbort?: () => void }
  | { kind: 'ping'; settle: Settle<void>; signal?: undefined; onAbort?: () => void }
  | { kind: 'fail'; worker: number; settle: Settle<void>; signal?: undefined; onAbort?: () => void };

interface Settle<T> {
  resolve(v: T): void;
  reject(e: unknown): void;
}

interface Slot {
  handle: WorkerHandle | null;
  ready: Promise<void>;
}

/** Key of the pool's test hooks (see Pool[TEST_HOOKS]). */
const TEST_HOOKS: unique symbol = Symbol.for('rmsnorm-wasm.test');

const destroyedError = () => new Error('rmsnorm-wasm pool: the pool was destroyed');

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** Options the pool's methods take beyond the sync API's. */
const POOL_KEYS: readonly string[] = ['signal'];

function checkSignal(fn: string, o: unknown): AbortSignal | undefined {
  const s = (o as { signal?: unknown } | undefined)?.signal;
  if (s === undefined) return undefined;
  if (typeof s !== 'object' || s === null || typeof (s as AbortSignal).addEventListener !== 'function' || typeof (s as AbortSignal).aborted !== 'boolean') {
    throw new TypeError(`${fn}: options.signal must be an AbortSignal, got ${describe(s)}`);
  }
  return s as AbortSignal;
}

class Pool implements RmsNormPool {
  readonly threads: number;
  readonly mode: 'threads' | 'single';
  private readonly rn: RmsNorm;
  private readonly scratch: Scratch;
  private readonly slots: Slot[] = [];
  private ctlAddr = 0;
  private ctl: Int32Array | null = null;
  private readonly queue: Job[] = [];
  private busy = false;
  private destroyed = false;
  /** Rejects the running job's wait (worker death, destroy). */
  private interrupt: ((e: Error) => void) | null = null;
  /** Resolves the running job's wait (message fallback). */
  private doneByMessage: (() => void) | null = null;
  private readonly joinAllowed = canBlock();
  /** INLINE_BELOW, changeable through the test hooks (to measure the threshold). */
  private inlineBelow: { forward: number; backward: number } = INLINE_BELOW[canBlock() ? 'join' : 'async'];
  private readonly hasWaitAsync = typeof Atomics.waitAsync === 'function';
  /** Workers that took part in the running job. */
  private participants = new Set<number>();
  /** Participants of the running job that died. */
  private readonly deadInJob = new Set<number>();
  /** Id of the last job published (16 bits, see control.ts). */
  private jobId = 0;

  /** Logical cores of the machine. */
  private readonly cores: number;
  /** Rows per dweight block (the kernel's constant). */
  private readonly blockRows: number;

  constructor(rn: RmsNorm, threads: number, cores: number) {
    this.rn = rn;
    this.cores = cores;
    this.blockRows = rn.wasm.exports.dg_block_rows();
    this.mode = threads > 0 ? 'threads' : 'single';
    this.threads = threads;
    this.scratch = new Scratch(rn.heap);
  }

  /** Allocates the control block and starts the workers; resolves when all are ready. */
  async start(): Promise<void> {
    if (this.threads === 0) return;
    const words = C.controlWords(this.threads);
    this.ctlAddr = this.rn.heap.alloc(words);
    this.ctl = new Int32Array(this.rn.wasm.memory.buffer, this.ctlAddr, words);
    this.ctl.fill(0);
    for (let i = 0; i < this.threads; i++) this.slots.push({ handle: null, ready: Promise.resolve() });
    try {
      await Promise.all(this.slots.map((_, i) => this.spawn(i)));
    } catch (e) {
      await this.destroy();
      throw e;
    }
    this.keepAlive(false);
  }

  private spawn(i: number): Promise<void> {
    const slot = this.slots[i]!;
    slot.ready = new Promise<void>((resolve, reject) => {
      spawnWorker({
        message: (m: WorkerMessage) => {
          if (m.type === 'rmsnorm-wasm:ready') resolve();
          else if (m.type === 'rmsnorm-wasm:failed') reject(new Error(`rmsnorm-wasm pool: worker ${i} failed to start: ${m.message}`));
          else if (m.type === 'rmsnorm-wasm:done') this.doneByMessage?.();
        },
        death: (reason) => {
          reject(new Error(`rmsnorm-wasm pool: worker ${i} died while starting: ${reason}`));
          this.onDeath(i, reason);
        },
      }).then((h) => {
        if (this.destroyed) {
          void h.terminate();
          reject(destroyedError());
          return;
        }
        slot.handle = h;
        h.post({
          type: 'rmsnorm-wasm:init',
          module: this.rn.wasm.module,
          memory: this.rn.wasm.memory,
          ctl: this.ctlAddr,
          words: this.ctl!.length,
          index: i,
        });
      }, reject);
    });
    return slot.ready;
  }

  private onDeath(i: number, reason: string): void {
    const slot = this.slots[i];
    if (!slot || this.destroyed) return;
    slot.handle = null;
    // Its line may say busy forever: the replacement starts from a clean one.
    if (this.ctl) Atomics.store(this.ctl, C.SEQ0 + C.STRIDE * i + C.BUSY, 0);
    if (this.participants.has(i)) {
      this.deadInJob.add(i);
      this.interrupt?.(new Error(`rmsnorm-wasm pool: worker ${i} died during the job (${reason}); the job was abandoned and the worker replaced`));
    }
    // Replace it; the next job waits for the replacement.
    this.spawn(i).catch(() => {});
  }

  private keepAlive(on: boolean): void {
    for (const s of this.slots) s.handle?.keepAlive(on);
  }

  rmsNorm(x: Float32Array, weight: Float32Array | null, options?: RmsNormOptions & PoolCallOptions): Promise<Float32Array> {
    const fn = 'pool.rmsNorm';
    try {
      const a = checkForward(fn, x, weight, options, POOL_KEYS);
      const signal = checkSignal(fn, options);
      // A call too small to shard, with nothing ahead of it, runs now: no queue round trip.
      if (this.idle() && !signal?.aborted && this.inline(a.rows, a.rows * a.dim, 'forward')) {
        return Promise.resolve(this.rn.forwardChecked(a));
      }
      return this.enqueue<Float32Array>((settle, s) => ({ kind: 'forward', a, settle, signal: s }), signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  rmsNormBackward(
    dy: Float32Array,
    x: Float32Array,
    weight: Float32Array | null,
    options?: RmsNormBackwardOptions & PoolCallOptions,
  ): Promise<RmsNormBackwardResult> {
    const fn = 'pool.rmsNormBackward';
    try {
      const a = checkBackward(fn, dy, x, weight, options, POOL_KEYS);
      const signal = checkSignal(fn, options);
      if (this.idle() && !signal?.aborted && this.inline(a.rows, a.rows * a.dim, 'backward')) {
        return Promise.resolve(this.rn.backwardChecked(a));
      }
      return this.enqueue<RmsNormBackwardResult>((settle, s) => ({ kind: 'backward', a, settle, signal: s }), signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Nothing queued or running, and not destroyed. */
  private idle(): boolean {
    return !this.busy && this.queue.length === 0 && !this.destroyed;
  }

  /** Whether a call runs on the calling thread rather than being sharded. */
  private inline(rows: number, elems: number, kind: 'forward' | 'backward'): boolean {
    if (this.threads === 0 || elems < this.inlineBelow[kind]) return true;
    // Backward chunks are whole 32-row dweight blocks: one block cannot be shared.
    return kind === 'forward' ? rows < 2 : rows <= this.blockRows;
  }

  ping(): Promise<void> {
    return this.enqueue<void>((settle) => ({ kind: 'ping', settle }), undefined);
  }

  private enqueue<T>(make: (s: Settle<T>, signal?: AbortSignal) => Job, signal: AbortSignal | undefined): Promise<T> {
    if (this.destroyed) return Promise.reject(destroyedError());
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      const job = make({ resolve, reject }, signal);
      if (signal) {
        job.onAbort = () => {
          const at = this.queue.indexOf(job);
          if (at >= 0) {
            this.queue.splice(at, 1);
            reject(abortReason(signal));
          }
        };
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.keepAlive(true);
    try {
      while (this.queue.length > 0 && !this.destroyed) {
        const job = this.queue.shift()!;
        if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
        try {
          await this.execute(job);
        } catch (e) {
          job.settle.reject(e);
        }
      }
    } finally {
      this.busy = false;
      if (!this.destroyed) this.keepAlive(false);
    }
  }

  private async execute(job: Job): Promise<void> {
    if (job.kind === 'ping' || job.kind === 'fail') {
      if (this.threads > 0) await this.run(job.kind === 'ping' ? C.Op.NOOP : C.Op.FAIL, 0, 0, 0, 0, false, job.kind === 'fail' ? job.worker : -1);
      job.settle.resolve();
      return;
    }
    const heap = this.rn.heap;
    if (job.kind === 'forward') {
      const fn = 'pool.rmsNorm';
      const a = job.a;
      const { rows, dim } = a;
      const elems = rows * dim;
      if (this.inline(rows, elems, 'forward')) {
        job.settle.resolve(this.rn.forwardChecked(a));
        return;
      }
      const y = a.out ?? new Float32Array(a.x.length);
      const ctl = this.ctl!;
      // All arrays plain: the scratch layout of the sync copy path, with x streamed in.
      const p = this.streams(elems) ? plainForward(fn, heap, this.scratch, a.x, a.weight, y, a.rstd, false) : null;
      if (p) {
        [ctl[C.A0], ctl[C.A1], ctl[C.A2], ctl[C.A3]] = [p.x, p.w, p.x, p.rstd];
        await this.run(C.Op.FORWARD, rows, dim, a.eps, elems, false, -1, {
          copyIn: (r0, r1) => heap.f32().set(a.x.subarray(r0 * dim, r1 * dim), (p.x >>> 2) + r0 * dim),
          copyOut: (r0, r1) => {
            const m = heap.f32();
            y.set(m.subarray((p.x >>> 2) + r0 * dim, (p.x >>> 2) + r1 * dim), r0 * dim);
            if (a.rstd) a.rstd.set(m.subarray((p.rstd >>> 2) + r0, (p.rstd >>> 2) + r1), r0);
          },
        });
      } else {
        const s = stageForward(fn, heap, this.scratch, a, y);
        [ctl[C.A0], ctl[C.A1]] = [s.inputs[0]!, a.weight ? s.inputs[1]! : 0];
        [ctl[C.A2], ctl[C.A3]] = [s.outputs[0]!, a.rstd ? s.outputs[1]! : 0];
        await this.run(C.Op.FORWARD, rows, dim, a.eps, elems, false);
        s.finish();
      }
      job.settle.resolve(y);
      return;
    }
    const fn = 'pool.rmsNormBackward';
    const a = job.a;
    const { rows, dim } = a;
    const elems = rows * dim;
    if (this.inline(rows, elems, 'backward')) {
      job.settle.resolve(this.rn.backwardChecked(a));
      return;
    }
    const dx = a.dx ?? new Float32Array(a.x.length);
    const dweight = a.weight ? (a.dweight ?? new Float32Array(dim)) : null;
    const partials = Math.ceil(rows / this.blockRows) * dim;
    const ctl = this.ctl!;
    // All arrays plain: the sync copy path's layout, its workspace sized for the block partials.
    const p = this.streams(2 * elems)
      ? plainBackward(fn, heap, this.scratch, a.dy, a.x, a.weight, a.rstd, dx, dweight, false, partials)
      : null;
    if (p) {
      [ctl[C.A0], ctl[C.A1], ctl[C.A2], ctl[C.A3]] = [p.dy, p.x, p.w, p.rstd];
      [ctl[C.A4], ctl[C.A5], ctl[C.A6]] = [p.dy, p.work, p.dw];
      await this.run(C.Op.BACKWARD, rows, dim, a.eps, 2 * elems, true, -1, {
        copyIn: (r0, r1) => {
          const m = heap.f32();
          m.set(a.dy.subarray(r0 * dim, r1 * dim), (p.dy >>> 2) + r0 * dim);
          m.set(a.x.subarray(r0 * dim, r1 * dim), (p.x >>> 2) + r0 * dim);
        },
        copyOut: (r0, r1) => dx.set(heap.f32().subarray((p.dy >>> 2) + r0 * dim, (p.dy >>> 2) + r1 * dim), r0 * dim),
      });
      if (dweight) copyOut(heap, p.dw, dweight);
    } else {
      const s = stageBackward(fn, heap, this.scratch, a, dx, dweight, a.weight ? [partials] : []);
      const q = backwardAddrs(a, s);
      [ctl[C.A0], ctl[C.A1], ctl[C.A2], ctl[C.A3]] = [q.dy, q.x, q.w, q.rstd];
      [ctl[C.A4], ctl[C.A5], ctl[C.A6]] = [q.dx, a.weight ? s.extra[0]! : 0, q.dw];
      await this.run(C.Op.BACKWARD, rows, dim, a.eps, 2 * elems, true);
      s.finish();
    }
    job.settle.resolve({ dx, dweight });
  }

  /**
   * Whether a call of this much work may stream (see streamJob): where this thread may block,
   * below STREAM_BELOW. It then streams if no array is in wasm memory (plainForward/Backward).
   */
  private streams(work: number): boolean {
    return this.joinAllowed && work < STREAM_BELOW;
  }

  /**
   * Runs the job whose operand words are set: chunking, waking workers, taking part when
   * allowed, waiting for completion. Throws if a worker died or a kernel rejected a chunk.
   * `only`: wake just this worker (the FAIL test job).
   */
  private async run(
    op: number,
    rows: number,
    dim: number,
    eps: number,
    work: number,
    blockAligned: boolean,
    only = -1,
    stream: Stream | null = null,
  ): Promise<void> {
    await Promise.all(this.slots.map((s) => s.ready));
    if (this.destroyed) throw destroyedError();
    const ctl = this.ctl!;
    // Small jobs, where this thread may block: wait synchronously (a futex wake, not an event
    // loop turn) and, when there is real work, take chunks too. A streaming job keeps this
    // thread busy copying instead, so it is one of the job's threads either way.
    const syncWait = this.joinAllowed && (work < JOIN_BELOW || stream !== null);
    const join = syncWait && rows > 0 && this.threads > 1 && stream === null;
    const ownThread = join || (stream !== null && this.threads > 1);
    const ids = only >= 0 ? [only] : Array.from({ length: ownThread ? this.threads - 1 : this.threads }, (_, i) => i);
    const parts = ids.length + (join ? 1 : 0);
    let chunk = 0;
    let chunks = ids.length; // NOOP: one answer from each worker
    if (rows > 0) {
      chunk = Math.max(Math.ceil(rows / (parts * CHUNKS_PER_THREAD)), Math.ceil(MIN_CHUNK_ELEMS / dim));
      if (blockAligned) {
        chunk = Math.ceil(chunk / this.blockRows) * this.blockRows;
      }
      chunk = Math.max(chunk, Math.ceil(rows / C.MAX_CHUNKS));
      chunks = Math.ceil(rows / chunk);
    }
    if (op === C.Op.FAIL) {
      chunks = 1;
      ctl[C.A0] = only;
    }
    ctl[C.OP] = op;
    ctl[C.ROWS] = rows;
    ctl[C.DIM] = dim;
    ctl[C.EPS] = C.floatBits(eps);
    ctl[C.CHUNK_ROWS] = chunk;
    ctl[C.N_CHUNKS] = chunks;
    // Workers keep polling after small jobs only, and only if that leaves this thread a core.
    ctl[C.SPIN] = syncWait && ids.length < this.cores ? SPIN_AFTER_SMALL : 0;
    ctl[C.MESSAGE] = this.hasWaitAsync ? 0 : 1;
    Atomics.store(ctl, C.COMPLETED, 0);
    Atomics.store(ctl, C.STATUS, 0);
    Atomics.store(ctl, C.DONE, 0);
    ctl[C.STREAM] = stream ? 1 : 0;
    ctl[C.FLAG0] = C.flagsAt(this.threads);
    Atomics.store(ctl, C.READY, 0);
    const job = (this.jobId = (this.jobId + 1) & 0xffff);
    Atomics.store(ctl, C.JOB, job);
    Atomics.store(ctl, C.NEXT, job << 16); // opens the job: chunks can be claimed from here on
    this.participants = new Set(ids);
    this.deadInJob.clear();
    const failed = new Promise<never>((_, reject) => {
      this.interrupt = reject;
    });
    failed.catch(() => {});
    const done = this.hasWaitAsync ? null : new Promise<void>((r) => (this.doneByMessage = r));
    for (const i of ids) {
      const at = C.SEQ0 + C.STRIDE * i;
      Atomics.add(ctl, at, 1);
      Atomics.notify(ctl, at, 1);
    }
    try {
      if (stream) {
        await this.streamJob(ctl, job, rows, chunk, chunks, stream, failed, done);
      } else if (syncWait) {
        if (join) C.work(ctl, this.rn.wasm.exports, job, false);
        // What is left is at most a chunk or two of another thread: poll for it, then sleep,
        // both bounded so that a dead worker is still noticed by the async path below. Poll
        // only when the job's workers leave this thread a core of its own.
        if (ids.length < this.cores) for (let i = SPIN_AFTER_SMALL; i > 0 && Atomics.load(ctl, C.DONE) === 0; i--);
        if (Atomics.wait(ctl, C.DONE, 0, 100) === 'timed-out') await this.waitAsync(ctl, failed, done);
      } else {
        await this.waitAsync(ctl, failed, done);
      }
    } catch (e) {
      await this.drain(ctl, job);
      throw e;
    } finally {
      this.interrupt = null;
      this.doneByMessage = null;
      this.participants = new Set();
    }
    checkStatus('rmsnorm-wasm pool', ctl[C.STATUS]!);
  }

  /**
   * The caller's side of a streaming job: copies the input in chunk by chunk (workers start on
   * each as soon as it is in), then copies each chunk's output out as soon as it is done. The
   * copies, which a plain-array call cannot avoid, so overlap the kernel instead of adding to
   * it. Waits are bounded; past that the rest is awaited asynchronously (a dead worker).
   */
  private async streamJob(
    ctl: Int32Array,
    job: number,
    rows: number,
    chunk: number,
    chunks: number,
    stream: Stream,
    failed: Promise<never>,
    done: Promise<void> | null,
  ): Promise<void> {
    for (let c = 0; c < chunks; c++) {
      stream.copyIn(c * chunk, Math.min(rows, (c + 1) * chunk));
      Atomics.store(ctl, C.READY, c + 1);
      Atomics.notify(ctl, C.READY);
    }
    const flag0 = ctl[C.FLAG0]!;
    const raised = job | 0x10000;
    for (let c = 0; c < chunks; c++) {
      const at = flag0 + c;
      for (let i = SPIN_AFTER_SMALL; i > 0 && Atomics.load(ctl, at) !== raised; i--);
      const deadline = performance.now() + 100;
      for (let v = Atomics.load(ctl, at); v !== raised; v = Atomics.load(ctl, at)) {
        if (performance.now() > deadline) {
          await this.waitAsync(ctl, failed, done);
          stream.copyOut(c * chunk, rows);
          return;
        }
        Atomics.wait(ctl, at, v, 10);
      }
      stream.copyOut(c * chunk, Math.min(rows, (c + 1) * chunk));
    }
    // The backward's dweight is added by whichever thread finished last.
    if (Atomics.wait(ctl, C.DONE, 0, 100) === 'timed-out') await this.waitAsync(ctl, failed, done);
  }

  private async waitAsync(ctl: Int32Array, failed: Promise<never>, done: Promise<void> | null): Promise<void> {
    if (Atomics.load(ctl, C.DONE) === 1) return;
    if (done) {
      await Promise.race([done, failed]);
      return;
    }
    const w = Atomics.waitAsync(ctl, C.DONE, 0);
    if (w.async) await Promise.race([w.value, failed]);
  }

  /** After a failed job: close it, and let live workers finish their chunks before memory is reused. */
  private async drain(ctl: Int32Array, job: number): Promise<void> {
    Atomics.store(ctl, C.NEXT, (job << 16) | 0xffff);
    Atomics.store(ctl, C.READY, 1 << 30); // release workers waiting for streamed input
    Atomics.notify(ctl, C.READY);
    const deadline = Date.now() + 5000;
    const busy = () =>
      this.slots.some((_, i) => !this.deadInJob.has(i) && Atomics.load(ctl, C.SEQ0 + C.STRIDE * i + C.BUSY) !== 0);
    while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    const err = destroyedError();
    for (const job of this.queue.splice(0)) {
      if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
      job.settle.reject(err);
    }
    this.interrupt?.(err);
    if (this.ctl) {
      Atomics.store(this.ctl, C.OP, C.Op.EXIT);
      for (let i = 0; i < this.slots.length; i++) {
        Atomics.add(this.ctl, C.SEQ0 + C.STRIDE * i, 1);
        Atomics.notify(this.ctl, C.SEQ0 + C.STRIDE * i);
      }
    }
    await Promise.all(this.slots.map((s) => s.handle?.terminate()));
    for (const s of this.slots) s.handle = null;
    // Workers are gone: their memory can be reused.
    this.scratch.release();
    if (this.ctlAddr !== 0) this.rn.heap.free(this.ctlAddr, this.ctl!.length);
    this.ctlAddr = 0;
    this.ctl = null;
  }

  /**
   * Test hooks, reached through `pool[Symbol.for('rmsnorm-wasm.test')]`: `failWorker(i)` queues
   * a job that makes worker i throw (resolves to the job's rejection reason); `busy(i)` says
   * whether worker i is inside a job; `hold(i)` makes worker i stop inside the next chunk it
   * claims until `release()`; `setInlineBelow(n)` changes the inline threshold (the
   * threshold benchmark); `killWorker(i)` terminates worker i from outside, as a
   * crash would. @internal
   */
  [TEST_HOOKS] = {
    failWorker: (i: number): Promise<unknown> =>
      this.enqueue<void>((settle) => ({ kind: 'fail', worker: i, settle }), undefined).then(
        () => new Error('worker did not fail'),
        (e: unknown) => e,
      ),
    setInlineBelow: (elems: number): void => {
      this.inlineBelow = { forward: elems, backward: elems };
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
    busy: (i: number): boolean => !!this.ctl && Atomics.load(this.ctl, C.SEQ0 + C.STRIDE * i + C.BUSY) === 1,
    killWorker: (i: number): void => {
      const h = this.slots[i]?.handle;
      if (!h) throw new RangeError(`no worker ${i}`);
      h.kill();
    },
  };
}

/**
 * Starts a pool of workers that share the `simd-threads` module and its memory with this
 * thread. Views from {@link allocF32} (after `init()` picked `simd-threads`) are used in place;
 * plain Float32Arrays are copied in once and out once.
 *
 * Where SharedArrayBuffer is unavailable (a page without COOP/COEP headers) the pool is
 * created in `mode: 'single'`: no workers, calls run on the calling thread with the `simd`
 * build, same API and results.
 *
 * @param options `threads`: threads per job (default: logical core count).
 */
export async function createPool(
  options: PoolOptions | undefined,
  load: (build: 'simd-threads' | 'simd' | 'scalar') => Promise<RmsNorm>,
): Promise<RmsNormPool> {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`createPool: options must be an object, got ${describe(options)}`);
  }
  const t = options?.threads;
  if (t !== undefined) {
    if (typeof t !== 'number') throw new TypeError(`createPool: options.threads must be a number, got ${describe(t)}`);
    if (!Number.isInteger(t) || t < 1 || t > 256) {
      throw new RangeError(`createPool: options.threads must be an integer from 1 to 256, got ${t}`);
    }
  }
  if (!threadsAvailable()) {
    return new Pool(await load(simdSupported() ? 'simd' : 'scalar'), 0, 1);
  }
  const cores = await coreCount();
  const pool = new Pool(await load('simd-threads'), t ?? cores, cores);
  await pool.start();
  return pool;
}
