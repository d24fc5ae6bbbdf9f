/**
 * What a dataset run records, checks and removes of a quantized output's row scales: a
 * one-array output's scales file is part of its output (recorded with it, vouched for with it,
 * removed when an output is written without one), and may not be another input's output.
 * @module
 */
import { unlink } from 'node:fs/promises';
import type { DatasetFile } from './inputs.js';
import { isFile } from './manifest.js';
import type { DatasetRecord } from './types.js';
import { NormalizeError } from '../io/errors.js';
import type { Fence } from '../io/fence.js';
import { FORMATS, formatNamed, takesName, type FormatName } from '../formats/index.js';
import { baseOf, bytesOf, recordPath, shown, type FsPath } from '../io/paths.js';
import { perRowScales, scalesPathOf } from '../file/scales.js';

/**
 * Refuses a quantized run where a one-array file's scales file (`a.scale.npy` beside `a.npy`)
 * would be the output of another input (names a container format takes write no such file).
 */
export function refuseScalesOverOutputs(files: readonly DatasetFile[], format: FormatName | undefined): void {
  const oneArray = (rel: FsPath) => (format !== undefined ? !formatNamed(format).several : !FORMATS.some((f) => f.several && takesName(baseOf(rel).toString(), f.name)));
  const outputs = new Map(files.map((f) => [bytesOf(f.rel).toString('latin1'), f]));
  for (const f of files.filter((g) => oneArray(g.rel))) {
    const other = outputs.get(bytesOf(scalesPathOf(f.rel)).toString('latin1'));
    if (other) throw new NormalizeError(`the rows' scales of ${shown(f.input)} would be written over the output of ${shown(other.input)}, ${shown(other.rel)}: give options.quantScale, or rename one`);
  }
}

/**
 * Removes the scales file an earlier record of `output` vouched for (still that very file), now
 * that the output was written without one: it would otherwise sit beside an output it is not of.
 * The removal is fenced by `fence`.
 */
export async function removeRecordedScales(r: DatasetRecord | undefined, output: FsPath, fence: Fence): Promise<void> {
  if (!r?.scales) return;
  const path = scalesPathOf(output);
  if (!(await isFile(path, r.scales.outputSize, r.scales.outputMtimeMs))) return;
  fence.check();
  await unlink(path).catch(() => {});
}

/** A record's entry for the scales file written beside `rel`'s output (its size and time). */
export function scalesRecord(rel: FsPath, scales: { size: number; mtimeMs: number }): NonNullable<DatasetRecord['scales']> {
  const path = recordPath(scalesPathOf(rel));
  return { output: path.text, ...(path.base64 !== undefined && { outputBase64: path.base64 }), outputSize: scales.size, outputMtimeMs: scales.mtimeMs };
}

/**
 * Whether record `r` vouches for the scales of its output at `out`: an output with a scale per
 * row in a file of its own (a one-array format) must have them recorded, and a recorded scales
 * file must still be that very file.
 */
export async function scalesVouched(r: DatasetRecord, out: FsPath): Promise<boolean> {
  if (!formatNamed(r.format).several && perRowScales(r.outDtype, r.options.quantScale) && !r.scales) return false;
  return !r.scales || (await isFile(scalesPathOf(out), r.scales.outputSize, r.scales.outputMtimeMs));
}
