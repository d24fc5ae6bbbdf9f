/**
 * The package's top-level functions: the instance {@link init} loaded (one per build and
 * realm, {@link loadRmsNorm}) and the calls made on it (the operations' own are generated:
 * generated/functions.ts). index.ts re-exports them.
 * @module
 */
import { BUILDS, defaultBuild, isBuild, loadWasm, missingFor } from './glue/load.js';
import type { Build } from './types.js';
import type { F32Buffer, U16Buffer } from './glue/memory.js';
import type { RmsNormLayer } from './layer.js';
import { RmsNorm } from './rmsnorm.js';
import type { PoolOptions, RmsNormPool } from './pool/api.js';
import { options as checkOptions } from './call/check/options.js';
import type { ConvertOptions } from './call/check/convert.js';
import type { FloatArray, HalfBits, HalfDtype, RmsNormLayerOptions, QuantDtype } from './types.js';
import { current, ready, setCurrent } from './call/current.js';

const loaded = new Map<Build, Promise<RmsNorm>>();

/**
 * Loads (once) and returns the instance of one build. Each build is instantiated at most once
 * per JavaScript realm; the top-level functions use the one {@link init} chose.
 *
 * @param build `'simd-relaxed'` or `'simd'` (SIMD128, with and without relaxed SIMD; same
 *   bits), `'simd-relaxed-threads'` or `'simd-threads'` (the same on shared memory: Node, or a
 *   cross-origin-isolated page), `'scalar'` (no SIMD128). Default: `'simd-relaxed'` where the
 *   engine has relaxed SIMD, else `'simd'`, else `'scalar'`.
 * @throws RangeError (as a rejected promise) for a name not in that list, or a build this
 *   engine cannot run (the message says what it lacks).
 */
export function loadRmsNorm(build: Build = defaultBuild()): Promise<RmsNorm> {
  if (!isBuild(build)) {
    return Promise.reject(new RangeError(`loadRmsNorm: build must be ${BUILDS.map((b) => `'${b}'`).join(', ')}; got ${String(build)}`));
  }
  const missing = missingFor(build);
  if (missing) {
    const runs = BUILDS.filter((b) => !missingFor(b)).map((b) => `'${b}'`).join(', ');
    return Promise.reject(new RangeError(`loadRmsNorm: build '${build}' needs ${missing}, which this engine lacks; it runs ${runs}`));
  }
  let p = loaded.get(build);
  if (!p) {
    p = loadWasm(build).then((w) => new RmsNorm(w));
    p.catch(() => loaded.delete(build));
    loaded.set(build, p);
  }
  return p;
}

/**
 * Loads and instantiates the wasm module; the other functions throw until it has resolved.
 * Calling it again is cheap. `options.build` picks a build (see {@link loadRmsNorm}; default:
 * `simd-relaxed` where the engine has relaxed SIMD, else `simd` wherever SIMD128 runs, else
 * `scalar`; a threads build only when asked for — its shared memory is what the pool uses, and
 * copies plain arrays more slowly). The build loaded is `instance().build`.
 */
export async function init(options?: { build?: Build }): Promise<void> {
  const o = checkOptions('init', options, INIT_KEYS);
  setCurrent(await loadRmsNorm(o.build as Build | undefined));
}
const INIT_KEYS: readonly string[] = ['build'];

/** The instance {@link init} loaded, or null before it resolves. */
export function instance(): RmsNorm | null {
  return current();
}

/**
 * RMSNorm bound to a weight and options, for calling again and again: it owns its outputs and
 * reuses them, keeps the weight in wasm memory, and checks no options per call — the fastest
 * way to run the same normalization every layer / token (bench: `wasm-layer`).
 *
 * ```ts
 * const norm = createRmsNorm(weight);            // weight: dim floats (copied), eps 1e-6
 * const y = norm.forward(x);                     // x: rows × dim; y valid until the next forward
 * const { dx, dweight } = norm.backward(dy, x, { rstd: norm.rstd });
 * const bf = createRmsNorm(weight, { dtype: 'bfloat16' }); // x, y, dy, dx: bfloat16 bits
 * ```
 *
 * @param weight The gain (`dim` elements: Float32Array, Float16Array, or Uint16Array of half
 *   bits with `weightDtype`; copied — see `setWeight`), or null for none.
 * @param options `dim` (default `weight.length`, required without weight), `eps` (default
 *   1e-6), `offset` (default 0), `partial` (default 1), `dtype` (the activations': 'float32'
 *   by default, 'float16', 'bfloat16'), `weightDtype` (default the weight's type), `castingMode`
 *   (default 'none'), `outDtype` and `quantScale` (a quantized output; default none): see
 *   {@link RmsNormLayerOptions}.
 * @throws TypeError / RangeError naming the bad argument.
 */
export function createRmsNorm<W extends FloatArray = Float32Array, Q extends QuantDtype | undefined = undefined>(
  weight: W | null,
  options?: RmsNormLayerOptions<Q>,
): RmsNormLayer<W, Q> {
  return ready('createRmsNorm').createLayer(weight, options);
}

/**
 * Allocates `length` floats inside the module's memory: `view()` gives a Float32Array that
 * rmsNorm, rmsNormBackward and the pool use in place, with no copy (the fast path). Re-make
 * views after anything that may grow memory; call `free()` when done.
 */
export function allocF32(length: number): F32Buffer {
  return ready('allocF32').allocF32(length);
}

/**
 * Allocates `length` 16-bit elements inside the module's memory for half-precision data:
 * `view()` gives a Uint16Array (bit patterns; wrap it as a Float16Array where the engine has
 * one) used in place like {@link allocF32}'s views. Call `free()` when done.
 */
export function allocU16(length: number): U16Buffer {
  return ready('allocU16').allocU16(length);
}

/**
 * Half-precision bit patterns to float32 values, exactly (in wasm, SIMD128).
 * @param bits `n` float16 or bfloat16 bit patterns.
 * @param dtype `'float16'` or `'bfloat16'`.
 * @param options `out`: a Float32Array of `n` values to write (not overlapping `bits`); default a new one.
 * @returns `options.out`, or a new Float32Array of `n` values (NaNs: bfloat16's bits shifted up
 *   as they are; a float16 NaN's payload moved up with the quiet bit set).
 * @throws TypeError / RangeError naming the bad argument, before anything is written.
 */
export function halfToFloat32(bits: HalfBits, dtype: HalfDtype, options?: ConvertOptions<Float32Array>): Float32Array {
  return ready('halfToFloat32').halfToFloat32(bits, dtype, options);
}

/**
 * float32 values to half-precision bit patterns, rounded to nearest even (overflow to ±Inf;
 * NaN to a quiet NaN keeping its sign and the top of its payload), in wasm.
 * @param x `n` float32 values.
 * @param dtype `'float16'` or `'bfloat16'`.
 * @param options `out`: a Uint16Array of `n` elements to write (not overlapping `x`); default a new one.
 * @returns `options.out`, or a new Uint16Array of `n` bit patterns.
 * @throws TypeError / RangeError naming the bad argument, before anything is written.
 */
export function float32ToHalf(x: Float32Array, dtype: HalfDtype, options?: ConvertOptions<HalfBits>): HalfBits {
  return ready('float32ToHalf').float32ToHalf(x, dtype, options);
}


/**
 * Starts a worker pool that shards rows across Workers sharing one wasm memory (Node
 * worker_threads, or module Web Workers in a cross-origin-isolated page); elsewhere a pool in
 * `mode: 'single'` that runs calls on the calling thread. Results have the same bits as the
 * sync API whatever the thread count.
 *
 * @param options `threads`: threads per job, default the logical core count; `build`:
 *   `'simd-relaxed-threads'` or `'simd-threads'` (same bits), default the first where the
 *   engine has relaxed SIMD, else the second (`pool.build` says which runs).
 * @throws RangeError / TypeError (as a rejected promise) for bad options, or a `build` this
 *   engine cannot run (the message says what it lacks: relaxed SIMD, or shared memory — a
 *   forced threads build never quietly runs in 'single' mode).
 */
export async function createPool(options?: PoolOptions): Promise<RmsNormPool> {
  // Loaded on first use: a page or a program that never starts a pool never loads its code.
  const { createPool: create } = await import('./pool/create.js');
  return create(options, loadRmsNorm);
}
