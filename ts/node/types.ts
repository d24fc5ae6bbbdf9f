/**
 * The public types of the file functions (rmsnorm-wasm/node).
 * @module
 */
import type { RmsNormPool } from '../pool/api.js';
import type { CastingMode, Dtype, FloatArray, ScalarOptions } from '../types.js';
import type { FileDtype, OutDtype } from '../glue/dtypes.js';
import type { FormatName } from './formats/index.js';
import type { FsPath } from './io/paths.js';

export type { FileDtype, OutDtype } from '../glue/dtypes.js';
export type { FormatName } from './formats/index.js';
export type { FsPath } from './io/paths.js';

/** How far a {@link normalizeFile} call has come. */
export interface NormalizeProgress {
  /** Rows written so far. */
  rows: number;
  /** Rows of the whole file (NaN for a stream whose length is not known before its end). */
  totalRows: number;
  /** Bytes of data (not counting headers) written so far: 2 per element for half data, 4 for float32. */
  bytes: number;
  /** Bytes of data of the whole file (NaN as totalRows). */
  totalBytes: number;
  /** Seconds since the call started. */
  seconds: number;
}

/** Options of {@link normalizeFile}. */
export interface NormalizeFileOptions extends ScalarOptions {
  /**
   * The gain: `dim` elements — a Float32Array, or a Uint16Array of half bit patterns (what it
   * holds: `weightDtype`, else the input's dtype when that is a half one) — or the path of a
   * file read by its content: a `.npy` (float32, float16, or float64 read as float32), one
   * array of an `.npz` or safetensors file (`weightTensor` names it when there are several),
   * or, when no format knows the file, raw elements of `weightDtype` (default float32).
   * Default: none.
   */
  weight?: FloatArray | FsPath | null;
  /** With a weight file holding several arrays: the name of the weight's. */
  weightTensor?: string;
  /**
   * What the input's elements are. A `.npy`, `.npz` or safetensors file says it in its header
   * (a dtype given here must agree). For raw data it says how to read the bytes (little-endian;
   * default `'float32'`).
   */
  dtype?: Dtype;
  /**
   * What the weight's elements are. A weight file with a header says it (a value given here
   * must agree); a raw weight file is read as this (default `'float32'`); an array weight as
   * the sync API reads it (from its type; a Uint16Array defaults to the input's half dtype).
   */
  weightDtype?: Dtype;
  /**
   * The output's dtype: `'float32'`, `'float16'` or `'bfloat16'`, or a quantized one, `'int8'`
   * or `'float8_e4m3'` (see the sync API's `QuantDtype`). Default: the input's (float32 for a
   * float64 input). When a float dtype differs from the input's, rows are widened to float32
   * exactly (float64 rounded to nearest), normalized in float32 and rounded once to it. A
   * `.npy` or `.npz` cannot hold bfloat16 or float8 (NumPy has no such dtype).
   *
   * A quantized output quantizes what the output in the input's dtype would hold (as
   * `rmsNorm` does). Each row's scale (float32), unless `quantScale` gives one for all, is
   * written beside it: in an `.npz` or safetensors file as the array `NAME_scale` (shape: the
   * array's without its last axis, `[1]` for a 1-D one); for a `.npy` or raw output to the
   * file `OUT.scale.npy` (`OUT.scale` + the output's extension: `out.npy` → `out.scale.npy`),
   * in the same format. The scales are renamed into place before the output, and an output
   * they replace is removed first: whenever the output is there, the scales beside it are its own.
   */
  outDtype?: OutDtype;
  /**
   * With a quantized `outDtype`: one scale for every row (`q = y · (1 / quantScale)`), > 0,
   * instead of a scale per row; no scales are written. Default: a scale per row.
   */
  quantScale?: number;
  /** Where half results are rounded (`'none'`, `'llama'` or `'gemma'`), as the sync API's option. Default `'none'`. */
  castingMode?: CastingMode;
  /** Row length. Default: the `.npy`'s last axis, else the weight's length; required for raw input without weight. */
  dim?: number;
  /**
   * `'npy'`, `'npz'`, `'safetensors'` or `'raw'` (little-endian `dtype`, rows of `dim`).
   * Default: told by the file's first bytes; raw data is read only when this says so.
   */
  format?: FormatName;
  /**
   * In an `.npz` or safetensors file: the names of the arrays to normalize (each a float array
   * of at least one axis). Default: every such array; the others are copied as they are.
   */
  tensors?: readonly string[];
  /**
   * Also write each row's rstd to this path (float32, in the input's format; each array's shape
   * without its last axis, `[1]` for a 1-D one; in a container, arrays of the same names).
   */
  rstd?: FsPath;
  /**
   * Only indices `start` ≤ i < `end` of the input's first axis — rows of a 2-D array or of raw
   * data; blocks of rows when the array has more axes (a 1-D `.npy` is one row, `[0, 1]`) —
   * written as a file of that many (shape `[end − start, ...]`). Concatenating the outputs of
   * consecutive ranges along the first axis gives the output of the whole file, byte for
   * byte. Default: the whole file.
   */
  range?: readonly [start: number, end: number];
  /** Allow `output` to be `input` (still through a temporary file). Default false. */
  inPlace?: boolean;
  /** Workers of the pool made for this call (default: one per core). Ignored with `pool`. */
  threads?: number;
  /** A pool to use (not destroyed at the end); default: one made and destroyed by this call. */
  pool?: RmsNormPool;
  /** Bytes per chunk (default 16 MiB; at least one row). */
  chunkBytes?: number;
  /**
   * Flush the output to the device (`fsync`) before renaming it into place (default true), so
   * that even a power failure leaves the previous file or the whole new one. With false a killed
   * process still never leaves a partial output, but after a power failure the output may be
   * empty or partial; faster for many small files on a slow disk.
   */
  durable?: boolean;
  /** Also compute the SHA-256 of the output file's bytes as they are written (summary's `sha256`). Default false. */
  checksum?: boolean;
  /** Called after each chunk is written. */
  onProgress?: (p: NormalizeProgress) => void;
  /** Aborts the call: it rejects with the signal's reason and leaves no output. */
  signal?: AbortSignal;
}

/** What one output file holds: what {@link NormalizeSummary} says and a dataset's manifest records of it. */
export interface OutputFacts {
  /** How the input was read (and the output written). */
  format: FormatName;
  /** The input's dtype (of its first normalized array). */
  dtype: FileDtype;
  /** The output's dtype (of its first normalized array). */
  outDtype: OutDtype;
  /** Rows normalized, over every array. */
  rows: number;
  /** Row length (elements) of the first normalized array. */
  dim: number;
  /**
   * The output's shape (of the first normalized array): the input's, or `[rows, dim]` (raw),
   * its first axis cut to the range written (`options.range`, a dataset's part).
   */
  shape: number[];
}

/** What {@link normalizeFile} did. */
export interface NormalizeSummary extends OutputFacts {
  /** The input's path (as a message shows it). */
  input: string;
  /** The output's path (as a message shows it). */
  output: string;
  /** Each array normalized. */
  arrays: NormalizedArray[];
  /** The arrays of a container copied as they are (not float, or not named by `tensors`). */
  copied: string[];
  /** Bytes of data read from the arrays normalized, headers not counted. */
  bytes: number;
  /** Size of the output file in bytes (header included). */
  outputBytes: number;
  /** Seconds the call took, from start to the output's rename. */
  seconds: number;
  /** Data bytes per second, in GB/s (10^9). */
  gbPerS: number;
  /** Threads of the pool that ran it. */
  threads: number;
  /** With `options.checksum`: the SHA-256 of the whole output file (header included), hex. */
  sha256?: string;
  /** The file of the rows' scales, when a quantized output of a `.npy` or raw file has them (as a message shows it). */
  scales?: string;
}

/** One array a {@link normalizeFile} call normalized. */
export interface NormalizedArray {
  /** Its name in the file (an `.npz` member without `.npy`, a safetensors tensor); `''` in a one-array format. */
  name: string;
  /** What the input held. */
  dtype: FileDtype;
  /** What the output holds. */
  outDtype: OutDtype;
  /** Its shape in the output. */
  shape: number[];
  /** Rows normalized (every axis but the last). */
  rows: number;
  /** Row length (the last axis). */
  dim: number;
}
