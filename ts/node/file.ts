/**
 * Normalizing files of any size on the worker pool (Node): `normalizeFile(input, output)`.
 *
 * The data may be float32, float16 or bfloat16 (`dtype`; a `.npy` says which in its header,
 * `'<f4'` or `'<f2'`): the math is float32 whatever it is, and the output has the input's
 * dtype and format (the rstd file is float32).
 *
 * Rows are read in chunks straight into the pool's shared wasm memory (`FileHandle.read` into a
 * view of it: no copy in JavaScript), normalized there in place by the workers, and written
 * from there. Up to {@link SLOTS} chunks are in flight, so the read of one chunk, the
 * normalization of the one before and the write of the one before that overlap. Memory stays
 * at `SLOTS × chunkBytes` (48 MiB by default) plus the pool's, whatever the file's size.
 *
 * Nothing is lost: the input is opened read-only; the output (and the rstd file) is written to
 * a temporary file beside it, flushed (`fsync`), and renamed into place only when complete, so
 * an error or an abort leaves either no output or the previous file intact.
 * @module
 */
import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { extname } from 'node:path';
import { createPool, type RmsNormPool } from '../index.js';
import type { F32Buffer, U16Buffer } from '../memory.js';
import { describe, DTYPE_NAMES, kindOf } from '../check/arrays.js';
import { checkForward } from '../check/calls.js';
import { options as checkOptions } from '../check/options.js';
import type { Dtype, FloatArray } from '../types.js';
import type { NormalizeFileOptions, NormalizeSummary } from './types.js';
import { AtomicFile, sameFile } from './atomic.js';
import { NormalizeError } from './errors.js';
import { readFully, writeFully } from './io.js';
import { itemBytes, layoutOf, loadWeight, rawRowLength, sliceOf, type Layout } from './layout.js';
import { NpyError, npyHeader } from './npy.js';

export { NormalizeError } from './errors.js';

/** Chunks in flight: one being read, one normalized, one written. */
export const SLOTS = 3;
/** Default bytes per chunk: 16 MiB, several pool jobs' worth, small next to the page cache. */
export const CHUNK_BYTES = 16 << 20;

export type { NormalizeFileOptions, NormalizeProgress, NormalizeSummary } from './types.js';

const KEYS = ['weight', 'dtype', 'weightDtype', 'castingMode', 'dim', 'eps', 'offset', 'partial', 'format', 'rstd', 'range', 'inPlace', 'threads', 'pool', 'chunkBytes', 'checksum', 'durable', 'onProgress', 'signal'];

/** normalizeFile's options, checked (the kernel's scalars are checked with the weight, once the input's dtype is known). */
interface FileArgs {
  o: NormalizeFileOptions;
  dim: number | undefined;
  dtype: Dtype | undefined;
  weightDtype: Dtype | undefined;
  chunkBytes: number;
  format: 'npy' | 'raw';
  range: readonly [number, number] | undefined;
}

/** A dtype option (`dtype`, `weightDtype`), checked; undefined when absent. */
function dtypeOpt(name: string, v: unknown): Dtype | undefined {
  if (v === undefined) return undefined;
  if (!DTYPE_NAMES.includes(v as Dtype)) throw new TypeError(`normalizeFile: options.${name} must be 'float32', 'float16' or 'bfloat16', got ${describe(v)}`);
  return v as Dtype;
}

function positive(name: string, v: unknown, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`normalizeFile: options.${name} must be a number, got ${describe(v)}`);
  if (!Number.isInteger(v) || v < 1 || v > max) throw new RangeError(`normalizeFile: options.${name} must be an integer from 1 to ${max}, got ${v}`);
  return v;
}

/** options.range, checked: two integers, 0 ≤ start < end (the end against the file later). */
function rangeOpt(v: unknown): readonly [number, number] | undefined {
  if (v === undefined) return undefined;
  const ok = Array.isArray(v) && v.length === 2 && v.every((n) => Number.isSafeInteger(n) && n >= 0) && v[0] < v[1];
  if (!ok) throw new RangeError(`normalizeFile: options.range must be [start, end], integers with 0 <= start < end, got ${describe(v)}`);
  return v as [number, number];
}

/** Checks the paths and the options that need no file; the paths' identities need the file system. */
async function checkFileArgs(input: unknown, output: unknown, options: unknown): Promise<FileArgs> {
  if (typeof input !== 'string' || typeof output !== 'string') {
    throw new TypeError(`normalizeFile: input and output must be paths (strings), got ${describe(input)} and ${describe(output)}`);
  }
  const o = checkOptions('normalizeFile', options, KEYS) as NormalizeFileOptions;
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new TypeError(`normalizeFile: options.signal must be an AbortSignal, got ${describe(o.signal)}`);
  o.signal?.throwIfAborted();
  const args: FileArgs = {
    o,
    dim: positive('dim', o.dim, 0xffffffff),
    dtype: dtypeOpt('dtype', o.dtype),
    weightDtype: dtypeOpt('weightDtype', o.weightDtype),
    chunkBytes: positive('chunkBytes', o.chunkBytes, 2 ** 30) ?? CHUNK_BYTES,
    format: o.format ?? (extname(input).toLowerCase() === '.npy' ? 'npy' : 'raw'),
    range: rangeOpt(o.range),
  };
  if (args.format !== 'npy' && args.format !== 'raw') throw new RangeError(`normalizeFile: options.format must be 'npy' or 'raw', got ${describe(args.format)}`);
  if (o.durable !== undefined && typeof o.durable !== 'boolean') throw new TypeError(`normalizeFile: options.durable must be a boolean, got ${describe(o.durable)}`);
  if (o.checksum !== undefined && typeof o.checksum !== 'boolean') throw new TypeError(`normalizeFile: options.checksum must be a boolean, got ${describe(o.checksum)}`);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') throw new TypeError(`normalizeFile: options.onProgress must be a function, got ${describe(o.onProgress)}`);
  if (!o.inPlace && (await sameFile(input, output))) {
    throw new NormalizeError(`output ${output} is the input file; pass options.inPlace to replace it (still through a temporary file)`);
  }
  if (o.rstd !== undefined && (typeof o.rstd !== 'string' || (await sameFile(o.rstd, output)) || (await sameFile(o.rstd, input)))) {
    throw new NormalizeError(`options.rstd must be a path other than the input and the output, got ${describe(o.rstd)}`);
  }
  return args;
}

/** The weight as an array (read from its file when given as a path) and the dtype it holds, if a file said. */
async function weightOf(a: FileArgs): Promise<{ weight: FloatArray | null; fileDtype: Dtype | undefined }> {
  const w = a.o.weight;
  if (typeof w === 'string') {
    const loaded = await loadWeight(w, a.weightDtype);
    return { weight: loaded.w, fileDtype: loaded.dtype };
  }
  if (w !== undefined && w !== null && kindOf(w) < 0) {
    throw new TypeError(`normalizeFile: options.weight must be a Float32Array, a Uint16Array of half bit patterns, a Float16Array or a path, got ${describe(w)}`);
  }
  return { weight: (w ?? null) as FloatArray | null, fileDtype: undefined };
}

/** The pool's buffers of one call, freed together (`using`). */
class Buffers {
  private readonly all: (F32Buffer | U16Buffer)[] = [];

  constructor(private readonly pool: RmsNormPool) {}

  /** `n` elements of `dtype` (at least one) in the pool's memory. */
  alloc(dtype: Dtype, n: number): F32Buffer | U16Buffer {
    const b = dtype === 'float32' ? this.pool.allocF32(Math.max(1, n)) : this.pool.allocU16(Math.max(1, n));
    this.all.push(b);
    return b;
  }

  [Symbol.dispose](): void {
    for (const b of this.all) b[Symbol.dispose]();
    this.all.length = 0;
  }
}

/** The output's `.npy` header (empty for raw), and the rstd file's, written; returns the first and where the rstd data starts. */
async function writeHeaders(layout: Layout, shape: number[], rstdOut: AtomicFile | null): Promise<{ head: Uint8Array; rstdPos: number }> {
  if (layout.format !== 'npy') return { head: new Uint8Array(0), rstdPos: 0 };
  // An npy input is float32 or float16 (its header says): the output is the same.
  const head = npyHeader(shape, layout.dtype as 'float32' | 'float16');
  let rstdPos = 0;
  if (rstdOut) {
    const rh = npyHeader(shape.length > 1 ? shape.slice(0, -1) : [1]);
    await rstdOut.fh.write(rh, 0, rh.length, 0);
    rstdPos = rh.length;
  }
  return { head, rstdPos };
}

/**
 * Normalizes every row of the file `input` (`.npy` float32 or float16 in C order, or raw
 * little-endian float32, float16 or bfloat16 as `options.dtype` says) into `output`, in the
 * same format and dtype, on the worker pool; see the module doc.
 *
 * @param input Path of the input (never modified).
 * @param output Path of the result; it appears only when complete. Refused if it is `input`,
 *   unless `options.inPlace`.
 * @returns A summary: rows, dim, bytes, seconds, GB/s, threads.
 * @throws (rejects) NormalizeError for a bad file (missing, malformed or truncated header,
 *   unsupported dtype, byte order or Fortran order, a dtype given that the header contradicts, a size that is not whole rows, a weight of
 *   the wrong length, an unwritable output, a full disk); TypeError / RangeError for bad
 *   options; the signal's reason when aborted. In every case the output path is left as it was.
 */
export async function normalizeFile(input: string, output: string, options?: NormalizeFileOptions): Promise<NormalizeSummary> {
  const t0 = performance.now();
  const args = await checkFileArgs(input, output, options);
  const { o } = args;
  const signal = o.signal;
  let inFh: FileHandle;
  try {
    inFh = await open(input, 'r');
  } catch (e) {
    throw new NormalizeError(`cannot read ${input}: ${(e as Error).message}`);
  }
  try {
    const size = (await inFh.stat()).size;
    const { weight, fileDtype } = await weightOf(args);
    const dimHint = args.format === 'raw' ? rawRowLength(args.dim, weight) : args.dim;
    const layout = await layoutOf(inFh, input, size, args.format, dimHint, args.dtype);
    const { dim, dtype } = layout;
    const { first, rows, shape } = sliceOf(layout, args.range, input);
    const item = itemBytes(dtype);
    if (weight !== null && weight.length !== dim) {
      throw new NormalizeError(`the weight has ${weight.length} elements, but the rows of ${input} have ${dim}`);
    }
    // The dtypes, eps, offset, partial and castingMode get the sync API's checks (on no rows),
    // before any file is made; the weight's dtype is the one they settle on.
    const call = { dim, dtype, weightDtype: fileDtype ?? args.weightDtype, castingMode: o.castingMode, eps: o.eps, offset: o.offset, partial: o.partial };
    const checked = checkForward('normalizeFile', dtype === 'float32' ? new Float32Array(0) : new Uint16Array(0), weight, call);
    call.weightDtype = DTYPE_NAMES[checked.params.wdt]!;

    await using out = await AtomicFile.create(output);
    await using rstdOut = o.rstd !== undefined ? await AtomicFile.create(o.rstd) : null;
    await using own = o.pool ? null : await createPool(o.threads === undefined ? undefined : { threads: o.threads });
    const pool = o.pool ?? own!;
    using bufs = new Buffers(pool);
    const chunkRows = Math.max(1, Math.min(rows, Math.floor(args.chunkBytes / (item * dim))));
    const chunks = Math.ceil(rows / chunkRows);
    const slots = Array.from({ length: Math.max(1, Math.min(SLOTS, chunks)) }, () => ({
      x: bufs.alloc(dtype, chunkRows * dim),
      rstd: bufs.alloc('float32', chunkRows) as F32Buffer,
    }));
    const wBuf = weight ? bufs.alloc(call.weightDtype, dim) : null;
    if (wBuf) {
      // A Float16Array weight is copied as its bits (a float16 weight), any other as it is.
      const v = wBuf.view();
      v.set(v instanceof Uint16Array ? new Uint16Array(weight!.buffer, weight!.byteOffset, dim) : (weight as Float32Array));
    }
    const hash = o.checksum ? createHash('sha256') : null;
    // The output's header goes out with the first chunk, in one write: for small files each
    // I/O call is a large part of the time.
    const { head, rstdPos } = await writeHeaders(layout, shape, rstdOut);
    const outPos = head.length;

    // Up to SLOTS chunks in flight: read into the slot's memory, normalize there, write from
    // there. Each chunk's write waits for the one before: writes at increasing offsets in
    // order (concurrent ones were 10× slower on ext4: 2 GiB in 5.0 s against 0.5 s), and the
    // hash sees the bytes in file order.
    const busy: Promise<void>[] = [];
    let written: Promise<void> = Promise.resolve();
    let rowsDone = 0;
    let failure: unknown = null;
    const chunk = async (r0: number, n: number, slot: (typeof slots)[number], after: Promise<void>): Promise<void> => {
      const x = slot.x.view().subarray(0, n * dim);
      const rs = slot.rstd.view().subarray(0, n);
      const got = await readFully(inFh, x, layout.dataOffset + item * (first + r0) * dim);
      if (got !== item * n * dim) throw new NormalizeError(`${input}: the file shrank while it was read (row ${first + r0})`);
      await pool.rmsNorm(x, wBuf ? wBuf.view() : null, { ...call, out: x, rstd: rstdOut ? rs : undefined, signal });
      await after;
      if (failure !== null) return;
      const bytes = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
      const parts = r0 === 0 && head.length > 0 ? [head, bytes] : [bytes];
      await writeFully(out.fh, parts, r0 === 0 ? 0 : outPos + item * r0 * dim, output);
      for (const b of parts) hash?.update(b);
      if (rstdOut) await writeFully(rstdOut.fh, [new Uint8Array(rs.buffer, rs.byteOffset, rs.byteLength)], rstdPos + 4 * r0, o.rstd!);
      rowsDone += n;
      o.onProgress?.({ rows: rowsDone, totalRows: rows, bytes: item * rowsDone * dim, totalBytes: item * rows * dim, seconds: (performance.now() - t0) / 1000 });
    };
    if (rows === 0) await writeFully(out.fh, [head], 0, output);
    for (let c = 0, r0 = 0; r0 < rows && failure === null; c++, r0 += chunkRows) {
      const s = c % slots.length;
      await busy[s];
      if (failure !== null) break;
      signal?.throwIfAborted();
      busy[s] = written = chunk(r0, Math.min(chunkRows, rows - r0), slots[s]!, written).catch((e: unknown) => {
        failure ??= e;
      });
    }
    await Promise.all(busy);
    if (failure !== null) throw failure;
    signal?.throwIfAborted();
    // Both files flushed before either is renamed: an rstd file never names data that is not there.
    await out.flush(o.durable !== false);
    await rstdOut?.flush(o.durable !== false);
    await out.publish();
    await rstdOut?.publish();
    const seconds = (performance.now() - t0) / 1000;
    const bytes = item * rows * dim;
    return {
      input, output, format: layout.format, dtype, rows, dim, shape, bytes, outputBytes: outPos + bytes, seconds, gbPerS: bytes / seconds / 1e9, threads: pool.threads,
      ...(hash && { sha256: hash.digest('hex') }),
    };
  } catch (e) {
    if (e instanceof NpyError) throw new NormalizeError(e.message);
    throw e;
  } finally {
    await inFh.close().catch(() => {});
  }
}
