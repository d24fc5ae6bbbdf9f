/**
 * Shapes shared by the benchmark's modules: the problem instance, a contender, one result row.
 * @module
 */
import type { RefCase, RefCheck, RefOutputs } from '../shared/reference.js';

/** What a row measures. */
export type Op = 'forward' | 'backward' | 'copy' | 'layernorm';

/** A problem size: `rows × dim` floats, normalized along `dim`. */
export interface Shape {
  rows: number;
  dim: number;
}

/**
 * One shape's inputs, as plain Float32Arrays (contenders copy them where they need to):
 * shared/reference.js's RefCase (x, w, b, dy; eps = 1e-6, the API default).
 */
export type Case = RefCase;

/** The outputs of one call, for the correctness check (y; or dx and dw). */
export type Outputs = RefOutputs;

/** A contender made ready for one shape: buffers allocated, inputs in place. */
export interface Instance {
  /** One timed call. */
  fn: () => unknown;
  /** Whether `fn` returns a promise (the pool, onnxruntime). */
  async: boolean;
  /** Reads the outputs of the last call (re-made views, so they are not stale). */
  outputs: () => Outputs;
  /** Frees wasm memory, sessions and the like. */
  dispose?: () => void | Promise<void>;
}

/** One benchmarked implementation of one op. */
export interface Contender {
  /** Unique per op, e.g. `wasm-simd-zero-copy`. */
  name: string;
  /** The file under bench/contenders it comes from, e.g. `wasm`. */
  family: string;
  op: Op;
  /** Threads doing the work (1 for everything synchronous). */
  threads: number;
  /** Whether inputs and outputs live in wasm memory already (no copies in the timed call). */
  zeroCopy: boolean;
  /** Anything the reader of the table should know (which ONNX op, etc.). */
  note?: string;
  /** Allocates and fills what the timed call needs. */
  make(c: Case): Instance | Promise<Instance>;
}

/** Result of comparing one contender's outputs with the float64 reference (shared/reference.js). */
export type Check = RefCheck;

/** One line of the results: one contender on one shape. */
export interface Row {
  shape: string;
  rows: number;
  dim: number;
  op: Op;
  contender: string;
  family: string;
  threads: number;
  zeroCopy: boolean;
  note: string | null;
  /** Bytes per element of the bandwidth model (see report.ts). */
  bytesPerElem: number;
  check: Check;
  /** Null when not timed (the check failed or the contender errored). */
  medianMs: number | null;
  meanMs: number | null;
  /** tinybench's relative margin of error of the mean latency, percent (95%). */
  rmePct: number | null;
  samples: number | null;
  gelemPerS: number | null;
  gbPerS: number | null;
  /** js-naive's median ÷ this median, same op and shape (null for copy rows or no baseline). */
  vsNaive: number | null;
  /** This row's GB/s ÷ the wasm copy's GB/s at the same shape, percent. */
  pctOfCopy: number | null;
  /**
   * This row's GB/s ÷ the hand-written roof's of the same op and shape, percent
   * (contenders/roofs.ts: `roof-two-pass` for forward and backward, `roof-copy` for copies).
   */
  pctOfRoof?: number | null;
  /** Calls per tinybench sample (sub-20 µs calls are batched; the sample is their mean). */
  batch: number | null;
  error: string | null;
}
