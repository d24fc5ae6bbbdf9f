/**
 * An input opened for reading: a regular file read at any offset, or a stream — standard input
 * (`-`), a pipe, a FIFO, a character device — read once from start to end. Both answer
 * `read(into, pos)`; a stream takes positions in increasing order only (bytes between are read
 * and dropped), so that a format reader that reads forward works on either.
 * @module
 */
import { closeSync, constants, fstat, fstatSync, openSync, read as readCb, statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { codeOf, fsError, NormalizeError } from './errors.js';
import { FdFile, SYNC_BYTES } from './fd-file.js';
import { shown, type FsPath } from './paths.js';

const readFd = promisify(readCb);
const fstatFd = promisify(fstat);

/** See the module doc. */
export interface Source {
  /** The path as given (`-` for standard input). */
  readonly path: FsPath;
  /** Whether any offset can be read (a regular file); false for a stream. */
  readonly seekable: boolean;
  /** The size in bytes, or null for a stream. */
  readonly size: number | null;
  /** The file's identity and time when opened (regular files). */
  readonly stats: Stats;
  /** The descriptor of a regular file, for reads at positions from other threads; undefined for a stream. */
  readonly fd?: number;
  /**
   * Reads `into.length` bytes at `pos` (fewer only at the end); resolves to the count. A stream
   * needs `pos` at or past what it has read so far.
   */
  read(into: Uint8Array, pos: number): Promise<number>;
  /** Closes the file (not standard input). */
  close(): Promise<void>;
}

/**
 * The most bytes one system read asks for: Node's `fs.read` aborts the process (not a thrown
 * error) for a length of 2^31 or more, so a larger read is made of several.
 */
const MAX_READ = 1 << 30;

/** Reads of one descriptor: `pos` null reads on from where the last read ended. */
type RawRead = (into: Uint8Array, off: number, len: number, pos: number | null) => Promise<number>;

class FileSource implements Source {
  readonly seekable = true;
  constructor(
    readonly path: FsPath,
    readonly stats: Stats,
    private readonly raw: RawRead,
    private readonly done: () => Promise<void>,
    readonly fd: number,
  ) {}

  get size(): number {
    return this.stats.size;
  }

  /** Bytes read ahead for small reads, and where they start in the file. */
  private ahead: { at: number; bytes: Uint8Array } | null = null;

  async read(into: Uint8Array, pos: number): Promise<number> {
    if (into.length <= SMALL_READ) return this.readSmall(into, pos);
    let got = 0;
    while (got < into.length) {
      const n = await this.raw(into, got, Math.min(into.length - got, MAX_READ), pos + got);
      if (n === 0) break;
      got += n;
    }
    return got;
  }

  /**
   * A small read (a header, a tiny array of a container of thousands) served from
   * {@link READ_AHEAD} bytes read at once: one system call for many arrays instead of one each.
   */
  private async readSmall(into: Uint8Array, pos: number): Promise<number> {
    const a = this.ahead;
    if (!a || pos < a.at || pos + into.length > a.at + a.bytes.length) {
      // No more than the file holds from there: a small file is one read of its own size.
      const bytes = new Uint8Array(Math.max(Math.min(READ_AHEAD, this.size - pos), into.length, 0));
      let got = 0;
      while (got < bytes.length) {
        const n = await this.raw(bytes, got, bytes.length - got, pos + got);
        if (n === 0) break;
        got += n;
      }
      this.ahead = { at: pos, bytes: bytes.subarray(0, got) };
    }
    const b = this.ahead!;
    const n = Math.max(0, Math.min(into.length, b.at + b.bytes.length - pos));
    into.set(b.bytes.subarray(pos - b.at, pos - b.at + n));
    return n;
  }

  close(): Promise<void> {
    return this.done();
  }
}

/** Reads of at most this many bytes are served from a read-ahead (see FileSource.readSmall). */
const SMALL_READ = 16 << 10;
/** Bytes read at once for small reads: as many as one read on this thread takes (fd-file.ts). */
const READ_AHEAD = SYNC_BYTES;

/** Bytes at the start of a stream kept for reading again (headers are read twice: a prefix, then all). */
const REPLAY_BYTES = 1 << 20;

/**
 * A source read front to back (see the module doc): reads run one at a time in the order
 * asked; the first {@link REPLAY_BYTES} bytes are kept, so that a header may be read again.
 */
export abstract class Sequential implements Source {
  readonly seekable = false;
  readonly size = null;
  /** Bytes pulled so far. */
  private at = 0;
  private kept = new Uint8Array(0);
  /** The read before this one. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    readonly path: FsPath,
    readonly stats: Stats,
  ) {}

  /** Reads the next bytes into `into` at `off` (at most `len`); 0 at the end. */
  protected abstract pull(into: Uint8Array, off: number, len: number): Promise<number>;

  abstract close(): Promise<void>;

  read(into: Uint8Array, pos: number): Promise<number> {
    const p = this.last.then(() => this.readNow(into, pos));
    this.last = p.catch(() => {});
    return p;
  }

  private async readNow(into: Uint8Array, pos: number): Promise<number> {
    let got = 0;
    if (pos < this.at) {
      if (pos + Math.min(into.length, this.at - pos) > this.kept.length) {
        throw new NormalizeError(`${shown(this.path)} is a stream (a pipe, FIFO, device or compressed member): it is read once, front to back, and this needs to go back`);
      }
      got = Math.min(into.length, this.at - pos);
      into.set(this.kept.subarray(pos, pos + got));
    }
    let skip = pos + got - this.at;
    const scratch = skip > 0 ? new Uint8Array(Math.min(skip, 1 << 20)) : null;
    while (skip > 0) {
      const n = await this.pullKept(scratch!, 0, Math.min(skip, scratch!.length));
      if (n === 0) return 0;
      skip -= n;
    }
    while (got < into.length) {
      const n = await this.pullKept(into, got, into.length - got);
      if (n === 0) break;
      got += n;
    }
    return got;
  }

  /** {@link pull}, keeping what falls in the first REPLAY_BYTES. */
  private async pullKept(into: Uint8Array, off: number, len: number): Promise<number> {
    const n = await this.pull(into, off, len);
    if (this.at < REPLAY_BYTES && n > 0) {
      const keep = into.subarray(off, off + Math.min(n, REPLAY_BYTES - this.at));
      const grown = new Uint8Array(this.kept.length + keep.length);
      grown.set(this.kept);
      grown.set(keep, this.kept.length);
      this.kept = grown;
    }
    this.at += n;
    return n;
  }
}

/** A pipe, FIFO or device read with `read(2)` from where the last read ended. */
class StreamSource extends Sequential {
  constructor(
    path: FsPath,
    stats: Stats,
    private readonly raw: RawRead,
    private readonly done: () => Promise<void>,
  ) {
    super(path, stats);
  }

  /** One read; EAGAIN (a non-blocking descriptor with nothing yet) waits and retries. */
  protected async pull(into: Uint8Array, off: number, len: number): Promise<number> {
    for (;;) {
      try {
        return await this.raw(into, off, Math.min(len, MAX_READ), null);
      } catch (e) {
        if (codeOf(e) !== 'EAGAIN') throw fsError(e, 'read', this.path);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  }

  close(): Promise<void> {
    return this.done();
  }
}

/** The descriptor of this process a path names (`/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N`), or -1. */
function descriptorOf(path: FsPath): number {
  if (typeof path !== 'string') return -1;
  const m = /^\/(?:dev\/(stdin)|dev\/fd\/(\d+)|proc\/self\/fd\/(\d+))$/.exec(path);
  return m ? (m[1] ? 0 : Number(m[2] ?? m[3])) : -1;
}

/** A Source over an open descriptor with these stats (a stream unless a regular file). */
function sourceOf(path: FsPath, st: Stats, raw: RawRead, close: () => Promise<void>, fd: number): Source {
  if (st.isDirectory()) throw new NormalizeError(`cannot read ${shown(path)}: it is a directory`);
  return st.isFile() ? new FileSource(path, st, raw, close, fd) : new StreamSource(path, st, raw, close);
}

/**
 * Opens `path` for reading (`-`: standard input): a NormalizeError naming it when it cannot be
 * read, or is a directory. `regularOnly` (a dataset's inputs): anything but a regular file is a
 * NormalizeError too, found without blocking (a FIFO with no writer would block its open).
 */
export async function openSource(path: FsPath, regularOnly = false): Promise<Source> {
  const fd = path === '-' ? 0 : regularOnly ? -1 : descriptorOf(path);
  if (fd >= 0) {
    // A descriptor of this process: read it, not the path again (reopening fails for a socket).
    const st = await fstatFd(fd).catch((e: unknown) => {
      throw fsError(e, 'read', path === '-' ? 'standard input' : path);
    });
    const raw: RawRead = async (into, off, len, pos) => (await readFd(fd, into, off, len, pos)).bytesRead;
    return sourceOf(path, st, raw, async () => {}, fd);
  }
  const file = openRegular(path, regularOnly);
  if (file) {
    return sourceOf(path, file.st, readsOf(file.f, path), () => file.f.close().catch(() => {}), file.f.fd);
  }
  // Not a regular file (a FIFO's open waits for a writer): opened in the pool.
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw fsError(e, 'read', path);
  }
  try {
    const st = await fh.stat();
    return sourceOf(path, st, readsOf(fh, path), () => fh.close().catch(() => {}), fh.fd);
  } catch (e) {
    await fh.close().catch(() => {});
    throw e;
  }
}

/** The reads of an open file (an FdFile, or a stream's FileHandle): an error but EAGAIN becomes a NormalizeError naming `path`. */
function readsOf(f: Pick<FdFile, 'read'>, path: FsPath): RawRead {
  return async (into, off, len, pos) => {
    try {
      return (await f.read(into, off, len, pos)).bytesRead;
    } catch (e) {
      throw codeOf(e) === 'EAGAIN' ? e : fsError(e, 'read', path);
    }
  };
}

/**
 * `path` opened on this thread when it is a regular file (fd-file.ts says why), with its stats;
 * null when it is something else, to be opened as a stream. `regularOnly`: anything else is a
 * NormalizeError, found without blocking (opened `O_NONBLOCK`, which a regular file ignores).
 */
function openRegular(path: FsPath, regularOnly: boolean): { f: FdFile; st: Stats } | null {
  if (!regularOnly) {
    let st: Stats;
    try {
      st = statSync(path);
    } catch (e) {
      throw fsError(e, 'read', path);
    }
    if (!st.isFile()) return null;
  }
  let fd: number;
  try {
    // Non-blocking also where the path was just seen to be a regular file: it may be a FIFO by now.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw fsError(e, 'read', path);
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    if (regularOnly) throw new NormalizeError(`${shown(path)} is not a regular file (a FIFO, a device or a socket): a dataset reads regular files; give it alone, as IN OUT, to read it as a stream`);
    return null;
  }
  return { f: new FdFile(fd), st };
}
