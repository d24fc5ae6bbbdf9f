/**
 * What each operation is, written once: its arrays in the kernel's operand order (name, shape,
 * read or written, which inputs an output may be exactly), its workspace, and how its kernels
 * are called on a span of rows, a pool chunk and a pool job's completion. The placement
 * (place/), the sync API (rmsnorm.ts), the pool's control block, opcodes and tuning (pool/) all
 * go by these records, so a further operation is one more record in {@link OPS}.
 *
 * A kernel call reads a call block in wasm memory (call-block.ts): the call's {@link Params}
 * then the operands' byte addresses (0 for an absent array), in the order abi.ts's
 * `ForwardOperand` / `BackwardOperand` give.
 * @module
 */
import { BACKWARD_EXTENTS, BackwardOperand, DG_SUM_FLOATS, Extent, FORWARD_EXTENTS, ForwardOperand, PARAMS, PARAMS_WORDS } from '../generated/abi.js';
import type { KernelExports } from '../glue/load.js';

import type { Placed } from '../glue/dtypes.js';
export type { Data, Placed } from '../glue/dtypes.js';

/** A row-major `rows × dim` matrix. */
export const MATRIX = Extent.Matrix;
/** One float per row (`rows`). */
export const PER_ROW = Extent.PerRow;
/** One row (`dim` floats): the same for every row. */
export const ROW = Extent.Row;
/** An operand's extent (abi.rs `Extent`, each operand's in its operation's `EXTENTS`). */
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
 * The scalars and flags of a call, one per field of the kernel's parameter block (abi.rs
 * `Params`, generated into abi.ts's {@link PARAMS}), plus `wdt`, the weight's storage (a half weight is widened to float32 before the
 * kernel sees it). The checked arguments of a call (check/calls.ts) carry one.
 */
export type Params = { readonly [K in keyof typeof PARAMS]: number } & { readonly wdt: number };

/** Params of a job that runs no kernel (the pool's ping and test jobs): every field 0. */
export const NO_PARAMS: Params = Object.freeze(Object.fromEntries([...Object.keys(PARAMS), 'wdt'].map((k) => [k, 0])) as Params);

/** An operation: see the module doc. */
export interface Op {
  /** Index into {@link OPS} and per-operation tables (the placement's remembered views, the pool's opcodes and timings). */
  readonly id: number;
  readonly operands: readonly Operand[];
  /** Address words its kernels read: the operands, then one for the workspace. */
  readonly addrs: number;
  /**
   * Floats of workspace for a sync span (after the operands): the backward's dweight sum and
   * open block, when there is a weight.
   */
  syncWork(dim: number, arrs: readonly (Placed | null)[]): number;
  /** Floats of workspace for a pool job of `rows` rows: the backward's dweight sum and per-block partials. */
  poolWork(rows: number, dim: number, blockRows: number, arrs: readonly (Placed | null)[]): number;
  /** Chunks of a pool job must be whole dweight blocks. */
  readonly blockAligned: boolean;
  /** Elements of work per element of input (sizes chunks and thresholds). */
  readonly cost: number;
  /**
   * Rows `[row0, row0 + rows)` of a `total`-row matrix on this thread; the call block at byte
   * `call` holds the operands then the workspace, matrix and per-row operands addressed at row
   * `row0`. Returns the kernel's status.
   */
  span(k: KernelExports, call: number, row0: number, rows: number, total: number): number;
  /**
   * Rows `[r0, r1)` of a pool job of `rows` rows; the call block as for {@link span} at row 0
   * of the job, the workspace being {@link poolWork}'s.
   */
  chunk(k: KernelExports, call: number, r0: number, r1: number, rows: number): number;
  /** After a pool job's last chunk (the backward adds its dweight partials); `accumulate`: onto dweight as it is. */
  complete(k: KernelExports, call: number, rows: number, accumulate: boolean): number;
}

/** Byte offset of a call block's address array: after its parameters. */
export const ADDRS_AT = 4 * PARAMS_WORDS;

/** An operand's record but its shape. */
const operand = (name: string, out = false, alias: readonly number[] = []): Omit<Operand, 'shape'> => ({ name, out, alias });

/** `list` (an operation's operands in order) with their extents as abi.rs gives them, one per operand. */
function withExtents(extents: readonly Shape[], list: readonly Omit<Operand, 'shape'>[]): Operand[] {
  if (extents.length !== list.length) throw new Error(`rmsnorm-wasm: internal error: ${list.length} operands, ${extents.length} extents in abi.rs`);
  return list.map((o, i) => ({ ...o, shape: extents[i]! }));
}

/** The forward's operands by name: their slots in {@link FORWARD}'s operand order. */
export const F = ForwardOperand;
/** The backward's operands (and, after them, its workspace) by name: slots in {@link BACKWARD}'s order. */
export const B = BackwardOperand;

/**
 * Forward: x, residual?, weight?, y (may be x or z; a quantized output's bytes), h? (with a
 * residual: `x + residual`; may be x or the residual itself, its default), rstd?, z? (the
 * gate), rowScales? (a quantized output's scale per row).
 */
export const FORWARD: Op = {
  id: 0,
  operands: withExtents(FORWARD_EXTENTS, [
    operand('x'),
    operand('options.residual'),
    operand('weight'),
    operand('options.out', true, [F.x, F.z]),
    operand('options.residualOut', true, [F.x, F.residual]),
    operand('options.rstd', true),
    operand('options.gate'),
    operand('options.rowScales', true),
  ]),
  addrs: Object.keys(F).length,
  syncWork: () => 0,
  poolWork: () => 0,
  blockAligned: false,
  cost: 1,
  span: (k, call, _row0, rows) => k.rms_norm_forward(call, call + ADDRS_AT, 0, rows),
  chunk: (k, call, r0, r1) => k.rms_norm_forward(call, call + ADDRS_AT, r0, r1),
  complete: () => 0,
};

/**
 * Backward: dy, x (with a residual: the forward's h), weight?, rstd?, dresidual? (the gradient
 * on h from the residual stream, added to dx), dx (may be dy, x, dresidual or z), dweight? (with
 * weight), z? (the gate), dz (with z; may be dy, x or z), then the workspace.
 */
export const BACKWARD: Op = {
  id: 1,
  operands: withExtents(BACKWARD_EXTENTS, [
    operand('dy'),
    operand('x'),
    operand('weight'),
    operand('options.rstd'),
    operand('options.dresidual'),
    operand('options.dx', true, [B.dy, B.x, B.dresidual, B.z]),
    operand('options.dweight', true),
    operand('options.gate'),
    operand('options.dgate', true, [B.dy, B.x, B.z]),
  ]),
  addrs: Object.keys(B).length,
  // With a weight: the f64 sum of the finished dweight blocks, then the open block (a span) or
  // the blocks' partials (a pool job).
  syncWork: (dim, arrs) => (arrs[B.weight] !== null ? (DG_SUM_FLOATS + 1) * dim : 0),
  poolWork: (rows, dim, blockRows, arrs) => (arrs[B.weight] !== null ? (DG_SUM_FLOATS + Math.ceil(rows / blockRows)) * dim : 0),
  blockAligned: true,
  cost: 2,
  span: (k, call, row0, rows, total) => k.rms_norm_backward(call, call + ADDRS_AT, row0, rows, total),
  chunk: (k, call, r0, r1, rows) => k.rms_norm_backward_rows(call, call + ADDRS_AT, r0, r1, rows),
  complete: (k, call, rows, accumulate) => k.rms_norm_backward_reduce(call, call + ADDRS_AT, rows, accumulate ? 1 : 0),
};

/** Operations by {@link Op.id}. */
export const OPS: readonly Op[] = [FORWARD, BACKWARD];

/** Most address words an operation's kernels read: the call block's capacity. */
export const MAX_ADDRS = Math.max(...OPS.map((o) => o.addrs));
