/**
 * The arguments of `normalizeFile`, checked before any file is opened: types, ranges, and
 * the option keys (the same for `normalizeDataset`, which adds its own).
 * @module
 */
import { ARRAYS_TAKEN, describe, dtypesOf } from '../check/arrays.js';
import { options as checkOptions } from '../check/options.js';
import { checkParams, FILE_PARAM_KEYS, FORWARD_ONLY_KEYS, paramOptions } from '../check/params.js';
import { MAX_THREADS } from '../pool/api.js';
import type { Dtype } from '../types.js';
import { arrayTag, isQuant, KERNEL_DTYPES, listed, OUT_DTYPES, type OutDtype } from '../dtypes.js';
import { FORMAT_NAMES, type FormatName } from './formats/index.js';
import type { FsPath } from './paths.js';
import type { NormalizeFileOptions } from './types.js';

/**
 * The options besides the weight that a file's output depends on: the parameters, a
 * forward's own (a file's output is a forward's), its format and the arrays normalized. A
 * dataset's resume record holds them.
 */
export const OUTPUT_KEYS: readonly string[] = [...FILE_PARAM_KEYS, ...FORWARD_ONLY_KEYS, 'format', 'tensors'];

/** The options of a file's normalization that a dataset passes on to each of its files: those, the weight, and how the work is done. */
export const PER_FILE_KEYS: readonly string[] = [...OUTPUT_KEYS, 'weight', 'weightTensor', 'threads', 'pool', 'chunkBytes', 'checksum', 'durable', 'signal'];

/** The options `normalizeFile` has for one file alone, which a dataset has not (its own `onProgress` is per run). */
export const ONE_FILE_KEYS = ['rstd', 'range', 'inPlace', 'onProgress'] as const;

/** Every option of `normalizeFile`. */
export const FILE_KEYS: readonly string[] = [...PER_FILE_KEYS, ...ONE_FILE_KEYS];

/** normalizeFile's options, checked. */
export interface FileArgs {
  o: NormalizeFileOptions;
  dim: number | undefined;
  dtype: Dtype | undefined;
  weightDtype: Dtype | undefined;
  outDtype: OutDtype | undefined;
  chunkBytes: number | undefined;
  format: FormatName | undefined;
  range: readonly [number, number] | undefined;
  tensors: readonly string[] | undefined;
}

/** Whether `p` is a path: a string, or a Buffer of a name's bytes. */
export const isPath = (p: unknown): p is FsPath => (typeof p === 'string' && p.length > 0) || (Buffer.isBuffer(p) && p.length > 0);

/** A dtype option, one of `allowed`; undefined when absent. */
function dtypeOpt<T extends string>(fn: string, name: string, v: unknown, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new TypeError(`${fn}: options.${name} must be ${listed(allowed)}, got ${describe(v)}`);
  return v as T;
}

function positive(fn: string, name: string, v: unknown, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.${name} must be a number, got ${describe(v)}`);
  if (!Number.isInteger(v) || v < 1 || v > max) throw new RangeError(`${fn}: options.${name} must be an integer from 1 to ${max}, got ${v}`);
  return v;
}

/** options.range, checked: two integers, 0 ≤ start < end (the end against the file later). */
function rangeOpt(v: unknown): readonly [number, number] | undefined {
  if (v === undefined) return undefined;
  const ok = Array.isArray(v) && v.length === 2 && v.every((n) => Number.isSafeInteger(n) && n >= 0) && v[0] < v[1];
  if (!ok) throw new RangeError(`normalizeFile: options.range must be [start, end], integers with 0 <= start < end, got ${describe(v)}`);
  return v as [number, number];
}

function booleanOpt(fn: string, o: Readonly<Record<string, unknown>>, name: string): void {
  if (o[name] !== undefined && typeof o[name] !== 'boolean') throw new TypeError(`${fn}: options.${name} must be a boolean, got ${describe(o[name])}`);
}

/** Checks the options that need no file (`fn` names the function in messages, `keys` its options). */
export function checkFileOptions(fn: string, options: unknown, keys: readonly string[]): FileArgs {
  const o = checkOptions(fn, options, keys) as NormalizeFileOptions;
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new TypeError(`${fn}: options.signal must be an AbortSignal, got ${describe(o.signal)}`);
  o.signal?.throwIfAborted();
  const format = o.format;
  if (format !== undefined && !FORMAT_NAMES.includes(format)) throw new RangeError(`${fn}: options.format must be ${listed(FORMAT_NAMES)}, got ${describe(format)}`);
  const tensors = o.tensors;
  if (tensors !== undefined && (!Array.isArray(tensors) || tensors.length === 0 || !tensors.every((t) => typeof t === 'string'))) {
    throw new TypeError(`${fn}: options.tensors must be a non-empty array of array names, got ${describe(tensors)}`);
  }
  for (const k of ['weightTensor'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'string') throw new TypeError(`${fn}: options.${k} must be a string, got ${describe(o[k])}`);
  }
  for (const k of ['durable', 'checksum', 'inPlace']) booleanOpt(fn, o as Record<string, unknown>, k);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') throw new TypeError(`${fn}: options.onProgress must be a function, got ${describe(o.onProgress)}`);
  const w = o.weight;
  if (w !== undefined && w !== null && !isPath(w) && dtypesOf(arrayTag(w)).length === 0) {
    throw new TypeError(`${fn}: options.weight must be ${ARRAYS_TAKEN}, or a path, got ${describe(w)}`);
  }
  if (o.rstd !== undefined && !isPath(o.rstd)) throw new TypeError(`${fn}: options.rstd must be a path, got ${describe(o.rstd)}`);
  // The parameters no file settles, checked now, once, by the calls' own check (on a stand-in
  // row of one element): a bad one is refused before any file is opened or made.
  const quant = isQuant(o.outDtype) ? o.outDtype : undefined;
  const standIn = { ...paramOptions(o as Record<string, unknown>), dim: 1, dtype: undefined, weightDtype: undefined, outDtype: quant, quantScale: o.quantScale };
  checkParams(fn, standIn, 'x', undefined, w === undefined || w === null ? null : new Float32Array(1), false);
  positive(fn, 'threads', o.threads, MAX_THREADS);
  return {
    o,
    dim: positive(fn, 'dim', o.dim, Number.MAX_SAFE_INTEGER),
    dtype: dtypeOpt(fn, 'dtype', o.dtype, KERNEL_DTYPES),
    weightDtype: dtypeOpt(fn, 'weightDtype', o.weightDtype, KERNEL_DTYPES),
    outDtype: dtypeOpt(fn, 'outDtype', o.outDtype, OUT_DTYPES),
    chunkBytes: positive(fn, 'chunkBytes', o.chunkBytes, 2 ** 30),
    format,
    range: rangeOpt(o.range),
    tensors,
  };
}

