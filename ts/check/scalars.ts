/**
 * The rules of each scalar option (dim, eps, offset, partial) and of the dtype options, and
 * how they become the kernel's Params.
 * @module
 */
import { Casting, DTYPE_FACTS, Dtype as DT, LLAMA } from '../abi.js';
import { arrayTag, listed } from '../dtypes.js';
import type { Data } from '../ops.js';
import type { CastingMode, Dtype } from '../types.js';
import { describe, DTYPE_NAMES, dtypesOf, typed } from './arrays.js';

/** eps when none is given. */
export const DEFAULT_EPS = 1e-6;

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

/** The row length, checked against the weight (`w` from {@link weightOf}). */
export function dimOf(fn: string, w: Data | null, dimOpt: unknown): number {
  if (dimOpt === undefined) {
    if (w === null) throw new TypeError(`${fn}: options.dim is required when weight is null`);
    if (w.length === 0) throw new RangeError(`${fn}: weight.length must be at least 1, got 0`);
    return w.length;
  }
  if (typeof dimOpt !== 'number') throw new TypeError(`${fn}: options.dim must be a number, got ${describe(dimOpt)}`);
  if (!Number.isInteger(dimOpt) || dimOpt < 1 || dimOpt > 0xffffffff) {
    throw new RangeError(`${fn}: options.dim must be a positive integer, got ${dimOpt}`);
  }
  if (w !== null && w.length !== dimOpt) {
    throw new RangeError(`${fn}: weight.length (${w.length}) must equal options.dim (${dimOpt})`);
  }
  return dimOpt;
}

/** options.eps: DEFAULT_EPS when absent; a number ≥ 0 that stays finite as a float32. */
export function eps(fn: string, v: unknown): number {
  if (v === undefined) return DEFAULT_EPS;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.eps must be a number, got ${describe(v)}`);
  // eps is used as float32: a value finite in float64 but beyond float32's range (> 3.4e38)
  // would become +Inf there and silently zero every row.
  if (!Number.isFinite(v) || v < 0 || !Number.isFinite(Math.fround(v))) {
    throw new RangeError(`${fn}: options.eps must be >= 0 and finite as a float32 (at most 3.4028234663852886e38), got ${v}`);
  }
  return v;
}

/** options.offset: 0 when absent; finite as a float32, and not 0 only with a weight `w`. */
export function offsetOf(fn: string, v: unknown, w: Data | null): number {
  if (v === undefined) return 0;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.offset must be a number, got ${describe(v)}`);
  if (!Number.isFinite(Math.fround(v))) {
    throw new RangeError(`${fn}: options.offset must be finite as a float32 (|offset| at most 3.4028234663852886e38), got ${v}`);
  }
  if (v !== 0 && w === null) {
    throw new RangeError(`${fn}: options.offset (${v}) needs a weight (the gain is offset + weight), but weight is null`);
  }
  return v;
}

/**
 * The number of leading elements rstd is estimated from: the smallest `k` with
 * `k / dim ≥ partial`. Not bare `Math.ceil(partial * dim)`: `0.1 * 30` is 3.0000000000000004
 * in float64, whose ceiling would be 4 where 3/30 is exactly the float64 0.1.
 */
export function statOf(partial: number, dim: number): number {
  let k = Math.min(dim, Math.max(1, Math.ceil(partial * dim)));
  while (k > 1 && (k - 1) / dim >= partial) k--;
  while (k < dim && k / dim < partial) k++;
  return k;
}

/** options.partial as the element count rstd is estimated from (`dim` when absent). */
export function partialOf(fn: string, v: unknown, dim: number): number {
  if (v === undefined) return dim;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.partial must be a number, got ${describe(v)}`);
  if (!(v > 0 && v <= 1)) {
    throw new RangeError(`${fn}: options.partial must be a number in (0, 1] (the fraction of each row rstd is estimated from), got ${v}`);
  }
  return statOf(v, dim);
}

