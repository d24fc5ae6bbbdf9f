/**
 * What a dataset run refuses once its inputs are listed, before it makes anything: outputs whose
 * names no file system takes, row scales that would land on another input's output, and an
 * output dtype some inputs' format cannot hold.
 * @module
 */
import { NormalizeError } from '../io/errors.js';
import { FORMATS, formatNamed } from '../formats/index.js';
import { baseOf, byteLength, NAME_MAX, shown, type FsPath } from '../io/paths.js';
import type { DatasetFile } from './inputs.js';
import type { NormalizeDatasetOptions } from './types.js';

/** Refuses outputs whose names no file system takes (a part's name adds to the input's). */
export function refuseLongNames(files: readonly DatasetFile[]): void {
  for (const f of files) {
    if (byteLength(baseOf(f.rel)) > NAME_MAX) {
      throw new NormalizeError(`the output ${shown(f.rel)} of ${shown(f.input)} would have a name longer than ${NAME_MAX} bytes`);
    }
  }
}


/**
 * Refuses, before anything is made, an `outDtype` the format of some of the inputs cannot hold
 * (bfloat16 or float8 in a `.npy` or `.npz`): a RangeError naming the option and the first such
 * input. A file's format is its extension's here (its content decides later).
 */
export function refuseOutDtype(files: readonly DatasetFile[], o: NormalizeDatasetOptions): void {
  const d = o.outDtype;
  if (d === undefined) return;
  const formatOfName = (rel: FsPath) => {
    const name = baseOf(rel).toString().toLowerCase();
    return o.format ?? FORMATS.find((f) => f.extensions.some((e) => name.endsWith(e)))?.name;
  };
  const bad = files.filter((f) => {
    const fmt = formatOfName(f.rel);
    return fmt !== undefined && !formatNamed(fmt).holds(d);
  });
  if (bad.length === 0) return;
  const fmt = formatNamed(formatOfName(bad[0]!.rel)!);
  throw new RangeError(
    `normalizeDataset: options.outDtype ${d} cannot be written in ${fmt.title} file, as ${shown(bad[0]!.input)}${bad.length > 1 ? ` and ${bad.length - 1} more inputs` : ''} would be: choose another outDtype, or leave those files out`,
  );
}
