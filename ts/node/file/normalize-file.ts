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
import type { Dtype, FloatArray } from '../../types.js';
import { DTYPES } from '../../glue/dtypes.js';
import { AtomicFile, removeStrays } from '../io/atomic.js';
import { signalFence, type Fence } from '../io/fence.js';
import { normalizeFrontToBack } from './front-to-back.js';
import { checkFileOptions, FILE_KEYS, isPath, type FileArgs } from './options.js';
import { formatNamed } from '../formats/index.js';
import { OutputFile } from './output-file.js';
import { baseOf, dirOf, shown, type FsPath } from '../io/paths.js';
import { planFile, rowArrays, type ArrayPlan } from './plan.js';
import { openSink } from '../io/sink.js';
import { planOutputs, publish } from './outputs.js';
import { planScales, refuseScalesBeforeData } from './scales.js';
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
  /** The run's options, checked once (options.ts fileArgsFor: the file's own besides); without them the call's are checked. */
  args?: FileArgs;
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
 * @param options Every option, each with its default: {@link NormalizeFileOptions}.
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

/**
 * {@link normalizeFile} with what a dataset run hands it, in four steps: plan (the outputs'
 * places, the weight, the header, the arrays and their calls: nothing written), open (the
 * temporary outputs), run (the rows, by the workers at positions or front to back), publish
 * (flushed and renamed into place). @internal
 */
export async function normalizeFileWith(input: FsPath, output: FsPath, options: NormalizeFileOptions | undefined, ctx: FileContext): Promise<NormalizeSummary> {
  const t0 = performance.now();
  if (!isPath(input) || !isPath(output)) {
    throw new TypeError(`normalizeFile: input and output must be paths (strings or Buffers), got ${describePath(input)} and ${describePath(output)}`);
  }
  const a = ctx.args ?? checkFileOptions('normalizeFile', options, FILE_KEYS);
  const { o } = a;
  // Plan.
  const plans = await planOutputs(input, output, a, ctx.makeDir !== undefined);
  const weight = await weightOf(a, ctx);
  const src = await openSource(input, ctx.makeDir !== undefined);
  // Started now, so that its workers start while the header is read.
  await using engineStart = ctx.engine ? null : startEngine({ pool: o.pool, threads: o.threads }, src.size);
  try {
    const name = shown(input);
    const plan = await planFile(src, a, weight.w, weight.dtype, name);
    const { arrays, contents, format } = plan;
    const writerOf = (target: FsPath, outs = arrays.map((p) => p.out), meta = contents.meta) => () => format.writer(outs, meta, shown(target));
    const writer = writerOf(output);
    const rstdWriter = plans.rstd ? writerOf(o.rstd!, rowArrays(arrays), undefined) : null;
    // A one-array file's row scales go to a file of their own beside it (a container holds them).
    const scalesPlan = !formatNamed(contents.format).several && arrays[0]!.norm?.rowScales ? await planScales(plans, input, output, o, ctx.makeDir !== undefined) : null;
    const scalesWriter = scalesPlan ? writerOf(scalesPlan.target, rowArrays(arrays), undefined) : null;
    if (plans.out.kind === 'stream') refuseScalesBeforeData(arrays, writer().order ?? arrays.map((_, k) => k), output, contents.format);
    // Open.
    if (plans.out.kind === 'file' && !ctx.cleared) await removeStrays(dirOf(plans.out.target), [baseOf(plans.out.target)]);
    if (scalesPlan && !ctx.cleared) await removeStrays(dirOf(scalesPlan.target), [baseOf(scalesPlan.target)]);
    await ctx.makeDir?.();
    const fence = ctx.fence ?? signalFence(o.signal);
    await using out = await openSink(plans.out, fence);
    await using rstdOut = plans.rstd ? await openSink(plans.rstd, fence) : null;
    await using scalesOut = scalesPlan ? await openSink(scalesPlan, fence) : null;
    const engine = ctx.engine ?? (await engineStart!.get());
    const sync = await loadRmsNorm();
    // Run.
    const progress = progressOf(arrays, o, t0);
    const ring = engine.pool && taskRingOf(engine.pool);
    let r: { rows: number; bytes: number; sha256?: string | undefined };
    let by: Engine = engine;
    if (
      ring && src.fd !== undefined && out instanceof AtomicFile && (rstdOut === null || rstdOut instanceof AtomicFile) && (scalesOut === null || scalesOut instanceof AtomicFile) &&
      arrays.every((p) => p.input.source === src && p.input.bytes !== null) && fitsRegions(ring, arrays) &&
      (writer().dataCrc === undefined || typeof zlib.crc32 === 'function')
    ) {
      // Every read and write at a position (see positioned.ts): the workers move the rows.
      await ring.acquire();
      try {
        r = await normalizePositioned({
          queue: ring, pool: engine.pool!, sync, src, plans: arrays, params: plan.params, out, rstd: rstdOut as AtomicFile | null, weight: plan.weight, signal: o.signal,
          checksum: o.checksum === true, chunkBytes: a.chunkBytes, writer, rstdWriter, scales: scalesOut as AtomicFile | null, scalesWriter,
          progress: progress.ofArray,
        });
      } finally {
        await ring.release();
      }
    } else {
      // A dataset holds its pool's task job for the whole run (its workers serve only the ring):
      // the rows that do not fit a worker's region go through the calling thread instead.
      by = ctx.engine && ring ? await callingThreadEngine() : engine;
      r = await normalizeFrontToBack({
        plan, src, by, sync, signal: o.signal, checksum: o.checksum === true, chunkBytes: a.chunkBytes,
        out: new OutputFile(out, writer(), o.checksum === true), order: writer().order, rstd: rstdOut ? new OutputFile(rstdOut, rstdWriter!(), false) : null,
        scales: scalesOut ? new OutputFile(scalesOut, scalesWriter!(), false) : null, rstdOrder: rstdWriter ? rstdWriter().order : undefined,
        progress: progress.ofRows, name,
      });
    }
    // Publish.
    o.signal?.throwIfAborted();
    await publish([out, rstdOut, scalesOut], plans.out, o.durable !== false, input, fence);
    return summaryOf(input, output, contents.format, arrays, r.rows, { at: r.bytes, sha256: r.sha256, scales: scalesPlan?.target }, by, t0);
  } finally {
    await src.close();
  }
}

/**
 * Plans the file `input` as {@link normalizeFileWith} would (its header, its arrays against the
 * run's options and weight) and writes nothing: a NormalizeError (or a TypeError / RangeError)
 * for what would make it fail before any of its rows is read. A dataset plans its first file
 * so before it makes anything. @internal
 */
export async function planOnly(input: FsPath, a: FileArgs, weight: LoadedWeight | undefined): Promise<void> {
  const w = await weightOf(a, { weight });
  const src = await openSource(input, true);
  try {
    await planFile(src, a, w.w, w.dtype, shown(input));
  } finally {
    await src.close();
  }
}

/** The progress of a file's normalization, told by array (the workers') or by rows in order (front to back), as one NormalizeProgress. */
function progressOf(arrays: readonly ArrayPlan[], o: NormalizeFileOptions, t0: number) {
  const total = arrays.reduce((s, p) => s + (p.norm?.rows ?? 0), 0);
  const totalBytes = arrays.reduce((s, q) => s + (q.norm ? (q.norm.rows ?? NaN) * q.norm.dim * DTYPES[q.norm.inDtype].bytes : 0), 0);
  const rowsOf = arrays.map(() => 0);
  let bytesDone = 0;
  let rowsDone = 0;
  const tell = () => o.onProgress?.({ rows: rowsDone, totalRows: total, bytes: bytesDone, totalBytes, seconds: (performance.now() - t0) / 1000 });
  return {
    /** Array `i` has `rows` rows done. */
    ofArray(i: number, rows: number): void {
      const n = arrays[i]!.norm!;
      bytesDone += (rows - rowsOf[i]!) * n.dim * DTYPES[n.inDtype].bytes;
      rowsDone += rows - rowsOf[i]!;
      rowsOf[i] = rows;
      tell();
    },
    /** `before` rows of the arrays written before, and `rows` of array `p`, are done. */
    ofRows(before: number, rows: number, p: ArrayPlan): void {
      rowsDone = before + rows;
      bytesDone = rowsDone * p.norm!.dim * DTYPES[p.norm!.inDtype].bytes;
      tell();
    },
  };
}

/** A path argument as a message shows it. */
const describePath = (p: unknown): string => (isPath(p) ? shown(p) : p === null ? 'null' : typeof p);
