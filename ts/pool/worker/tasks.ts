/**
 * Task jobs, the worker's side: while one runs, the calling thread fills a ring of records in
 * the shared memory (caller/task-ring.ts) and every worker claims the next record and runs it
 * with the task kind its first field names, in the worker's own region of the memory. The pool
 * knows no kind itself: whoever starts the worker registers its kinds first ({@link
 * registerTaskKind}; the Node entry registers the file functions'), so that this module has no
 * Node import and the browser's worker bundles without one.
 *
 * The workers learn of new records from the ring's tail word, the caller of finished ones from
 * its done word (control.ts TASK_WORDS).
 * @module
 */
import type { KernelExports } from '../../glue/load.js';
import { TASK_RECORD, TASK_WORDS, TaskState } from '../control.js';

/** What a task kind runs a record with. */
export interface TaskContext {
  /** The ring's records (float64) over the shared memory; the record at index `at`. */
  readonly f64: Float64Array;
  readonly at: number;
  readonly memory: { readonly buffer: ArrayBufferLike };
  readonly k: KernelExports;
  /** This worker's region: byte address and size. */
  readonly region: number;
  readonly regionBytes: number;
}

/** Runs one record: reads its fields, does its work, writes its results into the record. */
type TaskRunner = (t: TaskContext) => void;

const KINDS = new Map<number, TaskRunner>();

/** Registers what runs records of kind `kind` (a positive integer) in this worker. */
export function registerTaskKind(kind: number, run: TaskRunner): void {
  KINDS.set(kind, run);
}

/**
 * A worker's part of a task job: claims and runs records until the ring is closed and empty.
 * `region`: this worker's region's byte address. Polls briefly for new records, then sleeps on
 * the tail word. A record of a kind not registered here is a failure of the worker (its job
 * then fails, as a worker that dies does).
 */
export function serveTasks(ctl: Int32Array, mem: { buffer: ArrayBufferLike }, k: KernelExports, region: number, index: number): void {
  const w = TASK_WORDS;
  const slots = ctl[w.slots]!;
  const table = ctl[w.table]!;
  const regionBytes = ctl[w.regionBytes]!;
  for (;;) {
    const h = Atomics.load(ctl, w.head);
    const t = Atomics.load(ctl, w.tail);
    if (h < t) {
      if (Atomics.compareExchange(ctl, w.head, h, h + 1) !== h) continue;
      for (let held; (held = Atomics.load(ctl, w.hold)) === index + 1; ) Atomics.wait(ctl, w.hold, held);
      const slot = h % slots;
      const buf = mem.buffer;
      const f64 = new Float64Array(buf, table, slots * TASK_RECORD);
      const state = new Int32Array(buf, table + 8 * slots * TASK_RECORD, slots);
      const at = slot * TASK_RECORD;
      const run = KINDS.get(f64[at]!);
      if (!run) throw new Error(`rmsnorm-wasm worker ${index}: a task record of kind ${f64[at]}, which nothing registered here`);
      run({ f64, at, memory: mem, k, region, regionBytes });
      Atomics.store(state, slot, TaskState.DONE);
      Atomics.add(ctl, w.done, 1);
      Atomics.notify(ctl, w.done);
      continue;
    }
    if (Atomics.load(ctl, w.closed) === 1) return;
    let spins = 2000;
    while (spins-- > 0 && Atomics.load(ctl, w.tail) === t && Atomics.load(ctl, w.closed) === 0);
    if (Atomics.load(ctl, w.tail) === t && Atomics.load(ctl, w.closed) === 0) Atomics.wait(ctl, w.tail, t, 50);
  }
}
