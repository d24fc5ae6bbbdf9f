/**
 * The manifest of a dataset run: one JSON line per output, appended when the output has been
 * renamed into place, so that a line always names a complete file. Each shard writes its own
 * file in the output directory (`manifest.jsonl`, or `manifest.shard-I-of-N.jsonl`), under
 * its lock; a run reads them all. Of several records of one output the newest wins (each says
 * when it was recorded), and a record is trusted only while the output is the very file it
 * recorded (size and modification time): a record left by an older run, of any shard count,
 * cannot vouch for a file another run has since rewritten.
 *
 * A manifest is read as a stream, a line at a time, each line at most {@link LINE_MAX_BYTES}:
 * a line that is longer, does not parse (a line cut by a killed run), or is not a record of this
 * tool's (a field missing, of the wrong type or out of its range) is skipped, and the run says
 * so once per manifest, naming the lines. A manifest is written only through the one link it
 * has: a symbolic link, or a file with another hard link, is refused.
 * @module
 */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { codeOf, fsError, meaningOf, NormalizeError } from '../io/errors.js';
import { NO_FOLLOW_RW } from '../io/confined.js';
import type { Fence } from '../io/fence.js';
import { FORMAT_NAMES } from '../formats/index.js';
import { ALL_DTYPES } from '../../glue/dtypes.js';
import type { FsPath } from '../io/paths.js';
import type { DatasetRecord } from './types.js';

/** The manifest's file name for shard `index` of `count`. */
export function manifestName(index: number, count: number): string {
  return count === 1 ? 'manifest.jsonl' : `manifest.shard-${index}-of-${count}.jsonl`;
}

/**
 * The largest manifest read: 1 GiB, some two million records (a run keeps the newest record of
 * each output in memory). A larger file in its place is refused, not read.
 */
const MANIFEST_MAX_BYTES = 1 << 30;
/** The longest line a record may be: its paths (4096 bytes each, and their base64), shape and options fit many times over. */
const LINE_MAX_BYTES = 1 << 20;
/** Bytes read from a manifest at a time. */
const READ_BYTES = 1 << 20;
/** The skipped lines a warning names; the rest are counted. */
const NAMED_LINES = 5;

/** The key of a record: its output path, or (a name that is not UTF-8) the bytes of it. */
export const recordKey = (r: Pick<DatasetRecord, 'output' | 'outputBase64'>): string => (r.outputBase64 !== undefined ? `\0${r.outputBase64}` : r.output);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const whole = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;
const finite = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);
const text = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const base64 = (v: unknown): boolean => typeof v === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v);
const dtype = (v: unknown): boolean => typeof v === 'string' && Object.hasOwn(ALL_DTYPES, v);
/** An optional field: absent, or as `rule` says. */
const optional = (rule: (v: unknown) => boolean) => (v: unknown): boolean => v === undefined || rule(v);

/** Each field of a record (types.ts DatasetRecord) with what it must hold. */
const FIELDS: Readonly<Record<keyof DatasetRecord, (v: unknown) => boolean>> = {
  input: text,
  inputBase64: optional(base64),
  output: text,
  outputBase64: optional(base64),
  recordedAt: finite,
  inputSize: whole,
  inputMtimeMs: finite,
  outputSize: whole,
  outputMtimeMs: finite,
  scales: optional((s) => isObject(s) && text(s.output) && optional(base64)(s.outputBase64) && whole(s.outputSize) && finite(s.outputMtimeMs)),
  format: (v) => FORMAT_NAMES.includes(v as never),
  dtype,
  outDtype: dtype,
  rows: whole,
  dim: whole,
  shape: (v) => Array.isArray(v) && v.length <= 64 && v.every(whole),
  options: isObject,
  seconds: finite,
  sha256: optional((v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v)),
  part: optional(
    (p) => isObject(p) && whole(p.index) && whole(p.count) && whole(p.start) && whole(p.end) && (p.index as number) < (p.count as number) && (p.start as number) <= (p.end as number),
  ),
};

/** What is wrong with `r` as a record of this tool's, or null when nothing is. */
function recordFault(r: unknown): string | null {
  if (!isObject(r)) return 'not a JSON object';
  for (const [k, rule] of Object.entries(FIELDS)) {
    if (!rule(r[k])) return `${k} is ${r[k] === undefined ? 'missing' : 'not what a record holds'}`;
  }
  return null;
}

/** The lines of one manifest that were skipped, for the one warning that names them. */
class Skipped {
  private named: string[] = [];
  private count = 0;
  add(line: number, why: string): void {
    if (this.count++ < NAMED_LINES) this.named.push(`line ${line}: ${why}`);
  }
  /** The warning, or null when nothing was skipped. */
  warning(path: string): string | null {
    if (this.count === 0) return null;
    const more = this.count > NAMED_LINES ? `; and ${this.count - NAMED_LINES} more` : '';
    return `skipped ${this.count} line${this.count === 1 ? '' : 's'} of ${path} that ${this.count === 1 ? 'is not a record' : 'are not records'} (${this.named.join('; ')}${more}): an output no other line records is redone`;
  }
}

/**
 * Reads the manifest at `path` a line at a time (see the module doc), calling `line` with each
 * line of at most {@link LINE_MAX_BYTES} bytes and its number, and `skip` with the number of each
 * longer one. Nothing when the file is not there; a NormalizeError for a link, anything but a
 * regular file, or one larger than {@link MANIFEST_MAX_BYTES}.
 */
function readLines(path: string, line: (text: string, n: number) => void, skip: (n: number) => void): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return;
    if (codeOf(e) === 'ELOOP') throw new NormalizeError(`the manifest ${path} is a symbolic link: refused (links in an output directory are not followed)`);
    throw fsError(e, 'read', path);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NormalizeError(`the manifest ${path} is not a regular file: refused`);
    if (st.size > MANIFEST_MAX_BYTES) throw new NormalizeError(`the manifest ${path} is ${st.size} bytes, more than the ${MANIFEST_MAX_BYTES} it may be`);
    const block = Buffer.alloc(READ_BYTES);
    let carry: Buffer[] = [];
    let carried = 0;
    let tooLong = false;
    let n = 1;
    const end = (tail: Buffer) => {
      if (tooLong || carried + tail.length > LINE_MAX_BYTES) skip(n);
      else line(Buffer.concat([...carry, tail]).toString('utf8'), n);
      carry = [];
      carried = 0;
      tooLong = false;
      n++;
    };
    for (let pos = 0; pos < MANIFEST_MAX_BYTES; ) {
      const got = readSync(fd, block, 0, block.length, pos);
      if (got === 0) break;
      pos += got;
      let at = 0;
      for (let nl = block.indexOf(0x0a, at); nl >= 0 && nl < got; nl = block.indexOf(0x0a, at)) {
        end(block.subarray(at, nl));
        at = nl + 1;
      }
      const rest = block.subarray(at, got);
      if (tooLong || carried + rest.length > LINE_MAX_BYTES) tooLong = true;
      else {
        carry.push(Buffer.from(rest));
        carried += rest.length;
      }
    }
    if (carried > 0 || tooLong) end(Buffer.alloc(0));
  } finally {
    closeSync(fd);
  }
}

/**
 * Every record in the manifests of `outDir` (all shards'), by {@link recordKey}: of several,
 * the one recorded last. Lines that are not records are skipped, and `warn` is called once per
 * manifest that had any.
 */
export async function readManifests(outDir: string, warn: (message: string) => void): Promise<Map<string, DatasetRecord>> {
  const done = new Map<string, DatasetRecord>();
  let names: string[];
  try {
    names = (await readdir(outDir)).filter((n) => /^manifest(\.shard-\d+-of-\d+)?\.jsonl$/.test(n)).sort();
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return done;
    throw fsError(e, 'read the directory', outDir);
  }
  for (const name of names) {
    const path = join(outDir, name);
    const skipped = new Skipped();
    readLines(
      path,
      (line, n) => {
        if (line.trim() === '') return;
        let r: unknown;
        try {
          r = JSON.parse(line);
        } catch {
          return skipped.add(n, 'not JSON (a line cut short?)');
        }
        const fault = recordFault(r);
        if (fault !== null) return skipped.add(n, fault);
        const rec = r as DatasetRecord;
        const key = recordKey(rec);
        const before = done.get(key);
        if (!before || rec.recordedAt >= before.recordedAt) done.set(key, rec);
      },
      (n) => skipped.add(n, `longer than ${LINE_MAX_BYTES} bytes`),
    );
    const w = skipped.warning(path);
    if (w !== null) warn(w);
  }
  return done;
}

/** Appends records to one manifest file (its shard's lock held), each line with one write after its fence. */
export class ManifestWriter {
  private constructor(
    private readonly fd: number,
    readonly path: string,
    private size: number,
    private readonly fence: Fence,
  ) {}

  /**
   * Opens (creates) `path`, never through a link: a symbolic link there, or a file with
   * another hard link, is a NormalizeError. A line cut by a killed run at its end is removed
   * first. Each append is fenced by `fence`.
   */
  static async open(path: string, fence: Fence): Promise<ManifestWriter> {
    fence.check();
    let fd: number;
    try {
      fd = openSync(path, NO_FOLLOW_RW, 0o644);
    } catch (e) {
      if (codeOf(e) === 'ELOOP') throw new NormalizeError(`the manifest ${path} is a symbolic link: refused (links in an output directory are not followed)`);
      throw fsError(e, 'write the manifest', path);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new NormalizeError(`the manifest ${path} is not a regular file: refused`);
      if (st.nlink !== 1) throw new NormalizeError(`the manifest ${path} has ${st.nlink} hard links: refused (its lines would be written into the other names' file too)`);
      let { size } = st;
      if (size > 0) {
        // Back to just after the last newline: whatever follows it is a cut line.
        const tail = Buffer.alloc(Math.min(size, 1 << 16));
        let end = size;
        for (;;) {
          const from = Math.max(0, end - tail.length);
          const n = readSync(fd, tail, 0, end - from, from);
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
        if (end !== size) {
          fence.check();
          ftruncateSync(fd, end);
        }
        size = end;
      }
      return new ManifestWriter(fd, path, size, fence);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /**
   * Appends `record` as one line, if the fence holds (checked right before the write, which
   * follows at once on this thread). Not flushed line by line: a line lost to a power failure
   * only means its output is redone, while its output was flushed before the line was written.
   * A write that fails (a full disk) is undone — the file is cut back to its last whole line —
   * and rejects with a NormalizeError naming the manifest.
   */
  async append(record: DatasetRecord): Promise<void> {
    const line = Buffer.from(JSON.stringify(record) + '\n');
    this.fence.check();
    try {
      let put = 0;
      while (put < line.length) put += writeSync(this.fd, line, put, line.length - put, this.size + put);
    } catch (e) {
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // the next run cuts the line
      }
      throw new NormalizeError(`${record.output} was written, but its line could not be added to ${this.path} (${meaningOf(e)}); the next run redoes it`);
    }
    this.size += line.length;
  }

  /** Flushes (`fdatasync`) and closes the file. */
  async close(): Promise<void> {
    await new Promise<void>((ok) => fdatasync(this.fd, () => ok()));
    closeSync(this.fd);
  }
}

/** Whether `path` is a regular file (not a link) of `size` bytes modified at `mtimeMs` (the very file a record vouches for). */
export async function isFile(path: FsPath, size: number, mtimeMs: number): Promise<boolean> {
  const st = await lstat(path).catch(() => null);
  return st !== null && st.isFile() && st.size === size && st.mtimeMs === mtimeMs;
}
