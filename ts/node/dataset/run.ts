/**
 * Normalizing a dataset — many files, directories, globs — into an output directory, on one
 * worker pool, resumable, with a manifest, and split into shards for many processes or
 * machines: `normalizeDataset(inputs, outDir, options)`.
 *
 * A run takes its shard's lock over the output directory first (lock.ts): one run per shard at
 * a time, a dead run's lock taken over. Resume: an output is skipped when the newest manifest
 * line for it records the same input (path, size, modification time), part and settings, and
 * the output is still the very file recorded (resume.ts). Outputs appear only when complete (a
 * temporary file and a rename, as with `normalizeFile`), and the line is written after the
 * rename: a run killed at any moment leaves complete outputs, temporaries (removed by the next
 * run of the shard) and at most one cut manifest line (removed); run again, it redoes exactly
 * what is not recorded.
 * @module
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { startEngine } from '../file/normalizer.js';
import { taskRingOf } from '../../pool/caller/task-ring.js';
import { DTYPES } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { bothFences, signalFence } from '../io/fence.js';
import { makeDirs } from '../io/sink.js';
import { makeDirsBelow } from '../io/confined.js';
import { CHUNK_BYTES, SLOTS } from '../file/chunks.js';
import { fileArgsFor, isPath, type FileArgs } from '../file/options.js';
import { checkRun } from './args.js';
import { refuseLongNames, refuseOutDtype } from './refusals.js';
import { normalizeFileWith, planOnly } from '../file/normalize-file.js';
import { formatNamed, formatOf, takenNames, takesName } from '../formats/index.js';
import { bytesOf, dirOf, joinPath, shown, type FsPath } from '../io/paths.js';
import { perRowScales, scalesPathOf } from '../file/scales.js';
import { refuseScalesOverOutputs, removeRecordedScales } from './scales.js';
import { openSource } from '../io/source.js';
import { loadWeight, type LoadedWeight } from '../file/weight.js';
import { ByteBudget } from './budget.js';
import { refuseOverwrites, removeStale, removeTemps } from './cleanup.js';
import { listInputs, type DatasetFile } from './inputs.js';
import { ShardLock, STALE_S } from './lock.js';
import { describeOwner } from './lock-owner.js';
import { ManifestWriter, manifestName, readManifests, recordKey } from './manifest.js';
import { isDone, recordOf, settingsOf, settingsText } from './resume.js';
import { SPLIT_BYTES, shardOf, splitLarge } from './shards.js';
import type { DatasetFileEvent, DatasetRecord, DatasetSummary, NormalizeDatasetOptions } from './types.js';

/**
 * Files in flight by default. On 600 files of 1 MiB (2 threads, page cache warm), 1, 2, 4, 8 and
 * 16 at once ran at 0.36, 0.42, 0.53, 0.63 and 0.65 GB/s: the per-file latency (open, header,
 * flush, rename, manifest line) is hidden by overlap, not by faster steps.
 */
const FILES_IN_FLIGHT = 16;
/** Chunk memory of the files in flight, at most: two big files' worth (3 × 16 MiB each). */
const FLIGHT_BYTES = 2 * SLOTS * CHUNK_BYTES;

/**
 * The length of `f`'s first axis, which a split cuts (1 when it cannot be split or read: the
 * run then reports the file as a whole): of a `.npy`, or of raw data of rows of `dim`.
 */
async function firstAxisOf(f: DatasetFile, o: NormalizeDatasetOptions, dim: number | undefined): Promise<number> {
  if (o.format !== undefined && !formatNamed(o.format).header) {
    const row = DTYPES[o.dtype ?? 'float32'].bytes * (dim ?? 0);
    return row > 0 && f.size % row === 0 ? f.size / row : 1;
  }
  const src = await openSource(f.input, true).catch(() => null);
  if (!src) return 1;
  try {
    const format = await formatOf(src, o.format);
    if (!format.splits) return 1;
    const shape = (await format.read(src, {})).arrays[0]!.shape;
    return shape.length > 1 ? shape[0]! : 1;
  } catch {
    return 1;
  } finally {
    await src.close();
  }
}

/** The manifest's key of `f`'s output. */
const keyOf = (f: DatasetFile): string => recordKey({ output: typeof f.rel === 'string' ? f.rel : '', outputBase64: typeof f.rel === 'string' ? undefined : f.rel.toString('base64') });


/**
 * Normalizes every file of `inputs` into `outDir`, at the same relative paths; see the module
 * doc for the lock, resume and the manifest.
 *
 * @param inputs Files, directories (walked recursively, following symbolic links; their `.npy`,
 *   `.npz` and `.safetensors` files, or every file with `format: 'raw'`) and glob patterns
 *   (`data/**\/*.npy`: `*`, `?`, `[...]`, `**`). Hidden names are skipped. A file's output is
 *   its base name; a directory's or a glob's keep their paths below it.
 * @param outDir The output directory (made if missing). The manifest and the lock are in it.
 * @param options normalizeFile's options for every file, plus `shard`, `splitBytes`, `force`,
 *   `keepGoing`, `checksum`, `filesInFlight`, `followSymlinks`, `lockWait`, `lockStale`,
 *   `onProgress`, `onFile`, `onWarning`.
 * @returns What the run did. With `keepGoing`, failures are listed there; without it the run
 *   rejects at the first, with a NormalizeError naming the file (finished outputs stay valid
 *   and recorded).
 */
export async function normalizeDataset(inputs: string | readonly string[], outDir: string, options?: NormalizeDatasetOptions): Promise<DatasetSummary> {
  const { list, o, args, index, count, globs } = checkRun(inputs, outDir, options);
  o.signal?.throwIfAborted();
  const warnings: string[] = [];
  const warn = (m: string): void => {
    warnings.push(m);
    o.onWarning?.(m);
  };
  // Everything that can refuse the run is done before anything is made: a run refused for its
  // inputs, its weight or its plan leaves no folder, no lock and no manifest.
  const listed = await listInputs(list, outDir, {
    accept: (n) => takesName(n, o.format), accepts: takenNames(o.format), follow: o.followSymlinks !== false, warn, signal: o.signal, globs,
  });
  if (perRowScales(o.outDtype, o.quantScale)) refuseScalesOverOutputs(listed, o.format);
  refuseOutDtype(listed, o);
  // The weight is read once for the run, and recorded by the hash of what was read.
  const weight: LoadedWeight | null = isPath(o.weight) ? await loadWeight(o.weight, o.weightDtype, o.weightTensor) : null;
  const dim = o.dim ?? (weight ? weight.w.length : (o.weight as { length?: number } | null | undefined)?.length) ?? undefined;
  const plan = await splitLarge(listed, count, o.splitBytes ?? SPLIT_BYTES, (f) => firstAxisOf(f, o, dim));
  const files = shardOf(plan, index, count);
  refuseLongNames(files);
  await refuseOverwrites(outDir, files);
  // A run that stops at its first bad file plans its first file now: a weight that fits no row,
  // a header that cannot be read, refuse it before anything is made.
  if (!o.keepGoing && files[0]) {
    await planOnly(files[0].input, args, weight ?? undefined).catch((e: unknown) => {
      const error = e instanceof Error ? e : new Error(String(e));
      if (!error.message.includes(shown(files[0]!.input))) error.message = `${shown(files[0]!.input)}: ${error.message}`;
      throw error instanceof NormalizeError || error instanceof TypeError || error instanceof RangeError ? new NormalizeError(`${error.message} (no file written)`) : error;
    });
  }
  await makeDirs(outDir, 'the output directory');
  const lock = await ShardLock.acquire(outDir, index, count, {
    waitS: o.lockWait ?? Infinity, staleS: o.lockStale ?? STALE_S, signal: o.signal,
    onWait: (owner, how) => warn(`waiting for ${describeOwner(owner)}, which is writing ${count === 1 ? '' : `shard ${index}/${count} of `}${outDir}; ${how}`),
    onTakeOver: (owner, why) => warn(`took over the lock of ${owner ? describeOwner(owner) : 'an earlier run'}, presumed dead: ${why}`),
  });
  // The rate counts the work, not the wait for another run.
  const t0 = performance.now();
  try {
    return await runLocked({ plan, files, weight, outDir, o, args, index, count, lock, warn, warnings, t0 });
  } finally {
    await lock.release();
  }
}

/** A dataset run planned, its lock taken. */
interface LockedRun {
  /** Every shard's outputs, and this shard's. */
  plan: DatasetFile[];
  files: DatasetFile[];
  weight: LoadedWeight | null;
  outDir: string;
  o: NormalizeDatasetOptions;
  /** The options every file takes, checked once for the run. */
  args: FileArgs;
  index: number;
  count: number;
  lock: ShardLock;
  warn: (m: string) => void;
  warnings: string[];
  t0: number;
}

async function runLocked({ plan, files, weight, outDir, o, args, index, count, lock, warn, warnings, t0 }: LockedRun): Promise<DatasetSummary> {
  // The run stops when the caller aborts or the lock is lost; nothing is committed after either.
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, lock.signal, ...(o.signal ? [o.signal] : [])]);
  const fence = bothFences(signalFence(signal), lock);
  // Started now, so that its workers start while the manifests are read.
  await using engineStart = startEngine({ pool: o.pool, threads: o.threads }, files.reduce((a, f) => a + f.bytes, 0));
  const settings = settingsOf(o, weight);
  const settingsKey = settingsText(settings);
  const records = await readManifests(outDir, warn);
  const recorded = o.force ? new Map<string, DatasetRecord>() : records;
  const summary: DatasetSummary = {
    files: files.length, written: 0, skipped: 0, failed: [], rows: 0, bytes: 0, seconds: 0, gbPerS: 0, threads: 0,
    manifest: join(outDir, manifestName(index, count)), warnings,
  };
  const event = (e: DatasetFileEvent): void => o.onFile?.(e);
  const todo: DatasetFile[] = [];
  for (const f of files) {
    const r = recorded.get(keyOf(f));
    if (await isDone(r, f, joinPath(outDir, f.rel), settingsKey, o.checksum === true)) {
      summary.skipped++;
      event({ status: 'skipped', record: r! });
    } else todo.push(f);
  }
  for (const rel of await removeStale(outDir, plan, files, fence)) warn(`removed ${shown(rel)}: an output of an earlier run that split the dataset otherwise`);
  await removeTemps(outDir, todo, perRowScales(o.outDtype, o.quantScale));
  // Every file's arguments are the run's, checked once (the weight as loaded once, the engine and signal the run's).
  const totalBytes = todo.reduce((a, f) => a + f.bytes, 0);
  // Bytes and rows of the files in flight count as they are written.
  const inFlight = new Map<DatasetFile, { bytes: number; rows: number }>();
  let doneBytes = 0;
  const progress = (): void => {
    if (!o.onProgress) return;
    let bytes = doneBytes;
    let rows = summary.rows;
    for (const f of inFlight.values()) {
      bytes += f.bytes;
      rows += f.rows;
    }
    o.onProgress({ files: summary.written + summary.skipped + summary.failed.length, totalFiles: files.length, bytes, totalBytes, rows, seconds: (performance.now() - t0) / 1000 });
  };

  // Many small files at once, but no more chunk memory than a few big ones would use.
  const budget = new ByteBudget(FLIGHT_BYTES);
  const chunk = o.chunkBytes ?? CHUNK_BYTES;
  let first: Error | null = null;
  const engine = todo.length > 0 ? await engineStart.get() : null;
  summary.threads = engine?.threads ?? 0;
  // Opened at the first output recorded: a run that writes nothing leaves no manifest.
  let manifestOpen: Promise<ManifestWriter> | null = null;
  const manifest = () => (manifestOpen ??= ManifestWriter.open(summary.manifest, fence));
  // Each output's directory (relative to outDir) is made when its file is written, once, through no link.
  const dirsMade = new Map<string, Promise<void>>();
  const makeDir = (d: FsPath): Promise<void> => {
    const key = bytesOf(d).toString('latin1');
    let p = dirsMade.get(key);
    if (!p) dirsMade.set(key, (p = makeDirsBelow(outDir, d)));
    return p;
  };
  // One task job for the whole run, not one per file (the pool's task ring).
  const queue = engine?.pool ? taskRingOf(engine.pool) : null;
  await queue?.acquire();
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < todo.length && !signal.aborted) {
        const f = todo[next++]!;
        const output = joinPath(outDir, f.rel);
        // As normalizeFile allocates: a slot per chunk, up to SLOTS.
        const need = Math.min(SLOTS, Math.ceil(f.bytes / chunk)) * Math.min(f.bytes, chunk);
        await budget.acquire(need);
        const t = performance.now();
        try {
          inFlight.set(f, { bytes: 0, rows: 0 });
          // inPlace: refuseOverwrites has checked every file already, once per directory.
          const fileArgs = fileArgsFor(args, {
            signal, inPlace: true, range: f.part && [f.part.start, f.part.end],
            onProgress: (p) => {
              inFlight.set(f, { bytes: p.bytes, rows: p.rows });
              progress();
            },
          });
          const s = await normalizeFileWith(f.input, output, undefined, {
            args: fileArgs, weight: weight ?? undefined, cleared: true, engine: engine!, makeDir: () => makeDir(dirOf(f.rel)), fence,
          });
          const st = lstatSync(output);
          const sc = s.scales !== undefined ? lstatSync(scalesPathOf(output)) : null;
          if (!sc) await removeRecordedScales(records.get(keyOf(f)), output, fence);
          const record = recordOf(f, s, settings, st.mtimeMs, (performance.now() - t) / 1000, sc);
          await (await manifest()).append(record);
          summary.written++;
          summary.rows += s.rows;
          summary.bytes += s.bytes;
          doneBytes += s.bytes;
          event({ status: 'written', record });
        } catch (e) {
          if (signal.aborted && !first) throw e; // the caller's abort: the run rejects with its reason
          if (signal.aborted) continue; // aborted because another file failed first
          const error = e instanceof Error ? e : new Error(String(e));
          if (!error.message.includes(shown(f.input))) error.message = `${shown(f.input)}: ${error.message}`;
          summary.failed.push({ input: shown(f.input), error: error.message });
          event({ status: 'failed', input: shown(f.input), output: shown(output), error });
          if (!o.keepGoing && !first) {
            first = error;
            stop.abort(error);
          }
        } finally {
          budget.release(need);
          inFlight.delete(f);
          progress();
        }
      }
    };
    const k = Math.min(o.filesInFlight ?? FILES_IN_FLIGHT, Math.max(1, todo.length));
    const results = await Promise.allSettled(Array.from({ length: k }, worker));
    // A lost lock, then the caller's abort, before any file's error it caused.
    lock.signal.throwIfAborted();
    o.signal?.throwIfAborted();
    const rejected = results.find((r) => r.status === 'rejected');
    if (rejected) throw (rejected as PromiseRejectedResult).reason;
  } finally {
    await queue?.release();
    const opened = manifestOpen as Promise<ManifestWriter> | null;
    if (opened) await (await opened).close();
  }
  if (first) {
    const n = summary.written;
    throw new NormalizeError(`${(first as Error).message} (${n === 0 ? 'no other file written' : `${n} other file${n === 1 ? '' : 's'} written and recorded in ${summary.manifest}`})`);
  }
  summary.seconds = (performance.now() - t0) / 1000;
  summary.gbPerS = summary.bytes / summary.seconds / 1e9;
  return summary;
}
