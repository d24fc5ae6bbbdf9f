/**
 * The public types of the file functions (rmsnorm-wasm/node).
 * @module
 */
import type { RmsNormPool } from '../pool/api.js';
import type { CastingMode, Dtype, FloatArray } from '../types.js';

/** How far a {@link normalizeFile} call has come. */
export interface NormalizeProgress {
  /** Rows written so far. */
  rows: number;
  /** Rows of the whole file. */
  totalRows: number;
  /** Bytes of data (not counting headers) written so far: 2 per element for half data, 4 for float32. */
  bytes: number;
  /** Bytes of data of the whole file. */
  totalBytes: number;
  /** Seconds since the call started. */
  seconds: number;
}

/** Options of {@link normalizeFile}. */
export interface NormalizeFileOptions {
  /**
   * The gain: `dim` elements — a Float32Array, or a Uint16Array of half bit patterns (what it
   * holds: `weightDtype`, else the input's dtype when that is a half one) — or the path of a
   * `.npy` (float32 or float16, `dim` elements) or of a raw file (`weightDtype`, default
   * float32). Default: none.
   */
  weight?: FloatArray | string | null;
  /**
   * What the input's elements are. A `.npy` says it in its header (`'<f4'` float32, `'<f2'`
   * float16): a dtype given here must agree. For a raw file it says how to read the bytes
   * (little-endian; default `'float32'`). The output has the same dtype.
   */
  dtype?: Dtype;
  /**
   * What the weight's elements are. A `.npy` weight says it in its header (a value given here
   * must agree); a raw weight file is read as this (default `'float32'`); an array weight as
   * the sync API reads it (from its type; a Uint16Array defaults to the input's half dtype).
   */
  weightDtype?: Dtype;
  /** Where half results are rounded (`'none'`, `'llama'` or `'gemma'`), as the sync API's option. Default `'none'`. */
  castingMode?: CastingMode;
  /** Row length. Default: the `.npy`'s last axis, else the weight's length; required for raw input without weight. */
  dim?: number;
  /** Inside the root. Default 1e-6. */
  eps?: number;
  /** Added to the weight (Gemma: 1). Default 0. */
  offset?: number;
  /** pRMSNorm's fraction of each row rstd is estimated from, (0, 1]. Default 1. */
  partial?: number;
  /** `'npy'` or `'raw'` (little-endian float32, rows of `dim`). Default: `'npy'` for a `.npy` name, else `'raw'`. */
  format?: 'npy' | 'raw';
  /** Also write each row's rstd to this path (same format as the input; shape = the output's without its last axis). */
  rstd?: string;
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

/** What {@link normalizeFile} did. */
export interface NormalizeSummary {
  /** The input's path. */
  input: string;
  /** The output's path. */
  output: string;
  /** How the input was read (and the output written). */
  format: 'npy' | 'raw';
  /** The data's dtype (the input's and the output's). */
  dtype: Dtype;
  /** Rows normalized. */
  rows: number;
  /** Row length (elements). */
  dim: number;
  /** The output's shape: the input's (npy) or `[rows, dim]` (raw), its first axis cut to `options.range`. */
  shape: number[];
  /** Bytes of data read (= written), headers not counted: 2 per element for half data, 4 for float32. */
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
}
