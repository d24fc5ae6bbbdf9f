/**
 * The calling thread's side of a task job (tasks.ts): a ring of task records in the shared
 * memory that the workers drain while the job runs. Files in flight share one ring: each
 * submits its records and awaits their outcomes; the job starts with the first user and ends
 * (the workers go back to waiting for jobs) when the last one releases it.
 * @module
 */
import type { Heap } from '../../glue/memory.js';
import * as C from '../../pool/control.js';
import { RECORD, State, T } from './records.js';
import { REGION_BYTES, TASK_SLOTS } from '../../pool/tuning.js';

/** The ring's size in floats: the records (float64), then a state word per slot. */
const TABLE_FLOATS = TASK_SLOTS * RECORD * 2 + TASK_SLOTS;

/** What a finished record reports (tasks.ts's result fields). */
export interface TaskResult {
  /** 0 done; a kernel status; or an Outcome of tasks.ts. */
  outcome: number;
  errno: number;
  crc: number;
}

/** A record's fields to set (tasks.ts's `T`), the results left out. */
type TaskFields = { [K in Exclude<keyof typeof T, 'crc' | 'outcome' | 'errno'>]?: number };

/** How a queue starts and runs its job on the pool; see Pool.tasks. */
interface TaskJobRunner {
  /** Queues the task job; resolves when it has ended, rejects if it failed (a worker died). */
  run(): Promise<void>;
  /** Workers of the pool (each gets a region). */
  readonly threads: number;
}

/** See the module doc. */
export class TaskQueue {
  /** Bytes of each worker's region: the most a norm record's rows may take (tasks.ts's regionBytesFor). */
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
  private readonly pending = new Map<number, (r: TaskResult) => void>();
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
   * Queues a record once the ring has room (resolves then); its outcome comes with the
   * returned `result` once a worker has run it.
   */
  async submit(fields: TaskFields): Promise<{ result: Promise<TaskResult> }> {
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
    f64[r + T.fdRstd] = -1;
    f64[r + T.fdScales] = -1;
    for (const k in fields) f64[r + T[k as keyof TaskFields]] = fields[k as keyof TaskFields]!;
    this.state()[slot] = State.QUEUED;
    const result = new Promise<TaskResult>((resolve, reject) => {
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
          const r = slot * RECORD;
          const result = { outcome: f64[r + T.outcome]!, errno: f64[r + T.errno]!, crc: f64[r + T.crc]! };
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

const queues = new WeakMap<object, TaskQueue>();

/** Called by a pool with workers, once started. */
export function registerTaskQueue(pool: object, q: TaskQueue): void {
  queues.set(pool, q);
}

/** The task queue of `pool` (a pool from createPool with workers), or null: its calls then run on the calling thread's side. */
export function taskQueueOf(pool: object): TaskQueue | null {
  return queues.get(pool) ?? null;
}
