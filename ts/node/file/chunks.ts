/**
 * One array of a file normalized on the pool, chunk by chunk: rows read straight into the
 * pool's memory (no copy in JavaScript when the file holds the dtype computed in), normalized
 * there in place, and written from there. Up to {@link SLOTS} chunks are in flight, so the
 * read of one, the normalization of the one before and the write of the one before that
 * overlap; memory stays at SLOTS chunks whatever the file's size.
 *
 * When the file's dtype is not the one computed in (float64, read as float32; or an output
 * dtype other than the input's), rows go through a staging array and are converted on the
 * way in or out (float64 to float32 rounds to nearest even; halves are widened exactly and
 * rounded once, to nearest even).
 * @module
 */
import type { RmsNorm } from '../../rmsnorm.js';
import type { Engine } from './normalizer.js';
import type { F32Buffer } from '../../glue/memory.js';
import type { Dtype, FloatArray } from '../../types.js';
import { forwardOf } from '../../call/operations/forward.js';
import type { Params, Placed } from '../../call/op.js';
import { ALL_DTYPES, DTYPES, isQuant, type Data, type FileDtype, type OutDtype } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import type { OutputFile } from './output-file.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';

/** Chunks in flight: one being read, one normalized, one written. */
export const SLOTS = 3;
/** Default bytes per chunk: 16 MiB, several pool jobs' worth, small next to the page cache. */
export const CHUNK_BYTES = 16 << 20;
/**
 * The most memory a file's chunks take at once: a row is read whole, so the longest rows get
 * fewer chunks in flight than {@link SLOTS}, within the 2 GiB a threads build's memory holds.
 */
export const REGIONS_MAX_BYTES = 1 << 30;

/** Pool memory for the chunks of a file (or of many files, one after another): {@link SLOTS} regions of `bytes`. */
export class Regions {
  private constructor(
    private readonly bufs: F32Buffer[],
    /** Bytes of each region. */
    readonly bytes: number,
  ) {}

  /** `count` regions of at least `bytes` each in `pool`'s memory. */
  static alloc(pool: Engine, count: number, bytes: number): Regions {
    const floats = Math.max(4, Math.ceil(bytes / 4));
    const bufs: F32Buffer[] = [];
    try {
      for (let i = 0; i < count; i++) bufs.push(pool.allocF32(floats));
    } catch (e) {
      for (const b of bufs) b.free();
      throw e;
    }
    return new Regions(bufs, floats * 4);
  }

  get count(): number {
    return this.bufs.length;
  }

  /**
   * A view of `n` elements of `dtype` at the start of region `i`: made anew at each use, since
   * growth of a memory that is not shared detaches the views made before it.
   */
  view(i: number, dtype: Dtype, n: number): Data {
    const f = this.bufs[i]!.view();
    return new DTYPES[dtype].Array(f.buffer as ArrayBuffer, f.byteOffset, n) as Data;
  }

  [Symbol.dispose](): void {
    for (const b of this.bufs) b.free();
    this.bufs.length = 0;
  }
}

/** One array to normalize; see the module doc. */
interface ArrayJob {
  source: Source;
  /** Where its first row is in `source`. */
  offset: number;
  /** Rows to read, or null: until the source ends (a raw stream). */
  rows: number | null;
  dim: number;
  /** What the file holds, what is computed in, what is written. */
  inDtype: FileDtype;
  computeDtype: Dtype;
  outDtype: OutDtype;
  /** The parameters of the array's calls (planned with the file: checked already). */
  params: Params;
  /** The weight in the pool's memory (a view made anew at each call), or null. */
  weight: (() => FloatArray) | null;
  pool: Engine;
  /** The sync instance that converts halves. */
  sync: RmsNorm;
  regions: Regions;
  out: OutputFile;
  /** Where each chunk's rstd goes (float32), or null. */
  rstd: { data(bytes: Uint8Array): Promise<void> } | null;
  /** Where each chunk's row scales go (float32; a quantized output's, `call` having its options), or null. */
  scales: { data(bytes: Uint8Array): Promise<void> } | null;
  signal?: AbortSignal;
  /** Called with the rows done so far, after each chunk is written. */
  progress(rows: number): void;
}

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** A typed array of `n` elements of `dtype` in JavaScript memory (a staging area). */
function staging(dtype: FileDtype, n: number): Float64Array | Data {
  return new DTYPES[dtype].Array(n) as Float64Array | Data;
}

/** Rows of `dim` elements that fit a region (at least one; a row longer than a region gets a region of its own size). */
export const chunkRowsOf = (j: { inDtype: FileDtype; computeDtype: Dtype; dim: number }, bytes: number): number =>
  Math.max(1, Math.floor(bytes / (Math.max(DTYPES[j.inDtype].bytes, DTYPES[j.computeDtype].bytes) * j.dim)));

/** Normalizes the array `j` describes (see the module doc); resolves to its rows. */
export async function normalizeArray(j: ArrayJob): Promise<number> {
  const { dim, source, regions } = j;
  const inItem = DTYPES[j.inDtype].bytes;
  const rowBytes = inItem * dim;
  const chunkRows = Math.max(1, Math.min(j.rows ?? Infinity, chunkRowsOf(j, regions.bytes)));
  const converts = j.inDtype !== j.computeDtype;
  // A quantized output is written by the call itself; another dtype than the one computed in, after it.
  const quant = isQuant(j.outDtype);
  const narrows = !quant && j.outDtype !== j.computeDtype;
  const slots = Array.from({ length: regions.count }, () => ({
    stage: converts ? staging(j.inDtype, chunkRows * dim) : null,
    out: narrows || quant ? new ALL_DTYPES[j.outDtype].Array(chunkRows * dim) : null,
    rstd: j.rstd ? new Float32Array(chunkRows) : null,
    scales: j.scales ? new Float32Array(chunkRows) : null,
  }));
  let rowsDone = 0;
  let ended = false;
  let failure: unknown = null;

  /** Chunk `c` (rows from `r0`) in slot `s`: read, normalize, then — after the chunk before — write. Resolves to its rows. */
  const chunk = async (r0: number, s: number, after: Promise<unknown>): Promise<number> => {
    const want = j.rows === null ? chunkRows : Math.min(chunkRows, j.rows - r0);
    const slot = slots[s]!;
    const into = slot.stage ? slot.stage.subarray(0, want * dim) : regions.view(s, j.computeDtype, want * dim);
    const got = await source.read(bytesOf(into), j.offset + rowBytes * r0);
    let n = want;
    if (got !== want * rowBytes) {
      if (j.rows !== null) throw new NormalizeError(`${shown(source.path)}: the file ended early, at row ${r0 + Math.floor(got / rowBytes)} of ${j.rows} (it shrank while it was read)`);
      if (got % rowBytes !== 0) throw new NormalizeError(`${shown(source.path)}: the input ended mid-row (${got % rowBytes} bytes of a ${rowBytes}-byte row)`);
      n = got / rowBytes;
      ended = true;
    }
    const x = regions.view(s, j.computeDtype, n * dim);
    if (slot.stage) {
      if (j.inDtype === 'float64') (x as Float32Array).set(slot.stage.subarray(0, n * dim));
      else j.sync.toFloat32(slot.stage.subarray(0, n * dim) as Data, DTYPES[j.inDtype].code, x as Float32Array);
    }
    const rs = slot.rstd?.subarray(0, n);
    const sc = slot.scales?.subarray(0, n);
    if (n > 0) {
      const out = quant ? slot.out!.subarray(0, n * dim) : x;
      await j.pool.forward(forwardOf(j.params, x, j.weight ? (j.weight() as Data) : null, out as Placed, rs ?? null, sc ?? null), j.signal);
    }
    if (narrows && n > 0) {
      j.sync.fromFloat32(regions.view(s, j.computeDtype, n * dim) as Float32Array, DTYPES[j.outDtype as Dtype].code, slot.out!.subarray(0, n * dim) as Data);
    }
    await after;
    if (failure !== null || n === 0) return n;
    await j.out.data(bytesOf(slot.out ? slot.out.subarray(0, n * dim) : regions.view(s, j.computeDtype, n * dim)));
    if (j.rstd) await j.rstd.data(bytesOf(rs!));
    if (j.scales) await j.scales.data(bytesOf(sc!));
    rowsDone += n;
    j.progress(rowsDone);
    return n;
  };

  const busy: Promise<unknown>[] = [];
  let written: Promise<unknown> = Promise.resolve();
  for (let c = 0, r0 = 0; (j.rows === null || r0 < j.rows) && !ended && failure === null; c++, r0 += chunkRows) {
    const s = c % regions.count;
    await busy[s];
    if (failure !== null || ended) break;
    j.signal?.throwIfAborted();
    busy[s] = written = chunk(r0, s, written).catch((e: unknown) => {
      failure ??= e;
    });
  }
  await Promise.all(busy);
  if (failure !== null) throw failure;
  return rowsDone;
}

/** Copies `bytes` from `source` at `offset` to the output as they are (a member or tensor not normalized). */
export async function copyArray(source: Source, offset: number, bytes: number, out: OutputFile, name: string): Promise<void> {
  const buf = new Uint8Array(Math.min(bytes, 4 << 20));
  for (let done = 0; done < bytes; ) {
    const n = Math.min(buf.length, bytes - done);
    const got = await source.read(buf.subarray(0, n), offset + done);
    if (got !== n) throw new NormalizeError(`${name}: the file ended early (it shrank while it was read)`);
    await out.data(buf.subarray(0, n));
    done += n;
  }
}
