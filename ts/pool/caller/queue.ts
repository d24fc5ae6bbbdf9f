/**
 * The pool's queue of calls: first in, first out, with AbortSignals. One abort listener per
 * signal however many queued calls share it (so one signal over many calls raises no
 * MaxListenersExceededWarning), removed as soon as none of its calls is queued.
 * @module
 */

/** How a queued call settles. */
export interface Settle<T> {
  resolve(v: T): void;
  reject(e: unknown): void;
}

/** What the queue needs of a call. */
interface Queued {
  settle: Settle<never>;
  signal?: AbortSignal;
}

/** The reason an aborted call rejects with: the signal's, or a DOMException named AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** A FIFO of calls; see the module doc. */
export class CallQueue<J extends Queued> {
  private readonly items: J[] = [];
  private readonly bySignal = new Map<AbortSignal, { listener: () => void; jobs: Set<J> }>();

  get length(): number {
    return this.items.length;
  }

  /** Queues `job`; if its signal aborts while it is queued, it is removed and rejected. */
  push(job: J): void {
    this.items.push(job);
    const s = job.signal;
    if (!s) return;
    let entry = this.bySignal.get(s);
    if (!entry) {
      const jobs = new Set<J>();
      const listener = () => {
        this.bySignal.delete(s);
        for (const j of jobs) {
          const at = this.items.indexOf(j);
          if (at >= 0) this.items.splice(at, 1);
          j.settle.reject(abortReason(s));
        }
      };
      entry = { listener, jobs };
      this.bySignal.set(s, entry);
      s.addEventListener('abort', listener, { once: true });
    }
    entry.jobs.add(job);
  }

  /** The next call, no longer abortable (it is about to run), or undefined. */
  shift(): J | undefined {
    const job = this.items.shift();
    if (job) this.forget(job);
    return job;
  }

  /** Removes every queued call (destroy), detaching their listeners. */
  clear(): J[] {
    const all = this.items.splice(0);
    for (const j of all) this.forget(j);
    return all;
  }

  private forget(job: J): void {
    const s = job.signal;
    if (!s) return;
    const entry = this.bySignal.get(s);
    if (!entry) return;
    entry.jobs.delete(job);
    if (entry.jobs.size === 0) {
      s.removeEventListener('abort', entry.listener);
      this.bySignal.delete(s);
    }
  }
}
