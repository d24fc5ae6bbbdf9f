/**
 * The public types of {@link normalizeDataset} (rmsnorm-wasm/node).
 * @module
 */
import type { Dtype } from '../../types.js';
import type { NormalizeFileOptions } from '../types.js';

/** Options of `normalizeDataset`: the per-file options of `normalizeFile` (not `rstd`, `inPlace`, `onProgress`), plus the run's. */
export interface NormalizeDatasetOptions extends Omit<NormalizeFileOptions, 'rstd' | 'inPlace' | 'onProgress'> {
  /**
   * This process's part of the dataset: shard `index` (0-based) of `count`. Processes given
   * the same inputs and indices 0..count-1 together write every output exactly once. Default
   * `{ index: 0, count: 1 }` (everything).
   */
  shard?: DatasetShard;
  /**
   * With a shard count above 1, a file bigger than this (bytes) and than a shard's share of the
   * dataset is split into row ranges between the shards, each written as its own part file
   * (see {@link DatasetPart}). Default 64 MiB; `Infinity` never splits.
   */
  splitBytes?: number;
  /** Redo outputs the manifests record as complete. Default false: they are skipped. */
  force?: boolean;
  /** Go on after a file fails; the summary lists the failures. Default false: stop at the first (rejects). */
  keepGoing?: boolean;
  /** Record each output's SHA-256 in the manifest (an output recorded without one is redone). Default false. */
  checksum?: boolean;
  /**
   * Files normalized at once on the one pool, so that one file's open, header, flush and rename
   * overlap another's work. Their chunk memory is kept under 96 MiB whatever the files' sizes
   * (a file bigger than that runs alone). Default 16.
   */
  filesInFlight?: number;
  /** Called as files are read and written. */
  onProgress?: (p: DatasetProgress) => void;
  /** Called once per input when it is written, skipped or fails. */
  onFile?: (event: DatasetFileEvent) => void;
}

/** One shard of a dataset: shard `index` of `count`. */
export interface DatasetShard {
  /** This shard, from 0 to count − 1. */
  index: number;
  /** How many shards the dataset is split into, at least 1. */
  count: number;
}

/** How far a `normalizeDataset` run has come (this shard's files). */
export interface DatasetProgress {
  /** Files written, skipped or failed so far. */
  files: number;
  /** Files of this shard. */
  totalFiles: number;
  /** Data bytes written so far, by this run (skipped files not counted). */
  bytes: number;
  /** Data bytes this run has to write (the files not skipped), estimated from the input sizes. */
  totalBytes: number;
  /** Rows written so far by this run. */
  rows: number;
  /** Seconds since the run started. */
  seconds: number;
}

/** One output as the manifest records it (one JSON line). */
export interface DatasetRecord {
  /** The input's path, absolute. */
  input: string;
  /** The output's path relative to the output directory (`/`-separated). */
  output: string;
  /** The input's size (bytes) and modification time (ms) when it was read: a changed input is redone. */
  inputSize: number;
  /** See inputSize. */
  inputMtimeMs: number;
  /** The output file's size in bytes (header included). */
  outputSize: number;
  /** `'npy'` or `'raw'`. */
  format: 'npy' | 'raw';
  /** The data's dtype. */
  dtype: Dtype;
  /** Rows normalized and their length. */
  rows: number;
  /** See rows. */
  dim: number;
  /** The output's shape: the input's (npy), or `[rows, dim]`; a part's first axis is its range's length. */
  shape: number[];
  /** The options the output was made with (a changed option redoes it); the weight as its path, size and time, or its SHA-256. */
  options: Record<string, unknown>;
  /** Seconds this file took. */
  seconds: number;
  /** With `checksum`: SHA-256 of the output file, hex. */
  sha256?: string;
  /** For a part of an input split between shards: which part, and the input's first-axis indices it holds. */
  part?: DatasetPart;
}

/**
 * One part of an input split between shards: indices `start` ≤ i < `end` of its first axis
 * (rows of a 2-D array), written as its own file. The parts `0..count−1` of an input,
 * concatenated in order along the first axis, are the output of the whole input.
 */
export interface DatasetPart {
  /** This part, from 0 to count − 1. */
  index: number;
  /** How many parts the input is split into. */
  count: number;
  /** First index of the first axis this part holds. */
  start: number;
  /** One past the last. */
  end: number;
}

/** An output this run wrote, or skipped as already complete. */
export interface DatasetFileDone {
  /** `'written'` by this run, or `'skipped'` as recorded complete by an earlier one. */
  status: 'written' | 'skipped';
  /** Its manifest record. */
  record: DatasetRecord;
}

/** An input that failed. */
export interface DatasetFileFailed {
  /** `'failed'`. */
  status: 'failed';
  /** The input's path. */
  input: string;
  /** The output's path (not written). */
  output: string;
  /** Why; the message names the input. */
  error: Error;
}

/** What happened to one input. */
export type DatasetFileEvent = DatasetFileDone | DatasetFileFailed;

/** A failed input in a {@link DatasetSummary}. */
export interface DatasetFailure {
  /** The input's path. */
  input: string;
  /** Why; the message names the input. */
  error: string;
}

/** What `normalizeDataset` did. */
export interface DatasetSummary {
  /** Files of this shard. */
  files: number;
  /** Files normalized by this run. */
  written: number;
  /** Files skipped as already complete. */
  skipped: number;
  /** Files that failed (with `keepGoing`; without it the run rejects at the first), each with a message that names it. */
  failed: DatasetFailure[];
  /** Rows and data bytes normalized by this run. */
  rows: number;
  /** See rows. */
  bytes: number;
  /** Seconds the run took. */
  seconds: number;
  /** Data bytes per second over the run, GB/s (10^9). */
  gbPerS: number;
  /** Threads of the pool. */
  threads: number;
  /** The manifest file this run appended to. */
  manifest: string;
}
