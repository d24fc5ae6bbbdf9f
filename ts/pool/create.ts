/**
 * Starting a pool: which builds it runs, how many threads.
 * @module
 */
import { defaultBuild, missingFor, twinOf } from '../glue/load.js';
import type { Build } from '../types.js';
import { coreCount, threadsAvailable } from '../glue/platform.js';
import type { RmsNorm } from '../rmsnorm.js';
import { checkCreateOptions, type PoolOptions, type RmsNormPool } from './api.js';
import { Pool } from './caller/pool.js';

/**
 * Starts a pool of workers that share a threads build (`simd-relaxed-threads` or
 * `simd-threads`) and its memory with this thread. Views from the pool's `allocF32` (or from
 * `loadRmsNorm` of that build) are used in place; any other Float32Array streams through the
 * pool's 32 MiB window (call/placement/placer.ts).
 *
 * Where SharedArrayBuffer is unavailable (a page without COOP/COEP headers) and no build is
 * asked for, the pool is created in `mode: 'single'`: no workers, calls run on the calling
 * thread with the threads build's plain twin, same API and results. A build asked for that
 * cannot run here is a RangeError saying what the engine lacks, as for `loadRmsNorm`.
 *
 * @param options `threads`: threads per job (default: logical core count); `build`: the
 *   threads build (default: the twin of the sync API's default build).
 */
export async function createPool(
  options: PoolOptions | undefined,
  load: (build: Build) => Promise<RmsNorm>,
): Promise<RmsNormPool> {
  const { threads: t, build } = checkCreateOptions(options);
  // A build asked for runs, or the call fails, as loadRmsNorm does; without one, an engine
  // without shared memory gets 'single' mode.
  const missing = build ? missingFor(build) : null;
  if (missing) throw new RangeError(`createPool: options.build '${build}' needs ${missing}, which this engine lacks`);
  // `plain` runs the calls on plain arrays that the pool does inline: non-shared memory
  // copies them faster (load.ts, defaultBuild).
  const plainBuild = build ? twinOf(build)! : defaultBuild();
  const plain = await load(plainBuild);
  if (!threadsAvailable()) return new Pool(plain, plain, 0, 1);
  const cores = await coreCount();
  const pool = new Pool(await load(build ?? twinOf(plainBuild) ?? 'simd-threads'), plain, t ?? cores, cores);
  await pool.start();
  return pool;
}
