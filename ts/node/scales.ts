/**
 * The quantized output's row scales on the files side, in one place: when an output has them (a
 * scale per row: `quantScale` not given), where they go (a file beside a one-array output,
 * `OUT.scale.EXT`; an array `NAME_scale` after its array in a container), what is refused before
 * anything is written (a stream output; a stream whose format puts them before the data; a
 * scales file that is the input, the rstd file or another input's output), and what a dataset
 * records of them, checks on resume and removes. The scales' bytes are written with the data's
 * (chunks.ts, positioned.ts) and renamed into place before the output (file-outputs.ts publish).
 * @module
 */
import { unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { isQuant } from '../glue/dtypes.js';
import { checkOutputPlace } from './confined.js';
import type { DatasetFile } from './dataset/inputs.js';
import { isFile } from './dataset/manifest.js';
import type { DatasetRecord } from './dataset/types.js';
import { NormalizeError } from './errors.js';
import type { Fence } from './fence.js';
import { FORMATS, formatNamed, takesName, type FormatName } from './formats/index.js';
import { baseOf, bytesOf, fromBytes, joinPath, recordPath, shown, stemOf, type FsPath } from './paths.js';
import { planOutput, sameInode, type OutputPlan } from './sink.js';
import type { OutputFile } from './output.js';
import type { NormalizeFileOptions } from './types.js';

/** Whether a quantized output (`outDtype`) has a scale per row, written beside it: no static `quantScale`. */
export const perRowScales = (outDtype: string | undefined | null, quantScale: unknown): boolean => isQuant(outDtype ?? undefined) && quantScale == null;

/** The array of scales of a container's array `name`. */
export const scalesName = (name: string): string => `${name}_scale`;

/**
 * The file of the rows' scales written beside a quantized `.npy` or raw output: `.scale`
 * before the extension (`a/b.npy` → `a/b.scale.npy`, `a/b` → `a/b.scale`).
 */
export function scalesPathOf(p: FsPath): FsPath {
  const [stem, ext] = stemOf(p);
  return fromBytes(Buffer.concat([stem, Buffer.from('.scale'), ext]));
}

/**
 * Where the rows' scales of a one-array output go: the file beside it, as the output was named
 * (paths.ts scalesPathOf). A NormalizeError when the output is a stream (there is no file to put
 * them beside), or when that file is the input or the rstd file.
 */
export async function planScales(plans: { out: OutputPlan; rstd: OutputPlan | null }, input: FsPath, output: FsPath, o: NormalizeFileOptions, confined: boolean): Promise<OutputPlan> {
  if (plans.out.kind !== 'file') {
    throw new NormalizeError(`the rows' scales of a quantized output go to a file beside it, but the output ${shown(output)} is a stream: write it to a file, or give options.quantScale`);
  }
  if (confined) {
    await checkOutputPlace(scalesPathOf(output));
    return { kind: 'file', target: scalesPathOf(output) };
  }
  const plan = await planOutput(scalesPathOf(output), 'the file of the scales');
  if (plan.kind === 'file' && input !== '-' && (await samePath(input, plan.target))) {
    throw new NormalizeError(`the rows' scales of ${shown(output)} go to ${shown(plan.target)}, which is the input: write the output elsewhere`);
  }
  if (plans.rstd && (await samePath(plans.rstd.target, plan.target))) {
    throw new NormalizeError(`options.rstd ${shown(o.rstd!)} is where the rows' scales of the output go: give another path`);
  }
  return plan;
}

/** Whether two paths name one file: the same inode, or (for files not there yet) the same absolute path. */
async function samePath(a: FsPath, b: FsPath): Promise<boolean> {
  const abs = (p: FsPath) => (typeof p === 'string' ? Buffer.from(resolve(p)) : bytesOf(p[0] === 0x2f ? p : joinPath(process.cwd(), p)));
  return abs(a).equals(abs(b)) || (await sameInode(a, b));
}

/**
 * A container's arrays of scales while its arrays are written in its writer's order: an
 * array's scales are kept until their own array's turn, or written into the room left for them
 * there when that came first.
 */
export class ContainerScales {
  private readonly kept = new Map<number, Uint8Array[]>();
  private readonly room = new Map<number, number>();

  /**
   * At the turn of the scales of array `of` in `out`: writes them if kept (or none: `empty`,
   * an array of no rows), else leaves `bytes` of room for them.
   */
  async place(out: OutputFile, of: number, empty: boolean, bytes: number): Promise<void> {
    const kept = this.kept.get(of) ?? (empty ? [] : undefined);
    if (kept) for (const b of kept) await out.data(b);
    else this.room.set(of, await out.reserve(bytes));
  }

  /** Array `i` normalized, with `scales`: written into the room left for them, or kept for their turn. */
  async done(out: OutputFile, i: number, scales: Uint8Array[]): Promise<void> {
    const at = this.room.get(i);
    if (at !== undefined) await out.fill(at, scales);
    else this.kept.set(i, scales);
  }
}

/**
 * Refuses a stream output whose format puts a container's arrays of scales (`scalesOf` their
 * array's index) before the data they scale (`order`: the writer's order of the arrays): the
 * scales are known only after the data.
 */
export function refuseScalesBeforeData(plans: readonly { scalesOf?: number }[], order: readonly number[], output: FsPath, format: string): void {
  if (plans.some((p, i) => p.scalesOf !== undefined && order.indexOf(i) < order.indexOf(p.scalesOf))) {
    throw new NormalizeError(`${shown(output)} is a stream, but ${format} puts the rows' scales before the data: write the output to a file, or give options.quantScale`);
  }
}

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
