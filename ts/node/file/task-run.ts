/**
 * The file tasks, as a pool worker runs them (the pool's task kinds NORM and COPY, registered by
 * the Node worker entry, pool-worker.ts): a worker takes a record, reads its rows from the input
 * file at their position into its own region of the memory, normalizes them there in place,
 * and writes them to the output at theirs (positioned reads and writes: the threads share the
 * process's descriptors). No byte of data passes through the calling thread, which only plans,
 * hands out ranges and records what is done (positioned.ts).
 *
 * File I/O comes in through {@link TaskIo} (Node's `fs`, given by the entry).
 * @module
 */
import { ADDRS_AT } from '../../call/op.js';
import { F, FORWARD } from '../../call/operations/forward.js';
import { PARAMS, PARAMS_WORDS, DTYPE_MASK } from '../../generated/abi.js';
import { writeAddrs } from '../../call/call-block.js';
import { ALL_DTYPES, DTYPES, FILE_DTYPES, type FileDtype } from '../../glue/dtypes.js';
import type { TaskContext } from '../../pool/worker/tasks.js';
import { dtypeAt, Kind, Outcome, regionLayout, T, type TaskIo } from './task-records.js';

/** This worker's forward address words, reused record after record. */
const ADDRS = new Int32Array(FORWARD.addrs);

/** Reads exactly `n` bytes at `pos` (fewer only at the end of the file); returns the bytes read. */
function readFull(io: TaskIo, fd: number, buf: Uint8Array, n: number, pos: number): number {
  let got = 0;
  while (got < n) {
    const k = io.readSync(fd, buf, got, n - got, pos + got);
    if (k === 0) break;
    got += k;
  }
  return got;
}

function writeFull(io: TaskIo, fd: number, buf: Uint8Array, n: number, pos: number): void {
  for (let put = 0; put < n; ) put += io.writeSync(fd, buf, put, n - put, pos + put);
}

/**
 * Runs the file task of the record `t.at` of `t.f64` in the worker's region. Layout of the
 * region: the worker's call block, the rows in the dtype computed in, a staging area (the input
 * before a conversion, or the output after one, or a quantized output), the rstd of each row,
 * a quantized output's scale of each row.
 */
export function runFileTask(t: TaskContext, io: TaskIo): void {
  const { f64, at: r, k, region, regionBytes } = t;
  const buf = t.memory.buffer;
  const u8 = (at: number, n: number) => new Uint8Array(buf, at, n);
  const kind = f64[r + T.kind];
  const fdIn = f64[r + T.fdIn]!;
  const posIn = f64[r + T.posIn]!;
  const bytesIn = f64[r + T.bytesIn]!;
  const fdOut = f64[r + T.fdOut]!;
  const posOut = f64[r + T.posOut]!;
  const wantCrc = f64[r + T.wantCrc] === 1;
  let outcome: number = Outcome.OK;
  let errno = 0;
  let crc = 0;
  const read = (into: Uint8Array): boolean => {
    let got: number;
    try {
      got = readFull(io, fdIn, into, bytesIn, posIn);
    } catch (e) {
      outcome = Outcome.READ;
      errno = (e as { errno?: number }).errno ?? 0;
      return false;
    }
    if (got !== bytesIn) {
      outcome = Outcome.SHORT;
      errno = got;
      return false;
    }
    return true;
  };
  const write = (fd: number, from: Uint8Array, pos: number): boolean => {
    try {
      writeFull(io, fd, from, from.length, pos);
      return true;
    } catch (e) {
      outcome = Outcome.WRITE;
      errno = (e as { errno?: number }).errno ?? 0;
      return false;
    }
  };
  run: if (kind === Kind.COPY) {
    // A copy goes through the region in pieces of its size.
    for (let done = 0; done < bytesIn; ) {
      const n = Math.min(regionBytes, bytesIn - done);
      const v = u8(region, n);
      let got: number;
      try {
        got = readFull(io, fdIn, v, n, posIn + done);
      } catch (e) {
        outcome = Outcome.READ;
        errno = (e as { errno?: number }).errno ?? 0;
        break run;
      }
      if (got !== n) {
        outcome = Outcome.SHORT;
        errno = done + got;
        break run;
      }
      if (wantCrc) crc = io.crc32(v, crc);
      if (!write(fdOut, v, posOut + done)) break run;
      done += n;
    }
  } else {
    const rows = f64[r + T.rows]!;
    const call = f64[r + T.call]!;
    const i32 = new Int32Array(buf);
    const dtypes = i32[(call >>> 2) + PARAMS.dtypes.word]!;
    const dim = i32[(call >>> 2) + PARAMS.dim.word]!;
    const inDt = dtypeAt(f64[r + T.inDtype]!) as FileDtype;
    const outDt = dtypeAt(f64[r + T.outDtype]!);
    const compute = FILE_DTYPES.find((d) => DTYPES[d].code === (dtypes & DTYPE_MASK))!;
    const n = rows * dim;
    const converts = inDt !== compute;
    // A quantized output is the call's own (its parameters say how); another dtype is converted after it.
    const quant = ALL_DTYPES[outDt].qmax !== 0;
    const narrows = !quant && outDt !== compute;
    const own = region;
    const at = regionLayout(rows, dim, inDt, compute, outDt);
    const [x, stage, rstdAt, scalesAt] = [own + at.x, own + at.stage, own + at.rstd, own + at.scales];
    if (at.end > regionBytes) {
      outcome = Outcome.REGION;
      break run;
    }
    if (!read(u8(converts ? stage : x, bytesIn))) break run;
    if (converts) {
      if (DTYPES[inDt].code < 0) new Float32Array(buf, x, n).set(new Float64Array(buf, stage, n));
      else {
        const s = k.widen(stage, x, n, DTYPES[inDt].code);
        if (s !== 0) {
          outcome = s;
          break run;
        }
      }
    }
    // The worker's own call block: the file's parameters, its rows at x (in place), the weight.
    const c = own >>> 2;
    const from = call >>> 2;
    for (let w = 0; w < PARAMS_WORDS; w++) i32[c + w] = i32[from + w]!;
    ADDRS.fill(0);
    ADDRS[F.x] = x;
    ADDRS[F.y] = quant ? stage : x;
    ADDRS[F.weight] = i32[from + ADDRS_AT / 4 + F.weight]!;
    const wantRstd = f64[r + T.fdRstd]! >= 0;
    ADDRS[F.rstd] = wantRstd ? rstdAt : 0;
    const wantScales = f64[r + T.fdScales]! >= 0;
    ADDRS[F.rowScales] = wantScales ? scalesAt : 0;
    writeAddrs(i32, c, ADDRS, FORWARD.addrs);
    const s = FORWARD.span(k, own, 0, rows, rows);
    if (s !== 0) {
      outcome = s;
      break run;
    }
    let out = quant ? stage : x;
    if (narrows) {
      const s2 = k.narrow(x, stage, n, DTYPES[outDt as FileDtype].code);
      if (s2 !== 0) {
        outcome = s2;
        break run;
      }
      out = stage;
    }
    const bytes = u8(out, n * ALL_DTYPES[outDt].bytes);
    if (wantCrc) crc = io.crc32(bytes);
    if (!write(fdOut, bytes, posOut)) break run;
    if (wantRstd && !write(f64[r + T.fdRstd]!, u8(rstdAt, 4 * rows), f64[r + T.posRstd]!)) break run;
    if (wantScales && !write(f64[r + T.fdScales]!, u8(scalesAt, 4 * rows), f64[r + T.posScales]!)) break run;
  }
  f64[r + T.crc] = crc >>> 0;
  f64[r + T.outcome] = outcome;
  f64[r + T.errno] = errno;
}

