/**
 * An output file that appears under its name only when complete: written to a temporary file
 * beside it, then flushed and renamed into place ({@link AtomicFile.publish}); anything else
 * removes the temporary file ({@link AtomicFile.abort}, or the end of an `await using` block
 * that did not publish). A rename within one directory is atomic on POSIX file systems, so a
 * reader sees the old file or the whole new one, never a part.
 *
 * Temporary names are `.NAME.tmp-PID-RANDOM` beside NAME, or `.HASH.tmp-PID-RANDOM` (a hash of
 * NAME) when that would be longer than a name may be; {@link strayTemps} finds the ones of a
 * target that a killed process left.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { FdFile } from './fd-file.js';
import { codeOf, fsError, NormalizeError } from './errors.js';
import type { Fence } from './fence.js';
import { pathText, tell } from './supervised.js';
import { baseOf, byteLength, bytesOf, dirOf, fromBytes, joinPath, NAME_MAX, pathHash, shown, type FsPath } from './paths.js';

/** `.tmp-PID-RANDOM`, the tail of every temporary name (RANDOM: 8 hex digits). */
const TAIL = /\.tmp-(\d+)-[0-9a-f]{8}$/;

/** The two stems a temporary of `name` may have: `.NAME` and `.HASH` (the second for long names). */
function stems(name: FsPath): Buffer[] {
  return [plainStem(name), hashedStem(name)];
}
const plainStem = (name: FsPath): Buffer => Buffer.concat([Buffer.from('.'), bytesOf(name)]);
const hashedStem = (name: FsPath): Buffer => Buffer.from(`.${pathHash(name)}`);

/** Random bytes for temporary names, drawn a page at a time (one draw costs what a file's other steps do). */
let randomPool = Buffer.alloc(0);
let randomAt = 0;

/** 8 random hex digits. */
function random8(): string {
  if (randomAt + 4 > randomPool.length) [randomPool, randomAt] = [randomBytes(4096), 0];
  return randomPool.toString('hex', randomAt, (randomAt += 4));
}

/** A new temporary name for the file `name`: within NAME_MAX bytes whatever the name's length. */
function tempName(name: FsPath): FsPath {
  const tail = Buffer.from(`.tmp-${process.pid}-${random8()}`);
  const plain = plainStem(name);
  return fromBytes(Buffer.concat([plain.length + tail.length <= NAME_MAX ? plain : hashedStem(name), tail]));
}

/** The temporary files in `dir` made for the files `names` of it, each with the pid that made it. */
async function strayTempsIn(dir: FsPath, names: readonly FsPath[]): Promise<{ path: FsPath; pid: number }[]> {
  const stemSet = new Set(names.flatMap((n) => stems(n).map((b) => b.toString('latin1'))));
  let entries: Buffer[];
  try {
    entries = await readdir(dir, { encoding: 'buffer' });
  } catch {
    return [];
  }
  const out: { path: FsPath; pid: number }[] = [];
  for (const n of entries) {
    const m = TAIL.exec(n.toString('latin1'));
    if (m && stemSet.has(n.subarray(0, n.length - m[0].length).toString('latin1'))) out.push({ path: joinPath(dir, fromBytes(n)), pid: Number(m[1]) });
  }
  return out;
}

/** The temporary files beside `target` that were made for it, each with the pid that made it. */
const strayTemps = (target: FsPath) => strayTempsIn(dirOf(target), [baseOf(target)]);

/** Whether process `pid` runs on this machine (EPERM: it does, as another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return codeOf(e) === 'EPERM';
  }
}

/**
 * Removes the temporaries a killed run left beside the files `names` of `dir`: those of
 * processes no longer running here (`all`: every one, for a caller that holds the lock over
 * those files).
 */
export async function removeStrays(dir: FsPath, names: readonly FsPath[], all = false): Promise<void> {
  for (const t of await strayTempsIn(dir, names)) {
    if (all || (t.pid !== process.pid && !alive(t.pid))) await unlink(t.path).catch(() => {});
  }
}

/** The temporary files of this process not yet published or removed. */
const live = new Set<FsPath>();

/**
 * Removes every temporary file of this process at once, synchronously: for a process that
 * ends itself now without waiting for the reads and writes in flight (one whose supervisor is
 * gone; a supervised process's temporaries are otherwise the supervisor's to remove).
 */
export function removeLiveTemps(): void {
  for (const p of live) {
    try {
      unlinkSync(p);
    } catch {
      // gone already
    }
  }
  live.clear();
}

/** `path` is no longer a temporary of this process (renamed into place, or removed). */
function forget(path: FsPath): void {
  live.delete(path);
  tell({ gone: pathText(path) });
}

/** Removes the temporary file `path` at once (gone already is as good) and forgets it. */
function removeNow(path: FsPath): void {
  try {
    unlinkSync(path);
  } catch {
    // not there: what matters is that it is not
  }
  forget(path);
}

/** See the module doc. */
export class AtomicFile {
  private done = false;
  readonly seekable = true;

  private constructor(
    /** The name the file gets on publish. */
    readonly target: FsPath,
    /** The temporary file's path. */
    readonly path: FsPath,
    /** Write here. */
    readonly fh: FdFile,
    /** Checked right before the rename into place. */
    private readonly fence: Fence,
  ) {}

  /**
   * Creates the temporary file beside `target` (told to the supervisor first, supervised.ts); a
   * NormalizeError when its directory is not writable. `fence` is checked before the file is
   * made, again the moment it exists (a run that may no longer commit removes it at once), and
   * right before it is renamed into place.
   */
  static async create(target: FsPath, fence: Fence): Promise<AtomicFile> {
    const path = joinPath(dirOf(target), tempName(baseOf(target)));
    if (byteLength(baseOf(target)) > NAME_MAX) throw new NormalizeError(`cannot write ${shown(target)}: the name is longer than ${NAME_MAX} bytes`);
    const failed = (e: unknown) => fsError(e, 'write', target, ` (a temporary file in ${shown(dirOf(target))})`);
    // Checked first, so that a run that has lost its lock makes no file at all (its first
    // failing check, which reads who holds the lock now, can take a millisecond).
    fence.check();
    tell({ make: pathText(path) });
    live.add(path);
    // Made on this thread, with the fence checked again before anything else runs: an open in
    // the file system's thread pool would make the file whenever a thread takes it — after this
    // process was frozen and another run took the lock, say — so two runs would hold
    // temporaries at once. The writes then go through this descriptor: the very file, whatever
    // its name has become since.
    let fd: number;
    try {
      fd = openSync(path, 'wx+'); // O_EXCL: never through a link
    } catch (e) {
      forget(path);
      throw failed(e);
    }
    try {
      fence.check();
    } catch (e) {
      removeNow(path);
      closeSync(fd);
      throw e;
    }
    return new AtomicFile(target, path, new FdFile(fd), fence);
  }

  /** Writes the bytes of `parts`, one after the other, at `pos`; a full disk or another error becomes a NormalizeError naming the target. */
  async write(parts: readonly Uint8Array[], pos: number): Promise<void> {
    await writeAll(this.fh, parts, pos, this.target);
  }

  /**
   * Flushes the data to the device (`fsync`; skipped when `durable` is false) and closes the
   * file; then {@link publish} renames it. Without the flush a killed process still never leaves
   * a partial file under the target's name (the kernel keeps what was written), but a power
   * failure may.
   */
  async flush(durable = true): Promise<void> {
    try {
      if (durable) await this.fh.sync();
      await this.fh.close();
    } catch (e) {
      throw fsError(e, 'write', this.target);
    }
  }

  /**
   * After {@link flush}: gives the file its name — if the fence holds, checked right before the
   * rename, which follows at once on this thread (no queue between them).
   */
  async publish(): Promise<void> {
    this.fence.check();
    try {
      renameSync(this.path, this.target);
    } catch (e) {
      throw fsError(e, 'replace', this.target);
    }
    forget(this.path);
    this.done = true;
  }

  /** Closes and removes the temporary file (nothing after a publish). Never throws. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    removeNow(this.path);
    await this.fh.close().catch(() => {});
  }

  /** {@link abort}: for `await using out = await AtomicFile.create(path)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.abort();
  }
}

/** What {@link writeAll} writes through: an {@link FdFile}, or a stream's FileHandle. */
interface Writes {
  write(b: Uint8Array, off: number, len: number, pos: number | null): Promise<{ bytesWritten: number }>;
  writev(parts: Uint8Array[], pos?: number): Promise<{ bytesWritten: number }>;
}

/**
 * Writes the bytes of `parts` at `pos` (a stream: `pos` null) in as few calls as the system
 * takes; a full disk or another write error becomes a NormalizeError naming `name`.
 */
export async function writeAll(fh: Writes, parts: readonly Uint8Array[], pos: number | null, name: FsPath): Promise<void> {
  const total = parts.reduce((a, b) => a + b.length, 0);
  let put = 0;
  try {
    while (put < total) {
      // The parts from byte `put` on (a short write leaves a tail).
      const rest: Uint8Array[] = [];
      let skip = put;
      for (const b of parts) {
        if (skip >= b.length) skip -= b.length;
        else {
          rest.push(skip > 0 ? b.subarray(skip) : b);
          skip = 0;
        }
      }
      const at = pos === null ? null : pos + put;
      const { bytesWritten } = rest.length === 1 ? await fh.write(rest[0]!, 0, rest[0]!.length, at) : await fh.writev(rest, at ?? undefined);
      put += bytesWritten;
    }
  } catch (e) {
    if (codeOf(e) === 'ENOSPC') throw new NormalizeError(`no space left on the device writing ${shown(name)} (nothing was written in its place)`, 'ENOSPC');
    throw fsError(e, 'write', name);
  }
}
