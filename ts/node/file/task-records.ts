/**
 * The file tasks' records (the pool's task ring carries them: pool/control.ts TASK_RECORD): a
 * record's fields, the outcomes a worker reports, the dtypes a record names by index, and how a
 * norm task lays out a worker's region. The caller (positioned.ts) and the workers
 * (task-run.ts) read them here.
 * @module
 */
import { ALL_DTYPES, DTYPES, type FileDtype } from '../../glue/dtypes.js';
import type { QuantDtype } from '../../types.js';
import { CALL_WORDS } from '../../call/call-block.js';
import type { TaskRing } from '../../pool/caller/task-ring.js';

/** What a worker may do with files: Node's synchronous, positioned `fs` calls, and zlib's CRC-32. */
export interface TaskIo {
  readSync(fd: number, buf: Uint8Array, offset: number, length: number, position: number): number;
  writeSync(fd: number, buf: Uint8Array, offset: number, length: number, position: number): number;
  crc32(data: Uint8Array, value?: number): number;
}

/** Float64 fields of a task record (at most the ring's TASK_RECORD). */
export const T = {
  /** {@link Kind}: the pool's task kind, its first field. */
  kind: 0,
  fdIn: 1,
  posIn: 2,
  /** Bytes to read (and, for a copy, to write). */
  bytesIn: 3,
  fdOut: 4,
  posOut: 5,
  /** Rows to normalize (a norm task). */
  rows: 6,
  /** Byte address of the file's call block: its parameters and the weight's address (a norm task). */
  call: 7,
  /** The input's file dtype ({@link dtypeIndex}). */
  inDtype: 8,
  /** The output's dtype ({@link dtypeIndex}): a file dtype, or a quantized output (the call's parameters say how). */
  outDtype: 9,
  /** Where each row's rstd goes (float32), or -1. */
  fdRstd: 10,
  posRstd: 11,
  /** 1: the record's CRC-32 of the bytes written is wanted (a zip member's). */
  wantCrc: 12,
  /** Results: the CRC-32, the status ({@link Outcome}), the errno of a failed read or write, bytes read. */
  crc: 13,
  outcome: 14,
  errno: 15,
  /** Where each row's scale of a quantized output goes (float32), or -1. */
  fdScales: 16,
  posScales: 17,
} as const;
/** A record's fields to set ({@link T}), the results left out. */
type TaskFields = { [K in Exclude<keyof typeof T, 'crc' | 'outcome' | 'errno'>]?: number };

/** What a finished record reports. */
export interface TaskResult {
  /** 0 done; a kernel status; or an {@link Outcome}. */
  outcome: number;
  errno: number;
  crc: number;
}

/**
 * Queues a file task with `fields` on `ring` once it has room (resolves then); its outcome
 * comes with the returned `result` once a worker has run it.
 */
export async function submitTask(ring: TaskRing, fields: TaskFields): Promise<{ result: Promise<TaskResult> }> {
  const { result } = await ring.submit((f64, at) => {
    f64[at + T.fdRstd] = -1;
    f64[at + T.fdScales] = -1;
    for (const k in fields) f64[at + T[k as keyof TaskFields]] = fields[k as keyof TaskFields]!;
  });
  const read = result.then((r) => ({ outcome: r[T.outcome]!, errno: r[T.errno]!, crc: r[T.crc]! }));
  read.catch(() => {});
  return { result: read };
}

/** What a task does: the task kinds the Node worker registers. */
export const Kind = { NORM: 1, COPY: 2 } as const;

/** A task's outcome: 0 done; a positive kernel status; or one of these. */
export const Outcome = {
  OK: 0,
  /** The input ended before the bytes asked for (it shrank): `errno` holds the bytes read. */
  SHORT: -1,
  /** A read failed: `errno` holds Node's (negative) errno. */
  READ: -2,
  /** A write failed. */
  WRITE: -3,
  /** The task needs more than the worker's region. */
  REGION: -4,
} as const;

/** A dtype a record names: a file's, or a quantized output. */
type RecordDtype = FileDtype | QuantDtype;
const RECORD_DTYPES = Object.keys(ALL_DTYPES) as RecordDtype[];
/** The dtype of index `i` (a record's inDtype / outDtype). */
export const dtypeAt = (i: number): RecordDtype => RECORD_DTYPES[i]!;
/** The index of `d` in a record. */
export const dtypeIndex = (d: RecordDtype): number => RECORD_DTYPES.indexOf(d);

/**
 * Where a norm task of `rows × dim` puts things in a worker's region (byte offsets from its
 * start; see task-run.ts): the call block, the rows in the dtype computed in at `x`, the
 * staging area of a conversion (or of a quantized output) at `stage`, the rstd of each row at
 * `rstd`, a quantized output's scales at `scales`; `end` is the bytes it needs.
 */
export function regionLayout(rows: number, dim: number, inDtype: FileDtype, compute: FileDtype, outDtype: RecordDtype) {
  const n = rows * dim;
  const x = align16(4 * CALL_WORDS);
  const stage = x + align16(DTYPES[compute].bytes * n);
  const rstd = stage + align16(Math.max(inDtype !== compute ? DTYPES[inDtype].bytes : 0, outDtype !== compute ? ALL_DTYPES[outDtype].bytes : 0) * n);
  const scales = rstd + align16(4 * rows);
  return { x, stage, rstd, scales, end: scales + (ALL_DTYPES[outDtype].qmax !== 0 ? align16(4 * rows) : 0) };
}

/** Bytes of a worker's region a norm task of `rows × dim` needs ({@link regionLayout}). */
export const regionBytesFor = (rows: number, dim: number, inDtype: FileDtype, compute: FileDtype, outDtype: RecordDtype): number =>
  regionLayout(rows, dim, inDtype, compute, outDtype).end;
const align16 = (b: number) => Math.ceil(b / 16) * 16;
