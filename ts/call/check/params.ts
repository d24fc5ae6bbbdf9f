/**
 * The options a call's parameter block is made of (ops.ts's Params: abi.rs's `Params` and the
 * weight's storage), checked one way for every kind of call — the one-off forward and
 * backward, the pool's, a layer's creation — and the option names of each call, derived from
 * these and from the operations' operands (ops.ts), so that no list of keys is written twice.
 * @module
 */
import { blankParams, Dtype as DT, Gate, LLAMA_W } from '../../generated/abi.js';
import type { Data, Op, Params } from '../op.js';
import { listed, QUANT_DTYPES } from '../../glue/dtypes.js';
import type { GateMode, QuantDtype } from '../../types.js';
import { describe, typed } from './arrays.js';
import { actDtype, castingBits, checkDimOption, checkDtypeNames, dimOf, weightDtype, weightOf } from './scalars.js';
import { checkScalars, SCALARS, scalarParams } from './scalar-options.js';

/**
 * The options every call reads into its Params, with their defaults: the one list of them
 * (undefined: settled by the call's arrays — dim by the weight, the dtypes by the arrays' types,
 * gateMode by the gate). Whatever passes options on (the pool, the layer, the file, stream and
 * dataset functions, a dataset's resume record) goes by it.
 */
export const PARAM_DEFAULTS: Readonly<Record<string, unknown>> = {
  dim: undefined,
  ...Object.fromEntries(Object.entries(SCALARS).map(([k, s]) => [k, s.fallback])),
  dtype: undefined,
  weightDtype: undefined,
  castingMode: 'none',
  gateMode: undefined,
  outDtype: undefined,
  quantScale: undefined,
};
export const PARAM_KEYS: readonly string[] = Object.keys(PARAM_DEFAULTS);
/** The parameters only a forward has: its output's quantization. */
export const FORWARD_ONLY_KEYS: readonly string[] = ['outDtype', 'quantScale'];
/** The parameters of a backward. */
export const BACKWARD_PARAM_KEYS: readonly string[] = PARAM_KEYS.filter((k) => !FORWARD_ONLY_KEYS.includes(k));
/**
 * The parameters of a file's or a stream's calls: those of a call without a gate array and
 * with its output stored as the activations are (a file's own `outDtype` says its output's
 * storage).
 */
export const FILE_PARAM_KEYS: readonly string[] = BACKWARD_PARAM_KEYS.filter((k) => k !== 'gateMode');

/** The options of `keys` (by default {@link FILE_PARAM_KEYS}) that `o` gives (not undefined), to pass on whole. */
export function paramOptions(o: Readonly<Record<string, unknown>>, keys: readonly string[] = FILE_PARAM_KEYS): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) r[k] = o[k];
  return r;
}

/**
 * The option names of `op`'s arrays (its operands named `options.*` in ops.ts), all of them or
 * only its inputs.
 */
export function operandKeys(op: Op, inputsOnly = false): string[] {
  return op.operands.filter((o) => o.name.startsWith('options.') && !(inputsOnly && o.out)).map((o) => o.name.slice('options.'.length));
}

/** The gateMode option's values (abi.rs's Gate codes but none), the first the default. */
const GATE_MODES = (Object.keys(Gate) as (keyof typeof Gate)[]).filter((k): k is GateMode => Gate[k] !== Gate.none);

/** The gateMode option's value of a gate code (the default for none). */
export const gateModeOf = (code: number): GateMode => GATE_MODES.find((k) => Gate[k] === code) ?? GATE_MODES[0]!;

/** options.gateMode's code when given (by its own rule: one of GATE_MODES), or -1. */
function gateModeOption(fn: string, v: unknown): number {
  if (v === undefined) return -1;
  if (!GATE_MODES.includes(v as GateMode)) throw new TypeError(`${fn}: options.gateMode must be ${listed(GATE_MODES)}, got ${describe(v)}`);
  return Gate[v as GateMode];
}

/** The gate code of a call with a gate (`gated`; the given `mode`, or the first of GATE_MODES by default), or none; `needsGate`: a mode without a gate is a mistake. */
function gateCode(fn: string, mode: number, gated: boolean, needsGate: boolean): number {
  if (mode >= 0 && !gated && needsGate) {
    throw new TypeError(`${fn}: options.gateMode was given without options.gate (the z whose silu(z) gates the norm)`);
  }
  return !gated ? Gate.none : mode >= 0 ? mode : Gate[GATE_MODES[0]!];
}

/**
 * A call's parameter options checked by their own rules, once: each its type and range, and
 * what follows from them alone (the casting bits, the gate mode's code, a quantized output's
 * code and scale). {@link paramsOf} makes a call's Params of them with its arrays, checking
 * only what depends on those.
 */
export interface ParamOptions {
  readonly o: Readonly<Record<string, unknown>>;
  readonly llama: number;
  readonly gateMode: number;
  readonly out: { readonly code: number; readonly scale: number };
}

let optionChecks = 0;
/** How many times parameter options have been checked ({@link checkParamOptions}) in this realm: a test's count of the checks of a run. */
export const paramOptionChecks = (): number => optionChecks;

/** Checks the parameter options of `o` by their own rules (see {@link ParamOptions}). */
export function checkParamOptions(fn: string, o: Readonly<Record<string, unknown>>): ParamOptions {
  optionChecks++;
  checkScalars(fn, o);
  checkDtypeNames(fn, o);
  if (o.dim !== undefined) checkDimOption(fn, o.dim);
  return { o, llama: castingBits(fn, o.castingMode), gateMode: gateModeOption(fn, o.gateMode), out: quantOf(fn, o.outDtype, o.quantScale) };
}

/** A call's checked parameters, with the arrays they were checked against. */
export interface CheckedParams {
  params: Params;
  /** The weight as the kernel reads it (half data as a Uint16Array), or null. */
  weight: Data | null;
  /** The activations' dtype code (abi.ts Dtype). */
  act: number;
}

/**
 * Checks the options of `PARAM_KEYS` in `o` for a call whose first matrix is `first` (named
 * `firstName`; undefined for a layer, whose activations' dtype is `o.dtype` or float32) and
 * whose weight is `weight`; `gated`: the call has a gate (a layer: always, its calls say
 * whether), `needsGate`: options.gateMode without a gate is a mistake.
 */
export function checkParams(
  fn: string, o: Readonly<Record<string, unknown>>, firstName: string, first: unknown, weight: unknown, gated: boolean, needsGate = true,
): CheckedParams {
  return paramsOf(fn, checkParamOptions(fn, o), firstName, first, weight, gated, needsGate);
}

/**
 * A call's Params from its checked parameter options `p` ({@link checkParamOptions}) and its
 * arrays (as {@link checkParams} takes them; `dim` for the row length when the call's arrays
 * have one of their own, a file's array), checking what depends on them: the arrays' dtypes,
 * the weight's length against the row, what the scalars take of the weight and the row.
 */
export function paramsOf(
  fn: string, p: ParamOptions, firstName: string, first: unknown, weight: unknown, gated: boolean, needsGate = true, dim?: number,
): CheckedParams {
  const { o } = p;
  const act = actDtype(fn, firstName, first, o.dtype);
  // The first matrix before the weight: an error names the first argument that is wrong.
  if (first !== undefined) typed(fn, firstName, first, act, 'options.dtype');
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const rowLength = dimOf(fn, w, dim ?? o.dim);
  // Every call's Params has one shape, its fields in one order (abi.ts blankParams, then wdt),
  // which the call block's writer reads fast: made by spreading another object, each was a slow
  // dictionary, and the one-off call several times slower.
  const params = blankParams() as { -readonly [K in keyof Params]: number };
  scalarParams(fn, o, w, rowLength, params);
  // A half weight of the activations' own dtype: llama rounds what it multiplies to that dtype too.
  const llamaW = p.llama !== 0 && w !== null && wdt === act && act !== DT.float32 ? LLAMA_W : 0;
  params.dim = rowLength;
  params.dtypes = act | p.llama | llamaW;
  params.gate = gateCode(fn, p.gateMode, gated, needsGate);
  params.wdt = wdt;
  params.out_dtype = p.out.code;
  params.quant_scale = p.out.scale;
  return { params, weight: w, act };
}

const QUANT_NAMES = listed(Object.keys(QUANT_DTYPES));

/**
 * options.outDtype (a quantized output: its dtype code, 0 for none) and options.quantScale (its
 * static scale; 0 for one scale per row).
 */
function quantOf(fn: string, outDtype: unknown, quantScale: unknown): { code: number; scale: number } {
  if (outDtype === undefined) {
    if (quantScale !== undefined) throw new TypeError(`${fn}: options.quantScale was given without options.outDtype (${QUANT_NAMES}: the output it scales)`);
    return { code: 0, scale: 0 };
  }
  const d = Object.hasOwn(QUANT_DTYPES, outDtype as string) ? QUANT_DTYPES[outDtype as QuantDtype] : undefined;
  if (d === undefined) {
    throw new TypeError(`${fn}: options.outDtype must be ${QUANT_NAMES} (a quantized output; without it the output has the activations' dtype), got ${describe(outDtype)}`);
  }
  if (quantScale === undefined) return { code: d.code, scale: 0 };
  if (typeof quantScale !== 'number') throw new TypeError(`${fn}: options.quantScale must be a number, got ${describe(quantScale)}`);
  const s = Math.fround(quantScale);
  // Every row is multiplied by 1 / quantScale in float32: it must be finite there too.
  if (!(s > 0) || !Number.isFinite(s) || !Number.isFinite(Math.fround(1 / s))) {
    throw new RangeError(`${fn}: options.quantScale must be > 0 and finite as a float32, with a finite float32 reciprocal (2.9e-39 to 3.4e38), got ${quantScale}`);
  }
  return { code: d.code, scale: quantScale };
}
