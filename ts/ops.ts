/**
 * What each operation is, written once: its arrays in the kernel's operand order (name, shape,
 * read or written, which inputs an output may be exactly), its workspace, and how its kernels
 * are called on a span of rows, a pool chunk and a pool job's completion. The placement
 * (place.ts), the sync API (rmsnorm.ts), the pool's control block (pool/control.ts) and its
 * dispatch all go by these records; nothing else spells out a kernel's argument order.
 *
 * Addresses are byte addresses in wasm memory, 0 for an absent array.
 * @module
 */
import { Dtype, DTYPE_MASK } from './abi.js';
import type { KernelExports } from './load.js';

/** An array as placed: float32 values, or half-precision bit patterns (a Float16Array is seen through its bits). */
export type Data = Float32Array | Uint16Array;

/** A row-major `rows × dim` matrix. */
export const MATRIX = 0;
/** One float per row (`rows`). */
export const PER_ROW = 1;
/** One row (`dim` floats): the same for every row. */
export const ROW = 2;
export type Shape = typeof MATRIX | typeof PER_ROW | typeof ROW;

/** One array of an operation. */
export interface Operand {
  /** Its name in error messages (`x`, `options.out`). */
  readonly name: string;
  readonly shape: Shape;
  /** Written by the kernel. */
  readonly out: boolean;
  /**
   * Outputs: operand indices of the inputs this output may be exactly (same range) — the
   * kernel reads each element before writing it, so `y == x` is an in-place call.
   */
  readonly alias: readonly number[];
}

/**
 * An operation's scalars, the same for every row: `eps` (inside the root), `offset` (added to
 * the weight: the gain is `offset + weight`) and `stat` (rstd is estimated from the first
 * `stat` elements of each row: `dim` for RMSNorm, fewer for pRMSNorm). The checked arguments
 * of a call (check/calls.ts) carry one.
 */
export interface Params {
  readonly eps: number;
  readonly offset: number;
  readonly stat: number;
  /**
   * The kernel's `dtypes` word: the storage of the matrix operands (0 float32, 1 float16,
   * 2 bfloat16: abi.ts's `Dtype`) plus abi.ts's `LLAMA` / `LLAMA_W` flags.
   */
  readonly dtypes: number;
  /** The weight's storage (abi.ts's `Dtype`); a half weight is widened to float32 before the kernel sees it. */
  readonly wdt: number;
}

/** Bytes per element of the matrix operands of a call with these params. */
export const matrixBytes = (q: Params): number => ((q.dtypes & DTYPE_MASK) === Dtype.float32 ? 4 : 2);

/** Params of a job that runs no kernel (the pool's ping and test jobs). */
export const NO_PARAMS: Params = Object.freeze({ eps: 0, offset: 0, stat: 0, dtypes: 0, wdt: 0 });

/** An operation: see the module doc. */
export interface Op {
  /** Index into per-operation tables (the placement's remembered views, the control block's opcode). */
  readonly id: number;
  readonly operands: readonly Operand[];
  /**
   * Floats of workspace for a sync span (after the operands): the backward's open dweight
   * block, a row, when there is a weight.
   */
  syncWork(dim: number, arrs: readonly (Data | null)[]): number;
  /** Floats of workspace for a pool job of `rows` rows: the backward's per-block dweight partials. */
  poolWork(rows: number, dim: number, blockRows: number, arrs: readonly (Data | null)[]): number;
  /** Chunks of a pool job must be whole dweight blocks. */
  readonly blockAligned: boolean;
  /** Elements of work per element of input (sizes chunks and thresholds). */
  readonly cost: number;
  /**
   * Rows `[row0, row0 + rows)` of a `total`-row matrix on this thread; `a` holds the operands
   * then the workspace, matrix and per-row operands addressed at row `row0`. Returns the
   * kernel's status.
   */
  span(k: KernelExports, a: ArrayLike<number>, row0: number, rows: number, total: number, dim: number, q: Params): number;
  /**
   * Rows `[r0, r1)` of a pool job of `rows` rows; `a` as for {@link span} at row 0 of the job,
   * the workspace being {@link poolWork}'s.
   */
  chunk(k: KernelExports, a: ArrayLike<number>, r0: number, r1: number, rows: number, dim: number, q: Params): number;
  /** After a pool job's last chunk (the backward adds its dweight partials); `accumulate`: onto dweight as it is. */
  complete(k: KernelExports, a: ArrayLike<number>, rows: number, dim: number, blockRows: number, accumulate: boolean): number;
}

/** Address `addr` moved on by `bytes`, or 0 for an absent array. */
const at = (addr: number, bytes: number) => (addr === 0 ? 0 : addr + bytes);

const operand = (name: string, shape: Shape, out = false, alias: readonly number[] = []): Operand => ({ name, shape, out, alias });

/** The forward's operands by name: their slots in {@link FORWARD}'s operand order. */
export const F = { x: 0, residual: 1, weight: 2, y: 3, h: 4, rstd: 5 } as const;
/** The backward's operands (and, after them, its workspace) by name: slots in {@link BACKWARD}'s order. */
export const B = { dy: 0, x: 1, weight: 2, rstd: 3, dresidual: 4, dx: 5, dweight: 6, work: 7 } as const;

/**
 * Forward: x, residual?, weight?, y (may be x), h? (with a residual: `x + residual`; may be x
 * or the residual itself, its default), rstd?.
 */
export const FORWARD: Op = {
  id: 0,
  operands: [
    operand('x', MATRIX),
    operand('options.residual', MATRIX),
    operand('weight', ROW),
    operand('options.out', MATRIX, true, [F.x]),
    operand('options.residualOut', MATRIX, true, [F.x, F.residual]),
    operand('options.rstd', PER_ROW, true),
  ],
  syncWork: () => 0,
  poolWork: () => 0,
  blockAligned: false,
  cost: 1,
  span: (k, a, _row0, rows, _total, dim, q) =>
    k.rms_norm_forward(a[F.x]!, a[F.residual]!, a[F.weight]!, a[F.y]!, a[F.h]!, a[F.rstd]!, rows, dim, q.eps, q.offset, q.stat, q.dtypes),
  chunk(k, a, r0, r1, _rows, dim, q) {
    const off = r0 * dim * matrixBytes(q);
    return k.rms_norm_forward(
      a[F.x]! + off, at(a[F.residual]!, off), a[F.weight]!, a[F.y]! + off, at(a[F.h]!, off), at(a[F.rstd]!, r0 * 4),
      r1 - r0, dim, q.eps, q.offset, q.stat, q.dtypes,
    );
  },
  complete: () => 0,
};

/**
 * Backward: dy, x (with a residual: the forward's h), weight?, rstd?, dresidual? (the gradient
 * on h from the residual stream, added to dx), dx (may be dy, x or dresidual), dweight? (with
 * weight), then the workspace.
 */
export const BACKWARD: Op = {
  id: 1,
  operands: [
    operand('dy', MATRIX),
    operand('x', MATRIX),
    operand('weight', ROW),
    operand('options.rstd', PER_ROW),
    operand('options.dresidual', MATRIX),
    operand('options.dx', MATRIX, true, [B.dy, B.x, B.dresidual]),
    operand('options.dweight', ROW, true),
  ],
  syncWork: (dim, arrs) => (arrs[B.weight] !== null ? dim : 0),
  poolWork: (rows, dim, blockRows, arrs) => (arrs[B.weight] !== null ? Math.ceil(rows / blockRows) * dim : 0),
  blockAligned: true,
  cost: 2,
  span: (k, a, row0, rows, total, dim, q) =>
    k.rms_norm_backward(
      a[B.dy]!, a[B.x]!, a[B.weight]!, a[B.rstd]!, a[B.dresidual]!, a[B.dx]!, a[B.dweight]!, a[B.work]!,
      rows, dim, q.eps, q.offset, q.stat, row0, total, q.dtypes,
    ),
  chunk: (k, a, r0, r1, rows, dim, q) =>
    k.rms_norm_backward_rows(
      a[B.dy]!, a[B.x]!, a[B.weight]!, a[B.rstd]!, a[B.dresidual]!, a[B.dx]!, a[B.work]!,
      rows, dim, q.eps, q.offset, q.stat, r0, r1, q.dtypes,
    ),
  complete: (k, a, rows, dim, blockRows, accumulate) =>
    a[B.weight] === 0 ? 0 : k.reduce_partials(a[B.work]!, Math.ceil(rows / blockRows), dim, a[B.dweight]!, accumulate ? 1 : 0),
};

/** Operations by {@link Op.id} (the pool's opcode for a kernel job is `id + 1`). */
export const OPS: readonly Op[] = [FORWARD, BACKWARD];

/** Most addresses an operation has (operands + workspace): the control block's operand words. */
export const MAX_ADDRS = 8;
