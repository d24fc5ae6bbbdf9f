/**
 * Starting a pool: which builds it runs, how many threads.
 * @module
 */
import { coreCount, simdSupported, threadsAvailable } from '../platform.js';
import type { RmsNorm } from '../rmsnorm.js';
import { checkCreateOptions, type PoolOptions, type RmsNormPool } from './api.js';
import { Pool } from './pool.js';

/**
 * Starts a pool of workers that share the `simd-threads` module and its memory with this
 * thread. Views from the pool's `allocF32` (or from `loadRmsNorm('simd-threads')`'s) are used
 * in place; any other Float32Array streams through the pool's 32 MiB window (place.ts).
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
  const t = checkCreateOptions(options);
  const plain = await load(simdSupported() ? 'simd' : 'scalar');
  if (!threadsAvailable()) return new Pool(plain, plain, 0, 1);
  const cores = await coreCount();
  const pool = new Pool(await load('simd-threads'), plain, t ?? cores, cores);
  await pool.start();
  return pool;
}
