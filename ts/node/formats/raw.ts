/**
 * Raw little-endian data, rows of `dim` elements one after the other, no header: read only when
 * asked for (`format: 'raw'`), since nothing in the bytes says what they are.
 * @module
 */
import { DTYPES } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';
import type { Contents, Format, ReadOptions } from './types.js';

const NONE = new Uint8Array(0);

/** See the module doc. */
export const rawFormat: Format = {
  name: 'raw',
  title: 'raw little-endian data',
  several: false,
  header: false,
  splits: true,
  extensions: [],
  holds: () => true,
  detect: () => false,
  async read(src: Source, o: ReadOptions): Promise<Contents> {
    const name = shown(src.path);
    const dtype = o.dtype ?? 'float32';
    const dim = o.dim;
    if (dim === undefined) throw new NormalizeError(`${name}: a raw file needs options.dim (or a weight) to know its row length`);
    const row = DTYPES[dtype].bytes * dim;
    if (src.size === null) {
      // A stream: its rows are counted as they come; a cut row is an error at its end.
      return { format: 'raw', arrays: [{ name: '', dtype, typeName: dtype, shape: [0, dim], source: src, offset: 0, bytes: null }] };
    }
    if (src.size % row !== 0) {
      throw new NormalizeError(`${name}: its size (${src.size} bytes) is not a whole number of rows of ${dim} ${dtype} (${row} bytes each)`);
    }
    const rows = src.size / row;
    return { format: 'raw', arrays: [{ name: '', dtype, typeName: dtype, shape: [rows, dim], source: src, offset: 0, bytes: src.size }] };
  },
  writer: () => ({ start: () => NONE, before: () => NONE, after: () => NONE, end: () => NONE }),
};
