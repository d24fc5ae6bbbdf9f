/**
 * The arguments of `normalizeFile`, checked before any file is opened: types, ranges, and
 * the option keys (the same for `normalizeDataset`, which adds its own).
 * @module
 */
import { ARRAYS_TAKEN, describe, dtypesOf } from '../../call/check/arrays.js';
import { options as checkOptions } from '../../call/check/options.js';
import { checkParamOptions, FILE_PARAM_KEYS, FORWARD_ONLY_KEYS, paramOptions, paramsOf, type ParamOptions } from '../../call/check/params.js';
import { isPool } from '../../pool/caller/pool.js';
import { MAX_THREADS } from '../../pool/api.js';
import type { Dtype } from '../../types.js';
import { arrayTag, isQuant, KERNEL_DTYPES, listed, OUT_DTYPES, type OutDtype } from '../../glue/dtypes.js';
import { FORMAT_NAMES, type FormatName } from '../formats/index.js';
import type { FsPath } from '../io/paths.js';
import type { NormalizeFileOptions } from '../types.js';

/** Whether `p` is a path: a string, or a Buffer of a name's bytes. */
export const isPath = (p: unknown): p is FsPath => (typeof p === 'string' && p.length > 0) || (Buffer.isBuffer(p) && p.length > 0);

/** A file option's rule: returns when `v` (given, not undefined) is fine, else throws naming `what` (`options.NAME`). */
export type Rule = (fn: string, what: string, v: unknown) => void;

/** A rule of a TypeError when `ok(v)` is false: `must be ${expected}`. */
const typeRule = (expected: string, ok: (v: unknown) => boolean): Rule => (fn, what, v) => {
  if (!ok(v)) throw new TypeError(`${fn}: ${what} must be ${expected}, got ${describe(v)}`);
};

/** An integer from 1 to `max` (a TypeError for a non-number, a RangeError out of range). */
const positive = (max: number): Rule => (fn, what, v) => {
  if (typeof v !== 'number') throw new TypeError(`${fn}: ${what} must be a number, got ${describe(v)}`);
  if (!Number.isInteger(v) || v < 1 || v > max) throw new RangeError(`${fn}: ${what} must be an integer from 1 to ${max}, got ${v}`);
};

/** The rules of a boolean option and of a function (a callback), for the file functions' options and a dataset's. */
export const boolean = typeRule('a boolean', (v) => typeof v === 'boolean');
export const callback = typeRule('a function', (v) => typeof v === 'function');

/**
 * normalizeFile's options besides the parameters (which `checkParams` checks), each once: its
 * rule, whether a dataset passes it on to each of its files (`each`; the others are for one
 * file alone — a dataset's own `onProgress` is per run), and whether the output depends on it
 * (`output`, for a dataset's resume record; the weight is recorded by its hash).
 */
const FILE_OPTIONS = {
  signal: {
    each: true, output: false,
    rule: (fn: string, what: string, v: unknown) => {
      if (!(v instanceof AbortSignal)) throw new TypeError(`${fn}: ${what} must be an AbortSignal, got ${describe(v)}`);
      v.throwIfAborted();
    },
  },
  weight: { each: true, output: false, rule: typeRule(`${ARRAYS_TAKEN}, or a path`, (v) => v === null || isPath(v) || dtypesOf(arrayTag(v)).length > 0) },
  weightTensor: { each: true, output: false, rule: typeRule('a string', (v) => typeof v === 'string') },
  format: {
    each: true, output: true,
    rule: (fn: string, what: string, v: unknown) => {
      if (!FORMAT_NAMES.includes(v as FormatName)) throw new RangeError(`${fn}: ${what} must be ${listed(FORMAT_NAMES)}, got ${describe(v)}`);
    },
  },
  tensors: {
    each: true, output: true,
    rule: typeRule('a non-empty array of array names', (v) => Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'string')),
  },
  threads: { each: true, output: false, rule: positive(MAX_THREADS) },
  pool: { each: true, output: false, rule: typeRule('a pool createPool made', isPool) },
  chunkBytes: { each: true, output: false, rule: positive(2 ** 30) },
  checksum: { each: true, output: false, rule: boolean },
  durable: { each: true, output: false, rule: boolean },
  rstd: { each: false, output: false, rule: typeRule('a path', isPath) },
  range: {
    each: false, output: false,
    rule: (fn: string, what: string, v: unknown) => {
      const ok = Array.isArray(v) && v.length === 2 && v.every((n) => Number.isSafeInteger(n) && n >= 0) && v[0] < v[1];
      if (!ok) throw new RangeError(`${fn}: ${what} must be [start, end], integers with 0 <= start < end, got ${describe(v)}`);
    },
  },
  inPlace: { each: false, output: false, rule: boolean },
  onProgress: { each: false, output: false, rule: callback },
} as const satisfies Record<string, { each: boolean; output: boolean; rule: Rule }>;

type FileOption = keyof typeof FILE_OPTIONS;
const FILE_OPTION_KEYS = Object.keys(FILE_OPTIONS) as FileOption[];

/** The options `normalizeFile` has for one file alone, which a dataset has not. */
export type OneFileKey = { [K in FileOption]: (typeof FILE_OPTIONS)[K]['each'] extends false ? K : never }[FileOption];

/**
 * The options besides the weight that a file's output depends on: the parameters, a
 * forward's own (a file's output is a forward's), and those the table marks. A dataset's
 * resume record holds them.
 */
export const OUTPUT_KEYS: readonly string[] = [...FILE_PARAM_KEYS, ...FORWARD_ONLY_KEYS, ...FILE_OPTION_KEYS.filter((k) => FILE_OPTIONS[k].output)];

/**
 * The parameter options of a file's calls (forwards without a gate), as given: the file's
 * `outDtype` is its output's storage, which a call takes only when it is a quantized one
 * ({@link callParams}).
 */
const CALL_KEYS: readonly string[] = [...FILE_PARAM_KEYS, ...FORWARD_ONLY_KEYS];

/** The parameter options of a file's calls in `o`, to pass on whole: with `outDtype` only when it is quantized. */
function callParams(o: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const r = paramOptions(o, CALL_KEYS);
  if (!isQuant(r.outDtype as string | undefined)) delete r.outDtype;
  return r;
}

/** The options of a file's normalization that a dataset passes on to each of its files. */
export const PER_FILE_KEYS: readonly string[] = [...CALL_KEYS, ...FILE_OPTION_KEYS.filter((k) => FILE_OPTIONS[k].each)];

/** Every option of `normalizeFile`. */
export const FILE_KEYS: readonly string[] = [...CALL_KEYS, ...FILE_OPTION_KEYS];

/** normalizeFile's options, checked (once per run: a dataset hands its files these). */
export interface FileArgs {
  o: NormalizeFileOptions;
  /** The parameter options of the file's calls, checked: each array's call is made of them (paramsOf). */
  params: ParamOptions;
  dim: number | undefined;
  dtype: Dtype | undefined;
  weightDtype: Dtype | undefined;
  outDtype: OutDtype | undefined;
  chunkBytes: number | undefined;
  format: FormatName | undefined;
  range: readonly [number, number] | undefined;
  tensors: readonly string[] | undefined;
}

/** A dtype option, one of `allowed`; undefined when absent. */
function dtypeOpt<T extends string>(fn: string, name: string, v: unknown, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new TypeError(`${fn}: options.${name} must be ${listed(allowed)}, got ${describe(v)}`);
  return v as T;
}

/** Checks the options that need no file (`fn` names the function in messages, `keys` its options). */
export function checkFileOptions(fn: string, options: unknown, keys: readonly string[]): FileArgs {
  const o = checkOptions(fn, options, keys) as NormalizeFileOptions;
  for (const k of FILE_OPTION_KEYS) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) FILE_OPTIONS[k].rule(fn, `options.${k}`, v);
  }
  const w = o.weight;
  // The parameter options, checked now, once, by the calls' own rules; what they take of a call's
  // arrays, on a stand-in row of one element: a bad one is refused before any file is opened or made.
  const params = checkParamOptions(fn, { ...callParams(o as Record<string, unknown>), dtype: undefined, weightDtype: undefined });
  paramsOf(fn, params, 'x', undefined, w === undefined || w === null ? null : new Float32Array(1), false, true, 1);
  if (o.dim !== undefined) positive(Number.MAX_SAFE_INTEGER)(fn, 'options.dim', o.dim);
  return {
    o,
    params,
    dim: o.dim,
    dtype: dtypeOpt(fn, 'dtype', o.dtype, KERNEL_DTYPES),
    weightDtype: dtypeOpt(fn, 'weightDtype', o.weightDtype, KERNEL_DTYPES),
    outDtype: dtypeOpt(fn, 'outDtype', o.outDtype, OUT_DTYPES),
    chunkBytes: o.chunkBytes,
    format: o.format,
    range: o.range,
    tensors: o.tensors,
  };
}

/**
 * The arguments of one file of a dataset: the run's, checked once (`run`), with what the run
 * sets for this file itself — its signal, its range of rows, its progress, and that its output
 * may not be its input (the run refused that for every file at once) — which are not checked
 * again: the run made them.
 */
export function fileArgsFor(run: FileArgs, file: Pick<NormalizeFileOptions, OneFileKey | 'signal'>): FileArgs {
  return { ...run, o: { ...run.o, ...file }, range: file.range };
}
