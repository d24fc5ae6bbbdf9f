/**
 * The manifest of a dataset run: one JSON line per output, appended when the output has been
 * renamed into place, so that a line always names a complete file. Each shard writes its own
 * file in the output directory (`manifest.jsonl`, or `manifest.shard-I-of-N.jsonl`), under
 * its lock; a run reads them all. Of several records of one output the newest wins (each says
 * when it was recorded), and a record is trusted only while the output is the very file it
 * recorded (size and modification time): a record left by an older run, of any shard count,
 * cannot vouch for a file another run has since rewritten.
 * @module
 */
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { writeAll } from '../atomic.js';
import { codeOf, fsError, meaningOf, NormalizeError } from '../errors.js';
import { NO_FOLLOW_RW, readSmallFile } from '../confined.js';
import type { FsPath } from '../paths.js';
import type { DatasetRecord } from './types.js';

/** The manifest's file name for shard `index` of `count`. */
export function manifestName(index: number, count: number): string {
  return count === 1 ? 'manifest.jsonl' : `manifest.shard-${index}-of-${count}.jsonl`;
}

/**
 * The largest manifest read: 1 GiB, some two million records. A manifest is read whole to
 * resume, so a larger one (or a file put in its place) is refused, not buffered.
 */
const MANIFEST_MAX_BYTES = 1 << 30;

/** The key of a record: its output path, or (a name that is not UTF-8) the bytes of it. */
export const recordKey = (r: Pick<DatasetRecord, 'output' | 'outputBase64'>): string => (r.outputBase64 !== undefined ? `\0${r.outputBase64}` : r.output);

/**
 * Every record in the manifests of `outDir` (all shards'), by {@link recordKey}: of several,
 * the one recorded last. Lines that do not parse (a line cut by a killed run) are skipped.
 */
export async function readManifests(outDir: string): Promise<Map<string, DatasetRecord>> {
  const done = new Map<string, DatasetRecord>();
  let names: string[];
  try {
    names = (await readdir(outDir)).filter((n) => /^manifest(\.shard-\d+-of-\d+)?\.jsonl$/.test(n)).sort();
  } catch {
    return done;
  }
  for (const name of names) {
    const bytes = await readSmallFile(join(outDir, name), MANIFEST_MAX_BYTES, 'the manifest');
    // Line by line from the bytes: a manifest may be longer than the longest string V8 makes.
    for (let at = 0; bytes !== null && at < bytes.length; ) {
      const nl = bytes.indexOf(0x0a, at);
      const end = nl < 0 ? bytes.length : nl;
      const line = bytes.toString('utf8', at, end);
      at = end + 1;
      let r: DatasetRecord;
      try {
        r = JSON.parse(line) as DatasetRecord;
      } catch {
        continue; // an empty or cut line
      }
      if (typeof r?.output !== 'string') continue;
      const key = recordKey(r);
      const before = done.get(key);
      if (!before || (r.recordedAt ?? 0) >= (before.recordedAt ?? 0)) done.set(key, r);
    }
  }
  return done;
}

/** Appends records to one manifest file (its shard's lock held), each line with one write. */
export class ManifestWriter {
  /** The append before: lines go out one at a time, each where the last ended. */
  private last: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    private size: number,
  ) {}

  /** Opens (creates) `path`; a line cut by a killed run at its end is removed first. */
  static async open(path: string): Promise<ManifestWriter> {
    let fh: FileHandle;
    try {
      fh = await open(path, NO_FOLLOW_RW, 0o644);
    } catch (e) {
      if (codeOf(e) === 'ELOOP') throw new NormalizeError(`the manifest ${path} is a symbolic link: refused (links in an output directory are not followed)`);
      throw fsError(e, 'write the manifest', path);
    }
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      throw new NormalizeError(`the manifest ${path} is not a regular file: refused`);
    }
    let { size } = st;
    if (size > 0) {
      // Back to just after the last newline: whatever follows it is a cut line.
      const tail = Buffer.alloc(Math.min(size, 1 << 16));
      let end = size;
      for (;;) {
        const from = Math.max(0, end - tail.length);
        const n = (await fh.read(tail, 0, end - from, from)).bytesRead;
        const nl = tail.subarray(0, n).lastIndexOf(0x0a);
        if (nl >= 0) {
          end = from + nl + 1;
          break;
        }
        if (from === 0) {
          end = 0;
          break;
        }
        end = from;
      }
      if (end !== size) await fh.truncate(end);
      size = end;
    }
    return new ManifestWriter(fh, path, size);
  }

  /**
   * Appends `record` as one line. Not flushed line by line: a line lost to a power failure only
   * means its output is redone, while its output was flushed before the line was written. A
   * write that fails (a full disk) is undone — the file is cut back to its last whole line —
   * and rejects with a NormalizeError naming the manifest.
   */
  append(record: DatasetRecord): Promise<void> {
    const p = this.last.then(() => this.write(record));
    this.last = p.catch(() => {});
    return p;
  }

  private async write(record: DatasetRecord): Promise<void> {
    const line = Buffer.from(JSON.stringify(record) + '\n');
    try {
      await writeAll(this.fh, [line], this.size, this.path);
    } catch (e) {
      await this.fh.truncate(this.size).catch(() => {});
      throw new NormalizeError(`${record.output} was written, but its line could not be added to ${this.path} (${meaningOf(e)}); the next run redoes it`);
    }
    this.size += line.length;
  }

  /** Flushes (`fdatasync`) and closes the file, after the appends under way. */
  async close(): Promise<void> {
    await this.last;
    await this.fh.datasync().catch(() => {});
    await this.fh.close();
  }
}

/** Whether `path` is a regular file (not a link) of `size` bytes modified at `mtimeMs` (the very file a record vouches for). */
export async function isFile(path: FsPath, size: number, mtimeMs: number): Promise<boolean> {
  const st = await lstat(path).catch(() => null);
  return st !== null && st.isFile() && st.size === size && st.mtimeMs === mtimeMs;
}
