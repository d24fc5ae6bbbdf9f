/**
 * What a shard clears before it writes: temporary files its killed runs left, and outputs of an
 * earlier plan that the current one no longer has — part files of another shard count or of a
 * split the dataset's growth changed, or the whole output of a file now split (and the parts of
 * one no longer split) — so that the parts of a file beside each other are always one plan's.
 * Each input's leftovers are removed by one shard only: the one that writes its first output.
 * @module
 */
import { readdir, realpath, unlink } from 'node:fs/promises';
import { removeStrays } from '../io/atomic.js';
import { realDirsBelow } from '../io/confined.js';
import { NormalizeError } from '../io/errors.js';
import type { Fence } from '../io/fence.js';
import { baseOf, bytesOf, dirOf, fromBytes, joinPath, shown, stemOf, type FsPath } from '../io/paths.js';
import { scalesPathOf } from '../file/scales.js';
import type { DatasetFile } from './inputs.js';

/** The output path of the whole file an output belongs to (itself, or the file a part was cut from). */
const originOf = (f: DatasetFile): FsPath => f.origin ?? f.rel;

/**
 * Removes every temporary file left beside `files`' outputs (and, with `scales`, beside the files
 * of their row scales; the caller holds their shard's lock), every directory at once. Makes no
 * directory: an output's is made when it is written.
 */
export async function removeTemps(outDir: string, files: readonly DatasetFile[], scales: boolean): Promise<void> {
  const byDir = new Map<string, { rel: FsPath; names: FsPath[] }>();
  for (const f of files) {
    const d = dirOf(f.rel);
    const key = bytesOf(d).toString('latin1');
    if (!byDir.has(key)) byDir.set(key, { rel: d, names: [] });
    byDir.get(key)!.names.push(baseOf(f.rel), ...(scales ? [baseOf(scalesPathOf(f.rel))] : []));
  }
  // Only in real directories of the output directory: nothing is removed through a link.
  await Promise.all(
    [...byDir.values()].map(async ({ rel, names }) => {
      if (await realDirsBelow(outDir, rel)) await removeStrays(joinPath(outDir, rel), names, true);
    }),
  );
}

/**
 * Removes the outputs of earlier plans beside this shard's (see the module doc): `plan` is the
 * whole dataset's outputs (every shard's), `mine` this shard's; each removal is fenced by `fence`.
 * Returns the paths removed.
 */
export async function removeStale(outDir: string, plan: readonly DatasetFile[], mine: readonly DatasetFile[], fence: Fence): Promise<FsPath[]> {
  const current = new Set(plan.flatMap((f) => [f.rel, scalesPathOf(f.rel)].map((p) => bytesOf(p).toString('latin1'))));
  const removed: FsPath[] = [];
  const listed = new Map<string, Buffer[]>();
  for (const f of mine) {
    if (f.part && f.part.index !== 0) continue;
    const origin = originOf(f);
    const dir = dirOf(joinPath(outDir, origin));
    const key = bytesOf(dir).toString('latin1');
    // Only in real directories of the output directory: nothing is removed through a link.
    if (!listed.has(key)) listed.set(key, (await realDirsBelow(outDir, dirOf(origin))) ? await readdir(dir, { encoding: 'buffer' }).catch(() => []) : []);
    const [stem, ext] = stemOf(baseOf(origin));
    // The whole output, the parts, and the row scales of each (a quantized run's).
    const whole = [bytesOf(baseOf(origin)), bytesOf(baseOf(scalesPathOf(origin)))];
    const prefix = Buffer.concat([stem, Buffer.from('.part-')]);
    for (const n of listed.get(key)!) {
      let ours = whole.some((w) => n.equals(w));
      if (!ours && n.length > prefix.length + ext.length && n.subarray(0, prefix.length).equals(prefix) && n.subarray(n.length - ext.length).equals(ext)) {
        ours = /^\d+-of-\d+(\.scale)?$/.test(n.subarray(prefix.length, n.length - ext.length).toString('latin1'));
      }
      const rel = dirOf(origin) === '.' ? fromBytes(n) : joinPath(dirOf(origin), fromBytes(n));
      if (!ours || current.has(bytesOf(rel).toString('latin1'))) continue;
      fence.check();
      await unlink(joinPath(outDir, rel)).catch(() => {});
      removed.push(rel);
    }
  }
  return removed;
}

/**
 * Refuses a run that would write an output over its own input (an output directory that is, or
 * links to, an input's directory): checked once per directory, so that each file's
 * normalization can skip its own check.
 */
export async function refuseOverwrites(outDir: string, files: readonly DatasetFile[]): Promise<void> {
  const real = new Map<string, Promise<string>>();
  const realOf = (d: FsPath) => {
    const key = bytesOf(d).toString('latin1');
    // A directory not made yet is no input's (an input's exists): it gets a name no real path has.
    if (!real.has(key)) real.set(key, realpath(d, { encoding: 'buffer' }).then((b) => b.toString('latin1'), () => `\0missing:${key}`));
    return real.get(key)!;
  };
  for (const f of files) {
    const out = joinPath(outDir, f.rel);
    if (bytesOf(baseOf(out)).equals(bytesOf(baseOf(f.input))) && (await realOf(dirOf(out))) === (await realOf(dirOf(f.input)))) {
      throw new NormalizeError(`${shown(f.input)} would be overwritten by its own output: choose an output directory apart from the inputs`);
    }
  }
}
