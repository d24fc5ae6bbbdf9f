/**
 * Where an output goes, decided before anything is computed:
 * - a new or regular file: an {@link AtomicFile} beside it, renamed over it when complete;
 * - a symbolic link: followed to the file it names, which is replaced the same way (the link
 *   stays a link);
 * - `-` (standard output), a FIFO, a character device (`/dev/null`), `/dev/stdout` and other
 *   descriptors: written through, front to back, as a stream — not atomic: what was written
 *   before an error stays written;
 * - a directory, a block device or a socket: refused.
 * @module
 */
import { lstatSync, readlinkSync, statSync, write as writeCb, type Stats } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { AtomicFile, writeAll } from './atomic.js';
import { codeOf, fsError, NormalizeError } from './errors.js';
import type { Fence } from './fence.js';
import { bytesOf, dirOf, fromBytes, joinPath, shown, type FsPath } from './paths.js';

const writeCbP = promisify(writeCb);

/** An output being written: an AtomicFile, or a {@link StreamSink}. */
export type Sink = AtomicFile | StreamSink;

/** An output written through as a stream (see the module doc): positions must follow one another. */
class StreamSink {
  readonly seekable = false;
  private at = 0;
  private closed = false;

  constructor(
    /** The path as given (`-`: standard output). */
    readonly target: FsPath,
    /** The file opened, or the descriptor of this process written (standard output, `/dev/fd/N`). */
    private readonly fh: FileHandle | number,
  ) {}

  /** Writes `parts` at `pos`, which must be where the last write ended. */
  async write(parts: readonly Uint8Array[], pos: number): Promise<void> {
    if (pos !== this.at) throw new Error(`internal: a stream output written at ${pos} after ${this.at} bytes`);
    if (typeof this.fh !== 'number') await writeAll(this.fh, parts, null, this.target);
    else for (const p of parts) await writeFd(this.fh, p, this.target);
    this.at += parts.reduce((a, b) => a + b.length, 0);
  }

  /** Closes it (nothing to flush: a stream has no file to sync). */
  async flush(): Promise<void> {
    await this.abort();
  }

  /** Nothing: what was written is there. */
  async publish(): Promise<void> {}

  /** Closes the file (a descriptor of this process stays open). */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (typeof this.fh !== 'number') await this.fh.close().catch(() => {});
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.abort();
  }
}

/** Writes all of `b` to descriptor `fd`, waiting out EAGAIN (standard output may be non-blocking). */
async function writeFd(fd: number, b: Uint8Array, name: FsPath): Promise<void> {
  let put = 0;
  while (put < b.length) {
    try {
      put += (await writeCbP(fd, b, put, b.length - put, null)).bytesWritten;
    } catch (e) {
      if (codeOf(e) !== 'EAGAIN') throw fsError(e, 'write', name);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/**
 * The descriptor of this process a path names (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`),
 * or -1: written through that descriptor (opening the path again fails for a socket, and would
 * truncate a file the shell opened for appending).
 */
function descriptorOf(path: FsPath): number {
  if (typeof path !== 'string') return -1;
  const m = /^\/(?:dev\/(stdout|stderr)|dev\/fd\/(\d+)|proc\/self\/fd\/(\d+)|proc\/(\d+)\/fd\/(\d+))$/.exec(path);
  if (!m) return -1;
  if (m[1]) return m[1] === 'stdout' ? 1 : 2;
  if (m[4] && Number(m[4]) !== process.pid) return -1;
  return Number(m[2] ?? m[3] ?? m[5]);
}

/** How `path` is written: `file` (atomically, at `target`, the end of its links) or `stream`. */
export interface OutputPlan {
  readonly kind: 'file' | 'stream';
  /** The file written: the path, or what its links lead to. */
  readonly target: FsPath;
}

/**
 * Where `path` leads, following symbolic links one by one (a link to a missing file leads to
 * that file's path): the end of the chain and its stats, or null when nothing is there. Calls on
 * this thread (fd-file.ts says why).
 */
function endOfLinks(path: FsPath): { target: FsPath; st: Stats | null } {
  let p = path;
  for (let hops = 0; hops < 40; hops++) {
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch (e) {
      if (codeOf(e) === 'ENOENT') return { target: p, st: null };
      throw fsError(e, 'write', path);
    }
    if (!st.isSymbolicLink() || descriptorOf(p) >= 0) return { target: p, st };
    const to = readlinkSync(p, { encoding: 'buffer' });
    p = to[0] === 0x2f ? fromBytes(to) : joinPath(dirOf(p), fromBytes(to));
  }
  throw new NormalizeError(`cannot write ${shown(path)}: too many levels of symbolic links`);
}

/**
 * Decides how `path` is written (see the module doc); `what` names it in messages (`output`,
 * `options.rstd`). A NormalizeError for a directory, a block device or a socket.
 */
export async function planOutput(path: FsPath, what: string): Promise<OutputPlan> {
  if (path === '-' || descriptorOf(path) >= 0) return { kind: 'stream', target: path };
  const { target, st } = endOfLinks(path);
  if (descriptorOf(target) >= 0) return { kind: 'stream', target }; // a link to /dev/stdout or /proc/self/fd/N
  const via = bytesOf(target).equals(bytesOf(path)) ? '' : ` (where the link ${shown(path)} leads)`;
  if (st === null || st.isFile()) return { kind: 'file', target };
  if (st.isDirectory()) throw new NormalizeError(`${what} ${shown(target)}${via} is a directory: give a file name`);
  if (st.isFIFO() || st.isCharacterDevice()) return { kind: 'stream', target };
  const kind = st.isBlockDevice() ? 'a block device' : st.isSocket() ? 'a socket' : 'not a file';
  throw new NormalizeError(`${what} ${shown(target)}${via} is ${kind}: refused (give a regular file, a FIFO, a character device or - for standard output)`);
}

/** Opens the output `plan` describes; a file's rename into place is fenced by `fence`. */
export async function openSink(plan: OutputPlan, fence: Fence): Promise<Sink> {
  if (plan.kind === 'file') return AtomicFile.create(plan.target, fence);
  if (plan.target === '-') return new StreamSink('-', 1);
  const fd = descriptorOf(plan.target);
  if (fd >= 0) return new StreamSink(plan.target, fd);
  try {
    return new StreamSink(plan.target, await open(plan.target, 'w'));
  } catch (e) {
    throw fsError(e, 'write', plan.target);
  }
}

/**
 * Makes the directory `path` and those above it, as `mkdir -p` does, but through a link to a
 * directory not made yet (its target is made), and with the real reason when one cannot be
 * made (a read-only file system, not the "no such file" a recursive mkdir reports). `what`
 * names it in the message.
 */
export async function makeDirs(path: FsPath, what = 'the directory'): Promise<void> {
  const { target, st } = endOfLinks(path);
  if (st) {
    if (st.isDirectory()) return;
    throw new NormalizeError(`cannot make ${what} ${shown(path)}: a file of that name is there`);
  }
  const up = dirOf(target);
  if (!bytesOf(up).equals(bytesOf(target))) await makeDirs(up, what);
  try {
    await mkdir(target);
  } catch (e) {
    if (codeOf(e) !== 'EEXIST') throw fsError(e, `make ${what}`, path);
  }
}

/** Whether the files at `a` and `b` are one (by device and inode; false when either is missing). */
export async function sameInode(a: FsPath, b: FsPath): Promise<boolean> {
  try {
    const [sa, sb] = [statSync(a), statSync(b)];
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false;
  }
}
