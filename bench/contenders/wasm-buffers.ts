/**
 * Zero-copy inputs for the wasm contenders: buffers allocated inside one instance's memory,
 * filled once from the Case, and handed to the kernels as views (no copies in timed calls).
 * @module
 */
import type { RmsNorm } from '../../dist/index.js';

/** Named buffers in one instance's memory. */
export interface WasmBuffers<K extends string> {
  /**
   * Fresh views of every buffer. Views of non-shared memory are detached when it grows, so
   * they are taken after all allocations and re-taken for each check.
   */
  views(): Record<K, Float32Array>;
  free(): void;
}

/**
 * Allocates one buffer per entry of `init` (a Float32Array to copy in, or a length to leave
 * zeroed) in `m`'s memory.
 */
export function wasmBuffers<K extends string>(m: RmsNorm, init: Record<K, Float32Array | number>): WasmBuffers<K> {
  const keys = Object.keys(init) as K[];
  const bufs = keys.map((k) => {
    const v = init[k];
    return m.allocF32(typeof v === 'number' ? v : v.length);
  });
  const views = () => Object.fromEntries(keys.map((k, i) => [k, bufs[i]!.view()])) as Record<K, Float32Array>;
  const v = views();
  for (const k of keys) {
    const src = init[k];
    if (typeof src === 'number') v[k].fill(0);
    else v[k].set(src);
  }
  return { views, free: () => bufs.forEach((b) => b.free()) };
}
