/**
 * The quantized output's row scales on the files side, in one place: when an output has them (a
 * scale per row: `quantScale` not given), where they go (a file beside a one-array output,
 * `OUT.scale.EXT`; an array `NAME_scale` after its array in a container), what is refused before
 * anything is written (a stream output; a stream whose format puts them before the data; a
 * scales file that is the input or the rstd file). The scales' bytes are written with the
 * data's (chunks.ts, positioned.ts) and renamed into place before the output (outputs.ts
 * publish); what a dataset records of them is dataset/scales.ts.
 * @module
 */
import { resolve } from 'node:path';
import { isQuant } from '../../glue/dtypes.js';
import { checkOutputPlace } from '../io/confined.js';
import { NormalizeError } from '../io/errors.js';

import { bytesOf, fromBytes, joinPath, shown, stemOf, type FsPath } from '../io/paths.js';
import { planOutput, sameInode, type OutputPlan } from '../io/sink.js';
import type { OutputFile } from './output-file.js';
import type { NormalizeFileOptions } from '../types.js';

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

