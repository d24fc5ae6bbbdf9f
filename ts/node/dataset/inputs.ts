/**
 * What a dataset run reads: the files named by the inputs (files, directories walked
 * recursively, glob patterns), each with the path its output gets under the output directory.
 * @module
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { NormalizeError } from '../errors.js';
import type { DatasetPart } from './types.js';

/** One input file of a dataset. */
export interface DatasetFile {
  /** The input's path (as found: the input given, or joined to it). */
  input: string;
  /** The output's path relative to the output directory (`/`-separated). */
  rel: string;
  /** The input's size in bytes, when listed. */
  size: number;
  /** The bytes this output reads: the input's size, or a part's share of it. */
  bytes: number;
  /** The input's modification time (ms since the epoch), when listed. */
  mtimeMs: number;
  /** For a part of a file split between shards: which part, and the indices of the first axis it holds. */
  part?: DatasetPart;
}

/** Sorts `files` by output path, in place; two with one output path is a NormalizeError naming both inputs. */
export function sortByOutput<T extends { input: string; rel: string }>(files: T[]): T[] {
  files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  for (let i = 1; i < files.length; i++) {
    if (files[i]!.rel === files[i - 1]!.rel) {
      throw new NormalizeError(`${files[i - 1]!.input} and ${files[i]!.input} would both be written to ${files[i]!.rel}`);
    }
  }
  return files;
}

/** Whether `s` has a glob character (`*`, `?`, `[`). */
const isGlob = (s: string): boolean => /[*?[]/.test(s);

/** A glob's pattern as a RegExp over `/`-separated relative paths: `**` any depth, `*` and `?` within a name, `[...]` a class. */
function globRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/';
      re += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        re += `[${pattern.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Every regular file under `dir` (relative, `/`-separated, sorted), not descending into `skip` or hidden entries. */
async function walk(dir: string, skip: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (d: string, prefix: string): Promise<void> => {
    if (resolve(d) === skip) return;
    const entries = await readdir(d, { withFileTypes: true });
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.name.startsWith('.')) continue;
      if (e.isDirectory()) await visit(join(d, e.name), `${prefix}${e.name}/`);
      else if (e.isFile()) out.push(`${prefix}${e.name}`);
    }
  };
  await visit(dir, '');
  return out;
}

/**
 * The files of `inputs`, sorted by output path: a file as given (its output: its base name);
 * a directory walked recursively, keeping the names `accept` allows (outputs at the same
 * relative paths); a glob (`data/**\/*.npy`) matched under its directory part (outputs
 * relative to it). Hidden names and `outDir` itself are skipped. Two inputs that would write
 * the same output, or an input that matches nothing, is a NormalizeError.
 */
export async function listInputs(inputs: readonly string[], outDir: string, accept: (name: string) => boolean): Promise<DatasetFile[]> {
  const skip = resolve(outDir);
  const found: { input: string; rel: string }[] = [];
  for (const given of inputs) {
    if (isGlob(given)) {
      const parts = given.split(/[\\/]/);
      const fixed = parts.slice(0, parts.findIndex(isGlob));
      const base = fixed.length === 0 ? '.' : fixed.join(sep) || sep;
      const re = globRegExp(parts.slice(fixed.length).join('/'));
      const matched = (await walk(base, skip).catch(() => [])).filter((r) => re.test(r));
      if (matched.length === 0) throw new NormalizeError(`${given}: no file matches`);
      found.push(...matched.map((rel) => ({ input: join(base, rel), rel })));
      continue;
    }
    let st;
    try {
      st = await stat(given);
    } catch (e) {
      throw new NormalizeError(`cannot read ${given}: ${(e as Error).message}`);
    }
    if (st.isDirectory()) {
      if (resolve(given) === skip) throw new NormalizeError(`${given} is the output directory: choose an output directory apart from the inputs`);
      const files = (await walk(given, skip)).filter((r) => accept(basename(r)));
      if (files.length === 0) throw new NormalizeError(`${given}: the directory has no input files`);
      found.push(...files.map((rel) => ({ input: join(given, rel), rel })));
    } else found.push({ input: given, rel: basename(given) });
  }
  sortByOutput(found);
  return Promise.all(
    found.map(async (f) => {
      const st = await stat(f.input);
      return { ...f, size: st.size, bytes: st.size, mtimeMs: st.mtimeMs };
    }),
  );
}
