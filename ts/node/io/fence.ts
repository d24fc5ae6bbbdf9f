/**
 * What must still hold for a run to commit — rename an output into place, append a line to a
 * manifest, remove an output of an earlier run — checked synchronously right before each commit,
 * which then follows without waiting for anything: a run that was stopped, whose lock was taken
 * over, or whose supervisor is gone commits nothing more. Every committing step takes one (the
 * file functions pass theirs down to each output), so none can be written without it.
 * @module
 */
import { supervisorAlive } from './supervised.js';
import { NormalizeError } from './errors.js';

/** See the module doc. */
export interface Fence {
  /** Throws the reason this run may no longer commit, when it may not. */
  check(): void;
}

/** A run's fence: the caller's abort signal, and the supervisor (when there is one) still there. */
export function signalFence(signal: AbortSignal | undefined): Fence {
  return {
    check() {
      signal?.throwIfAborted();
      if (!supervisorAlive()) throw new NormalizeError('the supervising process is gone: this run stops');
    },
  };
}

/** Both fences: `a`, then `b`. */
export const bothFences = (a: Fence, b: Fence): Fence => ({
  check() {
    a.check();
    b.check();
  },
});
