/**
 * What a dataset run may skip: the settings an output depends on (defaults filled in, the
 * weight by the hash of its values), the record a written output gets, and whether a record
 * still vouches for an output.
 * @module
 */
import { createHash } from 'node:crypto';
import { PARAM_DEFAULTS } from '../../call/check/params.js';
import { OUTPUT_KEYS } from '../file/options.js';
import type { FloatArray } from '../../types.js';
import { joinPath, recordPath, type FsPath } from '../io/paths.js';
import { scalesRecord, scalesVouched } from './scales.js';
import { isFile } from './manifest.js';
import type { NormalizeSummary } from '../types.js';
import type { LoadedWeight } from '../file/weight.js';
import type { DatasetFile } from './inputs.js';
import type { DatasetRecord, NormalizeDatasetOptions } from './types.js';

/** `p` made absolute (bytes kept). */
export const absolute = (p: FsPath): FsPath => (p[0] === '/' || p[0] === 0x2f ? p : joinPath(process.cwd(), p));

/**
 * The options an output depends on, as the manifest records them: defaults filled in (so that
 * giving a default changes nothing), the weight as the SHA-256 of the values used and their
 * dtype (so that a weight file replaced, even at the same path, size and time, redoes all).
 */
export function settingsOf(o: NormalizeDatasetOptions, weight: LoadedWeight | null): Record<string, unknown> {
  let w: unknown = null;
  if (weight) w = { sha256: weight.sha256, dtype: weight.dtype };
  else if (o.weight) {
    const a = o.weight as FloatArray;
    w = { sha256: createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex'), dtype: o.weightDtype ?? null };
  }
  // Every option an output depends on (the weight's dtype is in `weight`), absent ones left out.
  const s: Record<string, unknown> = { weight: w };
  for (const k of OUTPUT_KEYS) {
    const v = (o as Record<string, unknown>)[k] ?? PARAM_DEFAULTS[k];
    if (k !== 'weightDtype' && v !== undefined && v !== null) s[k] = v;
  }
  return s;
}

/**
 * Settings as a record is compared by: keys in order, entries of null (absent) or of their
 * option's default left out, so that records written before an option existed (without it, or
 * with its default filled in), or in another order, still match.
 */
export const settingsText = (s: Readonly<Record<string, unknown>>): string =>
  JSON.stringify(
    Object.fromEntries(
      Object.entries(s)
        .filter(([k, v]) => v !== null && v !== undefined && v !== PARAM_DEFAULTS[k])
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
  );

/**
 * Whether record `r` vouches for `f`'s output at `out` with these settings: same input, part and
 * settings, and the output (and the scales written with it) still the very files recorded.
 */
export async function isDone(r: DatasetRecord | undefined, f: DatasetFile, out: FsPath, settings: string, checksum: boolean): Promise<boolean> {
  if (!r || r.inputSize !== f.size || r.inputMtimeMs !== f.mtimeMs) return false;
  const input = recordPath(absolute(f.input));
  if (r.input !== input.text || r.inputBase64 !== input.base64) return false;
  if (JSON.stringify(r.part) !== JSON.stringify(f.part)) return false;
  if (settingsText(r.options) !== settings || (checksum && !r.sha256)) return false;
  return (await isFile(out, r.outputSize, r.outputMtimeMs)) && (await scalesVouched(r, out));
}


/**
 * The record of `f`'s output, written as `s` says, its file now `outputMtimeMs`; `scales`: the
 * file of its row scales written with it (size and time), if any.
 */
export function recordOf(
  f: DatasetFile, s: NormalizeSummary, settings: Record<string, unknown>, outputMtimeMs: number, seconds: number, scales: { size: number; mtimeMs: number } | null,
): DatasetRecord {
  const input = recordPath(absolute(f.input));
  const output = recordPath(f.rel);
  return {
    input: input.text, ...(input.base64 !== undefined && { inputBase64: input.base64 }),
    output: output.text, ...(output.base64 !== undefined && { outputBase64: output.base64 }),
    recordedAt: Date.now(), inputSize: f.size, inputMtimeMs: f.mtimeMs, outputSize: s.outputBytes, outputMtimeMs,
    ...(scales && { scales: scalesRecord(f.rel, scales) }),
    format: s.format, dtype: s.dtype, outDtype: s.outDtype, rows: s.rows, dim: s.dim, shape: s.shape, options: settings,
    seconds: Math.round(seconds * 1e6) / 1e6, ...(s.sha256 && { sha256: s.sha256 }), ...(f.part && { part: f.part }),
  };
}
