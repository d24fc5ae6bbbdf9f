/**
 * Whole reads and writes of a FileHandle.
 * @module
 */
import type { FileHandle } from 'node:fs/promises';
import { NormalizeError } from './errors.js';

/** Reads `into.byteLength` bytes at `pos` (fewer only at the end of the file); returns the count. */
export async function readFully(fh: FileHandle, into: Float32Array | Uint16Array | Uint8Array, pos: number): Promise<number> {
  const bytes = new Uint8Array(into.buffer, into.byteOffset, into.byteLength);
  let got = 0;
  while (got < bytes.length) {
    const { bytesRead } = await fh.read(bytes, got, bytes.length - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

/**
 * Writes the bytes of `parts`, one after the other, at `pos` (several in one vectored write);
 * a full disk or another write error becomes a NormalizeError naming `name`.
 */
export async function writeFully(fh: FileHandle, parts: readonly Uint8Array[], pos: number, name: string): Promise<void> {
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
      const { bytesWritten } = rest.length === 1 ? await fh.write(rest[0]!, 0, rest[0]!.length, pos + put) : await fh.writev(rest, pos + put);
      put += bytesWritten;
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new NormalizeError(
      code === 'ENOSPC' ? `no space left on the device writing ${name} (nothing was written in its place)` : `cannot write ${name}: ${(e as Error).message}`,
    );
  }
}
