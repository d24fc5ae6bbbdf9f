/**
 * What a dataset run reads: the files named by the inputs (files, directories walked
 * recursively, glob patterns), each with the path its output gets under the output directory.
 *
 * Names are read as bytes, so a name that is not UTF-8 is found and written like any other.
 * Symbolic links are followed by default — each real file once (a second link to it is
 * skipped with a warning), a link to a file wherever it leads (the Hugging Face cache's
 * `snapshots/` folders are links into `../../blobs`), a link to a directory only when that
 * directory is inside the walked one (a link out of it, or back to a directory above it, is
 * skipped with a warning naming the link) — and each output is named by the path of the
 * link; with `followSymlinks: false` links are skipped, each with a warning. Only regular
 * files are inputs: a FIFO, a socket or a device in a walked directory is skipped. The output
 * directory is never read as input, whatever path names it.
 * @module
 */
import { statSync, type Dirent, type Stats } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { codeOf, fsError, NormalizeError } from '../io/errors.js';
import { complete, open, startOf, step, type Glob, type Places } from './glob.js';
import { baseOf, bytesOf, fromBytes, joinPath, shown, type FsPath } from '../io/paths.js';
import type { DatasetPart } from './types.js';

/** One input file of a dataset. */
export interface DatasetFile {
  /** The input's path (as found: the input given, or joined to it). */
  input: FsPath;
  /** The output's path relative to the output directory (`/`-separated). */
  rel: FsPath;
  /** The input's size in bytes. */
  size: number;
  /** The bytes this output reads: the input's size, or a part's share of it. */
  bytes: number;
  /** The input's modification time (ms since the epoch). */
  mtimeMs: number;
  /** For a part of a file split between shards: which part, and the indices of the first axis it holds. */
  part?: DatasetPart;
  /** For a part: the output path of the whole file it was cut from. */
  origin?: FsPath;
}

/** Orders paths by their bytes. */
export const byBytes = (a: FsPath, b: FsPath): number => Buffer.compare(bytesOf(a), bytesOf(b));

/** Sorts `files` by output path, in place; two with one output path is a NormalizeError naming both inputs. */
export function sortByOutput<T extends { input: FsPath; rel: FsPath }>(files: T[]): T[] {
  files.sort((a, b) => byBytes(a.rel, b.rel));
  for (let i = 1; i < files.length; i++) {
    if (byBytes(files[i]!.rel, files[i - 1]!.rel) === 0) {
      throw new NormalizeError(`${shown(files[i - 1]!.input)} and ${shown(files[i]!.input)} would both be written to ${shown(files[i]!.rel)}`);
    }
  }
  return files;
}

/** How a walk treats what it finds. */
interface WalkRules {
  /** Whether a file of this (base) name is an input. */
  accept: (name: string) => boolean;
  /** What {@link accept} takes, in words (for the message about a directory with none). */
  accepts: string;
  /** Follow symbolic links (default true). */
  follow: boolean;
  /** The output directory's identity (`dev:ino`), never entered. */
  skip: string | null;
  /** The real path of the directory walked, its bytes as latin1 (set by {@link walk}): a link to a directory outside it is not followed. */
  root?: string;
  warn: (message: string) => void;
  /** Stops the walk (between directories) with its reason. */
  signal?: AbortSignal;
}

const idOf = (st: Stats): string => `${st.dev}:${st.ino}`;

/** A name as a glob matches it: its text, or (not UTF-8) its bytes one character each. */
const nameText = (name: FsPath): string => (typeof name === 'string' ? name : name.toString('latin1'));

/**
 * What a symbolic link at `path` leads to, followed: its stats, or null for a link that leads
 * nowhere (a missing target, or a loop of links), which is skipped with a warning. Any other
 * error is a NormalizeError naming the link.
 */
async function linkTarget(path: FsPath, rules: WalkRules): Promise<Stats | null> {
  try {
    return statSync(path);
  } catch (e) {
    const code = codeOf(e);
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') {
      rules.warn(`skipped the symbolic link ${shown(path)}: it leads nowhere${code === 'ELOOP' ? ' (a loop of links)' : ''}`);
      return null;
    }
    throw fsError(e, 'follow the symbolic link', path);
  }
}

/**
 * Every file under `dir` that `rules` accept — or, with `glob`, whose path below `dir` it
 * matches (directories no place of the pattern survives are not entered) — relative,
 * `/`-separated, in byte order, not descending into hidden entries. Every error reading a
 * directory or following a link is a NormalizeError naming it.
 */
async function walk(dir: FsPath, rules: WalkRules, glob?: Glob): Promise<FsPath[]> {
  const out: FsPath[] = [];
  const visit = async (d: FsPath, prefix: FsPath, above: Set<string>, places: Places | null): Promise<void> => {
    rules.signal?.throwIfAborted();
    let entries: Dirent<Buffer>[];
    try {
      entries = await readdir(d, { withFileTypes: true, encoding: 'buffer' });
    } catch (e) {
      throw fsError(e, 'read the directory', d);
    }
    entries.sort((a, b) => Buffer.compare(a.name, b.name));
    for (const e of entries) {
      if (e.name[0] === 0x2e) continue; // hidden
      const name = fromBytes(e.name);
      const path = joinPath(d, name);
      const rel = prefix.length ? joinPath(prefix, name) : name;
      const here = glob && places ? step(glob, places, nameText(name)) : null;
      if (glob && here && here.length === 0) continue; // nothing of the pattern matches below
      let isDir = e.isDirectory();
      if (e.isSymbolicLink()) {
        if (!rules.follow) {
          rules.warn(`skipped the symbolic link ${shown(path)} (links are not followed)`);
          continue;
        }
        const st = await linkTarget(path, rules);
        if (!st) continue;
        isDir = st.isDirectory();
        if (!isDir && !st.isFile()) continue;
        if (isDir) {
          let real: string;
          try {
            real = (await realpath(path, { encoding: 'buffer' })).toString('latin1');
          } catch (err) {
            throw fsError(err, 'follow the symbolic link', path);
          }
          if (!(real === rules.root || real.startsWith(rules.root === '/' ? '/' : `${rules.root}/`))) {
            rules.warn(`skipped the symbolic link ${shown(path)}: it leads to a directory outside ${shown(dir)} (links to directories are followed only within it)`);
            continue;
          }
        }
      } else if (!isDir && !e.isFile()) continue;
      if (isDir) {
        if (glob && here && !open(glob, here)) continue;
        let st: Stats;
        try {
          st = statSync(path);
        } catch (err) {
          throw fsError(err, 'read the directory', path);
        }
        const id = idOf(st);
        if (id === rules.skip) continue;
        if (above.has(id)) {
          rules.warn(`skipped ${shown(path)}: a link back to a directory above it (a loop)`);
          continue;
        }
        await visit(path, rel, new Set([...above, id]), here);
      } else if (glob ? here !== null && complete(glob, here) : rules.accept(nameText(name))) out.push(rel);
    }
  };
  let top: Stats;
  try {
    top = statSync(dir);
    rules = { ...rules, root: (await realpath(dir, { encoding: 'buffer' })).toString('latin1') };
  } catch (e) {
    throw fsError(e, 'read the directory', dir);
  }
  if (!top.isDirectory()) throw new NormalizeError(`${shown(dir)} is not a directory`);
  await visit(dir, '', new Set([idOf(top)]), glob ? startOf(glob) : null);
  return out;
}

/**
 * The files of `inputs`, sorted by output path: a file as given (its output: its base name);
 * a directory walked recursively (outputs at the same relative paths); a glob (`data/**\/*.npy`)
 * matched under its directory part (outputs relative to it). Two inputs that would write the
 * same output, or an input that matches nothing, is a NormalizeError. A real file reached by
 * two paths is read once, by the first.
 */
export async function listInputs(
  inputs: readonly string[], outDir: string, rules: Omit<WalkRules, 'skip'> & { globs: ReadonlyMap<string, Glob> },
): Promise<DatasetFile[]> {
  let out: Stats | null = null;
  try {
    out = statSync(outDir);
  } catch (e) {
    if (codeOf(e) !== 'ENOENT') throw fsError(e, 'read', outDir);
  }
  const r: WalkRules = { ...rules, skip: out ? idOf(out) : null };
  const found: { input: FsPath; rel: FsPath }[] = [];
  for (const given of inputs) {
    const glob = rules.globs.get(given);
    if (glob) {
      const matched = await walk(glob.base, r, glob);
      if (matched.length === 0) throw new NormalizeError(`${given}: no file matches (in ${shown(glob.base)} and below, hidden names not searched)`);
      found.push(...matched.map((rel) => ({ input: joinPath(glob.base, rel), rel })));
      continue;
    }
    let st: Stats;
    try {
      st = statSync(given);
    } catch (e) {
      throw fsError(e, 'read', given);
    }
    if (st.isDirectory()) {
      if (idOf(st) === r.skip || resolve(given) === resolve(outDir)) throw new NormalizeError(`${given} is the output directory: choose an output directory apart from the inputs`);
      const files = await walk(given, r);
      if (files.length === 0) throw new NormalizeError(`${given}: the directory has no input files (${r.accepts}, not hidden, in it or below)`);
      found.push(...files.map((rel) => ({ input: joinPath(given, rel), rel })));
    } else if (!st.isFile()) {
      throw new NormalizeError(`${given} is not a regular file (a FIFO, a device or a socket): a dataset reads regular files; give it alone, as IN OUT, to read it as a stream`);
    } else found.push({ input: given, rel: baseOf(given) });
  }
  sortByOutput(found);
  const seen = new Map<string, FsPath>();
  const files: DatasetFile[] = [];
  for (const f of found) {
    rules.signal?.throwIfAborted();
    let st: Stats;
    try {
      st = statSync(f.input);
    } catch (e) {
      throw fsError(e, 'read', f.input);
    }
    const first = seen.get(idOf(st));
    if (first !== undefined) {
      rules.warn(`skipped ${shown(f.input)}: it is the same file as ${shown(first)}, normalized once`);
      continue;
    }
    seen.set(idOf(st), f.input);
    files.push({ ...f, size: st.size, bytes: st.size, mtimeMs: st.mtimeMs });
  }
  return files;
}
