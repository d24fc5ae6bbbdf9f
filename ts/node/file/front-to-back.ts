/**
 * A file normalized front to back on the calling thread's side (the way for what cannot be
 * read and written at positions: a stream, a deflated `.npz` member, a row too long for a
 * worker's region; positioned.ts is the other way): each array in its writer's order, a
 * normalized one chunk by chunk through chunks.ts, a copied one as it is, a container's row
 * scales and rstd arrays where its format puts them.
 * @module
 */
import type { RmsNorm } from '../../rmsnorm.js';
import { DTYPES, KERNEL_DTYPES } from '../../glue/dtypes.js';
import type { Dtype, FloatArray } from '../../types.js';
import { formatNamed } from '../formats/index.js';
import type { Source } from '../io/source.js';
import { CHUNK_BYTES, copyArray, normalizeArray, Regions, REGIONS_MAX_BYTES, SLOTS } from './chunks.js';
import type { Engine } from './normalizer.js';
import type { OutputFile } from './output-file.js';
import type { ArrayPlan, FilePlan } from './plan.js';
import { ContainerScales } from './scales.js';

/** What {@link normalizeFrontToBack} needs. */
interface FrontToBack {
  plan: FilePlan;
  src: Source;
  /** What normalizes the rows; the sync instance that converts halves. */
  by: Engine;
  sync: RmsNorm;
  out: OutputFile;
  /** The output's writer's order of the arrays (undefined: as planned). */
  order: readonly number[] | undefined;
  /** The rstd file and its writer's order of the arrays; the file of a one-array output's row scales. */
  rstd: OutputFile | null;
  rstdOrder: readonly number[] | undefined;
  scales: OutputFile | null;
  checksum: boolean;
  chunkBytes: number | undefined;
  signal: AbortSignal | undefined;
  /** `before` rows of the arrays done before and `rows` of the array `p` are written. */
  progress(before: number, rows: number, p: ArrayPlan): void;
  /** The input as messages show it. */
  name: string;
}

/**
 * Normalizes the planned file front to back into its outputs (see the module doc): resolves to
 * the rows normalized, the output's size and, with `checksum`, its SHA-256.
 */
export async function normalizeFrontToBack(j: FrontToBack): Promise<{ rows: number; bytes: number; sha256?: string }> {
  const { plan, out: outFile, rstd: rstdFile, scales: scalesFile, by: pool, signal } = j;
  const { arrays } = plan;
  const wdt = plan.params.find((p) => p !== null)!.wdt;
  using wBuf = plan.weight ? placeWeight(pool, plan.weight as FloatArray, KERNEL_DTYPES[wdt]!) : null;
  let rows = 0;
  // rstd of a container is kept until the end: its arrays may go in another order than the data's.
  const rstdKept = new Map<number, Uint8Array[]>();
  const containerScales = new ContainerScales();
  const many = formatNamed(plan.contents.format).several;
  if (rstdFile && !many) rstdFile.begin(0);
  if (scalesFile) scalesFile.begin(0);
  for (const i of j.order ?? arrays.map((_, k) => k)) {
    const p = arrays[i]!;
    outFile.begin(i);
    signal?.throwIfAborted();
    if (p.scalesOf !== undefined) await containerScales.place(outFile, p.scalesOf, arrays[p.scalesOf]!.norm!.rows === 0, p.out.bytes);
    else if (!p.norm) await copyArray(p.input.source, p.input.offset, p.input.bytes ?? 0, outFile, `${j.name}: array ${JSON.stringify(p.input.name)}`);
    else if (p.norm.rows !== 0) {
      const n = p.norm;
      const rowBytes = Math.max(DTYPES[n.inDtype].bytes, DTYPES[n.computeDtype].bytes) * n.dim;
      const want = Math.min(j.chunkBytes ?? CHUNK_BYTES, (n.rows ?? Infinity) * rowBytes);
      const regionBytes = Math.max(want, rowBytes);
      // The longest rows: fewer chunks in flight rather than more memory than wasm has.
      const count = Math.max(1, Math.min(SLOTS, Math.ceil(((n.rows ?? Infinity) * rowBytes) / want), Math.floor(REGIONS_MAX_BYTES / regionBytes)));
      using regions = Regions.alloc(pool, count, regionBytes);
      const kept: Uint8Array[] = [];
      const scales: Uint8Array[] = [];
      const before = rows;
      const done = await normalizeArray({
        source: p.input.source, offset: p.input.offset + n.first * DTYPES[n.inDtype].bytes * n.dim, rows: n.rows, dim: n.dim,
        inDtype: n.inDtype, computeDtype: n.computeDtype, outDtype: n.outDtype, params: plan.params[i]!,
        weight: wBuf ? () => wBuf.view() : null, pool, sync: j.sync, regions, out: outFile,
        rstd: rstdFile ? (many ? { data: async (b: Uint8Array) => void kept.push(b.slice()) } : rstdFile) : null,
        scales: !n.rowScales ? null : scalesFile ?? { data: async (b: Uint8Array) => void scales.push(b.slice()) },
        signal, progress: (r) => j.progress(before, r, p),
      });
      if (many) rstdKept.set(i, kept);
      await containerScales.done(outFile, i, scales);
      rows += done;
    }
    outFile.finish();
  }
  await outFile.end();
  const sha256 = await outFile.digest();
  if (rstdFile && !many) rstdFile.finish();
  if (rstdFile && many) await writeKept(rstdFile, j.rstdOrder, arrays, rstdKept);
  await rstdFile?.end();
  scalesFile?.finish();
  await scalesFile?.end();
  return { rows, bytes: outFile.at, ...(sha256 && { sha256 }) };
}

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
