/**
 * The forward, `rmsNorm(x, weight, options)`, as one record: its operands in the kernel's order,
 * its kernels, its parameter options, its checks (the arrays that go together, which may
 * overlap), its results (y: the caller's `out`, or a new array of the output's dtype), and its
 * public method (the API entry scripts/gen-api.ts writes it from).
 * @module
 */
import { DTYPE_MASK, FORWARD_EXTENTS, ForwardOperand } from '../../generated/abi.js';
import { jsArrayOver, resultOf } from '../../glue/platform.js';
import type { FloatArray } from '../../types.js';
import { optF32, optQuantized, optTyped, rowsOf, typed } from '../check/arrays.js';
import { gateOf, plainOperands, plainOf } from '../check/operands.js';
import { NO_EXTRA_KEYS, options } from '../check/options.js';
import { disjointOrSame, distinctOutputs } from '../check/overlap.js';
import { checkParams, operandKeys, PARAM_KEYS } from '../check/params.js';
import { ADDRS_AT, operand, withExtents, type Call, type CheckedArgs, type Data, type Op, type Params, type Placed, type ResultSource } from '../op.js';

/** The forward's operands by name: their slots in {@link FORWARD}'s operand order. */
export const F = ForwardOperand;

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

const DTN = 'options.dtype';
/** An operation's arrays before the checks fill them: a null per operand. */
const NO_ARRAYS: readonly (Placed | null)[] = Array.from({ length: FORWARD_EXTENTS.length }, () => null);

/** A forward's arrays checked by name, in their slots. */
export function forwardArrays(
  x: Data, residual: Data | null, w: Data | null, out: Placed | null, h: Data | null, rstd: Float32Array | null, gate: Data | null, rowScales: Float32Array | null,
): (Placed | null)[] {
  const arrs = NO_ARRAYS.slice();
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
 * A forward of arrays laid out by the caller itself for `params` (the file functions' chunks:
 * `x` of params' activations' dtype and `rows × dim` elements, `out` of its output's, rstd and
 * row scales one per row): not checked again.
 */
export function forwardOf(params: Params, x: Data, w: Data | null, out: Placed, rstd: Float32Array | null, rowScales: Float32Array | null): ForwardArgs {
  const arrs = forwardArrays(x, null, w, out, null, rstd, null, rowScales);
  return { arrs, x, outGiven: out, rows: x.length / params.dim, dim: params.dim, params, xJs: false, outputsApart: false };
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

/** Checks a forward call `rmsNorm(x, weight, options)`; `extraKeys` are further option names the caller handles itself. */
function checkForward(fn: string, x: unknown, weight: unknown, opts: unknown, _unused?: unknown, extraKeys: readonly string[] = NO_EXTRA_KEYS): ForwardArgs {
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

/**
 * A checked forward as {@link FORWARD} runs it (a class: one object per call, no closures):
 * `y` as the kernel writes it (half results as bits) and what the caller gets. `resident`: `y`
 * is what the caller gets, so a view of wasm memory detached by growth can be re-made;
 * otherwise `given` is final.
 */
class ForwardCall implements Call<FloatArray | Placed> {
  readonly op = FORWARD;
  readonly arrs: (Placed | null)[];
  readonly rows: number;
  readonly params: Params;
  readonly fresh: number;
  readonly x: Data;
  private readonly y: Placed;
  private readonly given: FloatArray | Placed;
  private readonly resident: boolean;

  constructor(a: ForwardArgs, shared: boolean) {
    this.x = a.x;
    this.rows = a.rows;
    this.params = a.params;
    // The checked call's arrays are this call's (each check makes them anew).
    const arrs = (this.arrs = a.arrs);
    const out = arrs[F.y] ?? null;
    // New outputs (and outputs known to be apart) need no address lookup and no overlap check.
    this.fresh = (out === null || a.outputsApart ? 1 << F.y : 0) | (a.outputsApart && arrs[F.rstd] ? 1 << F.rstd : 0);
    if (out !== null) {
      [this.y, this.given, this.resident] = [out, a.outGiven!, a.outGiven === out];
    } else {
      // A new array of the output's dtype: a quantized one's, else the activations' (seen as
      // JavaScript's own array of it when x was one).
      const q = a.params.out_dtype;
      const act = a.params.dtypes & DTYPE_MASK;
      const y = resultOf(q !== 0 ? q : act, a.x.length, shared);
      const js = a.xJs && q === 0;
      [this.y, this.given, this.resident] = [y, js ? (jsArrayOver(y, act) as FloatArray) : y, !js];
    }
    arrs[F.y] = this.y;
  }

  result(p: ResultSource): FloatArray | Placed {
    return this.resident ? p.result(F.y, this.y) : this.given;
  }

  empty(): FloatArray | Placed {
    return this.given;
  }
}

/**
 * Forward: x, residual?, weight?, y (may be x or z; a quantized output's bytes), h? (with a
 * residual: `x + residual`; may be x or the residual itself, its default), rstd?, z? (the
 * gate), rowScales? (a quantized output's scale per row).
 */
export const FORWARD: Op<ForwardArgs, FloatArray | Placed> = {
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
  paramKeys: PARAM_KEYS,
  arity: 2,
  syncWork: () => 0,
  poolWork: () => 0,
  blockAligned: false,
  cost: 1,
  span: (k, call, _row0, rows) => k.rms_norm_forward(call, call + ADDRS_AT, 0, rows),
  chunk: (k, call, r0, r1) => k.rms_norm_forward(call, call + ADDRS_AT, r0, r1),
  complete: () => 0,
  check: checkForward,
  call: (a, shared = false) => new ForwardCall(a, shared),
  api: {
    method: 'rmsNorm',
    doc: `RMSNorm forward: for each row \`x_r\` (length \`dim\`),
\`y_r = x_r · rstd_r · weight\`, \`rstd_r = 1/sqrt(mean(x_r²) + eps)\`.

Variants (options, combinable): \`residual\` — fused residual add, the row normalized is
\`h = x + residual\`, written into \`residual\` (or \`residualOut\`); \`offset\` — the gain is
\`offset + weight\` (Gemma: 1); \`partial\` — pRMSNorm, the mean over the first
\`ceil(partial · dim)\` elements only; \`gate\` — the gated RMSNorm. Half precision: \`x\` (and
every \`rows × dim\` array) may be a Float16Array or a Uint16Array of float16 / bfloat16 bit
patterns (\`dtype\`), the weight likewise (\`weightDtype\`, may differ); the math is float32,
results rounded to nearest even as \`castingMode\` says. A quantized output (\`outDtype\`) is an
Int8Array, or a Uint8Array of float8 E4M3 bits, with a scale per row (\`rowScales\`).

@param x \`rows × dim\` elements, row-major. Views of wasm memory ({@link allocF32},
  {@link allocU16}) are used in place; other arrays are copied through reused scratch space.
@param weight The gain, \`dim\` elements, or null for none.
@param options Every option, each with its default: {@link RmsNormOptions} (a quantized
  output's: {@link RmsNormQuantOptions}).
@returns \`options.out\`, or a new array of \`x\`'s type (with \`outDtype\`: an Int8Array, or a
  Uint8Array of float8 bits).
@throws TypeError / RangeError naming the bad argument, before anything is written.`,
    poolDoc: 'As the sync {@link rmsNorm}, resolved when done. Arguments are checked before queueing.',
    overloads: [
      { generics: '<T extends FloatArray = Float32Array>', params: 'x: T, weight: FloatArray | null, options?: RmsNormOptions<T>', returns: 'T' },
      { generics: '<Q extends QuantDtype>', params: 'x: FloatArray, weight: FloatArray | null, options: RmsNormQuantOptions<Q>', returns: 'QuantArray<Q>' },
    ],
    impl: { params: 'x: FloatArray, weight: FloatArray | null, options?: RmsNormOptions<FloatArray> | RmsNormQuantOptions', returns: 'FloatArray | QuantArray<QuantDtype>' },
    types: ['FloatArray', 'QuantArray', 'QuantDtype', 'RmsNormOptions', 'RmsNormQuantOptions'],
  },
};

/** The forward's option names: its parameters and its arrays. */
const FORWARD_KEYS: readonly string[] = [...PARAM_KEYS, ...operandKeys(FORWARD)];
/** The forward's operands with no rule of their own (checked by their shape alone). */
export const FORWARD_PLAIN = plainOf(FORWARD, [F.x, F.residual, F.weight, F.y, F.h, F.rstd, F.z, F.rowScales]);
