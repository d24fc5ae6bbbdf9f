/**
 * The public types of {@link normalizeDataset} (rmsnorm-wasm/node).
 * @module
 */
import type { NormalizeFileOptions, OutputFacts } from '../types.js';
import type { OneFileKey } from '../file/options.js';

/** Options of `normalizeDataset`: the per-file options of `normalizeFile` (not `rstd`, `inPlace`, `onProgress`, `range`), plus the run's. */
export interface NormalizeDatasetOptions extends Omit<NormalizeFileOptions, OneFileKey> {
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
  /**
   * Follow symbolic links in input directories (default true): each real file is read once,
   * its output named by the link's path; a link that loops back is skipped with a warning.
   * False: every link is skipped, each with a warning.
   */
  followSymlinks?: boolean;
  /**
   * Seconds to wait while another live run holds this shard of `outDir` (see the lock in
   * docs/files.md). Default Infinity: as long as that run lives; 0: reject at once.
   */
  lockWait?: number;
  /**
   * Seconds after which a lock held from another machine whose heartbeat (every 5 s) has
   * stopped is taken to be a dead run's, and taken over. Default 60. (On this machine a dead
   * owner is seen at once, by its pid.)
   */
  lockStale?: number;
  /** Called as files are read and written. */
  onProgress?: (p: DatasetProgress) => void;
  /** Called once per input when it is written, skipped or fails. */
  onFile?: (event: DatasetFileEvent) => void;
  /**
   * Called with each warning: a symbolic link skipped, a file reached twice, a stale output of
   * an earlier split removed, a wait for another run's lock. Default: none (they are also in
   * the summary).
   */
  onWarning?: (message: string) => void;
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

/** The file of an output's row scales, as its record holds it (see {@link DatasetRecord.scales}). */
export interface DatasetScalesRecord {
  /** Its path relative to the output directory, as {@link DatasetRecord.output}. */
  output: string;
  /** The bytes of `output` (base64), when they are not UTF-8. */
  outputBase64?: string;
  /** Its size in bytes. */
  outputSize: number;
  /** Its modification time (ms): the record vouches for that file only. */
  outputMtimeMs: number;
}

/** One output as the manifest records it (one JSON line). */
export interface DatasetRecord extends OutputFacts {
  /** The input's path, absolute (a name that is not UTF-8 shown escaped; its bytes in `inputBase64`). */
  input: string;
  /** The bytes of `input` (base64), when they are not UTF-8. */
  inputBase64?: string;
  /** The output's path relative to the output directory (`/`-separated; escaped as `input` is). */
  output: string;
  /** The bytes of `output` (base64), when they are not UTF-8. */
  outputBase64?: string;
  /** When the line was written (ms since the epoch): of several lines for one output, the last wins. */
  recordedAt: number;
  /** The input's size (bytes) and modification time (ms) when it was read: a changed input is redone. */
  inputSize: number;
  /** See inputSize. */
  inputMtimeMs: number;
  /** The output file's size in bytes (header included). */
  outputSize: number;
  /** The output file's modification time (ms): the record vouches for that file only, not one written since. */
  outputMtimeMs: number;
  /**
   * The file of the rows' scales written with the output (a quantized `.npy` or raw output's,
   * see `outDtype`): part of this one output — the record vouches for the pair.
   */
  scales?: DatasetScalesRecord;
  /** The options the output was made with, defaults filled in (a changed option redoes it); the weight by the SHA-256 of the values used. */
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
  /** What the run warned of (see `onWarning`). */
  warnings: string[];
}
