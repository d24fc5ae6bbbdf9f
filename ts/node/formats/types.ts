/**
 * What a file format is to the rest of the package: a reader that says what arrays a file
 * holds and where their bytes are, and a writer that makes the bytes around the arrays of an
 * output. Each format is one module implementing {@link Format}; `index.ts` lists them.
 * @module
 */
import type { FileDtype, OutDtype } from '../../glue/dtypes.js';
import type { QuantDtype } from '../../types.js';
import type { Source } from '../io/source.js';

/** The formats read and written. */
export type FormatName = 'npy' | 'npz' | 'safetensors' | 'raw';

/** One array of an input file. */
export interface ArrayIn {
  /** Its name in the file (an `.npz` member without `.npy`, a safetensors tensor); `''` in a one-array format. */
  readonly name: string;
  /** Its elements' type, or null for one this package does not read (an integer tensor): copied as it is. */
  readonly dtype: FileDtype | null;
  /** The format's own name of the type (`'<i8'`, `'I64'`), for messages and for copying it. */
  readonly typeName: string;
  /** Its shape; the last axis is the row. */
  readonly shape: number[];
  /** Where its bytes are read from (the file, or a decompressing stream). */
  readonly source: Source;
  /** The position of its first byte in `source`. */
  readonly offset: number;
  /** Its bytes, or null when a stream's length is known only at its end (raw from a pipe). */
  readonly bytes: number | null;
  /** True for a container's member copied as it is, header and all (an `.npz` member that is not a float array). */
  readonly whole?: boolean;
}

/** What a reader found in a file. */
export interface Contents {
  readonly format: FormatName;
  /** The arrays, in the order their bytes are in the file. */
  readonly arrays: ArrayIn[];
  /** Extra header data an output of the same format keeps (safetensors' `__metadata__`). */
  readonly meta?: Readonly<Record<string, string>>;
}

/** An array of an output, as its writer needs it. */
export interface ArrayOut {
  readonly name: string;
  /** Its type: a dtype, or the format's name of a type copied as it is. */
  readonly dtype: FileDtype | QuantDtype | null;
  readonly typeName: string;
  readonly shape: number[];
  /** Bytes of data. */
  readonly bytes: number;
  /** As {@link ArrayIn.whole}. */
  readonly whole?: boolean;
}

/** The bytes a format writes around its arrays' data, asked for in file order. */
export interface FormatWriter {
  /** The indices of the arrays in the order their data is written (default: as given). */
  readonly order?: readonly number[];
  /** The file's header (before the first array). */
  start(): Uint8Array;
  /** Bytes just before array `i`'s data. */
  before(i: number): Uint8Array;
  /** Sees array `i`'s data as it is written, in order (a zip member's CRC). */
  data?(i: number, bytes: Uint8Array): void;
  /** With {@link data}: sees `length` bytes of array `i`'s data, in order, as their CRC-32 (computed by whoever wrote them). */
  dataCrc?(i: number, crc: number, length: number): void;
  /** Bytes just after array `i`'s data. */
  after(i: number): Uint8Array;
  /** The file's trailer (after the last array). */
  end(): Uint8Array;
}

/** Options of a reader. */
export interface ReadOptions {
  /** Row length, for raw data (which has no header). */
  dim?: number;
  /** What raw data holds (default float32). */
  dtype?: FileDtype;
}

/** A format: see the module doc. */
export interface Format {
  readonly name: FormatName;
  /** The format in a message's words (`'a NumPy .npy'`). */
  readonly title: string;
  /** Whether a file holds several named arrays (tensors, members), rather than one. */
  readonly several: boolean;
  /** Whether a file says its arrays' dtype and shape (a header); without one they are options. */
  readonly header: boolean;
  /** Whether a file's one array can be cut by its first axis into parts read at their positions (a dataset's shards). */
  readonly splits: boolean;
  /** The extensions a directory walk takes for it (lower case, with the dot); none: every file, when it is asked for. */
  readonly extensions: readonly string[];
  /** Whether its files can hold arrays of dtype `d` (a dtype the library writes). */
  holds(d: OutDtype): boolean;
  /** Whether a file starting with `head` (its first bytes, up to 16; fewer for a shorter file) is of this format. */
  detect(head: Uint8Array): boolean;
  /** Reads the header of `src` (a NormalizeError naming it when malformed): the arrays and where their bytes are. */
  read(src: Source, options: ReadOptions): Promise<Contents>;
  /** A writer of a file holding `arrays` (in that order) and `meta`; a NormalizeError for what the format cannot hold. */
  writer(arrays: readonly ArrayOut[], meta: Contents['meta'], name: string): FormatWriter;
}
