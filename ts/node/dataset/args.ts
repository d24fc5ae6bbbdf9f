/**
 * The arguments of `normalizeDataset`, checked before anything is read or made: the inputs, the
 * output directory, the run's own options, and every file's options once.
 * @module
 */
import { describe } from '../../check/arrays.js';
import { checkFileOptions, FILE_KEYS, isPath, ONE_FILE_KEYS } from '../file-args.js';
import type { NormalizeDatasetOptions } from './types.js';

const RUN_KEYS = ['shard', 'splitBytes', 'force', 'keepGoing', 'filesInFlight', 'followSymlinks', 'lockWait', 'lockStale', 'onProgress', 'onFile', 'onWarning'];
const KEYS = [...FILE_KEYS.filter((k) => !(ONE_FILE_KEYS as readonly string[]).includes(k)), ...RUN_KEYS];

/**
 * The arguments of {@link normalizeDataset}, checked before anything is read or made: its own
 * options, and every file's options once (a TypeError or RangeError naming the option).
 */
export function checkRun(inputs: unknown, outDir: unknown, options: unknown): { list: string[]; o: NormalizeDatasetOptions; index: number; count: number } {
  const list = typeof inputs === 'string' ? [inputs] : inputs;
  if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || s === '')) {
    throw new TypeError(`normalizeDataset: inputs must be a path or a non-empty array of paths, got ${describe(inputs)}`);
  }
  if (typeof outDir !== 'string' || outDir === '') throw new TypeError(`normalizeDataset: outDir must be a path (a string), got ${describe(outDir)}`);
  const o = checkFileOptions('normalizeDataset', options, KEYS).o as NormalizeDatasetOptions;
  const { index = 0, count = 1 } = o.shard ?? {};
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`normalizeDataset: options.shard.count must be an integer >= 1, got ${describe(count)}`);
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new RangeError(`normalizeDataset: options.shard.index must be an integer from 0 to ${count - 1}, got ${describe(index)}`);
  }
  const what = { splitBytes: 'of bytes >= 0 (Infinity: never split)', lockWait: 'of seconds >= 0 (Infinity: as long as the other run lives)', lockStale: 'of seconds >= 0' };
  for (const k of ['splitBytes', 'lockWait', 'lockStale'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'number') throw new TypeError(`normalizeDataset: options.${k} must be a number, got ${describe(o[k])}`);
    if (o[k] !== undefined && !(o[k]! >= 0)) throw new RangeError(`normalizeDataset: options.${k} must be a number ${what[k]}, got ${describe(o[k])}`);
  }
  const k = o.filesInFlight;
  if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > 64)) throw new RangeError(`normalizeDataset: options.filesInFlight must be an integer from 1 to 64, got ${describe(k)}`);
  for (const f of ['onProgress', 'onFile', 'onWarning'] as const) {
    if (o[f] !== undefined && typeof o[f] !== 'function') throw new TypeError(`normalizeDataset: options.${f} must be a function, got ${describe(o[f])}`);
  }
  if (o.followSymlinks !== undefined && typeof o.followSymlinks !== 'boolean') throw new TypeError(`normalizeDataset: options.followSymlinks must be a boolean, got ${describe(o.followSymlinks)}`);
  if (o.weight !== undefined && o.weight !== null && !isPath(o.weight) && !ArrayBuffer.isView(o.weight)) throw new TypeError(`normalizeDataset: options.weight must be an array or a path, got ${describe(o.weight)}`);
  return { list: list as string[], o, index, count };
}
