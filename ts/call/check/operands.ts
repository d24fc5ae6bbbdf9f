/**
 * The checks every operation's operands share: an operand with no rule of its own, checked by
 * its shape alone (its record in the operation's module), and the gate's input, which the
 * forward and the backward both take.
 * @module
 */
import { MATRIX, PER_ROW, type Data, type Op, type Placed } from '../op.js';
import { optF32, optTyped } from './arrays.js';
import { distinctOutputs } from './overlap.js';

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

/** The operands of `op` not in `ruled` (those its own check takes by name): checked by {@link plainOperands}. */
export const plainOf = (op: Op, ruled: readonly number[]): readonly number[] => op.operands.map((_, i) => i).filter((i) => !ruled.includes(i));

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
