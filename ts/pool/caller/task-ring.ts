/**
 * The calling thread's side of a task job: a ring of task records in the shared memory that the
 * workers drain while the job runs, each record run by the task kind its first field names
 * (worker/tasks.ts; the file functions register theirs). Callers in flight share one ring: each
 * submits its records and awaits them; the job starts with the first user and ends (the workers
 * go back to waiting for jobs) when the last one releases it. The pool knows nothing of what a
 * record holds.
 * @module
 */
import type { Heap } from '../../glue/memory.js';
import * as C from '../control.js';
import { REGION_BYTES, TASK_SLOTS } from '../tuning.js';

const RECORD = C.TASK_RECORD;
const State = C.TaskState;
/** The ring's size in floats: the records (float64), then a state word per slot. */
const TABLE_FLOATS = TASK_SLOTS * RECORD * 2 + TASK_SLOTS;

/** How a ring starts and runs its job on the pool. */
interface TaskJobRunner {
  /** Queues the task job; resolves when it has ended, rejects if it failed (a worker died). */
  run(): Promise<void>;
  /** Workers of the pool (each gets a region). */
  readonly threads: number;
}

/** See the module doc. */
export class TaskRing {
  /** Bytes of each worker's region: the most one record may use. */
  readonly regionBytes = REGION_BYTES;
  /** Records finished since the queue was made (the pool's test hooks report it). */
  finished = 0;
  private users = 0;
  /** Whether a job is serving the ring; the end of the current (or closing) job. */
  private running = false;
  private ended: Promise<void> = Promise.resolve();
  /** Counts jobs, so that the end of an old one cannot fail a newer one's records. */
  private generation = 0;
  private tail = 0;
  private readonly pending = new Map<number, (r: Float64Array) => void>();
  private readonly failures = new Map<number, (e: unknown) => void>();
  /** Waiters for a free slot. */
  private readonly room: (() => void)[] = [];
  private seenDone = 0;
  private reaping = false;
  private failed: unknown = null;
  private readonly table: number;
  private readonly regions: number[] = [];

  constructor(
    private readonly heap: Heap,
    private readonly ctl: Int32Array,
    private readonly runner: TaskJobRunner,
  ) {
    this.table = heap.alloc(TABLE_FLOATS);
    for (let i = 0; i < runner.threads; i++) this.regions.push(heap.alloc(REGION_BYTES / 4));
  }

  /** Takes a share of the job, starting it (after the last one has ended) if it is not running. */
  async acquire(): Promise<void> {
    this.users++;
    while (!this.running) {
      const closing = this.ended;
      await closing;
      if (this.running || this.ended !== closing) continue;
      this.start();
    }
  }

  private start(): void {
    const ctl = this.ctl;
    const W = C.TASK_WORDS;
    this.tail = 0;
    this.seenDone = 0;
    this.failed = null;
    this.state().fill(State.FREE);
    Atomics.store(ctl, W.head, 0);
    Atomics.store(ctl, W.tail, 0);
    Atomics.store(ctl, W.done, 0);
    Atomics.store(ctl, W.closed, 0);
    ctl[W.table] = this.table;
    ctl[W.slots] = TASK_SLOTS;
    ctl[W.regionBytes] = REGION_BYTES;
    this.regions.forEach((at, i) => (ctl[C.SEQ0 + C.STRIDE * i + C.REGION] = at));
    this.running = true;
    const gen = ++this.generation;
    this.ended = this.runner.run().then(
      () => this.fail(gen, new Error('rmsnorm-wasm pool: the task job ended with records in flight')),
      (e: unknown) => this.fail(gen, e),
    );
  }

  /** Gives a share back; the last one closes the ring, and the job ends once the workers see it. */
  async release(): Promise<void> {
    if (--this.users > 0) return;
    this.running = false;
    Atomics.store(this.ctl, C.TASK_WORDS.closed, 1);
    Atomics.notify(this.ctl, C.TASK_WORDS.tail);
    await this.ended;
  }

  /**
   * Queues a record once the ring has room (resolves then): `fill` writes its fields (all
   * others 0) into `f64` from index `at`, the first being its task kind. The record as the
   * worker left it comes with the returned `result` (a copy of its {@link C.TASK_RECORD} floats).
   */
  async submit(fill: (f64: Float64Array, at: number) => void): Promise<{ result: Promise<Float64Array> }> {
    if (this.failed) throw this.failed;
    while (this.state()[this.tail % TASK_SLOTS] !== State.FREE) {
      await new Promise<void>((r) => this.room.push(r));
      if (this.failed) throw this.failed;
    }
    const index = this.tail++;
    const slot = index % TASK_SLOTS;
    const f64 = new Float64Array(this.heap.wasm.memory.buffer, this.table, TASK_SLOTS * RECORD);
    const r = slot * RECORD;
    f64.fill(0, r, r + RECORD);
    fill(f64, r);
    this.state()[slot] = State.QUEUED;
    const result = new Promise<Float64Array>((resolve, reject) => {
      this.pending.set(slot, resolve);
      this.failures.set(slot, reject);
    });
    result.catch(() => {});
    Atomics.store(this.ctl, C.TASK_WORDS.tail, this.tail);
    Atomics.notify(this.ctl, C.TASK_WORDS.tail);
    void this.reap();
    return { result };
  }

  private state(): Int32Array {
    return new Int32Array(this.heap.wasm.memory.buffer, this.table + TASK_SLOTS * RECORD * 8, TASK_SLOTS);
  }

  /** Settles the records the workers have finished, as they finish, while any is pending. */
  private async reap(): Promise<void> {
    if (this.reaping) return;
    this.reaping = true;
    try {
      while (this.pending.size > 0 && !this.failed) {
        const done = Atomics.load(this.ctl, C.TASK_WORDS.done);
        if (done === this.seenDone) {
          const w = Atomics.waitAsync(this.ctl, C.TASK_WORDS.done, done);
          if (w.async) await w.value;
          continue;
        }
        this.seenDone = done;
        const state = this.state();
        const f64 = new Float64Array(this.heap.wasm.memory.buffer, this.table, TASK_SLOTS * RECORD);
        for (const [slot, resolve] of this.pending) {
          if (Atomics.load(state, slot) !== State.DONE) continue;
          const result = f64.slice(slot * RECORD, (slot + 1) * RECORD);
          this.pending.delete(slot);
          this.failures.delete(slot);
          Atomics.store(state, slot, State.FREE);
          this.finished++;
          resolve(result);
        }
        for (const wake of this.room.splice(0)) wake();
      }
    } finally {
      this.reaping = false;
    }
  }

  /** Job `gen` failed or ended: if it is the current one, every pending record and later submission rejects. */
  private fail(gen: number, e: unknown): void {
    if (gen !== this.generation || (this.pending.size === 0 && !this.running)) return;
    this.failed ??= e;
    this.running = false;
    Atomics.store(this.ctl, C.TASK_WORDS.closed, 1);
    Atomics.notify(this.ctl, C.TASK_WORDS.tail);
    for (const reject of this.failures.values()) reject(e);
    this.pending.clear();
    this.failures.clear();
    for (const wake of this.room.splice(0)) wake();
  }

  /** Closes the ring at once (the pool is being destroyed): the workers leave it. */
  close(): void {
    Atomics.store(this.ctl, C.TASK_WORDS.closed, 1);
    Atomics.notify(this.ctl, C.TASK_WORDS.tail);
  }

  /** Frees the ring and the regions (the pool is being destroyed, its workers stopped). */
  free(): void {
    this.heap.free(this.table, TABLE_FLOATS);
    for (const at of this.regions) this.heap.free(at, REGION_BYTES / 4);
    this.regions.length = 0;
  }
}

const rings = new WeakMap<object, TaskRing>();

/** Called by a pool with workers, once started. */
export function registerTaskRing(pool: object, q: TaskRing): void {
  rings.set(pool, q);
}

/** The task ring of `pool` (a pool from createPool with workers), or null: its tasks then run on the calling thread's side. */
export function taskRingOf(pool: object): TaskRing | null {
  return rings.get(pool) ?? null;
}
