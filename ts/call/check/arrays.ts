/**
 * What an argument array is: whether it can hold a dtype (the dtype table's arrays), whether it
 * was given as JavaScript's own array of its dtype (a Float16Array), whether its buffer is
 * detached, how many rows it holds. Errors name the function, the argument, what it got and
 * what it expected.
 * @module
 */
import { arrayTag, BY_CODE, listed, type Data } from '../../glue/dtypes.js';
import type { Dtype } from '../../types.js';

/** A short description of a value for error messages: `Float64Array(12)`, `number -1`, `null`. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (ArrayBuffer.isView(v)) {
    const tag = (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] ?? 'DataView';
    return `${tag}(${(v as { length?: number }).length ?? v.byteLength})`;
  }
  if (Array.isArray(v)) return `Array(${v.length})`;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 20 ? v.slice(0, 20) + '…' : v)}`;
  if (typeof v === 'function') return 'a function';
  return (v as object).constructor?.name ?? 'object';
}

/** The most elements a buffer of wasm memory may have (allocF32, allocU16). */
const BUFFER_MAX = 0x3fffffff;

/**
 * `length`, the element count of a new buffer of `bytes`-byte elements, checked: a TypeError or
 * RangeError naming `fn` unless it is an integer from 0 to {@link BUFFER_MAX}.
 */
export function checkLength(fn: string, length: unknown, bytes: number): number {
  if (typeof length !== 'number') throw new TypeError(`${fn}: length must be a number (a count of ${bytes === 4 ? 'floats' : 'elements'}), got ${describe(length)}`);
  if (!Number.isInteger(length) || length < 0 || length > BUFFER_MAX) throw new RangeError(`${fn}: length must be an integer in [0, 2^30), got ${String(length)}`);
  return length;
}

/** `v` as a Float32Array, attached; a TypeError naming `fn` and `name` otherwise. */
export function f32(fn: string, name: string, v: unknown): Float32Array {
  if (arrayTag(v) !== 'Float32Array') throw new TypeError(`${fn}: ${name} must be a Float32Array, got ${describe(v)}`);
  return attached(fn, name, v as Float32Array);
}

/** `a`, unless it is an (empty) view of a detached buffer: then a TypeError naming `fn` and `name`. */
function attached<T extends Data>(fn: string, name: string, a: T): T {
  if (a.length === 0 && isDetached(a.buffer)) {
    throw new TypeError(
      `${fn}: ${name} is a view of a detached ArrayBuffer (a view of wasm memory is detached when the ` +
        `memory grows: call view() again)`,
    );
  }
  return a;
}

/**
 * Whether `b` is a detached ArrayBuffer. `ArrayBuffer.prototype.detached` is missing before
 * V8 11.4 (Node 20, Chrome < 114): there a detached buffer looks like an empty one, and only
 * constructing a view over it (which throws) tells them apart. Callers ask only about the
 * buffers of empty views, so the probe costs nothing on real calls.
 */
function isDetached(b: ArrayBufferLike): boolean {
  const d = (b as { detached?: unknown }).detached;
  if (typeof d === 'boolean') return d;
  if (b.byteLength !== 0) return false;
  try {
    new Uint8Array(b);
    return false;
  } catch {
    return true;
  }
}

/** An optional Float32Array of `length` floats (`what` says why), or null when absent. */
export function optF32(fn: string, name: string, v: unknown, length: number, what: string): Float32Array | null {
  if (v === undefined) return null;
  const a = f32(fn, name, v);
  if (a.length !== length) throw new RangeError(`${fn}: ${name}.length must be ${length} (${what}), got ${a.length}`);
  return a;
}

/** The storage types activations and weights may have, by abi.ts's Dtype code (the quantized outputs' codes come after). */
const STORED = BY_CODE.filter((d) => d.qmax === 0);

/** The names of the dtypes activations and weights may have, indexed by abi.ts's Dtype code. */
export const DTYPE_NAMES: readonly Dtype[] = STORED.map((d) => d.name as Dtype);

/** The codes of the dtypes each array holds, by the array's tag: its facts' array, or JavaScript's own (seen through its bits). */
const HELD_BY = new Map<string, readonly number[]>();
for (const d of STORED) for (const tag of d.jsArray ? [d.array, d.jsArray] : [d.array]) HELD_BY.set(tag, [...(HELD_BY.get(tag) ?? []), d.code]);
const NONE: readonly number[] = [];

/** The codes of the dtypes an array with tag `tag` may hold (several for a Uint16Array of bit patterns; none for others). */
export const dtypesOf = (tag: string | undefined): readonly number[] => (tag === undefined ? NONE : (HELD_BY.get(tag) ?? NONE));

/** The tags of JavaScript's own arrays of a dtype (Float16Array). */
const JS_ARRAYS = new Set(STORED.flatMap((d) => (d.jsArray ? [d.jsArray] : [])));

/** Whether `v` is JavaScript's own array of a dtype (a Float16Array): the library's new results for it are too. */
export const isJsArray = (v: unknown): boolean => JS_ARRAYS.has(arrayTag(v) ?? '');

/** The array of dtype `dt`'s facts as a message says it: `a Float32Array`, `a Uint16Array of bit patterns` (an array that holds several dtypes). */
export const heldIn = (dt: number): string => `a ${BY_CODE[dt]!.array}${dtypesOf(BY_CODE[dt]!.array).length > 1 ? ' of bit patterns' : ''}`;

/** What arrays hold dtype `dt`, as a message says it: JavaScript's own array of it, or its facts' array. */
export function takes(dt: number): string {
  const js = BY_CODE[dt]!.jsArray;
  return `${js ? `a ${js} or ` : ''}${heldIn(dt)}`;
}

/** The arrays a float operand may be, as a message lists them: an array holding several dtypes needs options.dtype to say which. */
export const ARRAYS_TAKEN = (() => {
  const tags = [...HELD_BY.keys()];
  const [one, several] = [tags.filter((t) => dtypesOf(t).length === 1), tags.filter((t) => dtypesOf(t).length > 1)];
  const names = [...one, ...several.map((t) => `${t} (${listed(dtypesOf(t).map((c) => BY_CODE[c]!.name), '')} bit patterns, with options.dtype)`)];
  return `a ${listed(names, '')}`;
})();

/**
 * Checks that `v` is an array that can hold dtype `dt` (named by option `dtName` in errors):
 * the array of its facts, or JavaScript's own array of it (a Float16Array for float16). Returns
 * it as placed: `v` itself, or for JavaScript's own array a new view of its bits as the facts'
 * array (so a caller tells the two apart by identity).
 */
export function typed(fn: string, name: string, v: unknown, dt: number, dtName: string): Data {
  const tag = arrayTag(v);
  const f = BY_CODE[dt]!;
  if (tag === f.array) return attached(fn, name, v as Data);
  if (dtypesOf(tag).length === 0) {
    throw new TypeError(`${fn}: ${name} must be ${ARRAYS_TAKEN}, got ${describe(v)}`);
  }
  if (tag !== f.jsArray) {
    throw new TypeError(
      `${fn}: ${name} is a ${describe(v)} but ${dtName} is '${DTYPE_NAMES[dt]}' (it takes ${takes(dt)})`,
    );
  }
  const a = attached(fn, name, v as Data);
  return new (f.Array as new (b: ArrayBufferLike, at: number, n: number) => Data)(a.buffer, a.byteOffset, a.length);
}

/** An optional {@link typed} array of `length` elements (`what` says why), or null when absent. */
export function optTyped(fn: string, name: string, v: unknown, length: number, what: string, dt: number, dtName: string): Data | null {
  if (v === undefined) return null;
  const a = typed(fn, name, v, dt, dtName);
  if (a.length !== length) throw new RangeError(`${fn}: ${name}.length must be ${length} (${what}), got ${a.length}`);
  return a;
}


/**
 * An optional quantized output: `length` elements (`what` says why) in the array of dtype
 * `code`'s facts (int8: an Int8Array; float8: a Uint8Array of bit patterns), or null when absent.
 */
export function optQuantized(fn: string, name: string, v: unknown, length: number, what: string, code: number): Int8Array | Uint8Array | null {
  if (v === undefined) return null;
  const d = BY_CODE[code]!;
  if (arrayTag(v) !== d.array) {
    throw new TypeError(`${fn}: ${name} must be a${d.array.startsWith('I') ? 'n' : ''} ${d.array} (options.outDtype is '${d.name}'), got ${describe(v)}`);
  }
  const a = attached(fn, name, v as unknown as Data) as unknown as Int8Array | Uint8Array;
  if (a.length !== length) throw new RangeError(`${fn}: ${name}.length must be ${length} (${what}), got ${a.length}`);
  return a;
}

/** The rows of `x` (of `dim` elements each); a RangeError unless its length is a multiple of `dim`. */
export function rowsOf(fn: string, name: string, x: Data, dim: number): number {
  if (x.length % dim !== 0) {
    throw new RangeError(`${fn}: ${name}.length (${x.length}) must be a multiple of dim (${dim})`);
  }
  return x.length / dim;
}
