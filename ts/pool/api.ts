/**
 * The pool's public types: what createPool takes and what it returns.
 * @module
 */
import { BUILDS, isBuild, isShared } from '../glue/load.js';
import type { Build } from '../types.js';
import type { F32Buffer, U16Buffer } from '../glue/memory.js';
import { describe } from '../call/check/arrays.js';
import { options as checkOptions } from '../call/check/options.js';
import type { PoolOperations } from '../generated/operations.js';

/** Options of {@link createPool}. */
export interface PoolOptions {
  /**
   * Threads that compute a job. Default: the number of logical cores
   * (`os.availableParallelism()` / `navigator.hardwareConcurrency`). Integer 1–256. Where the
   * calling thread may block (Node), it is one of them.
   */
  threads?: number;
  /**
   * The build the workers run: `'simd-relaxed-threads'` or `'simd-threads'` (same bits).
   * Default: `'simd-relaxed-threads'` where the engine has relaxed SIMD, else `'simd-threads'`.
   * In 'single' mode the calls run its plain twin (`'simd-relaxed'` / `'simd'`).
   */
  build?: 'simd-threads' | 'simd-relaxed-threads';
}


/**
 * A pool of workers sharing one wasm memory; see {@link createPool}. Its operations' methods
 * (rmsNorm, rmsNormBackward: {@link PoolOperations}) are as the sync API's, resolved when done.
 */
export interface RmsNormPool extends PoolOperations {
  /** Workers running: `threads` in 'threads' mode, 0 in 'single' mode. */
  readonly threads: number;
  /** 'threads': workers on shared memory. 'single': no SharedArrayBuffer here, so every call
   * runs on the calling thread with the plain twin of the threads build (same API and results). */
  readonly mode: 'threads' | 'single';
  /** The build the pool's calls run: a threads build in 'threads' mode, its plain twin in 'single' mode. */
  readonly build: Build;
  /** As the sync API's {@link allocU16}, in the pool's shared memory (half-precision data used in place). */
  allocU16(length: number): U16Buffer;
  /**
   * Allocates `length` floats in the pool's shared memory: views of it are used in place by
   * the pool's calls (no copies), and accepted by the sync API too (which copies them, as any
   * array outside its own memory). Views of `allocF32()`'s memory (the sync API's) are likewise
   * accepted by the pool and copied. Re-make views after anything that may grow memory;
   * `free()` when done (before `destroy()`; the memory outlives the pool).
   * @throws RangeError when memory cannot grow that far; Error after destroy().
   */
  allocF32(length: number): F32Buffer;
  /**
   * Dispatches an empty job to every worker and resolves when all have answered: the pool's
   * fixed cost per call, for benchmarks.
   */
  ping(): Promise<void>;
  /**
   * Rejects queued and running calls at once, stops the workers and gives back the memory
   * they and the pool held; later calls reject at once. Resolves when the workers are gone
   * (within about 50 ms plus a termination).
   */
  destroy(): Promise<void>;
  /** destroy(), for `await using pool = await createPool()` (TypeScript ≥ 5.2). */
  [Symbol.asyncDispose](): Promise<void>;
}


/** Options the pool's methods take beyond the sync API's. */
export const POOL_KEYS: readonly string[] = ['signal'];
const CREATE_KEYS: readonly string[] = ['threads', 'build'];

/** The AbortSignal of a pool call's options, checked; a TypeError naming `fn` otherwise. */
export function checkSignal(fn: string, o: unknown): AbortSignal | undefined {
  const s = (o as { signal?: unknown } | undefined)?.signal;
  if (s === undefined) return undefined;
  if (typeof s !== 'object' || s === null || typeof (s as AbortSignal).addEventListener !== 'function' || typeof (s as AbortSignal).aborted !== 'boolean') {
    throw new TypeError(`${fn}: options.signal must be an AbortSignal, got ${describe(s)}`);
  }
  return s as AbortSignal;
}

/** The most workers a pool may have. */
export const MAX_THREADS = 256;

/**
 * createPool's options, checked (unknown keys and wrong types are TypeErrors): the thread
 * count and the threads build, each undefined when not given.
 */
export function checkCreateOptions(options: unknown): { threads?: number; build?: Build } {
  const o = checkOptions('createPool', options, CREATE_KEYS);
  const t = o.threads;
  const b = o.build;
  if (t !== undefined) {
    if (typeof t !== 'number') throw new TypeError(`createPool: options.threads must be a number, got ${describe(t)}`);
    if (!Number.isInteger(t) || t < 1 || t > MAX_THREADS) {
      throw new RangeError(`createPool: options.threads must be an integer from 1 to ${MAX_THREADS}, got ${t}`);
    }
  }
  if (b !== undefined) {
    if (typeof b !== 'string') throw new TypeError(`createPool: options.build must be a string, got ${describe(b)}`);
    if (!isBuild(b) || !isShared(b)) {
      throw new RangeError(`createPool: options.build must be ${THREADS_BUILDS.map((n) => `'${n}'`).join(' or ')}, got '${b}'`);
    }
  }
  return { threads: t as number | undefined, build: b as Build | undefined };
}
const THREADS_BUILDS = BUILDS.filter(isShared);
