/**
 * What an input file holds: its layout (format, dtype, shape, where the data starts) from its
 * `.npy` header or, for a raw file, from its size; and a weight given as a path.
 * @module
 */
import { open, type FileHandle } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Dtype } from '../types.js';
import { NormalizeError } from './errors.js';
import { readFully } from './io.js';
import { NPY_PREFIX_BYTES, npyDataOffset, parseNpyHeader, type NpyHeader } from './npy.js';

/** An input's layout. */
export interface Layout {
  format: 'npy' | 'raw';
  dtype: Dtype;
  shape: number[];
  /** Byte offset of the first row. */
  dataOffset: number;
  rows: number;
  dim: number;
}

/**
 * Bytes read at once for a `.npy` header: NumPy's headers are a few hundred bytes at most for
 * every shape this can normalize, so one read almost always has all of it (each read is an
 * I/O round trip, which for many small files is much of the cost).
 */
const HEAD_READ = 4096;

/** Reads and checks the `.npy` header of the open file `fh` of `size` bytes (a second read only for a header over {@link HEAD_READ}). */
async function readNpyHeader(fh: FileHandle, size: number, name: string): Promise<NpyHeader> {
  let head = new Uint8Array(Math.min(size, HEAD_READ));
  await readFully(fh, head, 0);
  const end = npyDataOffset(head.subarray(0, NPY_PREFIX_BYTES), name);
  if (end > head.length && size > head.length) {
    head = new Uint8Array(Math.min(size, end));
    await readFully(fh, head, 0);
  }
  return parseNpyHeader(head.subarray(0, Math.min(head.length, end)), size, name);
}

/** The row length of a raw input: `dim` as given, else the weight's length (none without either). */
export const rawRowLength = (dim: number | undefined, weight: { length: number } | null | undefined): number | undefined => dim ?? (weight?.length || undefined);

/** Bytes per element of a dtype. */
export const itemBytes = (d: Dtype): number => (d === 'float32' ? 4 : 2);

/** The `.npy` header's dtype, checked against a dtype given for it (`what` names the option). */
function agree(name: string, h: NpyHeader, given: Dtype | undefined, what: string): Dtype {
  if (given !== undefined && given !== h.dtype) {
    throw new NormalizeError(`${name}: the .npy header says ${h.dtype} ('${h.dtype === 'float16' ? '<f2' : '<f4'}'), but options.${what} ${given} was given`);
  }
  return h.dtype;
}

/** Reads the input's layout: its header (npy; `given` must agree) or its size in rows (raw, of `given`, default float32). */
export async function layoutOf(
  fh: FileHandle,
  name: string,
  size: number,
  format: 'npy' | 'raw',
  dimOpt: number | undefined,
  given: Dtype | undefined,
): Promise<Layout> {
  if (format === 'raw') {
    const dim = dimOpt;
    const dtype = given ?? 'float32';
    if (dim === undefined) throw new NormalizeError(`${name}: a raw file needs options.dim (or a weight) to know its row length`);
    const row = itemBytes(dtype) * dim;
    if (size % row !== 0) {
      throw new NormalizeError(`${name}: its size (${size} bytes) is not a whole number of rows of ${dim} ${dtype} (${row} bytes each)`);
    }
    const rows = size / row;
    return { format, dtype, shape: [rows, dim], dataOffset: 0, rows, dim };
  }
  const h = await readNpyHeader(fh, size, name);
  const dtype = agree(name, h, given, 'dtype');
  const dim = h.shape[h.shape.length - 1]!;
  if (dimOpt !== undefined && dimOpt !== dim) throw new NormalizeError(`${name}: its rows have ${dim} elements (last axis of shape (${h.shape.join(', ')})), but options.dim ${dimOpt} was given`);
  if (dim === 0) throw new NormalizeError(`${name}: its rows are empty (shape (${h.shape.join(', ')}))`);
  const rows = h.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return { format, dtype, shape: h.shape, dataOffset: h.dataOffset, rows, dim };
}

/** The part of a layout a call reads: `rows` rows from row `first`, an array of `shape`. */
export interface Slice {
  first: number;
  rows: number;
  shape: number[];
}

/**
 * The rows that indices `start` ≤ i < `end` of the first axis hold (all of them without a
 * range): rows of a 2-D array or of raw data, blocks of rows for more axes; a 1-D `.npy` is
 * one row, index 0. A range past the end is a RangeError naming `options.range`.
 */
export function sliceOf(layout: Layout, range: readonly [number, number] | undefined, name: string): Slice {
  if (range === undefined) return { first: 0, rows: layout.rows, shape: layout.shape };
  const [start, end] = range;
  const lead = layout.shape.length > 1 ? layout.shape[0]! : 1;
  if (end > lead) throw new RangeError(`normalizeFile: options.range [${start}, ${end}] must end by ${lead}, the length of the first axis of ${name}`);
  const per = lead === 0 ? 0 : layout.rows / lead;
  const shape = layout.shape.length > 1 ? [end - start, ...layout.shape.slice(1)] : layout.shape;
  return { first: start * per, rows: (end - start) * per, shape };
}

/**
 * Loads a weight given as a path: a `.npy` (float32 or float16, as its header says; a
 * `given` dtype must agree) or a raw little-endian file of `given` (default float32).
 * Half weights come back as Uint16Arrays of bit patterns.
 */
export async function loadWeight(path: string, given: Dtype | undefined): Promise<{ w: Float32Array | Uint16Array; dtype: Dtype }> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new NormalizeError(`cannot read the weight ${path}: ${(e as Error).message}`);
  }
  try {
    const size = (await fh.stat()).size;
    let offset = 0;
    let dtype = given ?? 'float32';
    if (extname(path).toLowerCase() === '.npy') {
      const h = await readNpyHeader(fh, size, path);
      offset = h.dataOffset;
      dtype = agree(path, h, given, 'weightDtype');
    } else if (size % itemBytes(dtype) !== 0) {
      throw new NormalizeError(`${path}: a raw weight of ${dtype} must be a multiple of ${itemBytes(dtype)} bytes, got ${size} bytes`);
    }
    const n = (size - offset) / itemBytes(dtype);
    const w = dtype === 'float32' ? new Float32Array(n) : new Uint16Array(n);
    await fh.read(new Uint8Array(w.buffer), 0, w.byteLength, offset);
    return { w, dtype };
  } finally {
    await fh.close();
  }
}
