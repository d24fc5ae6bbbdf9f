/**
 * What normalizes a file's rows: the caller's pool, a pool of the file functions' own —
 * started as soon as the input's size is known, so that its workers start while the headers
 * are read — or, for inputs too small to repay starting workers, the calling thread with the
 * sync API on its own memory.
 * @module
 */
import { createPool, loadRmsNorm } from '../../default-instance.js';
import { threadsAvailable } from '../../glue/platform.js';
import type { RmsNormPool } from '../../pool/api.js';
import { isPool, type Pool } from '../../pool/caller/pool.js';
import { defaultBuild, twinOf } from '../../glue/load.js';
import { FORWARD, type ForwardArgs } from '../../call/operations/forward.js';

/** What a file's calls are named by in a kernel's error (none is expected: the arguments were checked). */
const FN = 'normalizeFile';

/**
 * Below this many bytes of input the file functions start no pool (unless `threads` is given)
 * and normalize on the calling thread: starting two workers costs about 50 ms (the one-row
 * file's whole run, see `npm run bench:file`), more than a thread alone takes for 32 MiB.
 */
const POOL_MIN_BYTES = 32 << 20;

/** What the file functions compute with: a pool, or the calling thread dressed as one. */
export type Engine = Pick<RmsNormPool, 'threads' | 'allocF32'> & {
  /** Runs a forward of arrays laid out already (no check again), resolved when done. */
  forward(args: ForwardArgs, signal?: AbortSignal): Promise<void>;
  /** The pool, when the engine is one (its task queue moves rows at positions). */
  readonly pool: RmsNormPool | null;
};

/**
 * The calling thread with the sync API, as an {@link Engine} (threads: 1). On the threads
 * build's shared memory where there is one: a dataset's files in flight allocate their chunks
 * while others read and write theirs, and growing a memory that is not shared would detach the
 * views those reads and writes hold.
 */
async function threadEngine(): Promise<Engine> {
  const rn = await loadRmsNorm((threadsAvailable() && twinOf(defaultBuild())) || defaultBuild());
  return {
    threads: 1,
    pool: null,
    allocF32: (n) => rn.allocF32(n),
    forward: async (args, signal) => {
      signal?.throwIfAborted();
      rn.runChecked(FN, FORWARD.call(args));
    },
  };
}

let callingThread: Promise<Engine> | null = null;
/** The calling thread as an {@link Engine}, made once. */
export const callingThreadEngine = (): Promise<Engine> => (callingThread ??= threadEngine());

/** A pool as an {@link Engine}. */
const poolEngine = (pool: Pool): Engine => ({
  threads: pool.threads,
  pool,
  allocF32: (n) => pool.allocF32(n),
  forward: async (args, signal) => {
    await pool.runArgs(FN, FORWARD, args, signal);
  },
});

/** An engine being started, and its end (an own pool is destroyed). */
interface EngineStart {
  get(): Promise<Engine>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts what normalizes `bytes` of input (null: unknown, a stream): `pool` if given; else an
 * own pool of `threads` (all cores by default) unless the input is known to be smaller than
 * {@link POOL_MIN_BYTES} and `threads` was not given.
 */
export function startEngine(o: { pool?: RmsNormPool; threads?: number }, bytes: number | null): EngineStart {
  if (o.pool) {
    if (!isPool(o.pool)) throw new TypeError('normalizeFile: options.pool must be a pool createPool made');
    const e = poolEngine(o.pool);
    return { get: async () => e, [Symbol.asyncDispose]: async () => {} };
  }
  if (o.threads === undefined && bytes !== null && bytes < POOL_MIN_BYTES) {
    const e = threadEngine();
    e.catch(() => {});
    return { get: () => e, [Symbol.asyncDispose]: async () => {} };
  }
  const own = createPool(o.threads === undefined ? undefined : { threads: o.threads });
  own.catch(() => {});
  return {
    get: async () => poolEngine((await own) as Pool),
    [Symbol.asyncDispose]: async () => {
      const p = await own.catch(() => null);
      await p?.destroy();
    },
  };
}
