/**
 * The windows calls on plain arrays are streamed through: their sizes, and the rules a
 * placer lays one out by.
 * @module
 */
import type { Op, Placed } from '../op.js';

/**
 * The sync API's window: 256 KiB (65536 floats). Chosen by `npm run bench:window` (bench/window.ts) on this
 * project's machine (1 MiB L2 per core): from 128 KiB to 1 MiB the plain-array call is within a few percent;
 * smaller windows pay the per-segment cost, larger ones leave L2.
 */
export const SYNC_WINDOW_FLOATS = 1 << 16;
/**
 * The pool's window: 8 MiB. The calling thread copies a chunk in while workers compute the chunk
 * before, so a segment must hold several chunks per thread. With 4, 8, 16 and 32 MiB windows the
 * pool ran plain arrays of 16 MiB at 1.32, 1.24, 1.34 and 1.02× the sync call and arrays in
 * SharedArrayBuffers at 2.01, 2.16, 1.64 and 1.00× (`npm run bench:pool`, one run each on the
 * 2-core VM): a window out of the caches makes every chunk's copies and its pass go to memory.
 */
export const POOL_WINDOW_FLOATS = 1 << 21;

/** Rules for one placer: window size, segment alignment, which workspace. */
export interface WindowRules {
  /** Floats the window holds (it grows past this only when a single segment needs more). */
  floats: number;
  /** Segments start on multiples of this many rows (the pool's backward: dweight blocks). */
  rowAlign(op: Op): number;
  /** Workspace floats for a segment of `rows` rows (after the operands). */
  work(op: Op, rows: number, dim: number, arrs: readonly (Placed | null)[]): number;
  /** Arrays in SharedArrayBuffers are copied by the threads that compute them (the pool), not by the caller. */
  external: boolean;
}
