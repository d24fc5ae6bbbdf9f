/**
 * The backward, `rmsNormBackward(dy, x, weight, options)`, as one record: its operands in the
 * kernel's order (then its workspace), its kernels (a span, a pool chunk, the pool job's sum of
 * the dweight blocks), its parameter options, its checks, its results (dx, dweight and, with a
 * gate, dgate: the caller's arrays or new ones), and its public method.
 * @module
 */
import { BACKWARD_EXTENTS, BackwardOperand, DG_SUM_FLOATS, DTYPE_MASK } from '../../generated/abi.js';
import { jsArrayOver, resultOf } from '../../glue/platform.js';
import type { FloatArray, RmsNormBackwardResult } from '../../types.js';
import { optF32, optTyped, rowsOf, typed } from '../check/arrays.js';
import { gateOf, plainOf, plainOperands } from '../check/operands.js';
import { NO_EXTRA_KEYS, options } from '../check/options.js';
import { disjointOrSame, distinctOutputs } from '../check/overlap.js';
import { BACKWARD_PARAM_KEYS, checkParams, operandKeys } from '../check/params.js';
import { ADDRS_AT, operand, withExtents, type Call, type CheckedArgs, type Data, type Op, type Params, type Placed, type ResultSource } from '../op.js';

/** The backward's operands (and, after them, its workspace) by name: slots in {@link BACKWARD}'s order. */
export const B = BackwardOperand;

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

const DTN = 'options.dtype';
const NO_ARRAYS: readonly (Placed | null)[] = Array.from({ length: BACKWARD_EXTENTS.length }, () => null);

/** A backward's arrays checked by name, in their slots. */
export function backwardArrays(
  dy: Data, x: Data, w: Data | null, rstd: Float32Array | null, dresidual: Data | null, dx: Data | null, dweight: Data | null, gate: Data | null, dgate: Data | null,
): (Placed | null)[] {
  const arrs = NO_ARRAYS.slice();
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
function dgateOf(fn: string, v: unknown, gate: Data | null, xa: Data, act: number, dx: Data | null, dweight: Data | null): Data | null {
  if (gate === null && v !== undefined) {
    throw new TypeError(`${fn}: options.dgate was given without options.gate (there is no gate gradient)`);
  }
  const dgate = optTyped(fn, 'options.dgate', v, xa.length, 'x.length', act, DTN);
  distinctOutputs(fn, 'options.dx', dx, 'options.dgate', dgate);
  distinctOutputs(fn, 'options.dweight', dweight, 'options.dgate', dgate);
  return dgate;
}

/** Checks a backward call `rmsNormBackward(dy, x, weight, options)`; `extraKeys` as the forward's. */
function checkBackward(fn: string, dy: unknown, x: unknown, weight: unknown, opts: unknown, extraKeys: readonly string[] = NO_EXTRA_KEYS): BackwardArgs {
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
  const dgate = dgateOf(fn, o.dgate, gate, xa, act, dx, dweight);
  const arrs = backwardArrays(dya, xa, w, rstd, dresidual, dx, dweight, gate, dgate);
  if (BACKWARD_PLAIN.length) plainOperands(fn, BACKWARD, BACKWARD_PLAIN, arrs, o, { n: xa.length, rows, dim: params.dim, act, dtn: DTN, wdt: params.wdt });
  return {
    arrs, x: xa,
    dxGiven: dx === null ? null : (o.dx as FloatArray), dweightGiven: dweight === null ? null : (o.dweight as FloatArray),
    dgateGiven: dgate === null ? null : (o.dgate as FloatArray),
    rows, dim: params.dim, params, xJs: dya !== dy, wJs: w !== null && w !== weight, outputsApart: false,
  };
}

/** `r` with `dgate` when there is one (a call without a gate has no such key). */
function withGate<T extends FloatArray>(r: RmsNormBackwardResult<T, FloatArray>, dgate: T | null): RmsNormBackwardResult<T, FloatArray> {
  if (dgate !== null) r.dgate = dgate;
  return r;
}

/**
 * A checked backward as {@link BACKWARD} runs it: the output arrays as the kernel writes them
 * (given or new, half ones as bits) and the result the caller gets (new half arrays of the
 * caller's kind: a Float16Array over the bits for Float16Array inputs). `resident`: every
 * output is a Float32Array or Uint16Array the caller gave or one made here, so a view detached
 * by growth can be re-made; otherwise `result` is final.
 */
class BackwardCall implements Call<RmsNormBackwardResult<FloatArray, FloatArray>> {
  readonly op = BACKWARD;
  readonly arrs: (Placed | null)[];
  readonly rows: number;
  readonly params: Params;
  readonly fresh: number;
  readonly x: Data;
  private readonly out: { dx: Data; dweight: Data | null; dgate: Data | null };
  private readonly given: RmsNormBackwardResult<FloatArray, FloatArray>;
  private readonly resident: boolean;

  constructor(a: BackwardArgs, shared: boolean) {
    this.x = a.x;
    this.rows = a.rows;
    this.params = a.params;
    const arrs = (this.arrs = a.arrs);
    this.fresh =
      (arrs[B.dx] === null || a.outputsApart ? 1 << B.dx : 0) |
      (arrs[B.weight] && (!arrs[B.dweight] || a.outputsApart) ? 1 << B.dweight : 0) |
      (arrs[B.z] && (!arrs[B.dz] || a.outputsApart) ? 1 << B.dz : 0);
    const act = a.params.dtypes & DTYPE_MASK;
    // An output: the caller's, or a new one of its dtype (seen as the caller's kind of array).
    const made = (given: Data | null, dt: number, n: number, js: boolean, sab: boolean): [Data, FloatArray] => {
      if (given !== null) return [given, given as FloatArray];
      const y = resultOf(dt, n, sab) as Data;
      return [y, (js ? jsArrayOver(y, dt) : y) as FloatArray];
    };
    const [dx, dxUser] = made(arrs[B.dx] as Data | null, act, a.x.length, a.xJs, shared);
    const [dweight, dwUser] = arrs[B.weight] ? made(arrs[B.dweight] as Data | null, a.params.wdt, a.dim, a.wJs, false) : [null, null];
    const [dgate, dzUser] = arrs[B.z] ? made(arrs[B.dz] as Data | null, act, a.x.length, a.xJs, shared) : [null, null];
    this.out = { dx, dweight, dgate };
    this.resident = !a.xJs && !a.wJs && a.dxGiven === arrs[B.dx] && a.dweightGiven === arrs[B.dweight] && a.dgateGiven === arrs[B.dz];
    this.given = withGate({ dx: a.dxGiven ?? dxUser, dweight: a.dweightGiven ?? dwUser }, dgate === null ? null : (a.dgateGiven ?? dzUser));
    arrs[B.dx] = dx;
    arrs[B.dweight] = dweight;
    arrs[B.dz] = dgate;
  }

  result(p: ResultSource): RmsNormBackwardResult<FloatArray, FloatArray> {
    if (!this.resident) return this.given;
    const { dx, dweight, dgate } = this.out;
    return withGate({ dx: p.result(B.dx, dx) as FloatArray, dweight: dweight && (p.result(B.dweight, dweight) as FloatArray) }, dgate && (p.result(B.dz, dgate) as FloatArray));
  }

  /** No rows: dweight is a sum of nothing. */
  empty(): RmsNormBackwardResult<FloatArray, FloatArray> {
    this.out.dweight?.fill(0);
    return this.given;
  }
}

/**
 * Backward: dy, x (with a residual: the forward's h), weight?, rstd?, dresidual? (the gradient
 * on h from the residual stream, added to dx), dx (may be dy, x, dresidual or z), dweight? (with
 * weight), z? (the gate), dz (with z; may be dy, x or z), then the workspace.
 */
export const BACKWARD: Op<BackwardArgs, RmsNormBackwardResult<FloatArray, FloatArray>> = {
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
  paramKeys: BACKWARD_PARAM_KEYS,
  arity: 3,
  // With a weight: the f64 sum of the finished dweight blocks, then the open block (a span) or
  // the blocks' partials (a pool job).
  syncWork: (dim, arrs) => (arrs[B.weight] !== null ? (DG_SUM_FLOATS + 1) * dim : 0),
  poolWork: (rows, dim, blockRows, arrs) => (arrs[B.weight] !== null ? (DG_SUM_FLOATS + Math.ceil(rows / blockRows)) * dim : 0),
  blockAligned: true,
  cost: 2,
  span: (k, call, row0, rows, total) => k.rms_norm_backward(call, call + ADDRS_AT, row0, rows, total),
  chunk: (k, call, r0, r1, rows) => k.rms_norm_backward_rows(call, call + ADDRS_AT, r0, r1, rows),
  complete: (k, call, rows, accumulate) => k.rms_norm_backward_reduce(call, call + ADDRS_AT, rows, accumulate ? 1 : 0),
  check: checkBackward,
  call: (a, shared = false) => new BackwardCall(a, shared),
  api: {
    method: 'rmsNormBackward',
    doc: `RMSNorm backward: \`dx = rstd · (gy − x · rstd² · mean(gy ⊙ x))\` with \`gy = dy ⊙ weight\`,
and \`dweight = Σ_rows dy ⊙ x · rstd\` (deterministic: f32 sums per 32-row block, the blocks
added in f64 in order: the same bits whatever the thread count). Half precision as in
{@link rmsNorm}: \`dx\` in the activations' dtype, \`dweight\` in the weight's (summed in float32,
rounded once).

@param dy Upstream gradient, \`rows × dim\`.
@param x The forward's input, \`rows × dim\` (with a fused residual add: its \`h\`).
@param weight The gain (\`dim\`) or null.
@param options Every option, each with its default: {@link RmsNormBackwardOptions}.
@returns \`{ dx, dweight }\` (and \`dgate\` with a gate); \`dweight\` is null when \`weight\` is null.
@throws TypeError / RangeError naming the bad argument, before anything is written.`,
    poolDoc: 'As the sync {@link rmsNormBackward}, resolved when done; dweight has the same bits whatever the thread count.',
    overloads: [
      {
        generics: '<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array>',
        params: 'dy: T, x: T, weight: W | null, options?: RmsNormBackwardOptions<T, W>',
        returns: 'RmsNormBackwardResult<T, W>',
      },
    ],
    impl: { params: 'dy: FloatArray, x: FloatArray, weight: FloatArray | null, options?: RmsNormBackwardOptions<FloatArray, FloatArray>', returns: 'RmsNormBackwardResult<FloatArray, FloatArray>' },
    types: ['FloatArray', 'RmsNormBackwardOptions', 'RmsNormBackwardResult'],
  },
};

/** The backward's option names: its parameters and its arrays. */
const BACKWARD_KEYS: readonly string[] = [...BACKWARD_PARAM_KEYS, ...operandKeys(BACKWARD)];
/** The backward's operands with no rule of their own (checked by their shape alone). */
export const BACKWARD_PLAIN = plainOf(BACKWARD, [B.dy, B.x, B.weight, B.rstd, B.dresidual, B.dx, B.dweight, B.z, B.dz]);
