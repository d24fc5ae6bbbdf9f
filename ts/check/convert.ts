/**
 * The arguments of the half-precision conversions: the input's kind, and `options.out`.
 * @module
 */
import type { Data } from '../ops.js';
import { describe, KIND_F32, kindOf } from './arrays.js';
import { options as checkOptions } from './options.js';
import { overlaps } from './overlap.js';

/** Options of the half-precision conversions. */
export interface ConvertOptions<T extends Float32Array | Uint16Array> {
  /** Where the results go: as many elements as the input, not overlapping it. Default: a new array. */
  out?: T;
}
const CONVERT_KEYS: readonly string[] = ['out'];

/** A conversion's `options.out`, checked against its input `src` (kind, length, overlap); undefined when absent. */
export function convertOut<T extends Float32Array | Uint16Array>(fn: string, options: unknown, src: Data, kind: number): T | undefined {
  const out = checkOptions(fn, options, CONVERT_KEYS).out;
  if (out === undefined) return undefined;
  if (kindOf(out) !== kind) {
    throw new TypeError(`${fn}: options.out must be a ${kind === KIND_F32 ? 'Float32Array' : 'Uint16Array'}, got ${describe(out)}`);
  }
  const o = out as T;
  if (o.length !== src.length) throw new RangeError(`${fn}: options.out.length must be ${src.length} (the input's), got ${o.length}`);
  if (overlaps(o, src)) throw new RangeError(`${fn}: options.out must not overlap the input`);
  return o;
}
