/**
 * Normalizing files of any size on the worker pool (Node): `normalizeFile(input, output)`.
 *
 * A file's format is told by its content — a NumPy `.npy` (float32, float16, or float64 read as
 * float32), an `.npz` (each float member), a safetensors file (each float tensor, or those
 * named) — or raw little-endian data when asked for. The output has the input's format and,
 * unless `outDtype` says otherwise, its dtype; other arrays of a container are copied as they
 * are. The math is float32 whatever the storage.
 *
 * Nothing is lost: the input is opened read-only; an output that is a file (or a link to one)
 * is written to a temporary file beside it, flushed and renamed into place only when complete,
 * so an error or an abort leaves either no output or the previous file intact. Outputs that are
 * streams (`-`, a FIFO, a device) are written through. See chunks.ts for the pipeline.
 * @module
 */
import { loadRmsNorm } from '../index.js';
import { startEngine, type Engine } from './engine.js';
import type { F32Buffer, U16Buffer } from '../memory.js';
import { checkForward } from '../check/calls.js';
import { paramOptions } from '../check/params.js';
import type { Dtype, FloatArray } from '../types.js';
import { KERNEL_DTYPES, DTYPES } from '../dtypes.js';
import { AtomicFile, removeStrays } from './atomic.js';
import { CHUNK_BYTES, copyArray, normalizeArray, Regions, SLOTS } from './chunks.js';
import { NormalizeError } from './errors.js';
import { checkFileOptions, FILE_KEYS, isPath, type FileArgs } from './file-args.js';
import { formatNamed, formatOf } from './formats/index.js';
import { OutputFile } from './output.js';
import { baseOf, dirOf, shown, type FsPath } from './paths.js';
import { planArrays, rstdArrays, type ArrayPlan } from './plan.js';
import { openSink, planOutput, sameInode, type OutputPlan } from './sink.js';
import { openSource } from './source.js';
import { fitsRegions, normalizePositioned } from './positioned.js';
import { taskQueueOf } from '../pool/task-queue.js';
import * as zlib from 'node:zlib';
import type { NormalizeFileOptions, NormalizeSummary } from './types.js';
import { loadWeight, type LoadedWeight } from './weight.js';

export { NormalizeError } from './errors.js';
export { CHUNK_BYTES, SLOTS } from './chunks.js';
export type { NormalizeFileOptions, NormalizeProgress, NormalizeSummary } from './types.js';

/** What a dataset run hands each file beyond its options. @internal */
interface FileContext {
  /** The run's weight, read once. */
  weight?: LoadedWeight;
  /** The run has removed the temporaries a killed run left beside this output already. */
  cleared?: boolean;
  /** What the run normalizes with (its pool, or the calling thread for a small dataset). */
  engine?: Engine;
  /** Makes the output's directory (a dataset's, once per directory) before the output is opened. */
  makeDir?: (dir: FsPath) => Promise<void>;
}

/** The outputs' plans, checked against each other and the input: nothing is written over the input unless `inPlace`. */
async function planOutputs(input: FsPath, output: FsPath, a: FileArgs): Promise<{ out: OutputPlan; rstd: OutputPlan | null }> {
  const out = await planOutput(output, 'the output');
  const rstd = a.o.rstd !== undefined ? await planOutput(a.o.rstd, 'options.rstd') : null;
  const files = (p: OutputPlan | null) => (p && p.kind === 'file' ? p.target : null);
  if (input !== '-' && files(out) && !a.o.inPlace && (await sameInode(input, files(out)!))) {
    throw new NormalizeError(`the output ${shown(output)} is the input file; pass options.inPlace to replace it (still through a temporary file)`);
  }
  const r = files(rstd);
  if (r && ((await sameInode(r, input)) || (files(out) && (r === files(out) || (await sameInode(r, files(out)!)))))) {
    throw new NormalizeError(`options.rstd must be a path other than the input and the output, got ${shown(a.o.rstd!)}`);
  }
  return { out, rstd };
}

/** The weight as an array and its dtype (read from its file when a path). */
async function weightOf(a: FileArgs, ctx: FileContext): Promise<{ w: FloatArray | null; dtype: Dtype | undefined }> {
  const w = a.o.weight;
  if (ctx.weight) return { w: ctx.weight.w, dtype: ctx.weight.dtype };
  if (isPath(w)) {
    const loaded = await loadWeight(w, a.weightDtype, a.o.weightTensor);
    return { w: loaded.w, dtype: loaded.dtype };
  }
  return { w: (w ?? null) as FloatArray | null, dtype: a.weightDtype };
}

/** The sync API's checks of the call each array's chunks make (on no rows), before any file is made; the weight's dtype they settle on. */
function checkCalls(plans: readonly ArrayPlan[], w: FloatArray | null, weightDtype: Dtype | undefined, o: NormalizeFileOptions): Dtype {
  let settled: Dtype = 'float32';
  for (const p of plans) {
    if (!p.norm) continue;
    const n = p.norm;
    const empty = n.computeDtype === 'float32' ? new Float32Array(0) : new Uint16Array(0);
    const call = { ...paramOptions(o as Record<string, unknown>), dim: n.dim, dtype: n.computeDtype, weightDtype };
    settled = KERNEL_DTYPES[checkForward('normalizeFile', empty, w, call).params.wdt]!;
  }
  return settled;
}

/**
 * Normalizes every row of the file `input` into `output`, in the same format (and dtype,
 * unless `options.outDtype`), on the worker pool; see the module doc.
 *
 * @param input Path of the input (never modified): a `.npy`, `.npz` or safetensors file, told
 *   by its content; raw data with `options.format: 'raw'`. `-` reads standard input; a pipe,
 *   FIFO or device is read as a stream (`.npy` and raw only).
 * @param output Path of the result: it appears only when complete (a symbolic link is
 *   followed, and its target replaced). `-` writes standard output; a FIFO or a character
 *   device is written through as a stream. A directory, a block device or a socket is refused,
 *   and so is `input` itself unless `options.inPlace`.
 * @returns A summary: the arrays normalized, rows, bytes, seconds, GB/s, threads.
 * @throws (rejects) NormalizeError for a bad file (missing, malformed or truncated header, a
 *   format not recognized, unsupported dtype, byte order or Fortran order, a dtype given that
 *   the header contradicts, a size that is not whole rows, a weight of the wrong length, an
 *   unwritable output, a full disk); TypeError / RangeError for bad options; the signal's
 *   reason when aborted. In every case a file output is left as it was.
 */
export function normalizeFile(input: FsPath, output: FsPath, options?: NormalizeFileOptions): Promise<NormalizeSummary> {
  return normalizeFileWith(input, output, options, {});
}

/** {@link normalizeFile} with what a dataset run hands it. @internal */
export async function normalizeFileWith(input: FsPath, output: FsPath, options: NormalizeFileOptions | undefined, ctx: FileContext): Promise<NormalizeSummary> {
  const t0 = performance.now();
  if (!isPath(input) || !isPath(output)) {
    throw new TypeError(`normalizeFile: input and output must be paths (strings or Buffers), got ${describePath(input)} and ${describePath(output)}`);
  }
  const a = checkFileOptions('normalizeFile', options, FILE_KEYS);
  const { o } = a;
  const plans = await planOutputs(input, output, a);
  const weight = await weightOf(a, ctx);
  const src = await openSource(input);
  // Started now, so that its workers start while the header is read.
  await using engineStart = ctx.engine ? null : startEngine({ pool: o.pool, threads: o.threads }, src.size);
  try {
    const name = shown(input);
    const format = await formatOf(src, a.format);
    const contents = await format.read(src, { dim: a.dim ?? (weight.w?.length || undefined), dtype: a.dtype });
    const arrays = planArrays(contents, a, weight.w ? weight.w.length : null, name);
    const weightDtype = checkCalls(arrays, weight.w, weight.dtype, o);
    const writer = format.writer(arrays.map((p) => p.out), contents.meta, shown(output));
    const rstdWriter = plans.rstd ? format.writer(rstdArrays(arrays), undefined, shown(o.rstd!)) : null;
    const signal = o.signal;

    if (plans.out.kind === 'file' && !ctx.cleared) await removeStrays(dirOf(plans.out.target), [baseOf(plans.out.target)]);
    if (plans.out.kind === 'file') await ctx.makeDir?.(dirOf(plans.out.target));
    await using out = await openSink(plans.out);
    await using rstdOut = plans.rstd ? await openSink(plans.rstd) : null;
    const engine = ctx.engine ?? (await engineStart!.get());
    const pool = engine;
    const sync = await loadRmsNorm();
    const total = arrays.reduce((s, p) => s + (p.norm?.rows ?? 0), 0);
    const totalBytes = arrays.reduce((s, q) => s + (q.norm?.rows ?? NaN) * (q.norm?.dim ?? 0) * DTYPES[q.norm?.inDtype ?? 'float32'].bytes, 0);
    const queue = engine.pool && taskQueueOf(engine.pool);
    // Every read and write at a position (see positioned.ts): the workers move the rows.
    if (
      queue && src.fd !== undefined && out instanceof AtomicFile && (rstdOut === null || rstdOut instanceof AtomicFile) &&
      arrays.every((p) => p.input.source === src && p.input.bytes !== null) && fitsRegions(queue, arrays) &&
      (writer.dataCrc === undefined || typeof zlib.crc32 === 'function')
    ) {
      const rowsOf = arrays.map(() => 0);
      let bytesDone = 0;
      await queue.acquire();
      let r: Awaited<ReturnType<typeof normalizePositioned>>;
      try {
        r = await normalizePositioned({
          queue, pool: engine.pool!, sync, src, plans: arrays, out, rstd: rstdOut as AtomicFile | null, weight: weight.w, signal, checksum: o.checksum === true, chunkBytes: a.chunkBytes,
          writer: () => format.writer(arrays.map((p) => p.out), contents.meta, shown(output)),
          rstdWriter: plans.rstd ? () => format.writer(rstdArrays(arrays), undefined, shown(o.rstd!)) : null,
          call: { ...paramOptions(o as Record<string, unknown>), weightDtype },
          progress: (i, rows) => {
            const n = arrays[i]!.norm!;
            bytesDone += (rows - rowsOf[i]!) * n.dim * DTYPES[n.inDtype].bytes;
            rowsOf[i] = rows;
            o.onProgress?.({ rows: rowsOf.reduce((a, b) => a + b, 0), totalRows: total, bytes: bytesDone, totalBytes, seconds: (performance.now() - t0) / 1000 });
          },
        });
      } finally {
        await queue.release();
      }
      signal?.throwIfAborted();
      await out.flush(o.durable !== false);
      await rstdOut?.flush(o.durable !== false);
      await rstdOut?.publish();
      await out.publish();
      return summaryOf(input, output, contents.format, arrays, r.rows, { at: r.bytes, digest: () => r.sha256 }, pool, t0);
    }
    const outFile = new OutputFile(out, writer, o.checksum === true);
    const rstdFile = rstdOut ? new OutputFile(rstdOut, rstdWriter!, false) : null;
    using wBuf = weight.w ? placeWeight(pool, weight.w, weightDtype) : null;
    let rows = 0;
    let rowsBefore = 0;
    const progress = (r: number, p: ArrayPlan) =>
      o.onProgress?.({
        rows: rowsBefore + r, totalRows: total, bytes: (rowsBefore + r) * p.norm!.dim * DTYPES[p.norm!.inDtype].bytes,
        totalBytes, seconds: (performance.now() - t0) / 1000,
      });
    // rstd of a container is kept until the end: its arrays may go in another order than the data's.
    const rstdKept = new Map<number, Uint8Array[]>();
    const many = formatNamed(contents.format).several;
    if (rstdFile && !many) rstdFile.begin(0);
    for (const i of writer.order ?? arrays.map((_, k) => k)) {
      const p = arrays[i]!;
      outFile.begin(i);
      signal?.throwIfAborted();
      if (!p.norm) await copyArray(p.input.source, p.input.offset, p.input.bytes ?? 0, outFile, `${name}: array ${JSON.stringify(p.input.name)}`);
      else if (p.norm.rows !== 0) {
        const n = p.norm;
        const rowBytes = Math.max(DTYPES[n.inDtype].bytes, DTYPES[n.computeDtype].bytes) * n.dim;
        const want = Math.min(a.chunkBytes ?? CHUNK_BYTES, (n.rows ?? Infinity) * rowBytes);
        using regions = Regions.alloc(pool, Math.min(SLOTS, Math.ceil(((n.rows ?? Infinity) * rowBytes) / want)), Math.max(want, rowBytes));
        const kept: Uint8Array[] = [];
        const done = await normalizeArray({
          source: p.input.source, offset: p.input.offset + n.first * DTYPES[n.inDtype].bytes * n.dim, rows: n.rows, dim: n.dim,
          inDtype: n.inDtype, computeDtype: n.computeDtype, outDtype: n.outDtype,
          call: { ...paramOptions(o as Record<string, unknown>), weightDtype },
          weight: wBuf ? () => wBuf.view() : null, pool, sync, regions, out: outFile,
          rstd: rstdFile ? (many ? { data: async (b: Uint8Array) => void kept.push(b.slice()) } : rstdFile) : null,
          signal, progress: (r) => progress(r, p),
        });
        if (many) rstdKept.set(i, kept);
        rows += done;
        rowsBefore += done;
      }
      outFile.finish();
    }
    await outFile.end();
    if (rstdFile && !many) rstdFile.finish();
    if (rstdFile && many) await writeKept(rstdFile, rstdWriter!.order, arrays, rstdKept);
    await rstdFile?.end();
    signal?.throwIfAborted();
    // Both flushed before either is renamed; the rstd file first: a failure there leaves the output as it was.
    await out.flush(o.durable !== false);
    await rstdOut?.flush(o.durable !== false);
    await rstdOut?.publish();
    await out.publish();
    return summaryOf(input, output, contents.format, arrays, rows, outFile, pool, t0);
  } finally {
    await src.close();
  }
}

/** A path argument as a message shows it. */
const describePath = (p: unknown): string => (isPath(p) ? shown(p) : p === null ? 'null' : typeof p);

/** The weight in the pool's memory, in the dtype the calls settled on (a Float16Array is copied as its bits). */
function placeWeight(pool: Engine, w: FloatArray, dtype: Dtype): F32Buffer | U16Buffer {
  const buf = dtype === 'float32' ? pool.allocF32(w.length) : pool.allocU16(w.length);
  const v = buf.view();
  v.set(new DTYPES[dtype].Array(w.buffer as ArrayBuffer, w.byteOffset, w.length) as Float32Array & Uint16Array);
  return buf;
}

/** Writes the rstd arrays kept for a container, in its writer's `order` (`kept`: by index of the normalized arrays). */
async function writeKept(file: OutputFile, order: readonly number[] | undefined, plans: readonly ArrayPlan[], kept: Map<number, Uint8Array[]>): Promise<void> {
  const normalized = plans.map((p, i) => (p.norm ? i : -1)).filter((i) => i >= 0);
  for (const k of order ?? normalized.map((_, j) => j)) {
    file.begin(k);
    for (const b of kept.get(normalized[k]!) ?? []) await file.data(b);
    file.finish();
  }
}

/** What {@link normalizeFile} reports. */
function summaryOf(
  input: FsPath, output: FsPath, format: NormalizeSummary['format'], plans: readonly ArrayPlan[], rows: number, out: { at: number; digest(): string | undefined }, pool: Engine, t0: number,
): NormalizeSummary {
  const seconds = (performance.now() - t0) / 1000;
  const norm = plans.filter((p) => p.norm);
  const first = norm[0]!;
  const bytes = norm.reduce((s, p) => s + (p.norm!.rows ?? rows) * p.norm!.dim * DTYPES[p.norm!.inDtype].bytes, 0);
  const sha256 = out.digest();
  return {
    input: shown(input), output: shown(output), format, dtype: first.norm!.inDtype, outDtype: first.norm!.outDtype, rows, dim: first.norm!.dim,
    shape: first.norm!.rows === null ? [rows, first.norm!.dim] : first.out.shape,
    arrays: norm.map((p) => ({ name: p.out.name, dtype: p.norm!.inDtype, outDtype: p.norm!.outDtype, shape: p.norm!.rows === null ? [rows, p.norm!.dim] : p.out.shape, rows: p.norm!.rows ?? rows, dim: p.norm!.dim })),
    copied: plans.filter((p) => !p.norm).map((p) => p.out.name),
    bytes, outputBytes: out.at, seconds, gbPerS: bytes / seconds / 1e9, threads: pool.threads,
    ...(sha256 && { sha256 }),
  };
}
