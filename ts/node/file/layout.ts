/**
 * Where a file written at positions puts its pieces: each array's data and the format's own
 * bytes around them (a dry run of its writer), and the files of a float32 per row (the rstd
 * file, a one-array output's scales) that the workers write beside the output.
 * @module
 */
import { crc32 } from 'node:zlib';
import type { AtomicFile } from '../io/atomic.js';
import type { Follower } from './prefix-hash.js';
import type { ArrayOut, FormatWriter } from '../formats/index.js';
import { rowArrays, type ArrayPlan } from './plan.js';

/** Where an output's pieces go: each array's data, and the format's bytes around them. */
export interface Layout {
  dataAt: number[];
  pieces: { pos: number; bytes: Uint8Array }[];
  size: number;
}

/** Lays out what `w` writes around `outs` (feeding it `crcs` of the data, when it wants them). */
export function layoutOf(w: FormatWriter, outs: readonly ArrayOut[], crcs: readonly number[] | null): Layout {
  const dataAt: number[] = new Array(outs.length).fill(0);
  const pieces: Layout['pieces'] = [];
  let pos = 0;
  const put = (b: Uint8Array) => {
    if (b.length > 0) pieces.push({ pos, bytes: b });
    pos += b.length;
  };
  put(w.start());
  for (const i of w.order ?? outs.map((_, k) => k)) {
    put(w.before(i));
    dataAt[i] = pos;
    pos += outs[i]!.bytes;
    if (crcs) w.dataCrc?.(i, crcs[i]!, outs[i]!.bytes);
    put(w.after(i));
  }
  put(w.end());
  return { dataAt, pieces, size: pos };
}

/**
 * A file of a float32 per row of each normalized array (the rstd file, a one-array output's
 * scales), written by the workers at the positions its format's layout gives, then its format's
 * own bytes (their CRCs read back from it).
 */
export class RowFile {
  private readonly outs: ArrayOut[];
  private readonly layout: Layout;
  /** Its array of each normalized plan, by the plan's index. */
  private readonly index = new Map<number, number>();
  private readonly ranges: { at: number; bytes: number }[][];

  constructor(
    private readonly file: AtomicFile,
    private readonly writer: () => FormatWriter,
    plans: readonly ArrayPlan[],
  ) {
    this.outs = rowArrays(plans);
    const w = writer();
    this.layout = layoutOf(w, this.outs, w.dataCrc ? this.outs.map(() => 0) : null);
    plans.forEach((p, i) => p.norm && this.index.set(i, this.index.size));
    this.ranges = this.outs.map(() => []);
  }

  /** Where rows `r0` to `r0 + m` of plan `i` go. */
  rows(i: number, r0: number, m: number): { fd: number; pos: number } {
    const k = this.index.get(i)!;
    const pos = this.layout.dataAt[k]! + 4 * r0;
    this.ranges[k]!.push({ at: pos, bytes: 4 * m });
    return { fd: this.file.fh.fd, pos };
  }

  /** Writes the format's bytes, once every row is written. */
  async finish(): Promise<void> {
    const w = this.writer();
    let crcs: number[] | null = null;
    if (w.dataCrc) {
      crcs = [];
      for (const r of this.ranges) crcs.push(await crcOfRanges(this.file, r));
    }
    for (const piece of layoutOf(w, this.outs, crcs).pieces) await writePiece(this.file, piece, null);
  }
}

/** Writes one piece of a layout at its position (and tells `hash` it is complete). */
export async function writePiece(f: AtomicFile, p: { pos: number; bytes: Uint8Array }, hash: Follower | null): Promise<void> {
  await f.write([p.bytes], p.pos);
  hash?.complete(p.pos, p.bytes.length);
}

/** The CRC-32 of the ranges of `f` in order (read back). */
export async function crcOfRanges(f: AtomicFile, ranges: readonly { at: number; bytes: number }[]): Promise<number> {
  let crc = 0;
  for (const r of ranges) {
    const b = new Uint8Array(r.bytes);
    const { bytesRead } = await f.fh.read(b, 0, r.bytes, r.at);
    crc = crc32(b.subarray(0, bytesRead), crc);
  }
  return crc >>> 0;
}
