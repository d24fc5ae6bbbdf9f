/**
 * NumPy's `.npz`: a zip file whose members are `.npy` files, `NAME.npy` for the array NAME
 * (`np.savez` stores them, `np.savez_compressed` deflates them). Each float array a `.npy`
 * reads is an array here; any other member (integers, other files) is copied as it is. An
 * output's members are stored (uncompressed), whatever the input's were.
 * @module
 */
import { DTYPES } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';
import { floatHeader, isFloatDescr, npyFormat, npyHeaderOf, NpyError, readNpyDict, readNpyHeaderBytes } from './npy.js';
import type { ArrayIn, ArrayOut, Contents, Format, FormatWriter } from './types.js';
import { checkStoredCrc, dataStart, InflateSource, readMembers } from './zip-read.js';
import { ZipWriter } from './zip-write.js';

/** Reads the members of `src`: see the module doc. */
async function read(src: Source): Promise<Contents> {
  const name = shown(src.path);
  if (!src.seekable) throw new NormalizeError(`${name}: an .npz input must be a regular file, not a pipe or device (its directory is at its end)`);
  const arrays: ArrayIn[] = [];
  const seen = new Set<string>();
  for (const m of await readMembers(src, name)) {
    if (seen.has(m.name)) throw new NormalizeError(`${name}: two members named ${JSON.stringify(m.name)}`);
    seen.add(m.name);
    const start = dataStart(m, name);
    if (m.method === 0) await checkStoredCrc(src, m, name);
    const where = `${name}: member ${JSON.stringify(m.name)}`;
    // A deflated member is read twice from its start: its header, then its data.
    const open = (): { source: Source; base: number } => (m.method === 0 ? { source: src, base: start } : { source: new InflateSource(src, start, m, where), base: 0 });
    const whole = (): ArrayIn => {
      const o = open();
      return { name: m.name, dtype: null, typeName: 'member', shape: [], source: o.source, offset: o.base, bytes: m.size, whole: true };
    };
    if (!m.name.endsWith('.npy')) {
      arrays.push(whole());
      continue;
    }
    const head = open();
    try {
      const raw = readNpyDict(await readNpyHeaderBytes(head.source, head.base, where), m.size, where);
      if (!isFloatDescr(raw.descr) || raw.shape.length === 0) {
        arrays.push(whole());
        continue;
      }
      const h = floatHeader(raw, m.size, where);
      const data = open();
      const bytes = h.shape.reduce((a, b) => a * b, 1) * DTYPES[h.dtype].bytes;
      arrays.push({ name: m.name.slice(0, -4), dtype: h.dtype, typeName: raw.descr, shape: h.shape, source: data.source, offset: data.base + h.dataOffset, bytes });
    } catch (e) {
      throw e instanceof NpyError ? new NormalizeError(e.message) : e;
    }
  }
  return { format: 'npz', arrays };
}

/** A writer of stored members: each array as `NAME.npy` (a copied member under its own name). */
function writer(arrays: readonly ArrayOut[], _meta: Contents['meta'], name: string): FormatWriter {
  const zip = new ZipWriter();
  const heads = arrays.map((a) => (a.whole ? new Uint8Array(0) : npyHeaderOf(a.shape, a.dtype!, `${name}: array ${JSON.stringify(a.name)}`)));
  const none = new Uint8Array(0);
  return {
    start: () => none,
    before(i) {
      const a = arrays[i]!;
      const head = heads[i]!;
      const local = zip.begin(a.whole ? a.name : `${a.name}.npy`, head.length + a.bytes);
      zip.data(head);
      const out = new Uint8Array(local.length + head.length);
      out.set(local);
      out.set(head, local.length);
      return out;
    },
    data: (_i, bytes) => zip.data(bytes),
    dataCrc: (_i, crc, length) => zip.dataCrc(crc, length),
    after: () => zip.finish(),
    end: () => zip.end(),
  };
}

/** See the module doc. */
export const npzFormat: Format = {
  name: 'npz',
  title: 'an .npz',
  several: true,
  header: true,
  splits: false,
  extensions: ['.npz'],
  // Its members are .npy files.
  holds: (d) => npyFormat.holds(d),
  // A zip's first local header, or the end record of an empty zip.
  detect: (h) => h[0] === 0x50 && h[1] === 0x4b && ((h[2] === 3 && h[3] === 4) || (h[2] === 5 && h[3] === 6)),
  read,
  writer,
};
