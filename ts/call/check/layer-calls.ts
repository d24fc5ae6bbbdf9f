/**
 * The checks of a layer's creation and of its calls: the options a layer's Params are made
 * of, then each call's arrays against the layer's dtypes and row length, the layer's own
 * outputs filling the slots the caller leaves (each operation's module checks its one-off calls).
 * @module
 */
import { Gate } from '../../generated/abi.js';
import type { Data, Params, Placed } from '../op.js';
import { BACKWARD, BACKWARD_PLAIN, backwardArrays } from '../operations/backward.js';
import { FORWARD, FORWARD_PLAIN, forwardArrays, fusedAdd } from '../operations/forward.js';
import type { FloatArray } from '../../types.js';
import { optF32, optQuantized, optTyped } from './arrays.js';
import { gateOf, plainOperands } from './operands.js';
import { options } from './options.js';
import { distinctOutputs } from './overlap.js';
import { checkParams, FORWARD_ONLY_KEYS, operandKeys, PARAM_KEYS } from './params.js';

/** createRmsNorm's checked arguments. */
interface LayerArgs {
  /** The weight as the kernel reads it (half data as a Uint16Array), or null. */
  weight: Data | null;
  dim: number;
  /** The activations' dtype code (DT). */
  act: number;
  /** The kernel's parameters of a call without a gate, and of one with (options.gateMode's). */
  params: Params;
  gated: Params;
  /** The first option only a forward has that the layer was made with, if any: it has no backward. */
  forwardOnly: string | undefined;
}

/**
 * Checks createRmsNorm's arguments: the weight (or null) and the options a call's Params are
 * made of, as the forward and backward check them (the activations' dtype is options.dtype,
 * float32 when absent: there is no x yet to tell).
 */
export function checkLayerOptions(fn: string, weight: unknown, opts: unknown): LayerArgs {
  const o = options(fn, opts, PARAM_KEYS);
  const { params, weight: w, act } = checkParams(fn, o, 'x', undefined, weight, true, false);
  const forwardOnly = FORWARD_ONLY_KEYS.find((k) => o[k] !== undefined);
  return { weight: w, dim: params.dim, act, params: Object.freeze({ ...params, gate: Gate.none }), gated: Object.freeze(params), forwardOnly };
}

/** A TypeError for the backward of a layer made with `forwardOnly`, an option only a forward has (a quantized output has no gradient). */
export function noBackward(fn: string, forwardOnly: string | undefined): void {
  if (forwardOnly !== undefined) throw new TypeError(`${fn}: the layer was made with options.${forwardOnly}, which only a forward has: it has no backward`);
}

// A layer owns rstd, the row scales, dx, dweight and dgate; its calls take the other arrays.
export const LAYER_FORWARD_KEYS: readonly string[] = operandKeys(FORWARD).filter((k) => k !== 'rstd' && k !== 'rowScales');
export const LAYER_BACKWARD_KEYS: readonly string[] = operandKeys(BACKWARD, true);
const LAYER_DTN = "the layer's dtype";

/** A layer forward's arrays: in {@link FORWARD}'s operand order, and `options.out` as given (null: the layer's own array). */
interface LayerForwardArgs {
  arrs: (Placed | null)[];
  outGiven: FloatArray | Placed | null;
}

/** What a layer's calls are checked against: its dtypes' codes and row length. */
interface LayerShape {
  act: number;
  wdt: number;
  dim: number;
}

/**
 * A layer forward's arrays: its `x` (of the layer's dtype), weight, own `rstd` and row scales,
 * and its options (`out`, `residual`, `residualOut`, `gate`, as {@link rmsNorm}'s; without
 * `out`, y goes to `y.take(x.length)`, the layer's own array) checked against them; `outDtype`: the layer's
 * quantized output's code, or 0. Unknown keys are a TypeError.
 */
export function checkLayerForward(
  fn: string, opts: unknown, xa: Data, layer: LayerShape, w: Data | null, rstd: Float32Array, rowScales: Float32Array | null, y: { take(n: number): Placed }, outDtype = 0,
): LayerForwardArgs {
  const { act } = layer;
  // No options: the layer's own arrays, nothing to check.
  if (opts === undefined) return { arrs: forwardArrays(xa, null, w, y.take(xa.length), null, rstd, null, rowScales), outGiven: null };
  const o = options(fn, opts, LAYER_FORWARD_KEYS);
  const out = outDtype !== 0
    ? optQuantized(fn, 'options.out', o.out, xa.length, 'x.length', outDtype)
    : optTyped(fn, 'options.out', o.out, xa.length, 'x.length', act, LAYER_DTN);
  distinctOutputs(fn, 'options.out', out, 'the layer\'s rstd', rstd);
  const { residual, h } = fusedAdd(fn, o, xa, act, LAYER_DTN, out, rstd, w);
  const gate = gateOf(fn, o.gate, xa, act, LAYER_DTN, residual !== null, 'options.residual');
  const arrs = forwardArrays(xa, residual, w, out ?? y.take(xa.length), h, rstd, gate, rowScales);
  if (FORWARD_PLAIN.length) plainOperands(fn, FORWARD, FORWARD_PLAIN, arrs, o, { n: xa.length, rows: rstd.length, dim: layer.dim, act, dtn: LAYER_DTN, wdt: layer.wdt });
  return { arrs, outGiven: out === null ? null : (o.out as FloatArray | Placed) };
}

/**
 * A layer backward's arrays in {@link BACKWARD}'s operand order: `dy`, `x`, the weight and the
 * layer's own outputs (`dx` and `dgate` taken once the options are checked, dgate only with a
 * gate; `dweight` with a weight), and the options (the forward's `rstd`, the gradient
 * arriving on the residual stream, the gate).
 */
export function checkLayerBackward(
  fn: string, opts: unknown, dya: Data, xa: Data, layer: LayerShape, rows: number, w: Data | null,
  dx: { take(n: number): Placed }, dweight: Data | null, dgate: { take(n: number): Placed },
): (Placed | null)[] {
  const { act } = layer;
  const n = xa.length;
  // No options: the layer's own arrays, nothing to check.
  if (opts === undefined) return backwardArrays(dya, xa, w, null, null, dx.take(n) as Data, dweight, null, null);
  const o = options(fn, opts, LAYER_BACKWARD_KEYS);
  const dresidual = optTyped(fn, 'options.dresidual', o.dresidual, n, 'x.length', act, LAYER_DTN);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  const gate = gateOf(fn, o.gate, xa, act, LAYER_DTN, dresidual !== null, 'options.dresidual');
  const dz = gate ? (dgate.take(n) as Data) : null;
  const arrs = backwardArrays(dya, xa, w, rstd, dresidual, dx.take(n) as Data, dweight, gate, dz);
  if (BACKWARD_PLAIN.length) plainOperands(fn, BACKWARD, BACKWARD_PLAIN, arrs, o, { n: xa.length, rows, dim: layer.dim, act, dtn: LAYER_DTN, wdt: layer.wdt });
  return arrs;
}
