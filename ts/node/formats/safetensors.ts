/**
 * Hugging Face's safetensors format: an 8-byte little-endian header length N, N bytes of JSON
 * (`{"__metadata__": {...}, "NAME": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}`,
 * padded with spaces), then the tensors' bytes, `data_offsets` counted from the end of the
 * header. Read with the checks of the reference implementation (a header of at most 100 MB,
 * offsets that tile the data exactly, sizes that match shapes); written as it writes: tensors
 * ordered by alignment (largest element first), then by name, the header padded to 8 bytes.
 * @module
 */
import { ALL_DTYPES, dtypeOfSafetensors } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';
import type { ArrayIn, ArrayOut, Contents, Format } from './types.js';

/** The reference implementation's limit on the header. */
const MAX_HEADER = 100_000_000;

/** Element bytes of every safetensors dtype, in the reference implementation's order (increasing alignment). */
const SIZES: ReadonlyArray<readonly [string, number]> = [
  ['BOOL', 1], ['U8', 1], ['I8', 1], ['F8_E5M2', 1], ['F8_E4M3', 1], ['F8_E8M0', 1], ['I16', 2], ['U16', 2], ['F16', 2], ['BF16', 2],
  ['I32', 4], ['U32', 4], ['F32', 4], ['F64', 8], ['I64', 8], ['U64', 8], ['C64', 8],
];
const SIZE = new Map(SIZES);
const RANK = new Map(SIZES.map(([n], i) => [n, i]));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Checks the header's JSON token by token, as the reference implementation reads it: every
 * number an integer written without sign, fraction or exponent (a header's only numbers are
 * shapes and data_offsets, and `512.0` or `5e2` parse to the same number as `512`), no key of
 * the top object twice (a parse would keep the last), and every string well-formed Unicode, so
 * that names and metadata are written back exactly as read. Strings are skipped as the tokens
 * they are, whatever they hold.
 */
function checkTokens(json: string, bad: (what: string) => Error): void {
  const stack: number[] = [];
  const keys = new Set<string>();
  let key = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      let escaped = false;
      while (j < json.length && json.charCodeAt(j) !== 0x22) {
        if (json.charCodeAt(j) === 0x5c) {
          escaped = true;
          j++;
        }
        j++;
      }
      const str = escaped ? (JSON.parse(json.slice(i, j + 1)) as string) : json.slice(i + 1, j);
      if (!str.isWellFormed()) throw bad(`the string ${JSON.stringify(str).slice(0, 80)} is not well-formed Unicode (a lone surrogate): it could not be written back as read`);
      if (key && stack.length === 1) {
        if (keys.has(str)) throw bad(`the key ${JSON.stringify(str).slice(0, 80)} appears twice`);
        keys.add(str);
      }
      key = false;
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      stack.push(c);
      key = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      key = false;
    } else if (c === 0x2c /* , */) key = stack.at(-1) === 0x7b;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i;
      while (j < json.length && /[-+.eE0-9]/.test(json[j]!)) j++;
      const num = json.slice(i, j);
      if (!/^\d+$/.test(num)) throw bad(`the number ${num.slice(0, 40)}: shapes and data_offsets are integers written without a sign, fraction or exponent`);
      i = j - 1;
    }
  }
}

/** Reads the header of `src` and checks it: see the module doc. */
async function read(src: Source): Promise<Contents> {
  const name = shown(src.path);
  const bad = (what: string) => new NormalizeError(`${name}: not a valid safetensors file (${what})`);
  if (!src.seekable) throw new NormalizeError(`${name}: a safetensors input must be a regular file, not a pipe or device (its tensors are read in their own order)`);
  const size = src.size!;
  const lead = new Uint8Array(8);
  if ((await src.read(lead, 0)) < 8) throw bad('shorter than its 8-byte header length');
  const n = new DataView(lead.buffer).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER)) throw bad(`a header of ${n} bytes; at most ${MAX_HEADER} are read`);
  if (Number(n) + 8 > size) throw bad(`the header says ${n} bytes, the file has ${size - 8} after the length`);
  const text = new Uint8Array(Number(n));
  await src.read(text, 8);
  let header: unknown;
  let json: string;
  try {
    // A byte-order mark is kept, and refused by the parse, as the reference implementation refuses it.
    json = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(text);
    header = JSON.parse(json);
  } catch (e) {
    throw bad(`its header is not UTF-8 JSON: ${(e as Error).message}`);
  }
  checkTokens(json, bad);
  if (!isObject(header)) throw bad('its header is not a JSON object');
  let meta: Record<string, string> | undefined;
  const found: { name: string; dtype: string; shape: number[]; begin: number; end: number }[] = [];
  for (const [key, v] of Object.entries(header)) {
    if (key === '__metadata__') {
      if (!isObject(v) || !Object.values(v).every((s) => typeof s === 'string')) throw bad('__metadata__ must map strings to strings');
      meta = v as Record<string, string>;
      continue;
    }
    const t = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const offsets = t?.data_offsets;
    if (!isObject(v) || typeof t.dtype !== 'string' || !Array.isArray(t.shape) || !t.shape.every(isCount) || !Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
      throw bad(`tensor ${JSON.stringify(key)} needs a dtype, a shape of integers and two data_offsets`);
    }
    if (!SIZE.has(t.dtype)) throw bad(`tensor ${JSON.stringify(key)} has the unknown dtype ${JSON.stringify(t.dtype)}`);
    found.push({ name: key, dtype: t.dtype, shape: t.shape as number[], begin: offsets[0] as number, end: offsets[1] as number });
  }
  found.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  for (const t of found) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * SIZE.get(t.dtype)!;
    if (t.begin !== at || t.end < t.begin) throw bad(`the data_offsets of tensor ${JSON.stringify(t.name)} leave a gap or overlap another's`);
    if (!Number.isSafeInteger(bytes) || t.end - t.begin !== bytes) throw bad(`tensor ${JSON.stringify(t.name)} of shape [${t.shape}] ${t.dtype} is ${bytes} bytes, its data_offsets give ${t.end - t.begin}`);
    at = t.end;
  }
  if (8 + Number(n) + at !== size) throw bad(`its tensors end at byte ${8 + Number(n) + at}, the file at ${size}`);
  const arrays: ArrayIn[] = found.map((t) => {
    const dtype = dtypeOfSafetensors(t.dtype) ?? null;
    return { name: t.name, dtype, typeName: t.dtype, shape: t.shape, source: src, offset: 8 + Number(n) + t.begin, bytes: t.end - t.begin };
  });
  return { format: 'safetensors', arrays, ...(meta && { meta }) };
}

/** A writer of `arrays` (see the module doc): `order` says in which order their data goes. */
function writer(arrays: readonly ArrayOut[], meta: Contents['meta']) {
  const typeOf = (a: ArrayOut) => (a.dtype ? ALL_DTYPES[a.dtype].safetensors : a.typeName);
  const order = arrays.map((_, i) => i).sort((i, j) => {
    const a = arrays[i]!;
    const b = arrays[j]!;
    return RANK.get(typeOf(b))! - RANK.get(typeOf(a))! || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  });
  // Entries joined by hand: an object would put integer-like names ("0") first.
  const entries = meta ? [`"__metadata__":${JSON.stringify(meta)}`] : [];
  let at = 0;
  for (const i of order) {
    const a = arrays[i]!;
    entries.push(`${JSON.stringify(a.name)}:${JSON.stringify({ dtype: typeOf(a), shape: a.shape, data_offsets: [at, at + a.bytes] })}`);
    at += a.bytes;
  }
  let json = `{${entries.join(',')}}`;
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const body = Buffer.from(json, 'utf8');
  const head = new Uint8Array(8 + body.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(body.length), true);
  head.set(body, 8);
  const none = new Uint8Array(0);
  return { order, start: () => head, before: () => none, after: () => none, end: () => none };
}

/** See the module doc. */
export const safetensorsFormat: Format = {
  name: 'safetensors',
  title: 'a safetensors',
  several: true,
  header: true,
  splits: false,
  extensions: ['.safetensors'],
  holds: (d) => ALL_DTYPES[d].safetensors !== null,
  detect(head) {
    if (head.length < 9 || head[8] !== 0x7b) return false;
    // Past the header cap it is still told as safetensors: read() then says why it is refused.
    const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
    return n >= 2n && n < 2n ** 53n;
  },
  read,
  writer,
};
