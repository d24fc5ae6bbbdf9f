/**
 * The pool's workers over their lifetime: start and the ready handshake, death and
 * replacement, and stopping — with the stack and TLS block each worker's instance takes from
 * the shared memory released every time, by the worker itself when it leaves cleanly, else by
 * this thread once the worker has stopped.
 * @module
 */
import type { LoadedWasm } from '../../glue/load.js';
import * as C from '../control.js';
import type { WorkerMessage } from '../messages.js';
import type { ThreadExports } from '../worker/serve.js';
import { spawnWorker, type WorkerHandle } from './spawn.js';
import { EXIT_GRACE_MS, HELD_BUFFERS, START_ATTEMPTS } from '../tuning.js';

interface Slot {
  handle: WorkerHandle | null;
  ready: Promise<void>;
  /** Where the worker's stack and TLS block are (from its ready message), 0 before. */
  tls: number;
  stack: number;
  /** The ids of the caller's SharedArrayBuffers sent to it, oldest first (at most HELD_BUFFERS). */
  held: number[];
  /** Whether it reads those messages without its event loop (ReadyMessage.syncMessages). */
  syncMessages: boolean;
}

/** What the pool hears from its workers. */
export interface WorkerEvents {
  /** Worker `i` died (threw, exited, was killed) while the pool was running. */
  died(i: number, reason: string): void;
  /** A worker completed a job and said so by message (engines without Atomics.waitAsync). */
  doneByMessage(): void;
}

const destroyedError = () => new Error('rmsnorm-wasm pool: the pool was destroyed');

/** The workers of one pool; see the module doc. */
export class Workers {
  private readonly slots: Slot[] = [];
  private stopped = false;

  constructor(
    private readonly wasm: LoadedWasm,
    private readonly ctl: Int32Array,
    private readonly ctlAddr: number,
    count: number,
    private readonly events: WorkerEvents,
  ) {
    for (let i = 0; i < count; i++) this.slots.push({ handle: null, ready: Promise.resolve(), tls: 0, stack: 0, held: [], syncMessages: false });
  }

  /** Starts every worker; resolves when all have said ready. */
  start(): Promise<void> {
    return Promise.all(this.slots.map((_, i) => this.spawn(i))).then(() => {});
  }

  /** Resolves when every worker (including replacements of dead ones) is ready. */
  ready(): Promise<void> {
    return Promise.all(this.slots.map((s) => s.ready)).then(() => {});
  }

  /** Worker i's busy flag: whether it is inside a job. */
  busy(i: number): boolean {
    return Atomics.load(this.ctl, C.SEQ0 + C.STRIDE * i + C.BUSY) !== 0;
  }

  /**
   * Sends every worker the buffers of `buffers` (id → buffer) it does not hold, letting go of
   * its oldest beyond {@link HELD_BUFFERS}. Returns true when a worker must read them through
   * its event loop: the caller then runs an ATTACH job, and every worker is told to resume.
   */
  attach(buffers: ReadonlyMap<number, SharedArrayBuffer>): boolean {
    let parked = false;
    for (const s of this.slots) {
      for (const [id, buffer] of buffers) {
        if (s.held.includes(id)) continue;
        s.held.push(id);
        const drop = s.held.length > HELD_BUFFERS ? s.held.splice(0, s.held.length - HELD_BUFFERS) : [];
        s.handle?.post({ type: 'rmsnorm-wasm:attach', id, buffer, drop });
        if (!s.syncMessages) parked = true;
      }
    }
    if (parked) for (const s of this.slots) s.handle?.post({ type: 'rmsnorm-wasm:resume' });
    return parked;
  }

  /** Wakes worker i for job `job` (its wake-up word changes and names the job; it then reads the job). */
  wake(i: number, job: number): void {
    const at = C.SEQ0 + C.STRIDE * i;
    const count = ((Atomics.load(this.ctl, at) >>> 16) + 1) & 0x7fff;
    Atomics.store(this.ctl, at, (count << 16) | (job & 0xffff));
    Atomics.notify(this.ctl, at, 1);
  }

  /** Node: let an idle pool's workers not keep the process alive. */
  keepAlive(on: boolean): void {
    for (const s of this.slots) s.handle?.keepAlive(on);
  }

  /** Terminates worker i as a crash would (test hook). */
  kill(i: number): void {
    const h = this.slots[i]?.handle;
    if (!h) throw new RangeError(`no worker ${i}`);
    h.kill();
  }

  /** Starts worker `i`; `attempt` counts the starts of this slot that died before saying ready. */
  private spawn(i: number, attempt = 1): Promise<void> {
    const slot = this.slots[i]!;
    slot.tls = 0;
    slot.stack = 0;
    slot.held = [];
    Atomics.store(this.ctl, C.SEQ0 + C.STRIDE * i + C.EXITING, 0);
    slot.ready = new Promise<void>((resolve, reject) => {
      let ready = false;
      spawnWorker({
        message: (m: WorkerMessage) => {
          if (m.type === 'rmsnorm-wasm:ready') {
            ready = true;
            slot.tls = m.tls;
            slot.stack = m.stack;
            slot.syncMessages = m.syncMessages;
            resolve();
          } else if (m.type === 'rmsnorm-wasm:failed') {
            reject(new Error(`rmsnorm-wasm pool: worker ${i} failed to start: ${m.message}`));
          } else if (m.type === 'rmsnorm-wasm:done') this.events.doneByMessage();
        },
        death: (reason) => {
          if (!ready && attempt < START_ATTEMPTS && !this.stopped) {
            // Died before it ran any of our code (see START_ATTEMPTS): start it again.
            this.bury(i);
            this.spawn(i, attempt + 1).then(resolve, reject);
            return;
          }
          reject(new Error(`rmsnorm-wasm pool: worker ${i} died while starting: ${reason}`));
          this.onDeath(i, reason);
        },
      }).then((h) => {
        if (this.stopped) {
          void h.terminate();
          reject(destroyedError());
          return;
        }
        slot.handle = h;
        h.post({
          type: 'rmsnorm-wasm:init',
          module: this.wasm.module,
          memory: this.wasm.memory,
          ctl: this.ctlAddr,
          words: this.ctl.length,
          index: i,
        });
      }, reject);
    });
    return slot.ready;
  }

  private onDeath(i: number, reason: string): void {
    if (!this.slots[i] || this.stopped) return;
    this.bury(i);
    this.events.died(i, reason);
    // Replace it; the next job waits for the replacement.
    this.spawn(i).catch(() => {});
  }

  /** What a dead worker leaves: its handle, its stack and TLS block, its busy flag. */
  private bury(i: number): void {
    const slot = this.slots[i]!;
    const h = slot.handle;
    slot.handle = null;
    // A dead worker runs no more wasm: its stack and TLS can go back to the allocator (in a
    // browser only once terminate() has been asked, which an erroring worker still needs).
    if (h && !h.confirmsStop) void h.terminate();
    this.release(i);
    // Its line may say busy forever: the replacement starts from a clean one.
    Atomics.store(this.ctl, C.SEQ0 + C.STRIDE * i + C.BUSY, 0);
  }

  /** Releases worker i's stack and TLS block unless it released them itself (or never had any). */
  private release(i: number): void {
    const slot = this.slots[i]!;
    if (slot.tls === 0 || Atomics.load(this.ctl, C.SEQ0 + C.STRIDE * i + C.EXITING) !== 0) return;
    (this.wasm.exports as unknown as ThreadExports).__wbindgen_thread_destroy(slot.tls, slot.stack);
    slot.tls = 0;
  }

  /**
   * Stops every worker: asks them to exit (they release their own memory), waits up to
   * EXIT_GRACE_MS, terminates the rest and releases what they held once they have stopped.
   * Resolves true when no worker can touch the shared memory any more (always in Node), so the
   * control block and scratch may be freed; false in a browser if a worker did not leave in time.
   */
  async stop(): Promise<boolean> {
    if (this.stopped) return true;
    this.stopped = true;
    Atomics.store(this.ctl, C.OP, C.Op.EXIT);
    for (let i = 0; i < this.slots.length; i++) this.wake(i, 0);
    const state = (i: number) => Atomics.load(this.ctl, C.SEQ0 + C.STRIDE * i + C.EXITING);
    const exited = (i: number) => state(i) === 2;
    // Workers still in a chunk after the grace period are terminated; one that has started
    // releasing its memory (state 1) holds the allocator's lock and is always waited for.
    const deadline = Date.now() + EXIT_GRACE_MS;
    const waiting = (i: number) => !exited(i) && (state(i) === 1 || Date.now() < deadline);
    for (let t0 = Date.now(); this.slots.some((s, i) => s.handle && waiting(i)) && Date.now() - t0 < 10_000; ) {
      await new Promise((r) => setTimeout(r, 1));
    }
    let allStopped = true;
    await Promise.all(
      this.slots.map(async (s, i) => {
        const h = s.handle;
        s.handle = null;
        if (!h) return;
        const left = exited(i);
        await h.terminate();
        if (h.confirmsStop) this.release(i);
        else if (!left) allStopped = false; // may still be running: leave its memory alone
      }),
    );
    return allStopped;
  }
}
