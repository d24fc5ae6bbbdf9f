/**
 * What a file's normalization does with each of its arrays, decided from its header alone
 * before anything is written ({@link planFile}, the first of normalizeFile's steps): which are
 * normalized (every float array, or those `options.tensors` names) and which are copied as they
 * are; each one's row length, rows, the dtype read, computed in and written, its shape in the
 * output, and the parameters of its calls (made of the run's checked options: not checked again).
 * @module
 */
import { Casting } from '../../generated/abi.js';
import type { Dtype } from '../../types.js';
import { ALL_DTYPES, DTYPES, isQuant, listed, type Data, type FileDtype, type OutDtype } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { perRowScales, scalesName } from './scales.js';
import type { FileArgs } from './options.js';
import { FORMATS, formatNamed, formatOf, type ArrayIn, type ArrayOut, type Contents, type Format } from '../formats/index.js';
import { paramsOf } from '../../call/check/params.js';
import type { Params } from '../../call/op.js';
import type { FloatArray } from '../../types.js';
import type { Source } from '../io/source.js';

/** The longest row the kernels take (their `dim` is a 32-bit count). */
const MAX_DIM = 0xffffffff;
/**
 * The most bytes a row may take in memory (the largest of its dtypes read, computed in and
 * written): 256 MiB. A row is normalized whole, in one piece of wasm memory, which holds at
 * most 2 GiB on the threads build; the chunks in flight and the kernel's float32 row of the
 * gain for each thread normalizing such a row must fit beside it (a 512 MiB row does not).
 */
export const MAX_ROW_BYTES = 1 << 28;

/** One array of the input, and what becomes of it. */
export interface ArrayPlan {
  input: ArrayIn;
  /** What the output holds for it. */
  out: ArrayOut;
  /** Null: copied as it is. */
  norm: {
    dim: number;
    /** Rows to read (null: until a stream ends) and the first of them. */
    rows: number | null;
    first: number;
    inDtype: FileDtype;
    computeDtype: Dtype;
    outDtype: OutDtype;
    /** A quantized output with a scale per row (they are written beside it). */
    rowScales: boolean;
  } | null;
  /** For the array of a container that holds the rows' scales of another: that one's index. */
  scalesOf?: number;
}


const product = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

/** Rows and output shape of `shape` cut to `range` of its first axis (a 1-D array is one row, index 0). */
function sliceOf(shape: readonly number[], rows: number, range: FileArgs['range'], name: string): { first: number; rows: number; shape: number[] } {
  if (range === undefined) return { first: 0, rows, shape: [...shape] };
  const [start, end] = range;
  const lead = shape.length > 1 ? shape[0]! : 1;
  if (end > lead) throw new RangeError(`normalizeFile: options.range [${start}, ${end}] must end by ${lead}, the length of the first axis of ${name}`);
  const per = lead === 0 ? 0 : rows / lead;
  return { first: start * per, rows: (end - start) * per, shape: shape.length > 1 ? [end - start, ...shape.slice(1)] : [...shape] };
}

/** The formats `which` picks, in a message's words. */
const titles = (which: (f: Format) => boolean) => listed(FORMATS.filter(which).map((f) => f.title), '');

/**
 * The plan for `contents` (see the module doc); `weightLength` is the weight's, if any. A
 * NormalizeError naming the file and the array for anything that cannot be done.
 */
function planArrays(contents: Contents, a: FileArgs, weightLength: number | null, name: string): ArrayPlan[] {
  const format = formatNamed(contents.format);
  const many = format.several;
  const label = (x: ArrayIn) => (many ? `${name}: array ${JSON.stringify(x.name)}` : name);
  const floats = contents.arrays.filter((x) => x.dtype !== null && !x.whole && x.shape.length > 0);
  let chosen: Set<ArrayIn>;
  if (a.tensors !== undefined) {
    if (!many) throw new RangeError(`normalizeFile: options.tensors names arrays of ${titles((f) => f.several)} file; ${name} is ${contents.format}`);
    chosen = new Set();
    for (const t of a.tensors) {
      const x = contents.arrays.find((y) => y.name === t);
      if (!x) throw new NormalizeError(`${name} has no array named ${JSON.stringify(t)} (it has ${contents.arrays.map((y) => JSON.stringify(y.name)).join(', ') || 'none'})`);
      if (!floats.includes(x)) throw new NormalizeError(`${label(x)} is ${x.typeName}${x.shape.length === 0 ? ' with no axes' : ''}: only float arrays of at least one axis are normalized`);
      chosen.add(x);
    }
  } else chosen = new Set(floats);
  if (chosen.size === 0) {
    const all = contents.arrays.map((x) => `${JSON.stringify(x.name)} (${x.typeName})`).join(', ');
    throw new NormalizeError(`${name} holds no float array to normalize${all ? ` (it has ${all})` : ' (it is empty)'}`);
  }
  if (a.range !== undefined && many) throw new RangeError(`normalizeFile: options.range needs a one-array file (${titles((f) => !f.several)}); ${name} is ${contents.format}`);
  const plans = contents.arrays.map((x): ArrayPlan => {
    if (!chosen.has(x)) {
      return { input: x, norm: null, out: { name: x.name, dtype: x.dtype, typeName: x.typeName, shape: x.shape, bytes: x.bytes ?? 0, ...(x.whole && { whole: true }) } };
    }
    const inDtype = x.dtype!;
    const dim = x.shape[x.shape.length - 1]!;
    const where = label(x);
    if (format.header) {
      if (a.dtype !== undefined && a.dtype !== inDtype) {
        throw new NormalizeError(`${where}: the header says ${inDtype} ('${x.typeName}'), but options.dtype ${a.dtype} was given`);
      }
      if (a.dim !== undefined && a.dim !== dim) throw new NormalizeError(`${where}: its rows have ${dim} elements (last axis of shape (${x.shape.join(', ')})), but options.dim ${a.dim} was given`);
    }
    if (dim === 0) throw new NormalizeError(`${where}: its rows are empty (shape (${x.shape.join(', ')}))`);
    if (dim > MAX_DIM) throw new NormalizeError(`${where}: its rows have ${dim} elements; the kernels take rows of at most ${MAX_DIM}`);
    if (weightLength !== null && weightLength !== dim) throw new NormalizeError(`the weight has ${weightLength} elements, but the rows of ${where} have ${dim}`);
    const stored: Dtype = inDtype === 'float64' ? 'float32' : inDtype;
    const outDtype: OutDtype = a.outDtype ?? stored;
    // A quantized output quantizes what the output in the input's dtype would hold.
    const computeDtype: Dtype = outDtype === inDtype || isQuant(outDtype) ? stored : 'float32';
    const rowBytes = dim * Math.max(DTYPES[inDtype].bytes, DTYPES[computeDtype].bytes, ALL_DTYPES[outDtype].bytes);
    const rowCount = x.bytes === null ? null : product(x.shape.slice(0, -1));
    if (rowBytes > MAX_ROW_BYTES && rowCount !== 0) {
      throw new NormalizeError(
        `${where}: its rows have ${dim} elements (${rowBytes} bytes of ${computeDtype === inDtype ? inDtype : `${inDtype} and ${computeDtype}`}); a row is normalized whole in memory, which takes rows of at most ${MAX_ROW_BYTES} bytes (${MAX_ROW_BYTES / rowBytes * dim} elements)`,
      );
    }
    const casting = a.o.castingMode;
    if (casting !== undefined && Casting[casting] === Casting.llama && computeDtype !== inDtype && inDtype !== 'float32') {
      throw new RangeError(`normalizeFile: options.castingMode '${casting}' rounds to the input's dtype (${inDtype}), so options.outDtype must be ${inDtype} too, got ${outDtype}`);
    }
    const rowScales = perRowScales(outDtype, a.o.quantScale);
    if (x.bytes === null) {
      return { input: x, out: { name: x.name, dtype: outDtype, typeName: outDtype, shape: x.shape, bytes: 0 }, norm: { dim, rows: null, first: 0, inDtype, computeDtype, outDtype, rowScales } };
    }
    const s = sliceOf(x.shape, product(x.shape.slice(0, -1)), a.range, name);
    return {
      input: x,
      out: { name: x.name, dtype: outDtype, typeName: outDtype, shape: s.shape, bytes: s.rows * dim * ALL_DTYPES[outDtype].bytes },
      norm: { dim, rows: s.rows, first: s.first, inDtype, computeDtype, outDtype, rowScales },
    };
  });
  return many ? withScaleArrays(plans, name) : plans;
}

/** A container's `plans` with each quantized array's scales after it (`NAME_scale`); a NormalizeError when the name is taken. */
function withScaleArrays(plans: ArrayPlan[], name: string): ArrayPlan[] {
  const out: ArrayPlan[] = [];
  for (const p of plans) {
    out.push(p);
    if (!p.norm?.rowScales) continue;
    // A member copied whole keeps its file name (`NAME_scale.npy`).
    const taken = plans.find((q) => q.out.name === scalesName(p.out.name) || (q.out.whole && q.out.name === `${scalesName(p.out.name)}.npy`));
    if (taken) throw new NormalizeError(`${name}: the scales of array ${JSON.stringify(p.out.name)} go to the array ${JSON.stringify(taken.out.name)}, which it already has (give options.quantScale, or rename it)`);
    out.push({ input: p.input, norm: null, out: { ...rowArrayOf(p), name: scalesName(p.out.name) }, scalesOf: out.length - 1 });
  }
  return out;
}

/** A float32 per row of the normalized array `p` (its rstd, its scales): its shape without the last axis, `[1]` for a 1-D one. */
function rowArrayOf(p: ArrayPlan): ArrayOut {
  const shape = p.out.shape.length > 1 ? p.out.shape.slice(0, -1) : [1];
  return { name: p.out.name, dtype: 'float32', typeName: 'float32', shape, bytes: (p.norm!.rows ?? 0) * 4 };
}

/** The arrays of a file of a float32 per row of each normalized array of `plans` (the rstd file, a `.npy`'s scales). */
export const rowArrays = (plans: readonly ArrayPlan[]): ArrayOut[] => plans.filter((p) => p.norm).map(rowArrayOf);

/** A file planned (see the module doc): its format, contents and arrays, and each normalized array's call parameters. */
export interface FilePlan {
  format: Format;
  contents: Contents;
  arrays: ArrayPlan[];
  /** Each array's call parameters, by index (null: copied as it is). */
  params: (Params | null)[];
  /** The weight as the calls read it (half data as bits; null for none). */
  weight: Data | null;
}

/**
 * Plans the file open at `src` (`name` as messages show it) with the run's checked options `a`
 * and the weight `w` (its dtype `weightDtype`, if known): reads its header, plans its arrays,
 * and makes each one's call parameters of `a.params` and the array's row length and dtypes —
 * the run's options are not checked again, only what they take of this file's arrays. A
 * NormalizeError (or a TypeError / RangeError naming the option) for anything that cannot be done.
 */
export async function planFile(src: Source, a: FileArgs, w: FloatArray | null, weightDtype: Dtype | undefined, name: string): Promise<FilePlan> {
  const format = await formatOf(src, a.format);
  const contents = await format.read(src, { dim: a.dim ?? (w?.length || undefined), dtype: a.dtype });
  const arrays = planArrays(contents, a, w ? w.length : null, name);
  let weight: Data | null = null;
  const params = arrays.map((x) => {
    if (!x.norm) return null;
    // The array's own dtype computed in, and the weight's as its file says: facts of this file, not options to check.
    const p = { ...a.params, o: { ...a.params.o, dtype: x.norm.computeDtype, ...(weightDtype !== undefined && { weightDtype }) } };
    const c = paramsOf('normalizeFile', p, 'x', new DTYPES[x.norm.computeDtype].Array(0), w, false, true, x.norm.dim);
    weight = c.weight;
    return c.params;
  });
  return { format, contents, arrays, params, weight };
}
