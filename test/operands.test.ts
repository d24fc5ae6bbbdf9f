/**
 * An operand with no rule of its own is one record in ops.ts (its name and whether it is
 * written) and its extent in abi.rs: the call checks read it from the options by its name and
 * check it by its shape alone, in the operation's operand order. Here a forward with two more
 * operands — a row input (a bias, of the weight's dtype) and a per-row output — is checked
 * the way the real ones are.
 */
import { describe, expect, it } from 'vitest';
import { PER_ROW, ROW, type Op } from '../dist/call/op.js';
import { FORWARD } from '../dist/call/operations/forward.js';
import { Dtype } from '../dist/generated/abi.js';
import { plainOperands } from '../dist/call/check/operands.js';

const op: Op = {
  ...FORWARD,
  operands: [...FORWARD.operands, { name: 'options.bias', shape: ROW, out: false, alias: [] }, { name: 'options.extra', shape: PER_ROW, out: true, alias: [] }],
};
const ROWS = 2;
const DIM = 4;
const sizes: { n: number; rows: number; dim: number; act: number; dtn: string; wdt: number } = { n: ROWS * DIM, rows: ROWS, dim: DIM, act: Dtype.float32, dtn: 'options.dtype', wdt: Dtype.float32 };
/** The two new operands' slots. */
const NEW = [FORWARD.operands.length, FORWARD.operands.length + 1];
/** `op`'s arrays: the real operands as the named checks give them, then the new ones from `o`, checked by their shape. */
function inOrder(fn: string, o: Op, names: Record<string, unknown>, opts: Record<string, unknown>, z: typeof sizes) {
  const arrs = o.operands.map((d) => (names[d.name] ?? null) as Float32Array | null);
  plainOperands(fn, o, NEW, arrs, opts, z);
  return arrs;
}
/** The real operands, as the named checks would give them. */
function checked() {
  const buf = new Float32Array(64);
  return {
    names: {
      x: new Float32Array(ROWS * DIM), weight: new Float32Array(DIM), 'options.out': null, 'options.rstd': buf.subarray(0, ROWS), 'options.rowScales': null,
      'options.residual': null, 'options.residualOut': null, 'options.gate': null,
    },
    buf,
  };
}

describe('an operand with no rule of its own: checked by its record alone', () => {
  it('taken from options.NAME into its slot, in operand order; absent: null', () => {
    const { names } = checked();
    const bias = new Float32Array(DIM);
    const arrs = inOrder('f', op, names, { bias }, sizes);
    expect(arrs).toHaveLength(FORWARD.operands.length + 2);
    expect(arrs[FORWARD.operands.length]).toBe(bias);
    expect(arrs[FORWARD.operands.length + 1]).toBeNull();
    expect(arrs[0]).toBe(names.x);
    expect(arrs[5]).toBe(names['options.rstd']);
  });

  it('its length by its shape, its type by its dtype role, an output apart from the others', () => {
    const { names, buf } = checked();
    expect(() => inOrder('f', op, names, { bias: new Float32Array(DIM + 1) }, sizes)).toThrow(new RangeError('f: options.bias.length must be 4 (dim), got 5'));
    expect(() => inOrder('f', op, names, { bias: [1, 2, 3, 4] }, sizes)).toThrow(TypeError);
    expect(() => inOrder('f', op, names, { bias: [1, 2, 3, 4] }, sizes)).toThrow(/^f: options\.bias must be a Float32Array/);
    expect(() => inOrder('f', op, names, { bias: new Uint16Array(DIM) }, sizes)).toThrow(TypeError);
    expect(() => inOrder('f', op, names, { extra: new Float32Array(ROWS + 1) }, sizes)).toThrow(new RangeError('f: options.extra.length must be 2 (one per row), got 3'));
    expect(() => inOrder('f', op, names, { extra: buf.subarray(1, 1 + ROWS) }, sizes)).toThrow(new RangeError('f: options.rstd and options.extra must not overlap'));
    expect(inOrder('f', op, names, { extra: buf.subarray(ROWS, 2 * ROWS) }, sizes)[FORWARD.operands.length + 1]).toEqual(new Float32Array(ROWS));
    // A half bias with a half weight: the weight's dtype decides.
    const half = { ...sizes, wdt: Dtype.bfloat16 };
    expect(() => inOrder('f', op, names, { bias: new Float32Array(DIM) }, half)).toThrow(TypeError);
    expect(inOrder('f', op, names, { bias: new Uint16Array(DIM) }, half)[FORWARD.operands.length]).toBeInstanceOf(Uint16Array);
  });
});

describe('a layer checks its options in the order the one-off call does', () => {
  it('backward: dresidual, then rstd, then the gate (as rmsNormBackward); the layer works after the error', async () => {
    const { loadRmsNorm } = await import('../dist/index.js');
    const m = await loadRmsNorm('simd');
    const layer = m.createLayer(new Float32Array(DIM).fill(1));
    const x = new Float32Array(ROWS * DIM).fill(1);
    const before = layer.backward(x, x).dx;
    expect(() => layer.backward(x, x, { rstd: new Float32Array(ROWS + 1), gate: new Float32Array(1) })).toThrow(
      new RangeError('layer.backward: options.rstd.length must be 2 (one per row), got 3'),
    );
    expect(() => m.rmsNormBackward(x, x, new Float32Array(DIM).fill(1), { rstd: new Float32Array(ROWS + 1), gate: new Float32Array(1) })).toThrow(
      new RangeError('rmsNormBackward: options.rstd.length must be 2 (one per row), got 3'),
    );
    expect(Array.from(layer.backward(x, x).dx)).toEqual(Array.from(before));
  });
});
