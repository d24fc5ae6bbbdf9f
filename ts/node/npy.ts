/**
 * NumPy's `.npy` format, read and written as its specification says
 * (numpy.lib.format, "NEP 1"): the magic `\x93NUMPY`, a major and minor version byte, the
 * header's length (2 bytes little-endian in version 1.0; 4 bytes in 2.0 and 3.0), then the
 * header — a Python dict literal with the keys `descr`, `fortran_order` and `shape`, padded
 * with spaces and ended by `\n` so that the data starts on a multiple of 64 bytes — then the
 * data, C order unless `fortran_order`.
 * @module
 */

/**
 * The element types this package reads and writes: little-endian float32 (`'<f4'`) and IEEE
 * binary16 (`'<f2'`, what NumPy writes for `np.float16` on a little-endian machine). NumPy
 * has no bfloat16: ml_dtypes' bfloat16 arrays are saved as an anonymous 2-byte void type
 * (`'<V2'`), which says nothing of what the bytes are, and is refused.
 */
export type NpyDtype = 'float32' | 'float16';

/** Bytes per element of each {@link NpyDtype}. */
export const NPY_ITEM_BYTES: Readonly<Record<NpyDtype, number>> = { float32: 4, float16: 2 };

/** The `descr` this package writes for each {@link NpyDtype}. */
const DESCR_OF: Readonly<Record<NpyDtype, string>> = { float32: '<f4', float16: '<f2' };

/** A parsed header. */
export interface NpyHeader {
  /** `[major, minor]`. */
  version: [number, number];
  /** The elements' dtype (`'<f4'`: float32, `'<f2'`: float16). */
  dtype: NpyDtype;
  /** The array's shape (the last axis is the row). */
  shape: number[];
  /** Bytes before the data. */
  dataOffset: number;
}

/** A file that is not an `.npy` this package can read; the message says what is wrong. */
export class NpyError extends Error {
  /** `'NpyError'`. */
  override name = 'NpyError';
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
/** Bytes to read to be sure of having the prefix (magic, version, length). */
export const NPY_PREFIX_BYTES = 12;

/** Element types NumPy may name, with what this package says of them. */
const DESCR: Record<string, NpyDtype | string> = {
  '<f4': 'float32',
  '<f2': 'float16',
  '>f4': 'big-endian float32 (byte order ">"): only little-endian data is supported',
  '>f2': 'big-endian float16, byte order ">": only little-endian data is supported; convert with arr.astype("<f2")',
  '<f8': 'float64: only float32 and float16 are supported (convert with arr.astype(np.float32))',
  '>f8': 'big-endian float64: only little-endian float32 and float16 are supported',
  '<V2': 'a 2-byte void type, as ml_dtypes bfloat16 is saved: the header cannot say what it holds; write bfloat16 as raw bytes (arr.tofile) and give dtype bfloat16',
  '|V2': 'a 2-byte void type: the header cannot say what it holds; write bfloat16 as raw bytes (arr.tofile) and give dtype bfloat16',
};

/**
 * Length of the header from its prefix (the first {@link NPY_PREFIX_BYTES} bytes or more):
 * the number of bytes before the data. Throws an {@link NpyError} naming `name` when the
 * prefix is not an `.npy` one.
 */
export function npyDataOffset(prefix: Uint8Array, name: string): number {
  if (prefix.length < 10 || MAGIC.some((b, i) => prefix[i] !== b)) {
    throw new NpyError(`${name}: not a NumPy .npy file (it does not start with \\x93NUMPY)`);
  }
  const major = prefix[6]!;
  const minor = prefix[7]!;
  const dv = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  if (major === 1) return 10 + dv.getUint16(8, true);
  if (major === 2 || major === 3) {
    if (prefix.length < 12) throw new NpyError(`${name}: truncated .npy header`);
    return 12 + dv.getUint32(8, true);
  }
  throw new NpyError(`${name}: .npy format version ${major}.${minor} is not supported (1.0, 2.0 and 3.0 are)`);
}

/**
 * Parses a whole header (`bytes` holds at least {@link npyDataOffset} bytes) of a file of
 * `fileSize` bytes, and checks that the data is exactly what the header says. Throws an
 * {@link NpyError} naming `name` and what is wrong.
 */
export function parseNpyHeader(bytes: Uint8Array, fileSize: number, name: string): NpyHeader {
  const dataOffset = npyDataOffset(bytes, name);
  if (fileSize < dataOffset || bytes.length < dataOffset) {
    throw new NpyError(`${name}: truncated .npy header (it says ${dataOffset} bytes, the file has ${fileSize})`);
  }
  const major = bytes[6]!;
  const start = major === 1 ? 10 : 12;
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, dataOffset));
  const dict = text.trim();
  if (!dict.startsWith('{') || !dict.endsWith('}')) {
    throw new NpyError(`${name}: malformed .npy header (not a dict literal): ${JSON.stringify(text.slice(0, 80))}`);
  }
  const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(dict)?.[1];
  const fortran = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(dict)?.[1];
  const shapeText = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(dict)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) {
    throw new NpyError(`${name}: malformed .npy header (needs descr, fortran_order and shape): ${dict}`);
  }
  const kind = Object.hasOwn(DESCR, descr) ? DESCR[descr] : undefined;
  if (kind !== 'float32' && kind !== 'float16') {
    throw new NpyError(
      `${name}: unsupported dtype ${JSON.stringify(descr)}${kind ? ` (${kind})` : ': only little-endian float32 ("<f4") and float16 ("<f2") are supported'}`,
    );
  }
  const dtype: NpyDtype = kind;
  const item = NPY_ITEM_BYTES[dtype];
  if (fortran === 'True') {
    throw new NpyError(`${name}: Fortran-order arrays are not supported (rows must be contiguous: save with np.ascontiguousarray)`);
  }
  const parts = shapeText.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const shape = parts.map((s) => (/^\d+L?$/.test(s) ? Number.parseInt(s, 10) : Number.NaN));
  if (shape.some((d) => !Number.isSafeInteger(d))) throw new NpyError(`${name}: malformed shape in .npy header: (${shapeText})`);
  if (shape.length === 0) throw new NpyError(`${name}: a 0-d array has no rows to normalize`);
  const elems = shape.reduce((a, b) => a * b, 1);
  const want = dataOffset + item * elems;
  if (fileSize !== want) {
    throw new NpyError(
      `${name}: the header says shape (${shape.join(', ')}) of ${dtype}, ${item * elems} bytes of data, but the file has ` +
        `${fileSize - dataOffset} (${fileSize < want ? 'truncated' : 'extra bytes at the end'})`,
    );
  }
  return { version: [major, bytes[7]!], dtype, shape, dataOffset };
}

/**
 * The header of a C-order little-endian array of `shape` and `dtype` (default float32;
 * `'<f4'` or `'<f2'`, as NumPy writes them): version 1.0 when the header fits its 2-byte
 * length, else 2.0; padded with spaces so that the data starts on a multiple of 64.
 */
export function npyHeader(shape: readonly number[], dtype: NpyDtype = 'float32'): Uint8Array {
  const descr = Object.hasOwn(DESCR_OF, dtype) ? DESCR_OF[dtype] : undefined;
  if (descr === undefined) throw new TypeError(`npyHeader: dtype must be 'float32' or 'float16', got ${JSON.stringify(dtype)}`);
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${tuple}, }`;
  for (const major of [1, 2]) {
    const pre = major === 1 ? 10 : 12;
    const total = Math.ceil((pre + dict.length + 1) / 64) * 64;
    const len = total - pre;
    if (major === 1 && len > 0xffff) continue;
    const out = new Uint8Array(total);
    out.set(MAGIC);
    out[6] = major;
    out[7] = 0;
    const dv = new DataView(out.buffer);
    if (major === 1) dv.setUint16(8, len, true);
    else dv.setUint32(8, len, true);
    const body = dict.padEnd(len - 1, ' ') + '\n';
    for (let i = 0; i < body.length; i++) out[pre + i] = body.charCodeAt(i);
    return out;
  }
  throw new Error('unreachable');
}
