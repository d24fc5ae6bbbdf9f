/**
 * The arguments of `normalizeDataset`, checked before anything is read or made: the inputs, the
 * output directory, the run's own options, and every file's options once.
 * @module
 */
import { describe } from '../../call/check/arrays.js';
import { boolean, callback, checkFileOptions, PER_FILE_KEYS, type FileArgs, type Rule } from '../file/options.js';
import { compileGlob, isGlob, type Glob } from './glob.js';
import type { NormalizeDatasetOptions } from './types.js';

/** The most shards a dataset is split into. */
export const SHARDS_MAX = 1_000_000;

/** A number >= 0, `count` saying what it counts. */
const atLeastZero = (count: string): Rule => (fn, what, v) => {
  if (typeof v !== 'number') throw new TypeError(`${fn}: ${what} must be a number, got ${describe(v)}`);
  if (!(v >= 0)) throw new RangeError(`${fn}: ${what} must be a number ${count}, got ${describe(v)}`);
};

/** The run's own options (types.ts), each once with its rule (null: checked below, with the others it depends on). */
const RUN_OPTIONS: Readonly<Record<string, Rule | null>> = {
  shard: null,
  splitBytes: atLeastZero('of bytes >= 0 (Infinity: never split)'),
  force: boolean,
  keepGoing: boolean,
  filesInFlight: null,
  followSymlinks: boolean,
  lockWait: atLeastZero('of seconds >= 0 (Infinity: as long as the other run lives)'),
  lockStale: atLeastZero('of seconds >= 0'),
  onProgress: callback,
  onFile: callback,
  onWarning: callback,
};
const KEYS = [...PER_FILE_KEYS, ...Object.keys(RUN_OPTIONS)];

/**
 * The arguments of {@link normalizeDataset}, checked before anything is read or made: its own
 * options, and every file's options once (a TypeError or RangeError naming the option).
 */
export function checkRun(
  inputs: unknown, outDir: unknown, options: unknown,
): { list: string[]; o: NormalizeDatasetOptions; args: FileArgs; index: number; count: number; globs: Map<string, Glob> } {
  const list = typeof inputs === 'string' ? [inputs] : inputs;
  if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || s === '')) {
    throw new TypeError(`normalizeDataset: inputs must be a path or a non-empty array of paths, got ${describe(inputs)}`);
  }
  if (typeof outDir !== 'string' || outDir === '') throw new TypeError(`normalizeDataset: outDir must be a path (a string), got ${describe(outDir)}`);
  const args = checkFileOptions('normalizeDataset', options, KEYS);
  const o = args.o as NormalizeDatasetOptions;
  const globs = new Map<string, Glob>();
  (list as string[]).forEach((s, i) => {
    if (isGlob(s) && !globs.has(s)) globs.set(s, compileGlob(s, `normalizeDataset: inputs[${i}]`));
  });
  if (o.shard !== undefined && (typeof o.shard !== 'object' || o.shard === null)) throw new TypeError(`normalizeDataset: options.shard must be { index, count }, got ${describe(o.shard)}`);
  const { index = 0, count = 1 } = o.shard ?? {};
  if (!Number.isInteger(count) || count < 1 || count > SHARDS_MAX) {
    throw new RangeError(`normalizeDataset: options.shard.count must be an integer from 1 to ${SHARDS_MAX}, got ${describe(count)}`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new RangeError(`normalizeDataset: options.shard.index must be an integer from 0 to ${count - 1}, got ${describe(index)}`);
  }
  for (const [k, rule] of Object.entries(RUN_OPTIONS)) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) rule?.('normalizeDataset', `options.${k}`, v);
  }
  const k = o.filesInFlight;
  if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > 64)) throw new RangeError(`normalizeDataset: options.filesInFlight must be an integer from 1 to 64, got ${describe(k)}`);
  return { list: list as string[], o, args, index, count, globs };
}
