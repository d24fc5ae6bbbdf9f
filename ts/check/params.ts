/**
 * The options a call's parameter block is made of (ops.ts's Params: abi.rs's `Params` and the
 * weight's storage), checked one way for every kind of call — the one-off forward and
 * backward, the pool's, a layer's creation — and the option names of each call, derived from
 * these and from the operations' operands (ops.ts), so that no list of keys is written twice.
 * @module
 */
import { Dtype as DT, Gate, LLAMA_W } from '../abi.js';
import type { Data, Op, Params } from '../ops.js';
import type { GateMode } from '../types.js';
import { describe } from './arrays.js';
import { actDtype, castingBits, dimOf, eps, offsetOf, partialOf, weightDtype, weightOf } from './scalars.js';

/** The options every call reads into its Params. */
export const PARAM_KEYS: readonly string[] = ['dim', 'eps', 'offset', 'partial', 'dtype', 'weightDtype', 'castingMode', 'gateMode'];

/**
 * The option names of `op`'s arrays (its operands named `options.*` in ops.ts), all of them or
 * only its inputs.
 */
export function operandKeys(op: Op, inputsOnly = false): string[] {
  return op.operands.filter((o) => o.name.startsWith('options.') && !(inputsOnly && o.out)).map((o) => o.name.slice('options.'.length));
}

const GATE_MODES: readonly GateMode[] = ['after', 'before'];

/** The gate code of options.gateMode for a call with a gate (`gated`), or none; 'after' by default. */
function gateOf(fn: string, v: unknown, gated: boolean, needsGate: boolean): number {
  if (v === undefined && !gated) return Gate.none;
  if (v !== undefined && !GATE_MODES.includes(v as GateMode)) {
    throw new TypeError(`${fn}: options.gateMode must be 'after' or 'before', got ${describe(v)}`);
  }
  if (v !== undefined && !gated && needsGate) {
    throw new TypeError(`${fn}: options.gateMode was given without options.gate (the z whose silu(z) gates the norm)`);
  }
  return !gated ? Gate.none : v === 'before' ? Gate.before : Gate.after;
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
  const act = actDtype(fn, firstName, first, o.dtype);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const llama = castingBits(fn, o.castingMode);
  // A half weight of the activations' own dtype: llama rounds what it multiplies to that dtype too.
  const llamaW = llama !== 0 && w !== null && wdt === act && act !== DT.float32 ? LLAMA_W : 0;
  const gate = gateOf(fn, o.gateMode, gated, needsGate);
  return { params: { dim, stat, eps: e, offset, dtypes: act | llama | llamaW, gate, wdt }, weight: w, act };
}
