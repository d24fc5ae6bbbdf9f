/**
 * The checks of whole calls: a forward, a backward (a layer's are in layer-calls.ts). Each returns one record
 * (the arrays as the kernel takes them, in its operation's operand order; the row count and
 * the kernel's {@link Params}), which the sync API, the pool, the layer and the file functions
 * all use as is. The operands with rules of their own (which arrays go together, which may
 * overlap) are checked here by name; any other operand of ops.ts is checked by its shape alone.
 * @module
 */
import { B, BACKWARD, F, FORWARD, MATRIX, PER_ROW, type Data, type Op, type Params, type Placed } from '../ops.js';
import type { FloatArray } from '../../types.js';
import { optF32, optQuantized, optTyped, rowsOf, typed } from './arrays.js';
import { NO_EXTRA_KEYS, options } from './options.js';
import { disjointOrSame, distinctOutputs } from './overlap.js';
import { BACKWARD_PARAM_KEYS, checkParams, operandKeys, PARAM_KEYS } from './params.js';

/** What every checked call has: its arrays in its operation's operand order, its rows, its parameters. */
export interface CheckedArgs {
  /** The arrays in the operation's operand order (null: absent; an output null: a new array). */
  arrs: (Placed | null)[];
  /** The matrix input named `x` (the forward's and the backward's): what the call's placement follows and the pool asks where it is. */
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
 * A checked forward call: `arrs[F.y]` is where y goes (a quantized output's bytes with
 * params.out_dtype), or null: a new array; `arrs[F.h]` where h goes (residualOut, or the
 * residual itself) with a residual.
 */
export interface ForwardArgs extends CheckedArgs {
  /** `options.out` as the caller gave it (returned as is). */
  outGiven: FloatArray | Placed | null;
  /** `x` was given as JavaScript's own array of its dtype (a Float16Array): so is a result the library allocates. */
  xJs: boolean;
}

/** A checked backward call (its x: the backward's `x`); the outputs dx, dweight and dz: given, or null: new arrays. */
export interface BackwardArgs extends CheckedArgs {
  /** The outputs as the caller gave them (returned as they are), or null. */
  dxGiven: FloatArray | null;
  dweightGiven: FloatArray | null;
  dgateGiven: FloatArray | null;
  /** `dy`, the weight were given as JavaScript's own arrays of their dtypes (Float16Arrays): so are the results the library allocates. */
  xJs: boolean;
  wJs: boolean;
}

const FORWARD_KEYS: readonly string[] = [...PARAM_KEYS, ...operandKeys(FORWARD)];
const BACKWARD_KEYS: readonly string[] = [...BACKWARD_PARAM_KEYS, ...operandKeys(BACKWARD)];
const DTN = 'options.dtype';

/** What an operand's shape is measured against: x's length, the rows, the row length, and the dtypes. */
export interface Sizes {
  n: number;
  rows: number;
  dim: number;
  /** The activations' dtype code and what names it in messages; the weight's dtype code. */
  act: number;
  dtn: string;
  wdt: number;
}

/**
 * Fills the slots `plain` of `arrs` (`op`'s arrays in operand order, the others checked by
 * name already): each such operand read from the options `o` (`options.NAME`) and checked by
 * its shape alone — a matrix of the activations' dtype and x's length, one float32 per row, or
 * a row of the weight's dtype — an output also apart from every other output.
 */
export function plainOperands(fn: string, op: Op, plain: readonly number[], arrs: (Placed | null)[], o: Readonly<Record<string, unknown>>, z: Sizes): void {
  for (const i of plain) {
    const d = op.operands[i]!;
    const v = o[d.name.slice('options.'.length)];
    const a = d.shape === MATRIX
      ? optTyped(fn, d.name, v, z.n, 'x.length', z.act, z.dtn)
      : d.shape === PER_ROW ? optF32(fn, d.name, v, z.rows, 'one per row') : optTyped(fn, d.name, v, z.dim, 'dim', z.wdt, 'options.weightDtype');
    if (d.out) op.operands.forEach((e, j) => e.out && j !== i && distinctOutputs(fn, e.name, arrs[j] ?? null, d.name, a));
    arrs[i] = a;
  }
}

/** The operands of `op` not in `ruled` (those checked by name here): checked by {@link plainOperands}. */
const plainOf = (op: Op, ruled: readonly number[]): readonly number[] => op.operands.map((_, i) => i).filter((i) => !ruled.includes(i));
/** Each operation's operands checked by their shape alone (none yet: every one has rules of its own here). */
export const FORWARD_PLAIN = plainOf(FORWARD, [F.x, F.residual, F.weight, F.y, F.h, F.rstd, F.z, F.rowScales]);
export const BACKWARD_PLAIN = plainOf(BACKWARD, [B.dy, B.x, B.weight, B.rstd, B.dresidual, B.dx, B.dweight, B.z, B.dz]);
/** An operation's arrays before the checks fill them: a null per operand. */
const NO_FORWARD: readonly (Placed | null)[] = FORWARD.operands.map(() => null);
const NO_BACKWARD: readonly (Placed | null)[] = BACKWARD.operands.map(() => null);

/** Checks a forward call; `extraKeys` are further option names the caller handles itself. */
export function checkForward(
  fn: string,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): ForwardArgs {
  const o = options(fn, opts, FORWARD_KEYS, extraKeys);
  const { params, weight: w, act } = checkParams(fn, o, 'x', x, weight, o.gate !== undefined);
  const xa = typed(fn, 'x', x, act, DTN);
  const rows = rowsOf(fn, 'x', xa, params.dim);
  const out = params.out_dtype !== 0
    ? optQuantized(fn, 'options.out', o.out, xa.length, 'x.length', params.out_dtype)
    : optTyped(fn, 'options.out', o.out, xa.length, 'x.length', act, DTN);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  distinctOutputs(fn, 'options.out', out, 'options.rstd', rstd);
  const rowScales = rowScalesOf(fn, o.rowScales, params, rows);
  distinctOutputs(fn, 'options.out', out, 'options.rowScales', rowScales);
  distinctOutputs(fn, 'options.rstd', rstd, 'options.rowScales', rowScales);
  const { residual, h } = fusedAdd(fn, o, xa, act, DTN, out, rstd, w);
  const gate = gateOf(fn, o.gate, xa, act, DTN, residual !== null, 'options.residual');
  const outGiven = out === null ? null : (o.out as FloatArray | Placed);
  const arrs = forwardArrays(xa, residual, w, out, h, rstd, gate, rowScales);
  if (FORWARD_PLAIN.length) plainOperands(fn, FORWARD, FORWARD_PLAIN, arrs, o, { n: xa.length, rows, dim: params.dim, act, dtn: DTN, wdt: params.wdt });
  return { arrs, x: xa, outGiven, rows, dim: params.dim, params, xJs: xa !== x, outputsApart: false };
}

/** A forward's arrays checked by name, in their slots. */
export function forwardArrays(
  x: Data, residual: Data | null, w: Data | null, out: Placed | null, h: Data | null, rstd: Float32Array | null, gate: Data | null, rowScales: Float32Array | null,
): (Placed | null)[] {
  const arrs = NO_FORWARD.slice();
  arrs[F.x] = x;
  arrs[F.residual] = residual;
  arrs[F.weight] = w;
  arrs[F.y] = out;
  arrs[F.h] = h;
  arrs[F.rstd] = rstd;
  arrs[F.z] = gate;
  arrs[F.rowScales] = rowScales;
  return arrs;
}

/**
 * `options.rowScales`: a Float32Array of one scale per row, required with a quantized output
 * (`params.out_dtype`) that has no static `quant_scale`, and only then.
 */
export function rowScalesOf(fn: string, v: unknown, params: Params, rows: number): Float32Array | null {
  const perRow = params.out_dtype !== 0 && params.quant_scale === 0;
  if (v === undefined && perRow) {
    throw new TypeError(`${fn}: options.rowScales (a Float32Array of ${rows} floats, one per row) is required with options.outDtype and no options.quantScale: it receives each row's scale`);
  }
  if (v !== undefined && !perRow) {
    throw new TypeError(
      `${fn}: options.rowScales was given ${params.out_dtype === 0 ? 'without options.outDtype (only a quantized output has row scales)' : 'with options.quantScale (every row has that scale)'}`,
    );
  }
  return optF32(fn, 'options.rowScales', v, rows, 'one per row');
}

/**
 * The gate's input `z` (`options.gate`, or a layer call's), of x's length and dtype, or null;
 * a TypeError when the call also has `other` (a fused residual add, which has no gated form).
 */
export function gateOf(fn: string, v: unknown, xa: Data, act: number, dtn: string, other: boolean, otherName: string): Data | null {
  if (v === undefined) return null;
  const z = optTyped(fn, 'options.gate', v, xa.length, 'x.length', act, dtn);
  if (z !== null && other) {
    throw new TypeError(`${fn}: options.gate and ${otherName} cannot be used together (the gated RMSNorm has no fused residual add)`);
  }
  return z;
}

/**
 * The fused residual add's arrays of a forward (`options.residual`, `options.residualOut`),
 * checked against x and the outputs: the residual and where `h = x + residual` goes (the
 * residual itself by default), both null without one. `dtn` names what says their dtype.
 */
export function fusedAdd(
  fn: string, o: Readonly<Record<string, unknown>>, xa: Data, act: number, dtn: string, out: Placed | null, rstd: Float32Array | null, w: Data | null,
): { residual: Data | null; h: Data | null } {
  const residual = optTyped(fn, 'options.residual', o.residual, xa.length, 'x.length', act, dtn);
  if (residual === null && o.residualOut !== undefined) {
    throw new TypeError(`${fn}: options.residualOut was given without options.residual (it receives x + residual)`);
  }
  const given = optTyped(fn, 'options.residualOut', o.residualOut, xa.length, 'x.length', act, dtn);
  const h = given ?? residual;
  if (h !== null) {
    // The plain forward's out may overlap x anyhow (that input is copied aside first); the
    // fused add's arrays are new, and an overlap there is a mistake to report.
    const hn = given ? 'options.residualOut' : 'options.residual (which receives x + residual)';
    distinctOutputs(fn, 'options.out', out, hn, h);
    distinctOutputs(fn, 'options.rstd', rstd, hn, h);
    disjointOrSame(fn, hn, h, 'x', xa, true);
    disjointOrSame(fn, hn, h, 'options.residual', given ? residual : null, true);
    disjointOrSame(fn, hn, h, 'weight', w, false);
    disjointOrSame(fn, 'options.out', out, 'options.residual', given ? residual : null, false);
  }
  return { residual, h };
}

/** Checks a backward call; `extraKeys` as in {@link checkForward}. */
export function checkBackward(
  fn: string,
  dy: unknown,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): BackwardArgs {
  const o = options(fn, opts, BACKWARD_KEYS, extraKeys);
  const { params, weight: w, act } = checkParams(fn, o, 'dy', dy, weight, o.gate !== undefined);
  const dya = typed(fn, 'dy', dy, act, DTN);
  const xa = typed(fn, 'x', x, act, DTN);
  if (dya.length !== xa.length) {
    throw new RangeError(`${fn}: dy.length (${dya.length}) must equal x.length (${xa.length})`);
  }
  const rows = rowsOf(fn, 'x', xa, params.dim);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  const dx = optTyped(fn, 'options.dx', o.dx, xa.length, 'x.length', act, DTN);
  if (w === null && o.dweight !== undefined) {
    throw new TypeError(`${fn}: options.dweight was given but weight is null (there is no weight gradient)`);
  }
  const dweight = optTyped(fn, 'options.dweight', o.dweight, params.dim, 'dim', params.wdt, 'options.weightDtype');
  distinctOutputs(fn, 'options.dx', dx, 'options.dweight', dweight);
  const dresidual = optTyped(fn, 'options.dresidual', o.dresidual, xa.length, 'x.length', act, DTN);
  disjointOrSame(fn, 'options.dx', dx, 'options.dresidual', dresidual, true);
  disjointOrSame(fn, 'options.dweight', dweight, 'options.dresidual', dresidual, false);
  const gate = gateOf(fn, o.gate, xa, act, DTN, dresidual !== null, 'options.dresidual');
  const dgate = dgateOf(fn, o.dgate, gate, xa, act, DTN, dx, dweight);
  const arrs = backwardArrays(dya, xa, w, rstd, dresidual, dx, dweight, gate, dgate);
  if (BACKWARD_PLAIN.length) plainOperands(fn, BACKWARD, BACKWARD_PLAIN, arrs, o, { n: xa.length, rows, dim: params.dim, act, dtn: DTN, wdt: params.wdt });
  return {
    arrs, x: xa,
    dxGiven: dx === null ? null : (o.dx as FloatArray), dweightGiven: dweight === null ? null : (o.dweight as FloatArray),
    dgateGiven: dgate === null ? null : (o.dgate as FloatArray),
    rows, dim: params.dim, params, xJs: dya !== dy, wJs: w !== null && w !== weight, outputsApart: false,
  };
}

/** A backward's arrays checked by name, in their slots. */
export function backwardArrays(
  dy: Data, x: Data, w: Data | null, rstd: Float32Array | null, dresidual: Data | null, dx: Data | null, dweight: Data | null, gate: Data | null, dgate: Data | null,
): (Placed | null)[] {
  const arrs = NO_BACKWARD.slice();
  arrs[B.dy] = dy;
  arrs[B.x] = x;
  arrs[B.weight] = w;
  arrs[B.rstd] = rstd;
  arrs[B.dresidual] = dresidual;
  arrs[B.dx] = dx;
  arrs[B.dweight] = dweight;
  arrs[B.z] = gate;
  arrs[B.dz] = dgate;
  return arrs;
}

/** `options.dgate`: where the gate's gradient goes (only with a gate), apart from the other outputs. */
function dgateOf(fn: string, v: unknown, gate: Data | null, xa: Data, act: number, dtn: string, dx: Data | null, dweight: Data | null): Data | null {
  if (gate === null && v !== undefined) {
    throw new TypeError(`${fn}: options.dgate was given without options.gate (there is no gate gradient)`);
  }
  const dgate = optTyped(fn, 'options.dgate', v, xa.length, 'x.length', act, dtn);
  distinctOutputs(fn, 'options.dx', dx, 'options.dgate', dgate);
  distinctOutputs(fn, 'options.dweight', dweight, 'options.dgate', dgate);
  return dgate;
}
