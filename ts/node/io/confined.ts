/**
 * Paths below a folder the user gave (a dataset's output directory), used without following
 * any link the tool did not make: a directory on the way is entered only when it is a real
 * directory (`lstat`), an output's place holds nothing, a regular file, or is refused, and the
 * files the tool itself reads there (manifests, locks) are opened with `O_NOFOLLOW` and read up
 * to a size. A link planted in the output directory (`out/a.npy -> ../victim`,
 * `out/sub -> /elsewhere`) can therefore never make a run write, remove or read outside it.
 *
 * Node has no `openat`: what is checked here could be swapped between the check and the use
 * by another process writing the same directory at that moment. Temporary files are created
 * with `O_EXCL` (which never follows a link) and renamed within their own directory, so such a
 * race can replace an output's name with a link, but never write through one.
 * @module
 */
import { constants, type Stats } from 'node:fs';
import { closeSync, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { codeOf, fsError, NormalizeError } from './errors.js';
import { bytesOf, fromBytes, joinPath, shown, type FsPath } from './paths.js';

/** What is at a path, not following a link there: its stats, or null when nothing is (a call on this thread: fd-file.ts says why). */
function lstatOrNull(path: FsPath): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return null;
    throw fsError(e, 'read', path);
  }
}

/** The `/`-separated names of `rel` (empty names and `.` dropped). A `..` is refused: it leads out. */
function namesOf(rel: FsPath): FsPath[] {
  const names = bytesOf(rel)
    .toString('latin1')
    .split('/')
    .filter((n) => n !== '' && n !== '.');
  if (names.includes('..')) throw new NormalizeError(`${shown(rel)} leads out of the output directory (a ".." in it)`);
  return names.map((n) => fromBytes(Buffer.from(n, 'latin1')));
}

/**
 * Makes the directories of `rel` below `root` (`root` itself exists), each a real directory: a
 * name on the way that is a symbolic link or not a directory is a NormalizeError naming it.
 */
export async function makeDirsBelow(root: FsPath, rel: FsPath): Promise<void> {
  let at: FsPath = root;
  for (const name of namesOf(rel)) {
    at = joinPath(at, name);
    const st = lstatOrNull(at);
    if (st?.isDirectory()) continue;
    if (st) throw new NormalizeError(`cannot write in ${shown(at)}: it is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'} in the output directory (links there are not followed)`);
    try {
      await mkdir(at);
    } catch (e) {
      if (codeOf(e) !== 'EEXIST') throw fsError(e, 'make the directory', at);
      // Made meanwhile by another run: it must be a real directory too.
      if (!lstatSync(at).isDirectory()) throw new NormalizeError(`cannot write in ${shown(at)}: it is not a directory`);
    }
  }
}

/** Whether every directory of `rel` below `root` is a real one (false: one is missing, a link, or not a directory). */
export async function realDirsBelow(root: FsPath, rel: FsPath): Promise<boolean> {
  let at: FsPath = root;
  for (const name of namesOf(rel)) {
    at = joinPath(at, name);
    const st = lstatSync(at, { throwIfNoEntry: false });
    if (!st?.isDirectory()) return false;
  }
  return true;
}

/**
 * Checks the place of an output at `path` (its directories already checked): nothing there, or
 * a regular file, which is replaced by a rename. Anything else — a link, a FIFO, a device, a
 * directory — is a NormalizeError naming it: an output directory's outputs are never written
 * through what sits in their place.
 */
export async function checkOutputPlace(path: FsPath): Promise<void> {
  const st = lstatOrNull(path);
  if (st === null || st.isFile()) return;
  const what = st.isSymbolicLink() ? 'a symbolic link' : st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : 'not a regular file';
  throw new NormalizeError(`refused to write ${shown(path)}: it is ${what} (an output directory's outputs replace regular files only, and follow no link)`);
}

/**
 * Opens `path` for reading without following a link (`O_NOFOLLOW`) or blocking on a FIFO
 * (`O_NONBLOCK`), and reads it whole if it is a regular file of at most `maxBytes`; null when
 * nothing is there. A NormalizeError naming `what` for a link, anything but a regular file, or
 * a larger file.
 */
export async function readSmallFile(path: FsPath, maxBytes: number, what: string): Promise<Buffer | null> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return null;
    if (codeOf(e) === 'ELOOP') throw new NormalizeError(`${what} ${shown(path)} is a symbolic link: refused (links in an output directory are not followed)`);
    throw fsError(e, 'read', path);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NormalizeError(`${what} ${shown(path)} is not a regular file: refused`);
    if (st.size > maxBytes) throw new NormalizeError(`${what} ${shown(path)} is ${st.size} bytes, more than the ${maxBytes} it may be`);
    const b = Buffer.alloc(st.size);
    let got = 0;
    while (got < b.length) {
      const n = (await fh.read(b, got, b.length - got, got)).bytesRead;
      if (n === 0) break;
      got += n;
    }
    return b.subarray(0, got);
  } finally {
    await fh.close().catch(() => {});
  }
}

/** {@link readSmallFile}, synchronously (for a check that the step after it must follow at once). */
export function readSmallFileSync(path: FsPath, maxBytes: number, what: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return null;
    if (codeOf(e) === 'ELOOP') throw new NormalizeError(`${what} ${shown(path)} is a symbolic link: refused (links in an output directory are not followed)`);
    throw fsError(e, 'read', path);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NormalizeError(`${what} ${shown(path)} is not a regular file: refused`);
    if (st.size > maxBytes) throw new NormalizeError(`${what} ${shown(path)} is ${st.size} bytes, more than the ${maxBytes} it may be`);
    const b = Buffer.alloc(st.size);
    let got = 0;
    while (got < b.length) {
      const n = readSync(fd, b, got, b.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return b.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** Flags that open (or create) a file the tool keeps in an output directory, never through a link. */
export const NO_FOLLOW_RW = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
