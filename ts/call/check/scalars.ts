/**
 * The rules of the options that say how a call's arrays are stored and how long their rows are
 * (dtype, weightDtype, castingMode, dim) and how they become the kernel's Params; the scalar
 * options' are scalar-options.ts's table.
 * @module
 */
import { Casting, DTYPE_FACTS, Dtype as DT, LLAMA } from '../../generated/abi.js';
import { arrayTag, listed } from '../../glue/dtypes.js';
import type { Data } from '../op.js';
import type { CastingMode, Dtype } from '../../types.js';
import { describe, DTYPE_NAMES, dtypesOf, typed } from './arrays.js';

/** The half dtypes' names (abi.rs's DTYPES with `half`), as messages list them. */
const HALF_NAMES = listed(DTYPE_FACTS.filter((d) => d.half).map((d) => d.name));

/** A half dtype's code (abi.ts Dtype) for the conversion functions; a TypeError names `fn` otherwise. */
export function halfDtypeCode(fn: string, v: unknown): number {
  const i = DTYPE_NAMES.indexOf(v as Dtype);
  if (i >= 0 && DTYPE_FACTS[i]!.half) return i;
  throw new TypeError(`${fn}: dtype must be ${HALF_NAMES}, got ${describe(v)}`);
}

/** A dtype option's code (abi.ts Dtype), or -1 when absent. */
function dtypeOption(fn: string, name: string, v: unknown): number {
  if (v === undefined) return -1;
  const i = DTYPE_NAMES.indexOf(v as Dtype);
  if (i < 0) throw new TypeError(`${fn}: ${name} must be ${listed(DTYPE_NAMES)}, got ${describe(v)}`);
  return i;
}

/** The activations' dtype code: options.dtype, or what `first` (x, or dy) says by its type. */
export function actDtype(fn: string, first: string, v: unknown, opt: unknown): number {
  const d = dtypeOption(fn, 'options.dtype', opt);
  return d >= 0 ? d : byArray(fn, first, v, 'options.dtype', -1);
}

/** The weight's dtype code: options.weightDtype, else what its type says (an array of several: the activations' `act`). */
export function weightDtype(fn: string, w: unknown, opt: unknown, act: number): number {
  const d = dtypeOption(fn, 'options.weightDtype', opt);
  if (d >= 0) return d;
  return w === null || w === undefined ? DT.float32 : byArray(fn, 'weight', w, 'options.weightDtype', act);
}

/**
 * The dtype array `v` (argument `name`) holds by its type: the one its type holds, or `act`
 * among several (a Uint16Array of bits), else a TypeError asking for option `opt`. float32 for
 * an array of no dtype: typed() reports what is wrong with it.
 */
function byArray(fn: string, name: string, v: unknown, opt: string, act: number): number {
  const tag = arrayTag(v);
  const codes = dtypesOf(tag);
  if (codes.length === 1) return codes[0]!;
  if (codes.length === 0) return DT.float32;
  if (codes.includes(act)) return act;
  throw new TypeError(`${fn}: ${name} is a ${tag}: say what it holds with ${opt} (${listed(codes.map((c) => DTYPE_NAMES[c]!))})`);
}

/** The castingMode option's values (abi.rs's Casting). */
export const CASTING_MODES = Object.keys(Casting) as readonly CastingMode[];

/** The castingMode option's bits for the kernel's dtypes word. */
export function castingBits(fn: string, v: unknown): number {
  if (v === undefined) return 0;
  if (!CASTING_MODES.includes(v as CastingMode)) throw new TypeError(`${fn}: options.castingMode must be ${listed(CASTING_MODES)}, got ${describe(v)}`);
  return Casting[v as CastingMode] === Casting.llama ? LLAMA : 0;
}

/** The weight as placed (see typed), or null when it is null or absent. */
export function weightOf(fn: string, weight: unknown, wdt = 0): Data | null {
  return weight === null || weight === undefined ? null : typed(fn, 'weight', weight, wdt, 'options.weightDtype');
}

/** options.dim by its own rule: a positive integer (of at most 2^32 − 1). */
export function checkDimOption(fn: string, dimOpt: unknown): void {
  if (typeof dimOpt !== 'number') throw new TypeError(`${fn}: options.dim must be a number, got ${describe(dimOpt)}`);
  if (!Number.isInteger(dimOpt) || dimOpt < 1 || dimOpt > 0xffffffff) {
    throw new RangeError(`${fn}: options.dim must be a positive integer, got ${dimOpt}`);
  }
}

/** The dtype options' names by their own rule (each one of the storage dtypes' names). */
export function checkDtypeNames(fn: string, o: Readonly<Record<string, unknown>>): void {
  dtypeOption(fn, 'options.dtype', o.dtype);
  dtypeOption(fn, 'options.weightDtype', o.weightDtype);
}

/** The row length (options.dim, checked with {@link checkDimOption}, or the weight's), checked against the weight (`w` from {@link weightOf}). */
export function dimOf(fn: string, w: Data | null, dimOpt: unknown): number {
  if (dimOpt === undefined) {
    if (w === null) throw new TypeError(`${fn}: options.dim is required when weight is null`);
    if (w.length === 0) throw new RangeError(`${fn}: weight.length must be at least 1, got 0`);
    return w.length;
  }
  checkDimOption(fn, dimOpt);
  if (w !== null && w.length !== dimOpt) {
    throw new RangeError(`${fn}: weight.length (${w.length}) must equal options.dim (${dimOpt})`);
  }
  return dimOpt as number;
}
