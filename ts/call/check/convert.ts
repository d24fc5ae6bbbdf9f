/**
 * The arguments of the half-precision conversions: the input, and `options.out`, each of the
 * array the dtype table gives.
 * @module
 */
import { arrayTag, BY_CODE, type Data } from '../../glue/dtypes.js';
import type { HalfBits } from '../../types.js';
import { describe, heldIn } from './arrays.js';
import { options as checkOptions } from './options.js';
import { overlaps } from './overlap.js';

/** Options of the half-precision conversions. */
export interface ConvertOptions<T extends Float32Array | HalfBits> {
  /** Where the results go: as many elements as the input, not overlapping it. Default: a new array. */
  out?: T;
}
const CONVERT_KEYS: readonly string[] = ['out'];

/** A conversion's `options.out`: the array of dtype `dt`'s facts, checked against its input `src` (length, overlap); undefined when absent. */
export function convertOut<T extends Data>(fn: string, options: unknown, src: Data, dt: number): T | undefined {
  const out = checkOptions(fn, options, CONVERT_KEYS).out;
  if (out === undefined) return undefined;
  if (arrayTag(out) !== BY_CODE[dt]!.array) {
    throw new TypeError(`${fn}: options.out must be a ${BY_CODE[dt]!.array}, got ${describe(out)}`);
  }
  const o = out as T;
  if (o.length !== src.length) throw new RangeError(`${fn}: options.out.length must be ${src.length} (the input's), got ${o.length}`);
  if (overlaps(o, src)) throw new RangeError(`${fn}: options.out must not overlap the input`);
  return o;
}

/** Checks a conversion's input: the array of dtype `dt`'s facts (a TypeError naming `fn` otherwise). */
export function checkConvertInput<T extends Data>(fn: string, v: unknown, dt: number): T {
  if (arrayTag(v) !== BY_CODE[dt]!.array) {
    throw new TypeError(`${fn}: the input must be ${heldIn(dt)}, got ${describe(v)}`);
  }
  return v as T;
}
