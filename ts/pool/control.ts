/**
 * The control block the pool and its workers share: Int32 words inside the wasm memory itself,
 * so that a job is a handful of stores and one `Atomics.notify`, never a message.
 *
 * One job at a time. Its rows are cut into chunks that every participant (the workers, and in
 * Node sometimes the calling thread) claims by compare-and-swap on NEXT, which holds the job's
 * id beside the chunk index. So a thread that wakes late, even after the job is over, claims
 * nothing it should not: the job is finished by whoever is awake, and the chunks complete it,
 * not a head count. Backward chunks are whole dweight blocks whose partials land at fixed
 * places, so who computes which chunk never changes a bit of the result.
 * @module
 */
import type { KernelExports, WasmMemoryLike } from '../glue/load.js';
import { CALL_WORDS } from '../call/call-block.js';
import { ADDRS_AT, MAX_ADDRS } from '../call/op.js';
import { OPS } from '../call/ops.js';

// Line 0 and on: the job, written by the pool before it opens NEXT, read-only while it runs.
// Addresses fit in int32: the threads build's memory is at most 2 GiB.
export const OP = 0;
export const ROWS = 1;
export const CHUNK_ROWS = 2;
export const N_CHUNKS = 3;
/** How long (spin iterations) workers poll for the next job before sleeping. */
export const SPIN = 4;
/** 1: the completing thread posts a message too (engines without Atomics.waitAsync). */
export const MESSAGE = 5;
/** 1: the job's completion adds onto dweight as it is (a later segment of a streamed call). */
export const ACCUMULATE = 6;
/**
 * The current job: its opcode << 16 | its id (16 bits), stored after every other word of the
 * job, so that one atomic load gives a thread the job and its opcode together.
 */
export const JOB = 7;
/** FAIL jobs: the worker asked to fail. */
export const FAIL_WORKER = 8;
/**
 * The job's call block (call-block.ts): its parameters, then its addresses (the operation's
 * operands in ops.ts's order, then its workspace), which every thread's kernel reads in place.
 */
export const CALL = 16;
// Words that several threads write during a job each get a 64-byte line of their own: moving a
// contended line between cores costs more than the arithmetic around it.
const LINE = 16;
/** `job << 16 | next chunk`; claimed by compare-and-swap. On the first line past the call block. */
export const NEXT = Math.ceil((CALL + CALL_WORDS) / LINE) * LINE;
/** Chunks finished; the thread that finishes the last one completes the job. */
export const COMPLETED = NEXT + LINE;
/** First non-zero kernel status of the job. */
export const STATUS = COMPLETED + 1;
/** 0 while the job runs, 1 when complete (Atomics.notify'd). */
export const DONE = NEXT + 2 * LINE;
/** Streaming jobs: chunks whose input the caller has copied in so far (Atomics.notify'd). */
export const READY = NEXT + 3 * LINE;
/** 1: a streaming job (chunks wait for READY and raise their flag when done). */
export const STREAM = NEXT + 4 * LINE;
/** Where the per-chunk done flags start (int32 index); a flag holds `job | 0x10000`. */
export const FLAG0 = STREAM + 1;
/** Test hook: worker `HOLD - 1` stops inside the next chunk it claims until HOLD changes. */
export const HOLD = STREAM + 2;
/**
 * A task job (caller/task-ring.ts, worker/tasks.ts): the next record to claim (workers compete
 * for it), the records queued (the caller writes it), the records finished (workers add to it),
 * each on a line of its own; then, read-only while the job runs, whether the ring is closed, its
 * address and slots and the bytes of each worker's region.
 */
export const TASK_WORDS = {
  head: NEXT + 5 * LINE,
  tail: NEXT + 6 * LINE,
  done: NEXT + 7 * LINE,
  closed: NEXT + 8 * LINE,
  table: NEXT + 8 * LINE + 1,
  slots: NEXT + 8 * LINE + 2,
  regionBytes: NEXT + 8 * LINE + 3,
  /** The test hook {@link HOLD}: worker `HOLD - 1` stops before its next record. */
  hold: HOLD,
} as const;
/**
 * The task ring's records: {@link TASK_RECORD} float64 each (positions pass 2^32), the first the
 * record's task kind (what registered it runs it: worker/tasks.ts), the rest the kind's own;
 * after them an int32 state word per slot ({@link TaskState}).
 */
export const TASK_RECORD = 18;
/** A task slot's state. */
export const TaskState = { FREE: 0, QUEUED: 1, DONE: 2 } as const;

/**
 * Operands in a SharedArrayBuffer of the caller's (not the wasm memory): each thread copies a
 * chunk's rows of them between that buffer and the operand's window region itself, before and
 * after the kernel. Per operand, three float64 at EXT0 (as words of this block): the buffer's
 * id (0: not such an operand; ids are the pool's, see serve.ts's `attach`), the byte offset in
 * it of the job's row 0, and the bytes per row. EXT_COUNT: how many there are.
 */
export const EXT0 = NEXT + 9 * LINE;
export const EXT_FIELDS = 3;
export const EXT_COUNT = NEXT + 13 * LINE - 1;
/**
 * Worker w's line: its wake-up word at SEQ0 + w·STRIDE (the id of the job it was last woken
 * for in the low 16 bits, a count of its wake-ups above them, so that every wake-up changes
 * the word), then its busy flag, then EXITING: 1
 * once it has left its serve loop and is releasing its own stack and TLS (the pool must not
 * release them again, nor terminate it: it holds the shared allocator's lock), 2 when done;
 * then REGION, the byte address of its region for task jobs.
 */
export const SEQ0 = NEXT + 13 * LINE;
export const STRIDE = LINE;
export const BUSY = 1;
export const EXITING = 2;
export const REGION = 3;

/** Most chunks a job is cut into (one done flag each). */
export const MAX_CHUNKS = 1024;

/** Control block size in int32 words for `workers` workers. */
export function controlWords(workers: number): number {
  return flagsAt(workers) + MAX_CHUNKS;
}

/** Int32 index of the first chunk flag for `workers` workers. */
export function flagsAt(workers: number): number {
  return SEQ0 + STRIDE * Math.max(workers, 1);
}

/**
 * Opcodes of the jobs that are not one kernel call over rows; a kernel job's is {@link KERNEL0}
 * + its operation's id (ops.ts). TASKS: every worker serves the task ring until it is closed.
 */
export const Op = { NOOP: 0, EXIT: 1, FAIL: 2, TASKS: 3, ATTACH: 4 } as const;
/** The first kernel opcode. */
export const KERNEL0 = 5;

/** The operation of opcode `op`, or undefined for a job that runs no kernel. */
const opOf = (op: number) => OPS[op - KERNEL0];

/** The byte address of the job's call block (the control block lives in wasm memory). */
const callOf = (ctl: Int32Array) => ctl.byteOffset + 4 * CALL;

/**
 * Claims and runs chunks of job `job` until none is left (every participant runs this).
 * With `once`, stops after one chunk (NOOP jobs: one answer per worker). `index`: the worker's
 * (-1 for the calling thread). Returns true if this thread completed the job.
 */
export function work(ctl: Int32Array, k: KernelExports, job: number, once: boolean, index: number, sabs: SabTable, mem: WasmMemoryLike): boolean {
  for (;;) {
    const cur = Atomics.load(ctl, NEXT);
    if (cur >>> 16 !== job) return false;
    if ((cur & 0xffff) >= ctl[N_CHUNKS]!) return false;
    if (Atomics.compareExchange(ctl, NEXT, cur, cur + 1) !== cur) continue;
    // Chunk claimed: until it completes, the job (and so line 0) cannot change.
    const c = cur & 0xffff;
    if (index >= 0) for (let h; (h = Atomics.load(ctl, HOLD)) === index + 1; ) Atomics.wait(ctl, HOLD, h);
    const stream = ctl[STREAM] === 1;
    if (stream) waitReady(ctl, c);
    if (finishChunk(ctl, k, job, c, sabs, mem)) return true;
    if (once) return false;
  }
}

/**
 * Runs claimed chunk `c` of `job`, raises its done flag (streaming), and completes the job if
 * it was the last chunk; returns whether it did.
 */
function finishChunk(ctl: Int32Array, k: KernelExports, job: number, c: number, sabs: SabTable, mem: WasmMemoryLike): boolean {
  runChunk(ctl, k, c, sabs, mem);
  if (ctl[STREAM] === 1) {
    const at = ctl[FLAG0]! + c;
    Atomics.store(ctl, at, job | 0x10000);
    Atomics.notify(ctl, at);
  }
  if (Atomics.add(ctl, COMPLETED, 1) + 1 === ctl[N_CHUNKS]) {
    complete(ctl, k);
    return true;
  }
  return false;
}

/**
 * The calling thread's share of a job, one chunk at a time, so that it can copy results out
 * and yield to the event loop between chunks: claims the next chunk of `job` if there is one
 * whose input is in (streaming) and runs it. Returns whether it ran one.
 */
export function workOne(ctl: Int32Array, k: KernelExports, job: number, sabs: SabTable, mem: WasmMemoryLike): boolean {
  for (;;) {
    const cur = Atomics.load(ctl, NEXT);
    const c = cur & 0xffff;
    if (cur >>> 16 !== job || c >= ctl[N_CHUNKS]! || !chunkReady(ctl, c)) return false;
    if (Atomics.compareExchange(ctl, NEXT, cur, cur + 1) !== cur) continue;
    finishChunk(ctl, k, job, c, sabs, mem);
    return true;
  }
}

/**
 * Streaming job: waits until the caller has copied chunk `c`'s input in. A short poll (the
 * caller copies a chunk in microseconds), then sleeps: the caller notifies READY per chunk.
 */
function waitReady(ctl: Int32Array, c: number): void {
  for (let spins = 2_000; ; spins--) {
    const ready = Atomics.load(ctl, READY);
    if (ready > c) return;
    if (spins <= 0) Atomics.wait(ctl, READY, ready, 1);
  }
}

/** Whether chunk `c` of a streaming job may be claimed now (its input is in). */
function chunkReady(ctl: Int32Array, c: number): boolean {
  return ctl[STREAM] !== 1 || Atomics.load(ctl, READY) > c;
}

/** The caller's SharedArrayBuffers a thread holds, by the pool's id for them. */
export interface SabTable {
  get(id: number): SharedArrayBuffer | undefined;
}

function runChunk(ctl: Int32Array, k: KernelExports, c: number, sabs: SabTable, mem: WasmMemoryLike): void {
  const op = opOf(ctl[OP]!);
  if (!op) return;
  const rows = ctl[ROWS]!;
  const r0 = c * ctl[CHUNK_ROWS]!;
  const r1 = Math.min(rows, r0 + ctl[CHUNK_ROWS]!);
  const ext = ctl[EXT_COUNT]! > 0;
  if (ext) copyExternal(ctl, op, r0, r1, sabs, mem.buffer, false);
  const s = op.chunk(k, callOf(ctl), r0, r1, rows);
  if (s !== 0) Atomics.compareExchange(ctl, STATUS, 0, s);
  else if (ext) copyExternal(ctl, op, r0, r1, sabs, mem.buffer, true);
}

/**
 * Rows `[r0, r1)` of the job's operands in the caller's SharedArrayBuffers (see {@link EXT0}):
 * the inputs' copied into their window regions (whose row 0 the call block addresses), or
 * with `out` the outputs' copied back.
 */
function copyExternal(ctl: Int32Array, op: NonNullable<ReturnType<typeof opOf>>, r0: number, r1: number, sabs: SabTable, mem: ArrayBufferLike, out: boolean): void {
  const f64 = new Float64Array(mem, ctl.byteOffset + 4 * EXT0, MAX_ADDRS * EXT_FIELDS);
  for (let i = 0; i < op.operands.length; i++) {
    const id = f64[i * EXT_FIELDS]!;
    if (id === 0 || op.operands[i]!.out !== out) continue;
    const sab = sabs.get(id);
    if (!sab) throw new Error(`rmsnorm-wasm pool: a thread lacks shared buffer ${id}`);
    const rowBytes = f64[i * EXT_FIELDS + 2]!;
    const at = f64[i * EXT_FIELDS + 1]! + r0 * rowBytes;
    const n = (r1 - r0) * rowBytes;
    const region = new Uint8Array(mem, ctl[CALL + ADDRS_AT / 4 + i]! + r0 * rowBytes, n);
    if (out) new Uint8Array(sab, at, n).set(region);
    else region.set(new Uint8Array(sab, at, n));
  }
}

/** The last chunk is done: the operation completes the job (the backward adds its dweight partials), then signal. */
function complete(ctl: Int32Array, k: KernelExports): void {
  const op = opOf(ctl[OP]!);
  if (op && Atomics.load(ctl, STATUS) === 0) {
    const s = op.complete(k, callOf(ctl), ctl[ROWS]!, ctl[ACCUMULATE] === 1);
    if (s !== 0) Atomics.compareExchange(ctl, STATUS, 0, s);
  }
  Atomics.store(ctl, DONE, 1);
  Atomics.notify(ctl, DONE);
}
