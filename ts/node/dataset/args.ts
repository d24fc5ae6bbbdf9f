/**
 * The arguments of `normalizeDataset`, checked before anything is read or made: the inputs, the
 * output directory, the run's own options, and every file's options once.
 * @module
 */
import { describe } from '../../call/check/arrays.js';
import { checkFileOptions, PER_FILE_KEYS } from '../file-args.js';
import type { NormalizeDatasetOptions } from './types.js';

/** What a run option's value must be, when given: a number `>= 0` (with what it counts), a function, a boolean, or checked below. */
type Kind = { count: string } | 'function' | 'boolean' | 'below';

/** The run's own options (types.ts), each once with its kind. */
const RUN_OPTIONS: Readonly<Record<string, Kind>> = {
  shard: 'below',
  splitBytes: { count: 'of bytes >= 0 (Infinity: never split)' },
  force: 'boolean',
  keepGoing: 'boolean',
  filesInFlight: 'below',
  followSymlinks: 'boolean',
  lockWait: { count: 'of seconds >= 0 (Infinity: as long as the other run lives)' },
  lockStale: { count: 'of seconds >= 0' },
  onProgress: 'function',
  onFile: 'function',
  onWarning: 'function',
};
const KEYS = [...PER_FILE_KEYS, ...Object.keys(RUN_OPTIONS)];

/** Checks run option `k` of value `v` (given) by its kind. */
function byKind(k: string, v: unknown, kind: Kind): void {
  const what = `normalizeDataset: options.${k}`;
  if (typeof kind === 'object') {
    if (typeof v !== 'number') throw new TypeError(`${what} must be a number, got ${describe(v)}`);
    if (!(v >= 0)) throw new RangeError(`${what} must be a number ${kind.count}, got ${describe(v)}`);
  } else if (kind !== 'below' && typeof v !== kind) throw new TypeError(`${what} must be a ${kind}, got ${describe(v)}`);
}

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
  for (const [k, kind] of Object.entries(RUN_OPTIONS)) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) byKind(k, v, kind);
  }
  const k = o.filesInFlight;
  if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > 64)) throw new RangeError(`normalizeDataset: options.filesInFlight must be an integer from 1 to 64, got ${describe(k)}`);
  return { list: list as string[], o, index, count };
}
