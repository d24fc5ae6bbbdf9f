/**
 * A weight given as a path: read once, by its content — a `.npy`, or one array of an `.npz` or
 * a safetensors file (`tensor` names it when there are several) — or, when no format knows
 * the file, as raw little-endian elements of `weightDtype` (default float32). float64 is read as
 * float32. The result carries the SHA-256 of the very bytes used, so that a record of the run
 * names the weight the outputs were computed with, not a path that may since hold another.
 * @module
 */
import { createHash } from 'node:crypto';
import type { Dtype } from '../../types.js';
import { DTYPES, type Data, type FileDtype } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { FORMATS, type ArrayIn } from '../formats/index.js';
import { shown, type FsPath } from '../io/paths.js';
import { openSource, type Source } from '../io/source.js';
import { MAX_ROW_BYTES } from './plan.js';

/** A weight read from a file. */
export interface LoadedWeight {
  /** Its elements: float32 values, or half bit patterns. */
  w: Data;
  /** What `w` holds. */
  dtype: Dtype;
  /** SHA-256 (hex) of `w`'s bytes and its dtype. */
  sha256: string;
}

/** The weight array of a file's arrays: the one named `tensor`, or the only float one. */
function pick(arrays: readonly ArrayIn[], tensor: string | undefined, name: string): ArrayIn {
  const floats = arrays.filter((a) => a.dtype !== null && !a.whole);
  if (tensor !== undefined) {
    const a = arrays.find((t) => t.name === tensor);
    if (!a) throw new NormalizeError(`${name} has no array named ${JSON.stringify(tensor)} (it has ${arrays.map((t) => JSON.stringify(t.name)).join(', ') || 'none'})`);
    if (a.dtype === null || a.whole) throw new NormalizeError(`${name}: array ${JSON.stringify(tensor)} is ${a.typeName}, not a float type a weight can be`);
    return a;
  }
  if (floats.length !== 1) {
    throw new NormalizeError(
      `${name} holds ${floats.length} float arrays; name the weight's with options.weightTensor (${floats.map((t) => JSON.stringify(t.name)).join(', ') || 'none'})`,
    );
  }
  return floats[0]!;
}

/** A weight is one row: more than a row's {@link MAX_ROW_BYTES} is refused before anything is allocated. */
function refuseLarge(bytes: number, name: string): void {
  if (bytes > MAX_ROW_BYTES) throw new NormalizeError(`${name} holds ${bytes} bytes; a weight is one row, at most ${MAX_ROW_BYTES} bytes`);
}

/** Reads the elements of `a` as the dtype used for them: float64 becomes float32. */
async function elements(a: ArrayIn, name: string): Promise<{ w: Data; dtype: Dtype }> {
  const dtype = a.dtype as FileDtype;
  const n = a.shape.reduce((x, y) => x * y, 1);
  refuseLarge(n * DTYPES[dtype].bytes, name);
  const raw = new DTYPES[dtype].Array(n);
  if ((await a.source.read(new Uint8Array(raw.buffer), a.offset)) !== raw.byteLength) throw new NormalizeError(`${name}: the file ended early`);
  // A type only files hold (float64) is read as float32.
  if (DTYPES[dtype].code < 0) return { w: Float32Array.from(raw), dtype: 'float32' };
  return { w: raw as Data, dtype: dtype as Dtype };
}

/** Loads the weight at `path`: see the module doc. `given` (weightDtype) must agree with a header. */
export async function loadWeight(path: FsPath, given: Dtype | undefined, tensor?: string): Promise<LoadedWeight> {
  const name = `the weight ${shown(path)}`;
  let src: Source;
  try {
    src = await openSource(path);
  } catch (e) {
    throw new NormalizeError(`cannot read ${name}: ${(e as Error).message.replace(/^cannot read [^:]*: /, '')}`);
  }
  try {
    const head = new Uint8Array(16);
    const n = await src.read(head, 0);
    const known = FORMATS.find((f) => f.detect(head.subarray(0, n)));
    let loaded: { w: Data; dtype: Dtype };
    if (known) {
      const a = pick((await known.read(src, {})).arrays, tensor, name);
      if (given !== undefined && given !== a.dtype && !(a.dtype === 'float64' && given === 'float32')) {
        throw new NormalizeError(`${name}: the header says ${a.dtype} ('${a.typeName}'), but options.weightDtype ${given} was given`);
      }
      loaded = await elements(a, name);
    } else {
      if (tensor !== undefined) throw new NormalizeError(`${name} is not an .npz or safetensors file, so it has no array ${JSON.stringify(tensor)}`);
      const dtype = given ?? 'float32';
      const item = DTYPES[dtype].bytes;
      if (src.size === null) throw new NormalizeError(`${name}: a raw weight must be a regular file`);
      if (src.size % item !== 0) throw new NormalizeError(`${name}: a raw weight of ${dtype} must be a multiple of ${item} bytes, got ${src.size} bytes`);
      refuseLarge(src.size, name);
      const w = new DTYPES[dtype].Array(src.size / item) as Data;
      await src.read(new Uint8Array(w.buffer), 0);
      loaded = { w, dtype };
    }
    const sha256 = createHash('sha256').update(loaded.dtype).update(new Uint8Array(loaded.w.buffer)).digest('hex');
    return { ...loaded, sha256 };
  } finally {
    await src.close();
  }
}
