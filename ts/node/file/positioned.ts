/**
 * A file normalized by the pool's workers themselves (task-run.ts): the calling thread lays
 * the output out from its format (where each array's data goes, what bytes lie around it),
 * then hands out ranges of rows as task records; each worker reads its rows from the input at
 * their position into the shared memory, normalizes them there and writes them to the output
 * at theirs. The calling thread writes the format's own bytes, combines the zip members'
 * CRC-32 from the records' (in order), and, for `checksum`, hashes the output front to back as
 * its bytes are complete, reading them back from the file.
 *
 * It applies where every read and write can be positioned: a regular input whose arrays are
 * its own bytes (not a deflated `.npz` member), outputs that are files. Everything else goes
 * front to back on the calling thread's side (chunks.ts). The bytes written are the same
 * either way.
 * @module
 */
import { constants } from 'node:os';
import type { RmsNorm } from '../../rmsnorm.js';
import type { RmsNormPool } from '../../pool/api.js';
import { CALL_WORDS, writeAddrs, writeParams } from '../../call/call-block.js';
import { F, FORWARD } from '../../call/operations/forward.js';
import { ALL_DTYPES, DTYPES, type FileDtype, type OutDtype } from '../../glue/dtypes.js';
import { Dtype as DT } from '../../generated/abi.js';
import type { FloatArray } from '../../types.js';
import type { Data, Params } from '../../call/op.js';
import type { TaskRing } from '../../pool/caller/task-ring.js';
import { submitTask, type TaskResult, dtypeIndex, Kind, Outcome, regionBytesFor } from './task-records.js';
import type { AtomicFile } from '../io/atomic.js';
import { Follower } from './prefix-hash.js';
import { crcOfRanges, layoutOf, RowFile, writePiece } from './layout.js';
import { fsError, NormalizeError } from '../io/errors.js';
import type { FormatWriter } from '../formats/index.js';
import { crc32Combine } from '../formats/crc32-combine.js';
import { shown } from '../io/paths.js';
import type { ArrayPlan } from './plan.js';
import type { Source } from '../io/source.js';
import { chunkRowsOf } from './chunks.js';

/** What {@link normalizePositioned} needs. */
interface PositionedJob {
  queue: TaskRing;
  pool: RmsNormPool;
  /** Widens a half weight to the float32 the kernels read. */
  sync: RmsNorm;
  src: Source;
  plans: readonly ArrayPlan[];
  /** A new writer of the output's format (called twice: a dry run for the layout, then the real one). */
  writer(): FormatWriter;
  rstdWriter: (() => FormatWriter) | null;
  out: AtomicFile;
  rstd: AtomicFile | null;
  /** A one-array file's row scales (a quantized output's: a container holds them), and their format's writer. */
  scales: AtomicFile | null;
  scalesWriter: (() => FormatWriter) | null;
  weight: FloatArray | null;
  /** Each array's call parameters (the plan's), by index. */
  params: readonly (Params | null)[];
  checksum: boolean;
  /** The most bytes of input one record holds (options.chunkBytes); a worker's region at most. */
  chunkBytes?: number;
  signal?: AbortSignal;
  /** Rows of array `i` done so far (called as records finish). */
  progress(i: number, rows: number): void;
}

/** The errno name of Node's (negative) errno number. */
const errnoName = (n: number): string | undefined => Object.entries(constants.errno).find(([, v]) => v === -n)?.[0];

/** The error a failed record stands for; `short`: what to say of an input that ended early (`errno`: the bytes read). */
function recordError(r: TaskResult, j: PositionedJob, short: (got: number) => string): Error {
  if (r.outcome === Outcome.SHORT) return new NormalizeError(`${shown(j.src.path)}: the file ended early${short(r.errno)} (it shrank while it was read)`);
  if (r.outcome === Outcome.READ || r.outcome === Outcome.WRITE) {
    const code = errnoName(r.errno) ?? 'EIO';
    const e = Object.assign(new Error(code), { code });
    if (code === 'ENOSPC') return new NormalizeError(`no space left on the device writing ${shown(j.out.target)} (nothing was written in its place)`, 'ENOSPC');
    return fsError(e, r.outcome === Outcome.READ ? 'read' : 'write', r.outcome === Outcome.READ ? j.src.path : j.out.target);
  }
  return new Error(`rmsnorm-wasm: internal error: a file task failed with status ${r.outcome}`);
}

/** Rows of `dim` one record of this array takes: as many as a worker's region holds. */
function rowsPerRecord(q: TaskRing, dim: number, inDt: FileDtype, compute: FileDtype, outDt: OutDtype): number {
  let rows = Math.max(1, Math.floor(q.regionBytes / regionBytesFor(1, dim, inDt, compute, outDt)));
  while (rows > 1 && regionBytesFor(rows, dim, inDt, compute, outDt) > q.regionBytes) rows--;
  return rows;
}

/** Whether every row of `plans` fits a worker's region (else the file goes front to back). */
export function fitsRegions(q: TaskRing, plans: readonly ArrayPlan[]): boolean {
  return plans.every((p) => !p.norm || regionBytesFor(1, p.norm.dim, p.norm.inDtype, p.norm.computeDtype, p.norm.outDtype) <= q.regionBytes);
}

/**
 * Normalizes the file `j` describes (see the module doc) into `j.out` (and `j.rstd`); resolves
 * to the rows normalized, the output's size and, with `checksum`, its SHA-256.
 */
export async function normalizePositioned(j: PositionedJob): Promise<{ rows: number; bytes: number; sha256?: string }> {
  const { queue: q, plans } = j;
  const outs = plans.map((p) => p.out);
  const dry = layoutOf(j.writer(), outs, j.writer().dataCrc ? outs.map(() => 0) : null);
  const real = j.writer();
  const crcFormat = real.dataCrc !== undefined;
  const rstdFile = j.rstd && j.rstdWriter ? new RowFile(j.rstd, j.rstdWriter, plans) : null;
  const scalesFile = j.scales && j.scalesWriter ? new RowFile(j.scales, j.scalesWriter, plans) : null;
  // A container's arrays of scales, by the index of the array they scale.
  const scalesIn = new Map(plans.flatMap((p, i) => (p.scalesOf !== undefined ? [[p.scalesOf, i] as const] : [])));
  const scalesRanges = new Map<number, { at: number; bytes: number }[]>([...scalesIn.values()].map((i) => [i, []]));
  const hash = j.checksum ? new Follower(j.out) : null;
  // A format whose bytes do not depend on the data writes them now.
  if (!crcFormat) for (const p of dry.pieces) await writePiece(j.out, p, hash);

  // The weight as float32 in the pool's memory, and a call block per set of call parameters
  // (the plan's: arrays of one dtype and row length share theirs).
  const bufs: { free(): void }[] = [];
  try {
    const callOf = new Map<Params, number>();
    let wAt = 0;
    const blockOf = (i: number): number => {
      const params = j.params[i]!;
      let at = callOf.get(params);
      if (at !== undefined) return at;
      const weight = j.weight as Data | null;
      if (weight && wAt === 0) {
        const wb = j.pool.allocF32(weight.length);
        bufs.push(wb);
        const w32 = params.wdt === DT.float32 ? (weight as Float32Array) : j.sync.toFloat32(weight, params.wdt, new Float32Array(weight.length));
        wb.view().set(w32);
        wAt = wb.view().byteOffset;
      }
      const cb = j.pool.allocF32(CALL_WORDS);
      bufs.push(cb);
      const v = cb.view();
      const i32 = new Int32Array(v.buffer, v.byteOffset, CALL_WORDS);
      writeParams(i32, v, 0, params);
      const addrs = new Int32Array(FORWARD.addrs);
      addrs[F.weight] = weight ? wAt : 0;
      writeAddrs(i32, 0, addrs, FORWARD.addrs);
      at = v.byteOffset;
      callOf.set(params, at);
      return at;
    };

    const srcFd = j.src.fd!;
    const outFd = j.out.fh.fd;
    const outstanding = new Set<Promise<void>>();
    let failure: unknown = null;
    let rows = 0;
    const crcParts: { crc: number; bytes: number }[][] = plans.map(() => []);
    const done = plans.map(() => 0);

    const track = (result: Promise<TaskResult>, onOk: (r: TaskResult) => void, short: (got: number) => string, written: [number, number]) => {
      const settled = result.then(
        (r) => {
          if (r.outcome !== Outcome.OK) throw recordError(r, j, short);
          onOk(r);
          hash?.complete(written[0], written[1]);
        },
        (e: unknown) => {
          throw e;
        },
      ).catch((e: unknown) => {
        failure ??= e;
      });
      const p = settled.finally(() => outstanding.delete(p));
      outstanding.add(p);
    };

    outer: for (const i of real.order ?? plans.map((_, k) => k)) {
      const p = plans[i]!;
      const label = plans.length > 1 ? ` in array ${JSON.stringify(p.out.name)}` : '';
      if (p.scalesOf !== undefined) continue; // written with the array they scale
      if (!p.norm) {
        // Copied as it is, a region at a time (a CRC for a zip member).
        const bytes = p.input.bytes ?? 0;
        const step = Math.min(q.regionBytes, j.chunkBytes ?? Infinity);
        for (let off = 0; off < bytes; off += step) {
          if (failure || j.signal?.aborted) break outer;
          const n = Math.min(step, bytes - off);
          const k = crcParts[i]!.push({ crc: 0, bytes: n }) - 1;
          const { result } = await submitTask(q, { kind: Kind.COPY, fdIn: srcFd, posIn: p.input.offset + off, bytesIn: n, fdOut: outFd, posOut: dry.dataAt[i]! + off, wantCrc: crcFormat ? 1 : 0 });
          track(result, (r) => (crcParts[i]![k]!.crc = r.crc), () => label, [dry.dataAt[i]! + off, n]);
        }
        continue;
      }
      const n = p.norm;
      const per = Math.min(rowsPerRecord(q, n.dim, n.inDtype, n.computeDtype, n.outDtype), j.chunkBytes === undefined ? Infinity : chunkRowsOf(n, j.chunkBytes));
      const call = blockOf(i);
      const inRow = DTYPES[n.inDtype].bytes * n.dim;
      const outRow = ALL_DTYPES[n.outDtype].bytes * n.dim;
      const si = scalesIn.get(i);
      for (let r0 = 0; r0 < n.rows!; r0 += per) {
        if (failure || j.signal?.aborted) break outer;
        const m = Math.min(per, n.rows! - r0);
        const k = crcParts[i]!.push({ crc: 0, bytes: m * outRow }) - 1;
        const rstd = rstdFile?.rows(i, r0, m);
        // The scales go to the file of their own, or to their array in the output.
        const scales = scalesFile?.rows(i, r0, m) ?? (si !== undefined ? { fd: outFd, pos: dry.dataAt[si]! + 4 * r0 } : null);
        if (si !== undefined) scalesRanges.get(si)!.push({ at: scales!.pos, bytes: 4 * m });
        const { result } = await submitTask(q, {
          kind: Kind.NORM, fdIn: srcFd, posIn: p.input.offset + (n.first + r0) * inRow, bytesIn: m * inRow,
          fdOut: outFd, posOut: dry.dataAt[i]! + r0 * outRow, rows: m, call,
          inDtype: dtypeIndex(n.inDtype), outDtype: dtypeIndex(n.outDtype),
          ...(rstd && { fdRstd: rstd.fd, posRstd: rstd.pos }), ...(scales && { fdScales: scales.fd, posScales: scales.pos }), wantCrc: crcFormat ? 1 : 0,
        });
        track(result, (r) => {
          crcParts[i]![k]!.crc = r.crc;
          rows += m;
          done[i]! += m;
          j.progress(i, done[i]!);
          if (si !== undefined) hash?.complete(scales!.pos, 4 * m);
        }, (got) => `${label}, at row ${r0 + Math.floor(got / inRow)} of ${n.rows}`, [dry.dataAt[i]! + r0 * outRow, m * outRow]);
      }
    }
    while (outstanding.size > 0) await Promise.all(outstanding);
    if (failure) throw failure;
    j.signal?.throwIfAborted();

    // A container's scales were written by the workers beside the data; their CRC is read back.
    for (const [si, ranges] of scalesRanges) {
      crcParts[si] = crcFormat ? [{ crc: await crcOfRanges(j.out, ranges), bytes: plans[si]!.out.bytes }] : [];
    }
    if (crcFormat) {
      const crcs = plans.map((_, i) => crcParts[i]!.reduce((c, part) => crc32Combine(c, part.crc, part.bytes), 0));
      const fin = layoutOf(real, outs, crcs);
      if (fin.size !== dry.size || fin.dataAt.some((a, i) => a !== dry.dataAt[i])) throw new Error('rmsnorm-wasm: internal error: the output layout changed between its two runs');
      for (const piece of fin.pieces) await writePiece(j.out, piece, hash);
    }
    await rstdFile?.finish();
    await scalesFile?.finish();
    const sha256 = await hash?.finish(dry.size);
    return { rows, bytes: dry.size, ...(sha256 !== undefined && { sha256 }) };
  } finally {
    for (const b of bufs) b.free();
  }
}
