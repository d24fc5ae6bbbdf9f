/**
 * What an operation is, whatever the operation: its arrays in the kernel's operand order
 * (name, where the call takes it from, shape, the dtype it holds, read or written, which inputs
 * an output may be exactly), its workspace, how its kernels are called on a span of rows, a
 * pool chunk and a pool job's completion, how a call of it is checked and what it returns, and
 * its public methods (the API entry scripts/gen-api.ts writes them from). Each operation is one
 * module of operations/ holding one such record; ops.ts lists them. The placement, the sync
 * API, the pool's control block, opcodes and tuning all go by these records.
 *
 * A kernel call reads a call block in wasm memory (call-block.ts): the call's {@link Params}
 * then the operands' byte addresses (0 for an absent array), in its operand order.
 * @module
 */
import { Extent, MAX_OPERANDS, PARAMS, PARAMS_WORDS } from '../generated/abi.js';
import type { KernelExports } from '../glue/load.js';
import type { Data, Placed } from '../glue/dtypes.js';

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
  /** Its name in error messages (`x`, `options.out`); an option's is `options.KEY`. */
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
 * kernel sees it). The checked arguments of a call carry one.
 */
export type Params = { readonly [K in keyof typeof PARAMS]: number } & { readonly wdt: number };

/** Params of a job that runs no kernel (the pool's ping and test jobs): every field 0. */
export const NO_PARAMS: Params = Object.freeze(Object.fromEntries([...Object.keys(PARAMS), 'wdt'].map((k) => [k, 0])) as Params);

/** Byte offset of a call block's address array: after its parameters. */
export const ADDRS_AT = 4 * PARAMS_WORDS;
/** Most address words an operation's kernels read: the call block's capacity. */
export const MAX_ADDRS = MAX_OPERANDS;

/** Where a placed call's results are read back (the placement: placement/placement.ts). */
export interface ResultSource {
  /** Output `i`'s array as the caller gets it: `y`, or a fresh view of it if memory growth detached it. */
  result<T extends Placed>(i: number, y: T): T;
}

/** What every checked call has: its arrays in its operation's operand order, its rows, its parameters. */
export interface CheckedArgs {
  /** The arrays in the operation's operand order (null: absent; an output null: a new array). */
  arrs: (Placed | null)[];
  /** The matrix input named `x`: what the call's placement follows and the pool asks where it is. */
  x: Data;
  rows: number;
  dim: number;
  params: Params;
  /**
   * The outputs are plain arrays that share no memory with the call's other arrays, known
   * without looking (a layer's own outputs, when no input is one of them): placement skips
   * their address lookup and the overlap check.
   */
  outputsApart: boolean;
}

/**
 * A checked call as its operation runs it: the arrays in operand order, and what it returns.
 * The sync API (rmsnorm.ts `runChecked`), the layer and the pool run any operation's calls
 * through this alone.
 */
export interface Call<R> {
  readonly op: Op;
  readonly arrs: readonly (Placed | null)[];
  /** The checked call's `x`: where it is decides how the pool runs it. */
  readonly x: Data;
  readonly rows: number;
  readonly params: Params;
  /** Bit `i` set: operand `i` is an output the library allocated (see Placer.place). */
  readonly fresh: number;
  /** The caller's result, once the placement `p` has run every segment. */
  result(p: ResultSource): R;
  /** The caller's result of a call with no rows (nothing to place or run). */
  empty(): R;
}

/**
 * An operation's public methods, as scripts/gen-api.ts writes them into the instance, the
 * top-level functions and the pool (TypeScript source: parameters, generics, return types).
 */
export interface ApiEntry {
  /** The method's name (`rmsNorm`). */
  readonly method: string;
  /** Its documentation (the instance's and the top-level function's), without the comment's stars. */
  readonly doc: string;
  /** What the pool's method adds to it (its first line), before the rest of {@link doc}. */
  readonly poolDoc: string;
  /** The overloads' type parameters, parameters and return types; the last one's parameters name the call's arguments. */
  readonly overloads: readonly { readonly generics?: string; readonly params: string; readonly returns: string }[];
  /** The implementation's parameters and return type (what every overload is a case of). */
  readonly impl: { readonly params: string; readonly returns: string };
  /** The public types the signatures name (from types.ts). */
  readonly types: readonly string[];
}

/** An operation: see the module doc. */
export interface Op<A extends CheckedArgs = CheckedArgs, R = unknown> {
  /** Index into OPS and per-operation tables (the placement's remembered views, the pool's opcodes and timings). */
  readonly id: number;
  readonly operands: readonly Operand[];
  /** Address words its kernels read: the operands, then one for the workspace. */
  readonly addrs: number;
  /** The parameter options its calls take (check/params.ts's lists). */
  readonly paramKeys: readonly string[];
  /** Its positional arguments (then the options, the last argument). */
  readonly arity: number;
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
  /**
   * Checks a call's arguments (the positional ones `a`, `b`, `c`, `d` as the method takes
   * them, its options last; `extraKeys`: further option names the caller handles itself), a
   * TypeError or RangeError naming `fn` and the argument otherwise.
   */
  check(fn: string, a: unknown, b: unknown, c: unknown, d: unknown, extraKeys?: readonly string[]): A;
  /** The call of checked arguments; `shared`: new results in SharedArrayBuffers. */
  call(a: A, shared?: boolean): Call<R>;
  readonly api: ApiEntry;
}

/**
 * An operation's short way on one instance (short-ways/): a call it takes run at once, its
 * result returned; undefined, having done nothing, for any other (the general way then checks
 * it). `shared`: a new result in a SharedArrayBuffer (the pool's inline calls).
 */
export interface ShortWay {
  run(fn: string, a: unknown, b: unknown, c: unknown, d: unknown, shared: boolean): unknown;
}

/** An operand's record but its shape. */
export const operand = (name: string, out = false, alias: readonly number[] = []): Omit<Operand, 'shape'> => ({ name, out, alias });

/** `list` (an operation's operands in order) with their extents as abi.rs gives them, one per operand. */
export function withExtents(extents: readonly Shape[], list: readonly Omit<Operand, 'shape'>[]): Operand[] {
  if (extents.length !== list.length) throw new Error(`rmsnorm-wasm: internal error: ${list.length} operands, ${extents.length} extents in abi.rs`);
  return list.map((o, i) => ({ ...o, shape: extents[i]! }));
}
