/**
 * What an argument array is: its kind (Float32Array, Uint16Array of half bits, Float16Array),
 * whether it can hold a dtype, whether its buffer is detached, how many rows it holds. Errors
 * name the function, the argument, what it got and what it expected.
 * @module
 */
import { DTYPE_FACTS, Dtype as DT } from '../abi.js';
import { BY_CODE } from '../dtypes.js';
import type { Data } from '../ops.js';
import type { Dtype } from '../types.js';

/**
 * What a checked array was given as: float32, half bits in a Uint16Array, or a Float16Array
 * (placed through its bits; results the library makes for it are Float16Arrays too).
 */
export const KIND_F32 = 0;
export const KIND_U16 = 1;
export const KIND_F16 = 2;

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

/** Whether `v` is a Float32Array (of this realm or another). */
function isF32(v: unknown): v is Float32Array {
  return ArrayBuffer.isView(v) && (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] === 'Float32Array';
}

/** `v` as a Float32Array, attached; a TypeError naming `fn` and `name` otherwise. */
export function f32(fn: string, name: string, v: unknown): Float32Array {
  if (!isF32(v)) throw new TypeError(`${fn}: ${name} must be a Float32Array, got ${describe(v)}`);
  return attached(fn, name, v);
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

/** The names of the dtypes activations and weights may have, indexed by abi.ts's Dtype code (the quantized outputs' codes come after). */
export const DTYPE_NAMES: readonly Dtype[] = DTYPE_FACTS.filter((d) => d.qmax === 0).map((d) => d.name as Dtype);

/** What arrays hold dtype `dt`, as a message says it: the typed array of its facts (a Float16Array too for float16). */
export function takes(dt: number): string {
  const f = DTYPE_FACTS[dt]!;
  if (!f.half) return `a ${f.array}`;
  return `${f.name === 'float16' ? 'a Float16Array or ' : ''}a ${f.array} of bit patterns`;
}

/** The arrays a float operand may be, as a message lists them (those {@link kindOf} knows). */
export const ARRAYS_TAKEN = 'a Float32Array, Float16Array or Uint16Array (half bit patterns, with options.dtype)';

/** KIND_* of `v`, or -1 when it is none of the three array types. */
export function kindOf(v: unknown): number {
  if (!ArrayBuffer.isView(v)) return -1;
  const tag = (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag];
  return tag === 'Float32Array' ? KIND_F32 : tag === 'Uint16Array' ? KIND_U16 : tag === 'Float16Array' ? KIND_F16 : -1;
}

/**
 * Checks that `v` is an array that can hold dtype `dt` (named by option `dtName` in errors):
 * float32 a Float32Array; float16 a Float16Array or a Uint16Array of bits; bfloat16 a
 * Uint16Array of bits. Returns it as placed: a Float16Array is seen through its bits.
 */
export function typed(fn: string, name: string, v: unknown, dt: number, dtName: string): Data {
  const k = kindOf(v);
  if (k === KIND_F32 && dt === DT.float32) return f32(fn, name, v);
  if (k < 0) {
    throw new TypeError(`${fn}: ${name} must be ${ARRAYS_TAKEN}, got ${describe(v)}`);
  }
  const a = v as Uint16Array;
  if (k === KIND_F32 || (k === KIND_F16 && dt !== DT.float16) || (k === KIND_U16 && dt === DT.float32)) {
    throw new TypeError(
      `${fn}: ${name} is a ${describe(v)} but ${dtName} is '${DTYPE_NAMES[dt]}' (it takes ${takes(dt)})`,
    );
  }
  attached(fn, name, a);
  return k === KIND_F16 ? new Uint16Array(a.buffer, a.byteOffset, a.length) : a;
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
  if (!ArrayBuffer.isView(v) || (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] !== d.array) {
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

/** Checks a conversion's input: an array of the given kind (a TypeError naming `fn` otherwise). */
export function checkConvertInput<T extends Float32Array | Uint16Array>(fn: string, v: unknown, kind: number): T {
  if (kindOf(v) !== kind) {
    throw new TypeError(`${fn}: the input must be a ${kind === KIND_F32 ? 'Float32Array' : 'Uint16Array of bit patterns'}, got ${describe(v)}`);
  }
  return v as T;
}

