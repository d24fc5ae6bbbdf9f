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
import { randomBytes } from 'node:crypto';
import { open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { createPool, type RmsNormPool } from '../index.js';
import type { F32Buffer, U16Buffer } from '../memory.js';
import { describe } from '../check/arrays.js';
import { checkForward } from '../check/calls.js';
import { options as checkOptions } from '../check/options.js';
import type { CastingMode, Dtype, FloatArray } from '../types.js';
import { NPY_PREFIX_BYTES, NpyError, npyDataOffset, npyHeader, parseNpyHeader, type NpyHeader } from './npy.js';

/** Chunks in flight: one being read, one normalized, one written. */
export const SLOTS = 3;
/** Default bytes per chunk: 16 MiB, several pool jobs' worth, small next to the page cache. */
export const CHUNK_BYTES = 16 << 20;

/** How far a {@link normalizeFile} call has come. */
export interface NormalizeProgress {
  /** Rows written so far. */
  rows: number;
  totalRows: number;
  /** Bytes of data (not counting headers) written so far: 2 per element for half data, 4 for float32. */
  bytes: number;
  totalBytes: number;
  /** Seconds since the call started. */
  seconds: number;
}

/** Options of {@link normalizeFile}. */
export interface NormalizeFileOptions {
  /**
   * The gain: `dim` elements — a Float32Array, or a Uint16Array of half bit patterns (what it
   * holds: `weightDtype`, else the input's dtype when that is a half one) — or the path of a
   * `.npy` (float32 or float16, `dim` elements) or of a raw file (`weightDtype`, default
   * float32). Default: none.
   */
  weight?: FloatArray | string | null;
  /**
   * What the input's elements are. A `.npy` says it in its header (`'<f4'` float32, `'<f2'`
   * float16): a dtype given here must agree. For a raw file it says how to read the bytes
   * (little-endian; default `'float32'`). The output has the same dtype.
   */
  dtype?: Dtype;
  /**
   * What the weight's elements are. A `.npy` weight says it in its header (a value given here
   * must agree); a raw weight file is read as this (default `'float32'`); an array weight as
   * the sync API reads it (from its type; a Uint16Array defaults to the input's half dtype).
   */
  weightDtype?: Dtype;
  /** Where half results are rounded (`'none'`, `'llama'` or `'gemma'`), as the sync API's option. Default `'none'`. */
  castingMode?: CastingMode;
  /** Row length. Default: the `.npy`'s last axis, else the weight's length; required for raw input without weight. */
  dim?: number;
  /** Inside the root. Default 1e-6. */
  eps?: number;
  /** Added to the weight (Gemma: 1). Default 0. */
  offset?: number;
  /** pRMSNorm's fraction of each row rstd is estimated from, (0, 1]. Default 1. */
  partial?: number;
  /** `'npy'` or `'raw'` (little-endian float32, rows of `dim`). Default: `'npy'` for a `.npy` name, else `'raw'`. */
  format?: 'npy' | 'raw';
  /** Also write each row's rstd to this path (same format as the input; shape = the input's without its last axis). */
  rstd?: string;
  /** Allow `output` to be `input` (still through a temporary file). Default false. */
  inPlace?: boolean;
  /** Workers of the pool made for this call (default: one per core). Ignored with `pool`. */
  threads?: number;
  /** A pool to use (not destroyed at the end); default: one made and destroyed by this call. */
  pool?: RmsNormPool;
  /** Bytes per chunk (default 16 MiB; at least one row). */
  chunkBytes?: number;
  /** Called after each chunk is written. */
  onProgress?: (p: NormalizeProgress) => void;
  /** Aborts the call: it rejects with the signal's reason and leaves no output. */
  signal?: AbortSignal;
}

/** What {@link normalizeFile} did. */
export interface NormalizeSummary {
  input: string;
  output: string;
  format: 'npy' | 'raw';
  /** The data's dtype (the input's and the output's). */
  dtype: Dtype;
  rows: number;
  dim: number;
  /** The input's shape (npy), or `[rows, dim]` (raw). */
  shape: number[];
  /** Bytes of data read (= written), headers not counted: 2 per element for half data, 4 for float32. */
  bytes: number;
  seconds: number;
  /** Data bytes per second, in GB/s (10^9). */
  gbPerS: number;
  threads: number;
}

/** An error in the files or the arguments of a {@link normalizeFile} call; the message says what and where. */
export class NormalizeError extends Error {
  override name = 'NormalizeError';
}

const KEYS = ['weight', 'dtype', 'weightDtype', 'castingMode', 'dim', 'eps', 'offset', 'partial', 'format', 'rstd', 'inPlace', 'threads', 'pool', 'chunkBytes', 'onProgress', 'signal'];

interface Layout {
  format: 'npy' | 'raw';
  dtype: Dtype;
  shape: number[];
  dataOffset: number;
  rows: number;
  dim: number;
}

/** Reads and checks the `.npy` header of the open file `fh` of `size` bytes (its prefix first, for the length). */
async function readNpyHeader(fh: FileHandle, size: number, name: string): Promise<NpyHeader> {
  const prefix = new Uint8Array(Math.min(size, NPY_PREFIX_BYTES));
  await fh.read(prefix, 0, prefix.length, 0);
  const head = new Uint8Array(Math.min(size, npyDataOffset(prefix, name)));
  await fh.read(head, 0, head.length, 0);
  return parseNpyHeader(head, size, name);
}

const DTYPES: readonly Dtype[] = ['float32', 'float16', 'bfloat16'];

/** Bytes per element of a dtype. @internal */
export const itemBytes = (d: Dtype): number => (d === 'float32' ? 4 : 2);

/** A dtype option (`dtype`, `weightDtype`), checked; undefined when absent. */
function dtypeOpt(name: string, v: unknown): Dtype | undefined {
  if (v === undefined) return undefined;
  if (!DTYPES.includes(v as Dtype)) throw new TypeError(`normalizeFile: options.${name} must be 'float32', 'float16' or 'bfloat16', got ${describe(v)}`);
  return v as Dtype;
}

/** The `.npy` header's dtype, checked against a dtype given for it (`what` names the option). */
function agree(name: string, h: NpyHeader, given: Dtype | undefined, what: string): Dtype {
  if (given !== undefined && given !== h.dtype) {
    throw new NormalizeError(`${name}: the .npy header says ${h.dtype} ('${h.dtype === 'float16' ? '<f2' : '<f4'}'), but ${what} ${given} was given`);
  }
  return h.dtype;
}

/** Reads the input's layout: its header (npy; `given` must agree) or its size in rows (raw, of `given`, default float32). */
async function layoutOf(
  fh: FileHandle,
  name: string,
  size: number,
  format: 'npy' | 'raw',
  dimOpt: number | undefined,
  given: Dtype | undefined,
): Promise<Layout> {
  if (format === 'raw') {
    const dim = dimOpt;
    const dtype = given ?? 'float32';
    if (dim === undefined) throw new NormalizeError(`${name}: a raw file needs --dim (or a weight) to know its row length`);
    const row = itemBytes(dtype) * dim;
    if (size % row !== 0) {
      throw new NormalizeError(`${name}: its size (${size} bytes) is not a whole number of rows of ${dim} ${dtype} (${row} bytes each)`);
    }
    const rows = size / row;
    return { format, dtype, shape: [rows, dim], dataOffset: 0, rows, dim };
  }
  const h = await readNpyHeader(fh, size, name);
  const dtype = agree(name, h, given, 'dtype');
  const dim = h.shape[h.shape.length - 1]!;
  if (dimOpt !== undefined && dimOpt !== dim) throw new NormalizeError(`${name}: its rows have ${dim} elements (last axis of shape (${h.shape.join(', ')})), but dim ${dimOpt} was given`);
  if (dim === 0) throw new NormalizeError(`${name}: its rows are empty (shape (${h.shape.join(', ')}))`);
  const rows = h.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return { format, dtype, shape: h.shape, dataOffset: h.dataOffset, rows, dim };
}

/**
 * Loads a weight given as a path: a `.npy` (float32 or float16, as its header says; a
 * `given` dtype must agree) or a raw little-endian file of `given` (default float32).
 * Half weights come back as Uint16Arrays of bit patterns.
 */
async function loadWeight(path: string, given: Dtype | undefined): Promise<{ w: Float32Array | Uint16Array; dtype: Dtype }> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new NormalizeError(`cannot read the weight ${path}: ${(e as Error).message}`);
  }
  try {
    const size = (await fh.stat()).size;
    let offset = 0;
    let dtype = given ?? 'float32';
    if (extname(path).toLowerCase() === '.npy') {
      const h = await readNpyHeader(fh, size, path);
      offset = h.dataOffset;
      dtype = agree(path, h, given, 'weightDtype');
    } else if (size % itemBytes(dtype) !== 0) {
      throw new NormalizeError(`${path}: a raw weight of ${dtype} must be a multiple of ${itemBytes(dtype)} bytes, got ${size} bytes`);
    }
    const n = (size - offset) / itemBytes(dtype);
    const w = dtype === 'float32' ? new Float32Array(n) : new Uint16Array(n);
    await fh.read(new Uint8Array(w.buffer), 0, w.byteLength, offset);
    return { w, dtype };
  } finally {
    await fh.close();
  }
}

/** A temporary file beside `target`: `.<name>.tmp-<pid>-<random>`. */
async function openTemp(target: string): Promise<{ path: string; fh: FileHandle }> {
  const path = join(dirname(target), `.${basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    return { path, fh: await open(path, 'wx') };
  } catch (e) {
    throw new NormalizeError(`cannot write ${target} (its directory ${dirname(target)}): ${(e as Error).message}`);
  }
}

/** Whether `a` and `b` name the same file (b may not exist). */
async function sameFile(a: string, b: string): Promise<boolean> {
  if (resolve(a) === resolve(b)) return true;
  try {
    const [sa, sb] = await Promise.all([stat(a), stat(b)]);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    // b does not exist yet: the same file only if it would be created where a is (a link to a's directory).
    try {
      return (await realpath(a)) === join(await realpath(dirname(b)), basename(b));
    } catch {
      return false;
    }
  }
}

function positive(name: string, v: unknown, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`normalizeFile: options.${name} must be a number, got ${describe(v)}`);
  if (!Number.isInteger(v) || v < 1 || v > max) throw new RangeError(`normalizeFile: options.${name} must be an integer from 1 to ${max}, got ${v}`);
  return v;
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
  if (typeof input !== 'string' || typeof output !== 'string') {
    throw new TypeError(`normalizeFile: input and output must be paths (strings), got ${describe(input)} and ${describe(output)}`);
  }
  const o = checkOptions('normalizeFile', options, KEYS) as NormalizeFileOptions;
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`normalizeFile: options.signal must be an AbortSignal, got ${describe(signal)}`);
  signal?.throwIfAborted();
  const dimOpt = positive('dim', o.dim, 0xffffffff);
  const dtypeGiven = dtypeOpt('dtype', o.dtype);
  const weightDtypeGiven = dtypeOpt('weightDtype', o.weightDtype);
  const chunkBytes = positive('chunkBytes', o.chunkBytes, 2 ** 30) ?? CHUNK_BYTES;
  const format = o.format ?? (extname(input).toLowerCase() === '.npy' ? 'npy' : 'raw');
  if (format !== 'npy' && format !== 'raw') throw new RangeError(`normalizeFile: options.format must be 'npy' or 'raw', got ${describe(format)}`);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') throw new TypeError(`normalizeFile: options.onProgress must be a function, got ${describe(o.onProgress)}`);
  if (!o.inPlace && (await sameFile(input, output))) {
    throw new NormalizeError(`output ${output} is the input file; pass inPlace (--in-place) to replace it (still through a temporary file)`);
  }
  if (o.rstd !== undefined && (typeof o.rstd !== 'string' || (await sameFile(o.rstd, output)) || (await sameFile(o.rstd, input)))) {
    throw new NormalizeError(`the rstd path must be a path other than the input and the output, got ${describe(o.rstd)}`);
  }

  let inFh: FileHandle;
  try {
    inFh = await open(input, 'r');
  } catch (e) {
    throw new NormalizeError(`cannot read ${input}: ${(e as Error).message}`);
  }
  const temps: { path: string; fh: FileHandle }[] = [];
  let pool: RmsNormPool | null = null;
  const bufs: (F32Buffer | U16Buffer)[] = [];
  let done = false;
  try {
    const size = (await inFh.stat()).size;
    const loaded = typeof o.weight === 'string' ? await loadWeight(o.weight, weightDtypeGiven) : null;
    const weight = loaded ? loaded.w : ((o.weight ?? null) as FloatArray | null);
    if (weight !== null && (!ArrayBuffer.isView(weight) || !['Float32Array', 'Uint16Array', 'Float16Array'].includes((weight as { [Symbol.toStringTag]: string })[Symbol.toStringTag]))) {
      throw new TypeError(`normalizeFile: options.weight must be a Float32Array, a Uint16Array of half bit patterns, a Float16Array or a path, got ${describe(weight)}`);
    }
    const layout = await layoutOf(inFh, input, size, format, dimOpt ?? (format === 'raw' ? (weight?.length || undefined) : undefined), dtypeGiven);
    const { dim, rows, dtype } = layout;
    const item = itemBytes(dtype);
    if (weight !== null && weight.length !== dim) {
      throw new NormalizeError(`the weight has ${weight.length} elements, but the rows of ${input} have ${dim}`);
    }
    // The dtypes, eps, offset, partial and castingMode get the sync API's checks (on no rows),
    // before any file is made; the weight's dtype is the one they settle on.
    const checked = checkForward('normalizeFile', dtype === 'float32' ? new Float32Array(0) : new Uint16Array(0), weight, {
      dim,
      dtype,
      weightDtype: loaded ? loaded.dtype : weightDtypeGiven,
      castingMode: o.castingMode,
      eps: o.eps,
      offset: o.offset,
      partial: o.partial,
    });
    const weightDtype = DTYPES[checked.params.wdt]!;
    const out = await openTemp(output);
    temps.push(out);
    const rstdOut = o.rstd !== undefined ? await openTemp(o.rstd) : null;
    if (rstdOut) temps.push(rstdOut);

    pool = o.pool ?? (await createPool(o.threads === undefined ? undefined : { threads: o.threads }));
    const own = o.pool === undefined;
    const chunkRows = Math.max(1, Math.min(rows, Math.floor(chunkBytes / (item * dim))));
    const pl = pool;
    const alloc = (d: Dtype, n: number): F32Buffer | U16Buffer => (d === 'float32' ? pl.allocF32(n) : pl.allocU16(n));
    for (let s = 0; s < SLOTS; s++) bufs.push(alloc(dtype, Math.max(1, chunkRows * dim)), pool.allocF32(Math.max(1, chunkRows)));
    const wBuf = weight ? alloc(weightDtype, dim) : null;
    if (wBuf) {
      bufs.push(wBuf);
      // A Float16Array weight is copied as its bits (a float16 weight), any other as it is.
      const v = wBuf.view();
      v.set(v instanceof Uint16Array ? new Uint16Array(weight!.buffer, weight!.byteOffset, dim) : (weight as Float32Array));
    }

    let outPos = 0;
    let rstdPos = 0;
    if (layout.format === 'npy') {
      // An npy input is float32 or float16 (its header says): the output is the same.
      const head = npyHeader(layout.shape, dtype as 'float32' | 'float16');
      await out.fh.write(head, 0, head.length, 0);
      outPos = head.length;
      if (rstdOut) {
        const rh = npyHeader(layout.shape.length > 1 ? layout.shape.slice(0, -1) : [1]);
        await rstdOut.fh.write(rh, 0, rh.length, 0);
        rstdPos = rh.length;
      }
    }
    const call = { eps: o.eps, offset: o.offset, partial: o.partial, dtype, weightDtype, castingMode: o.castingMode };
    const chunks = Math.ceil(rows / chunkRows);
    const slotBusy: Promise<void>[] = [];
    let writes: Promise<void> = Promise.resolve();
    let rowsDone = 0;
    let failure: unknown = null;
    const p = pool;
    for (let c = 0; c < chunks && failure === null; c++) {
      const slot = c % SLOTS;
      await slotBusy[slot];
      if (failure !== null) break;
      signal?.throwIfAborted();
      const r0 = c * chunkRows;
      const n = Math.min(chunkRows, rows - r0);
      const x = bufs[2 * slot]!.view().subarray(0, n * dim);
      const rs = (bufs[2 * slot + 1] as F32Buffer).view().subarray(0, n);
      const bytes = item * n * dim;
      slotBusy[slot] = (async () => {
        const got = await readFully(inFh, x, layout.dataOffset + item * r0 * dim);
        if (got !== bytes) throw new NormalizeError(`${input}: the file shrank while it was read (row ${r0})`);
        await p.rmsNorm(x, wBuf ? wBuf.view() : null, { ...call, dim, out: x, rstd: rstdOut ? rs : undefined, signal });
        // Writes in file order, one at a time: concurrent writes at increasing offsets of one
        // file were 10× slower on ext4 here (2 GiB: 5.0 s against 0.5 s).
        const prev = writes;
        let release!: () => void;
        writes = new Promise<void>((r) => (release = r));
        try {
          await prev;
          await writeFully(out.fh, x, outPos + item * r0 * dim, output);
          if (rstdOut) await writeFully(rstdOut.fh, rs, rstdPos + 4 * r0, o.rstd!);
        } finally {
          release();
        }
        rowsDone += n;
        o.onProgress?.({ rows: rowsDone, totalRows: rows, bytes: item * rowsDone * dim, totalBytes: item * rows * dim, seconds: (performance.now() - t0) / 1000 });
      })().catch((e: unknown) => {
        failure ??= e;
      });
    }
    await Promise.all(slotBusy);
    if (failure !== null) throw failure;
    signal?.throwIfAborted();
    for (const t of temps) {
      await t.fh.sync();
      await t.fh.close();
    }
    await rename(out.path, output);
    if (rstdOut) await rename(rstdOut.path, o.rstd!);
    done = true;
    for (const b of bufs) b.free();
    bufs.length = 0;
    const threads = pool.threads;
    if (own) await pool.destroy();
    pool = null;
    const seconds = (performance.now() - t0) / 1000;
    const bytes = item * rows * dim;
    return { input, output, format: layout.format, dtype, rows, dim, shape: layout.shape, bytes, seconds, gbPerS: bytes / seconds / 1e9, threads };
  } catch (e) {
    if (e instanceof NpyError) throw new NormalizeError(e.message);
    throw e;
  } finally {
    await inFh.close().catch(() => {});
    if (!done) {
      for (const t of temps) {
        await t.fh.close().catch(() => {});
        await unlink(t.path).catch(() => {});
      }
    }
    for (const b of bufs) b.free();
    if (pool && o.pool === undefined) await pool.destroy();
  }
}

/** Reads `into.byteLength` bytes at `pos` (fewer only at the end of the file); returns the count. */
async function readFully(fh: FileHandle, into: Float32Array | Uint16Array, pos: number): Promise<number> {
  const bytes = new Uint8Array(into.buffer, into.byteOffset, into.byteLength);
  let got = 0;
  while (got < bytes.length) {
    const { bytesRead } = await fh.read(bytes, got, bytes.length - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

/** Writes all of `from` at `pos`; a full disk or another write error becomes a NormalizeError naming `name`. */
async function writeFully(fh: FileHandle, from: Float32Array | Uint16Array, pos: number, name: string): Promise<void> {
  const bytes = new Uint8Array(from.buffer, from.byteOffset, from.byteLength);
  let put = 0;
  try {
    while (put < bytes.length) {
      const { bytesWritten } = await fh.write(bytes, put, bytes.length - put, pos + put);
      put += bytesWritten;
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new NormalizeError(
      code === 'ENOSPC' ? `no space left on the device writing ${name} (nothing was written in its place)` : `cannot write ${name}: ${(e as Error).message}`,
    );
  }
}
