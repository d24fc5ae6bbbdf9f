/**
 * Where a file's outputs go and how they appear: the output, the rstd file and the scales file
 * planned and checked against each other and the input before anything is read, then flushed
 * and renamed into place together (see {@link publish}).
 * @module
 */
import { unlinkSync } from 'node:fs';
import { checkOutputPlace } from '../io/confined.js';
import { codeOf, fsError, NormalizeError } from '../io/errors.js';
import type { FileArgs } from './options.js';
import type { Fence } from '../io/fence.js';
import { shown, type FsPath } from '../io/paths.js';
import { planOutput, sameInode, type OutputPlan, type Sink } from '../io/sink.js';

/**
 * The outputs' plans, checked against each other and the input: nothing is written over the
 * input unless `inPlace`. `confined` (a dataset's output directory): the output is written
 * through nothing that sits in its place (confined.ts).
 */
export async function planOutputs(input: FsPath, output: FsPath, a: FileArgs, confined: boolean): Promise<{ out: OutputPlan; rstd: OutputPlan | null }> {
  if (confined) {
    // Its folders are checked when made (before the output is opened, after every check of the file).
    await checkOutputPlace(output);
    return { out: { kind: 'file', target: output }, rstd: null };
  }
  const out = await planOutput(output, 'the output');
  const rstd = a.o.rstd !== undefined ? await planOutput(a.o.rstd, 'options.rstd') : null;
  const files = (p: OutputPlan | null) => (p && p.kind === 'file' ? p.target : null);
  if (input !== '-' && files(out) && !a.o.inPlace && (await sameInode(input, files(out)!))) {
    throw new NormalizeError(`the output ${shown(output)} is the input file; pass options.inPlace to replace it (still through a temporary file)`);
  }
  const r = files(rstd);
  if (r && ((await sameInode(r, input)) || (files(out) && (r === files(out) || (await sameInode(r, files(out)!)))))) {
    throw new NormalizeError(`options.rstd must be a path other than the input and the output, got ${shown(a.o.rstd!)}`);
  }
  return { out, rstd };
}


/**
 * Flushes the output, the rstd file and the scales file (each one that is there), then renames
 * them into place: every file flushed before any is renamed, the rstd file first (a failure
 * there leaves the output as it was), the output last. The output the scales replace (a file;
 * not the input, with `inPlace`) is removed before they are renamed: whenever the output is
 * there, the scales beside it are its own — even when the process dies between the renames.
 */
export async function publish(
  [out, rstd, scales]: readonly [Sink, Sink | null, Sink | null], plan: OutputPlan, durable: boolean, input: FsPath, fence: Fence,
): Promise<void> {
  await out.flush(durable);
  await rstd?.flush(durable);
  await scales?.flush(durable);
  await rstd?.publish();
  if (scales) {
    // Not the input (inPlace): it is kept until the new output replaces it.
    if (plan.kind === 'file' && !(input !== '-' && (await sameInode(input, plan.target)))) {
      try {
        fence.check();
        unlinkSync(plan.target);
      } catch (e) {
        if (codeOf(e) !== 'ENOENT') throw fsError(e, 'replace', plan.target);
      }
    }
    await scales.publish();
  }
  await out.publish();
}
