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
import { loadRmsNorm } from '../../default-instance.js';
import { callingThreadEngine, startEngine, type Engine } from './normalizer.js';
import { FORWARD } from '../../call/operations/forward.js';
import type { Dtype, FloatArray } from '../../types.js';
import { isQuant, KERNEL_DTYPES, DTYPES } from '../../glue/dtypes.js';
import { AtomicFile, removeStrays } from '../io/atomic.js';
import { signalFence, type Fence } from '../io/fence.js';
import { CHUNK_BYTES, copyArray, normalizeArray, Regions, REGIONS_MAX_BYTES, SLOTS, type ChunkCall } from './chunks.js';
import { callParams, checkFileOptions, FILE_KEYS, isPath, type FileArgs } from './options.js';
import { formatNamed, formatOf } from '../formats/index.js';
import { OutputFile } from './output-file.js';
import { baseOf, dirOf, shown, type FsPath } from '../io/paths.js';
import { planArrays, rowArrays, type ArrayPlan } from './plan.js';
import { openSink } from '../io/sink.js';
import { planOutputs, publish } from './outputs.js';
import { ContainerScales, planScales, refuseScalesBeforeData } from './scales.js';
import { summaryOf } from './summary.js';
import { openSource } from '../io/source.js';
import { fitsRegions, normalizePositioned } from './positioned.js';
import { taskRingOf } from '../../pool/caller/task-ring.js';
import * as zlib from 'node:zlib';
import type { NormalizeFileOptions, NormalizeSummary } from '../types.js';
import { loadWeight, type LoadedWeight } from './weight.js';

export { NormalizeError } from '../io/errors.js';
export { CHUNK_BYTES, SLOTS } from './chunks.js';
export type { NormalizeFileOptions, NormalizeProgress, NormalizeSummary } from '../types.js';

/** What a dataset run hands each file beyond its options. @internal */
interface FileContext {
  /** The run's weight, read once. */
  weight?: LoadedWeight;
  /** The run has removed the temporaries a killed run left beside this output already. */
  cleared?: boolean;
  /** What the run normalizes with (its pool, or the calling thread for a small dataset). */
  engine?: Engine;
  /**
   * A dataset's: makes the output's directory below the output directory (once per directory;
   * a link on the way refused); its outputs are then never written through what sits in their
   * place (confined.ts).
   */
  makeDir?: () => Promise<void>;
  /** What must hold for the outputs to be renamed into place (the dataset's lock); default: the signal's. */
  fence?: Fence;
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
    const empty = new DTYPES[n.computeDtype].Array(0) as FloatArray;
    const call = { ...callOf(o, p, weightDtype), dim: n.dim, dtype: n.computeDtype, rowScales: n.rowScales ? new Float32Array(0) : undefined };
    settled = KERNEL_DTYPES[FORWARD.check('normalizeFile', empty, w, call, undefined).params.wdt]!;
  }
  return settled;
}

/** The options of the calls that normalize `p`'s chunks: the parameter options as given (file-args.ts callParams), the weight's dtype, a quantized output's. */
function callOf(o: NormalizeFileOptions, p: ArrayPlan, weightDtype: Dtype | undefined): ChunkCall {
  const quant = isQuant(p.norm!.outDtype) && { outDtype: p.norm!.outDtype };
  return { ...callParams(o as Record<string, unknown>), weightDtype: weightDtype!, ...quant };
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
  const plans = await planOutputs(input, output, a, ctx.makeDir !== undefined);
  const weight = await weightOf(a, ctx);
  const src = await openSource(input, ctx.makeDir !== undefined);
  // Started now, so that its workers start while the header is read.
  await using engineStart = ctx.engine ? null : startEngine({ pool: o.pool, threads: o.threads }, src.size);
  try {
    const name = shown(input);
    const format = await formatOf(src, a.format);
    const contents = await format.read(src, { dim: a.dim ?? (weight.w?.length || undefined), dtype: a.dtype });
    const arrays = planArrays(contents, a, weight.w ? weight.w.length : null, name);
    const weightDtype = checkCalls(arrays, weight.w, weight.dtype, o);
    const writer = format.writer(arrays.map((p) => p.out), contents.meta, shown(output));
    const rstdWriter = plans.rstd ? format.writer(rowArrays(arrays), undefined, shown(o.rstd!)) : null;
    // A one-array file's row scales go to a file of their own beside it (a container holds them).
    const scalesPlan = !formatNamed(contents.format).several && arrays[0]!.norm?.rowScales ? await planScales(plans, input, output, o, ctx.makeDir !== undefined) : null;
    const scalesWriter = scalesPlan ? format.writer(rowArrays(arrays), undefined, shown(scalesPlan.target)) : null;
    const signal = o.signal;
    const order = writer.order ?? arrays.map((_, k) => k);
    if (plans.out.kind === 'stream') refuseScalesBeforeData(arrays, order, output, contents.format);

    if (plans.out.kind === 'file' && !ctx.cleared) await removeStrays(dirOf(plans.out.target), [baseOf(plans.out.target)]);
    if (scalesPlan && !ctx.cleared) await removeStrays(dirOf(scalesPlan.target), [baseOf(scalesPlan.target)]);
    await ctx.makeDir?.();
    const fence = ctx.fence ?? signalFence(o.signal);
    await using out = await openSink(plans.out, fence);
    await using rstdOut = plans.rstd ? await openSink(plans.rstd, fence) : null;
    await using scalesOut = scalesPlan ? await openSink(scalesPlan, fence) : null;
    const engine = ctx.engine ?? (await engineStart!.get());
    const sync = await loadRmsNorm();
    const total = arrays.reduce((s, p) => s + (p.norm?.rows ?? 0), 0);
    const totalBytes = arrays.reduce((s, q) => s + (q.norm ? (q.norm.rows ?? NaN) * q.norm.dim * DTYPES[q.norm.inDtype].bytes : 0), 0);
    const queue = engine.pool && taskRingOf(engine.pool);
    // Every read and write at a position (see positioned.ts): the workers move the rows.
    if (
      queue && src.fd !== undefined && out instanceof AtomicFile && (rstdOut === null || rstdOut instanceof AtomicFile) && (scalesOut === null || scalesOut instanceof AtomicFile) &&
      arrays.every((p) => p.input.source === src && p.input.bytes !== null) && fitsRegions(queue, arrays) &&
      (writer.dataCrc === undefined || typeof zlib.crc32 === 'function')
    ) {
      const rowsOf = arrays.map(() => 0);
      let bytesDone = 0;
      let rowsDone = 0;
      await queue.acquire();
      let r: Awaited<ReturnType<typeof normalizePositioned>>;
      try {
        r = await normalizePositioned({
          queue, pool: engine.pool!, sync, src, plans: arrays, out, rstd: rstdOut as AtomicFile | null, weight: weight.w, signal, checksum: o.checksum === true, chunkBytes: a.chunkBytes,
          writer: () => format.writer(arrays.map((p) => p.out), contents.meta, shown(output)),
          rstdWriter: plans.rstd ? () => format.writer(rowArrays(arrays), undefined, shown(o.rstd!)) : null,
          scales: scalesOut as AtomicFile | null,
          scalesWriter: scalesPlan ? () => format.writer(rowArrays(arrays), undefined, shown(scalesPlan.target)) : null,
          call: callOf(o, arrays.find((p) => p.norm)!, weightDtype),
          progress: (i, rows) => {
            const n = arrays[i]!.norm!;
            bytesDone += (rows - rowsOf[i]!) * n.dim * DTYPES[n.inDtype].bytes;
            rowsDone += rows - rowsOf[i]!;
            rowsOf[i] = rows;
            o.onProgress?.({ rows: rowsDone, totalRows: total, bytes: bytesDone, totalBytes, seconds: (performance.now() - t0) / 1000 });
          },
        });
      } finally {
        await queue.release();
      }
      signal?.throwIfAborted();
      await publish([out, rstdOut, scalesOut], plans.out, o.durable !== false, input, fence);
      return summaryOf(input, output, contents.format, arrays, r.rows, { at: r.bytes, sha256: r.sha256, scales: scalesPlan?.target }, engine, t0);
    }
    // A dataset holds its pool's task job for the whole run (its workers serve only the ring):
    // the rows that do not fit a worker's region go through the calling thread instead.
    const pool = ctx.engine && queue ? await callingThreadEngine() : engine;
    const outFile = new OutputFile(out, writer, o.checksum === true);
    const rstdFile = rstdOut ? new OutputFile(rstdOut, rstdWriter!, false) : null;
    const scalesFile = scalesOut ? new OutputFile(scalesOut, scalesWriter!, false) : null;
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
    const containerScales = new ContainerScales();
    const many = formatNamed(contents.format).several;
    if (rstdFile && !many) rstdFile.begin(0);
    if (scalesFile) scalesFile.begin(0);
    for (const i of order) {
      const p = arrays[i]!;
      outFile.begin(i);
      signal?.throwIfAborted();
      if (p.scalesOf !== undefined) await containerScales.place(outFile, p.scalesOf, arrays[p.scalesOf]!.norm!.rows === 0, p.out.bytes);
      else if (!p.norm) await copyArray(p.input.source, p.input.offset, p.input.bytes ?? 0, outFile, `${name}: array ${JSON.stringify(p.input.name)}`);
      else if (p.norm.rows !== 0) {
        const n = p.norm;
        const rowBytes = Math.max(DTYPES[n.inDtype].bytes, DTYPES[n.computeDtype].bytes) * n.dim;
        const want = Math.min(a.chunkBytes ?? CHUNK_BYTES, (n.rows ?? Infinity) * rowBytes);
        const regionBytes = Math.max(want, rowBytes);
        // The longest rows: fewer chunks in flight rather than more memory than wasm has.
        const count = Math.max(1, Math.min(SLOTS, Math.ceil(((n.rows ?? Infinity) * rowBytes) / want), Math.floor(REGIONS_MAX_BYTES / regionBytes)));
        using regions = Regions.alloc(pool, count, regionBytes);
        const kept: Uint8Array[] = [];
        const scales: Uint8Array[] = [];
        const done = await normalizeArray({
          source: p.input.source, offset: p.input.offset + n.first * DTYPES[n.inDtype].bytes * n.dim, rows: n.rows, dim: n.dim,
          inDtype: n.inDtype, computeDtype: n.computeDtype, outDtype: n.outDtype,
          call: callOf(o, p, weightDtype),
          weight: wBuf ? () => wBuf.view() : null, pool, sync, regions, out: outFile,
          rstd: rstdFile ? (many ? { data: async (b: Uint8Array) => void kept.push(b.slice()) } : rstdFile) : null,
          scales: !n.rowScales ? null : scalesFile ?? { data: async (b: Uint8Array) => void scales.push(b.slice()) },
          signal, progress: (r) => progress(r, p),
        });
        if (many) rstdKept.set(i, kept);
        await containerScales.done(outFile, i, scales);
        rows += done;
        rowsBefore += done;
      }
      outFile.finish();
    }
    await outFile.end();
    const sha256 = await outFile.digest();
    if (rstdFile && !many) rstdFile.finish();
    if (rstdFile && many) await writeKept(rstdFile, rstdWriter!.order, arrays, rstdKept);
    await rstdFile?.end();
    scalesFile?.finish();
    await scalesFile?.end();
    signal?.throwIfAborted();
    await publish([out, rstdOut, scalesOut], plans.out, o.durable !== false, input, fence);
    return summaryOf(input, output, contents.format, arrays, rows, { at: outFile.at, sha256, scales: scalesPlan?.target }, pool, t0);
  } finally {
    await src.close();
  }
}

/** A path argument as a message shows it. */
const describePath = (p: unknown): string => (isPath(p) ? shown(p) : p === null ? 'null' : typeof p);

/**
 * The weight in the pool's memory, in the dtype the calls settled on (a Float16Array is copied
 * as its bits): whole floats of memory, with a view of the dtype's elements.
 */
function placeWeight(pool: Engine, w: FloatArray, dtype: Dtype): { view(): FloatArray; [Symbol.dispose](): void } {
  const { Array: Elems, bytes } = DTYPES[dtype];
  const buf = pool.allocF32(Math.ceil((w.length * bytes) / 4));
  const f = buf.view();
  new Uint8Array(f.buffer, f.byteOffset, w.length * bytes).set(new Uint8Array(w.buffer, w.byteOffset, w.length * bytes));
  const view = () => {
    const now = buf.view();
    return new Elems(now.buffer as ArrayBuffer, now.byteOffset, w.length) as FloatArray;
  };
  return { view, [Symbol.dispose]: () => buf.free() };
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
