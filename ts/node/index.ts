/**
 * rmsnorm-wasm/node: normalizing files and streams in Node (the worker pool over files of any
 * size; a Transform stream for pipelines; NumPy .npy headers).
 *
 * ```ts
 * import { normalizeFile } from 'rmsnorm-wasm/node';
 * const summary = await normalizeFile('acts.npy', 'normed.npy', { weight: 'w.npy', onProgress: console.log });
 * ```
 * @module
 */
export { normalizeFile, NormalizeError, CHUNK_BYTES, type NormalizeFileOptions, type NormalizeProgress, type NormalizeSummary } from './file/normalize-file.js';
export type { FileDtype, OutDtype, FormatName, FsPath, NormalizedArray, OutputFacts } from './types.js';
export { normalizeDataset } from './dataset/run.js';
export type {
  DatasetFailure, DatasetFileDone, DatasetFileEvent, DatasetFileFailed, DatasetPart, DatasetProgress, DatasetRecord, DatasetScalesRecord, DatasetShard, DatasetSummary, NormalizeDatasetOptions,
} from './dataset/types.js';
export { createNormalizeStream, type NormalizeStreamOptions } from './stream.js';
export { npyHeader, parseNpyHeader, npyDataOffset, NpyError, NPY_PREFIX_BYTES, NPY_ITEM_BYTES, type NpyHeader, type NpyDtype } from './formats/npy.js';
