/**
 * NumPy's `.npy` format, read and written as its specification says
 * (numpy.lib.format, "NEP 1"): the magic `\x93NUMPY`, a major and minor version byte, the
 * header's length (2 bytes little-endian in version 1.0; 4 bytes in 2.0 and 3.0), then the
 * header — a Python dict literal with the keys `descr`, `fortran_order` and `shape`, padded
 * with spaces and ended by `\n` so that the data starts on a multiple of 64 bytes — then the
 * data, C order unless `fortran_order`.
 * @module
 */

import { ALL_DTYPES, DTYPES, dtypeOfNpy, listed, type Facts, type FileDtype, type Same } from '../../glue/dtypes.js';
import type { QuantDtype } from '../../types.js';
import { NormalizeError } from '../io/errors.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';
import type { ArrayOut, Contents, Format } from './types.js';
import { NpyError } from './npy-dict.js';
import { HeaderReader, quoted } from './npy-dict.js';

export { NpyError } from './npy-dict.js';

/**
 * The element types this package reads: little-endian float32 (`'<f4'`), IEEE binary16
 * (`'<f2'`, what NumPy writes for `np.float16` on a little-endian machine) and float64
 * (`'<f8'`, NumPy's default: read as float32). NumPy has no bfloat16: ml_dtypes' bfloat16
 * arrays are saved as an anonymous 2-byte void type (`'<V2'`), which says nothing of what the
 * bytes are, and is refused.
 */
export type NpyDtype = 'float32' | 'float16' | 'float64';
// Spelled out for the API reference; the compiler holds it to the table: the storage types
// NumPy names, and float64.
const NPY_NAMES_MATCH: Same<NpyDtype, Exclude<Extract<Facts, { qmax: 0 }>, { npy: '' }>['name'] | 'float64'> = true;
void NPY_NAMES_MATCH;

/** The dtypes NumPy names, that is, those this package reads from a `.npy`. */
const NPY_DTYPES = (Object.keys(DTYPES) as FileDtype[]).filter((d): d is NpyDtype => DTYPES[d].npy !== null);

/** Bytes per element of each {@link NpyDtype}. */
export const NPY_ITEM_BYTES: Readonly<Record<NpyDtype, number>> = Object.fromEntries(NPY_DTYPES.map((d) => [d, DTYPES[d].bytes])) as Record<NpyDtype, number>;

/** A parsed header. */
export interface NpyHeader {
  /** `[major, minor]`. */
  version: [number, number];
  /** The elements' dtype (`'<f4'`: float32, `'<f2'`: float16, `'<f8'`: float64). */
  dtype: NpyDtype;
  /** The array's shape (the last axis is the row). */
  shape: number[];
  /** Bytes before the data. */
  dataOffset: number;
}


const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
/** NumPy's default `max_header_size`: np.load refuses longer headers as unsafe to parse. */
const MAX_HEADER_CHARS = 10_000;
/** Bytes to read to be sure of having the prefix (magic, version, length). */
export const NPY_PREFIX_BYTES = 12;

/** Why element types NumPy may name, that look like floats, are refused. */
const REFUSED: Record<string, string> = {
  '>f4': 'big-endian float32 (byte order ">"): only little-endian data is supported; convert with arr.astype("<f4")',
  '>f2': 'big-endian float16, byte order ">": only little-endian data is supported; convert with arr.astype("<f2")',
  '>f8': 'big-endian float64: only little-endian data is supported; convert with arr.astype("<f8")',
  '<V2': 'a 2-byte void type, as ml_dtypes bfloat16 is saved: the header cannot say what it holds; write bfloat16 as raw bytes (arr.tofile) and give dtype bfloat16',
  '|V2': 'a 2-byte void type: the header cannot say what it holds; write bfloat16 as raw bytes (arr.tofile) and give dtype bfloat16',
};

/**
 * Length of the header from its prefix (the first {@link NPY_PREFIX_BYTES} bytes or more):
 * the number of bytes before the data. Throws an {@link NpyError} naming `name` when the
 * prefix is not an `.npy` one, or of a version NumPy does not read (1.0, 2.0 and 3.0 only).
 */
export function npyDataOffset(prefix: Uint8Array, name: string): number {
  if (MAGIC.some((b, i) => prefix[i] !== b)) {
    throw new NpyError(`${name}: not a NumPy .npy file (it does not start with \\x93NUMPY)`);
  }
  if (prefix.length < 10) throw new NpyError(`${name}: truncated .npy header (the file ends after ${prefix.length} bytes)`);
  const major = prefix[6]!;
  const minor = prefix[7]!;
  if (minor !== 0 || major < 1 || major > 3) {
    throw new NpyError(`${name}: .npy format version ${major}.${minor} is not supported (1.0, 2.0 and 3.0 are)`);
  }
  const dv = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  if (major === 1) return 10 + dv.getUint16(8, true);
  if (prefix.length < 12) throw new NpyError(`${name}: truncated .npy header`);
  const length = dv.getUint32(8, true);
  // A UTF-8 character is at most 4 bytes: a longer header cannot be within NumPy's cap.
  if (length > 4 * MAX_HEADER_CHARS) throw new NpyError(`${name}: .npy header of ${length} bytes (NumPy refuses headers over ${MAX_HEADER_CHARS} characters)`);
  return 12 + length;
}


/** A header as its text says, before this package's limits: any `descr`, any order, the shape exact. */
interface RawNpyHeader {
  major: number;
  minor: number;
  descr: string;
  fortran: boolean;
  shape: bigint[];
  dataOffset: number;
  /** The header's text, for messages. */
  text: string;
}

/**
 * Reads the dict of a whole header (`bytes` holds at least {@link npyDataOffset} bytes) as
 * NumPy reads it, or refuses it: exactly the keys `descr`, `fortran_order` and `shape`, each
 * once (NumPy would silently take the last of a repeated key), in the dict-literal spelling
 * NumPy writes. `fileSize` (null: unknown, a stream) must hold the header.
 */
export function readNpyDict(bytes: Uint8Array, fileSize: number | null, name: string): RawNpyHeader {
  const dataOffset = npyDataOffset(bytes, name);
  if ((fileSize !== null && fileSize < dataOffset) || bytes.length < dataOffset) {
    throw new NpyError(`${name}: truncated .npy header (it says ${dataOffset} bytes, the file has ${fileSize ?? bytes.length})`);
  }
  const major = bytes[6]!;
  const start = major === 1 ? 10 : 12;
  let text: string;
  try {
    text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1', { fatal: true }).decode(bytes.subarray(start, dataOffset));
  } catch {
    throw new NpyError(`${name}: malformed .npy header (version 3.0 headers are UTF-8, this one is not)`);
  }
  if (text.length > MAX_HEADER_CHARS) {
    throw new NpyError(`${name}: .npy header of ${text.length} characters (NumPy refuses headers over ${MAX_HEADER_CHARS})`);
  }
  const dict = new HeaderReader(text, name, major <= 2).dict();
  const descr = dict.get('descr');
  const fortran = dict.get('fortran_order');
  const shape = dict.get('shape');
  if (typeof descr !== 'string') throw new NpyError(`${name}: malformed .npy header (descr must be a string): ${quoted(text.trimEnd())}`);
  if (typeof fortran !== 'boolean') throw new NpyError(`${name}: malformed .npy header (fortran_order must be True or False): ${quoted(text.trimEnd())}`);
  if (!Array.isArray(shape)) throw new NpyError(`${name}: malformed .npy header (shape must be a tuple of integers): ${quoted(text.trimEnd())}`);
  if (shape.length > MAX_AXES) throw new NpyError(`${name}: the header's shape has ${shape.length} axes (NumPy arrays have at most ${MAX_AXES})`);
  return { major, minor: bytes[7]!, descr, fortran, shape, dataOffset, text };
}

/** Whether `descr` names a float type: one of those read, or one refused with a reason (byte order, bfloat16's void). */
export const isFloatDescr = (descr: string): boolean => dtypeOfNpy(descr) !== undefined || Object.hasOwn(REFUSED, descr);

/**
 * The header `h` as this package reads it: a float type it reads, C order, at least one axis,
 * a size that is a safe integer, and (when `fileSize` is known) exactly that many bytes of
 * data. An {@link NpyError} naming `name` and what is wrong otherwise.
 */
export function floatHeader(h: RawNpyHeader, fileSize: number | null, name: string): NpyHeader {
  const dtype = dtypeOfNpy(h.descr) as NpyDtype | undefined;
  if (dtype === undefined) {
    const why = Object.hasOwn(REFUSED, h.descr) ? ` (${REFUSED[h.descr]})` : `: only little-endian ${listed(NPY_DTYPES.map((d) => `${d} ("${DTYPES[d].npy}")`), '')} are supported`;
    throw new NpyError(`${name}: unsupported dtype ${quoted(h.descr)}${why}`);
  }
  if (h.fortran) {
    throw new NpyError(`${name}: Fortran-order arrays are not supported (rows must be contiguous: save with np.ascontiguousarray)`);
  }
  if (h.shape.length === 0) throw new NpyError(`${name}: a 0-d array has no rows to normalize`);
  const shown = h.shape.join(', ');
  const item = BigInt(NPY_ITEM_BYTES[dtype]);
  const dataBytes = h.shape.reduce((a, b) => a * b, 1n) * item;
  const huge = h.shape.find((n) => n > BigInt(Number.MAX_SAFE_INTEGER));
  if (huge !== undefined) throw new NpyError(`${name}: the header's shape (${shown}) has an axis of ${huge}, more than an array can have (at most ${Number.MAX_SAFE_INTEGER})`);
  if (BigInt(h.dataOffset) + dataBytes > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new NpyError(`${name}: the header's shape (${shown}) is too large (${dataBytes} bytes of data)`);
  }
  const data = Number(dataBytes);
  if (fileSize !== null && fileSize !== h.dataOffset + data) {
    const have = fileSize - h.dataOffset;
    throw new NpyError(
      `${name}: the header says shape (${shown}) of ${dtype}, ${data} bytes of data, but the file has ${have} ` +
        `(${have < data ? 'truncated' : 'extra bytes at the end'})`,
    );
  }
  return { version: [h.major, h.minor], dtype, shape: h.shape.map(Number), dataOffset: h.dataOffset };
}

/**
 * Parses a whole header (`bytes` holds at least {@link npyDataOffset} bytes) of a file of
 * `fileSize` bytes, and checks that the data is exactly what the header says. The header is
 * read as NumPy reads it, or refused: exactly the keys `descr`, `fortran_order` and `shape`,
 * each once (NumPy would silently take the last of a repeated key), in the dict-literal
 * spelling NumPy writes. Throws an {@link NpyError} naming `name` and what is wrong; header
 * text in the message is escaped.
 */
export function parseNpyHeader(bytes: Uint8Array, fileSize: number, name: string): NpyHeader {
  return floatHeader(readNpyDict(bytes, fileSize, name), fileSize, name);
}

/** NumPy's limit on the number of axes of an array. */
const MAX_AXES = 64;

/**
 * The header of a C-order little-endian array of `shape` (at most 64 axes, NumPy's limit) and
 * `dtype` (default float32; written as NumPy names it: `'<f4'`, `'<f2'`, `'<f8'`): version 1.0,
 * padded with spaces so that the data starts on a multiple of 64 bytes.
 */
export function npyHeader(shape: readonly number[], dtype: NpyDtype = 'float32'): Uint8Array {
  const descr = NPY_DTYPES.includes(dtype) ? DTYPES[dtype].npy : undefined;
  if (!descr) throw new TypeError(`npyHeader: dtype must be ${listed(NPY_DTYPES)}, got ${JSON.stringify(dtype)}`);
  return headerOf(shape, descr);
}

/** {@link npyHeader} of NumPy's `descr` (any: the int8 of a quantized output too). */
function headerOf(shape: readonly number[], descr: string): Uint8Array {
  if (shape.length > MAX_AXES) throw new RangeError(`npyHeader: shape must have at most ${MAX_AXES} axes, got ${shape.length}`);
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${tuple}, }`;
  // 64 axes of up to 16 digits keep the header far below version 1.0's 65535 bytes.
  const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
  const out = new Uint8Array(total);
  out.set(MAGIC);
  out[6] = 1;
  new DataView(out.buffer).setUint16(8, total - 10, true);
  const body = dict.padEnd(total - 11, ' ') + '\n';
  for (let i = 0; i < body.length; i++) out[10 + i] = body.charCodeAt(i);
  return out;
}

/**
 * Bytes read at once for a header: NumPy's headers are a few hundred bytes for every shape this
 * can normalize, so one read almost always has all of it (each read is an I/O round trip,
 * which for many small files is much of the cost).
 */
const HEAD_READ = 4096;

/** Reads the whole header of the `.npy` at `pos` of `src` (a second read only for a header over {@link HEAD_READ}). */
export async function readNpyHeaderBytes(src: Source, pos: number, name: string): Promise<Uint8Array> {
  let head = new Uint8Array(HEAD_READ);
  head = head.subarray(0, await src.read(head, pos));
  const end = npyDataOffset(head.subarray(0, NPY_PREFIX_BYTES), name);
  if (end > head.length && head.length === HEAD_READ) {
    head = new Uint8Array(end);
    head = head.subarray(0, await src.read(head, pos));
  }
  return head.subarray(0, Math.min(head.length, end));
}

/** An output's dtype as a `.npy` header names it (its `descr`); a NormalizeError for one NumPy has no name for. */
function npyDescrOf(dtype: FileDtype | QuantDtype, name: string): string {
  const descr = ALL_DTYPES[dtype].npy;
  if (descr === null) {
    const can = (Object.keys(ALL_DTYPES) as (FileDtype | QuantDtype)[]).filter((d) => ALL_DTYPES[d].npy !== null && d !== 'float64');
    throw new NormalizeError(`${name}: NumPy has no ${dtype} dtype, so a .npy cannot hold it (write ${listed(can, '')}, or a raw or safetensors file)`);
  }
  return descr;
}

/** The `.npy` header of an output array of `shape` and `dtype` (`name`: the array in a message when NumPy has no such dtype). */
export const npyHeaderOf = (shape: readonly number[], dtype: FileDtype | QuantDtype, name: string): Uint8Array => headerOf(shape, npyDescrOf(dtype, name));

/** The `.npy` format: one array, its header, its data. */
export const npyFormat: Format = {
  name: 'npy',
  title: 'a NumPy .npy',
  several: false,
  header: true,
  splits: true,
  extensions: ['.npy'],
  holds: (d) => ALL_DTYPES[d].npy !== null,
  detect: (head) => MAGIC.every((b, i) => head[i] === b),
  async read(src: Source): Promise<Contents> {
    const name = shown(src.path);
    try {
      const h = floatHeader(readNpyDict(await readNpyHeaderBytes(src, 0, name), src.size, name), src.size, name);
      const bytes = h.shape.reduce((a, b) => a * b, 1) * NPY_ITEM_BYTES[h.dtype];
      return { format: 'npy', arrays: [{ name: '', dtype: h.dtype, typeName: DTYPES[h.dtype].npy!, shape: h.shape, source: src, offset: h.dataOffset, bytes }] };
    } catch (e) {
      throw e instanceof NpyError ? new NormalizeError(e.message) : e;
    }
  },
  writer(arrays: readonly ArrayOut[], _meta, name: string) {
    const a = arrays[0]!;
    const head = npyHeaderOf(a.shape, a.dtype!, name);
    const none = new Uint8Array(0);
    return { start: () => head, before: () => none, after: () => none, end: () => none };
  },
};
