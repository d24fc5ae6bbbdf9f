/**
 * The storage types, one row each: every fact about a dtype that code or a message needs — its
 * kernel code, element bytes, the array that holds it, how NumPy and safetensors name it —
 * written here once and read everywhere else.
 * @module
 */
import { DTYPE_FACTS, type Casting, type Gate } from '../generated/abi.js';
import type { CastingMode, Dtype, GateMode, HalfBits, HalfDtype, QuantDtype } from '../types.js';

/** Whether two types are the same. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** A row of abi.rs's dtype table, as a type. */
export type Facts = (typeof DTYPE_FACTS)[number];
// The public unions of types.ts spell the names out (as node/formats/npy.ts's NpyDtype does), so that the API
// reference shows them; the compiler holds them to abi.rs's tables: a storage type or a mode
// added there fails here until they say it.
const DTYPE_NAMES_MATCH: Same<Dtype, Extract<Facts, { qmax: 0 }>['name']> = true;
const HALF_NAMES_MATCH: Same<HalfDtype, Extract<Facts, { half: true }>['name']> = true;
const QUANT_NAMES_MATCH: Same<QuantDtype, Exclude<Facts, { qmax: 0 }>['name']> = true;
// The modes likewise: abi.rs's Casting, and its Gate but none.
const CASTING_NAMES_MATCH: Same<CastingMode, keyof typeof Casting> = true;
const GATE_NAMES_MATCH: Same<GateMode, Exclude<keyof typeof Gate, 'none'>> = true;
void DTYPE_NAMES_MATCH;
void HALF_NAMES_MATCH;
void QUANT_NAMES_MATCH;
void CASTING_NAMES_MATCH;
void GATE_NAMES_MATCH;

/** The arrays the table names, by name (the compiler holds {@link ARRAYS} to the same names). */
interface Arrays {
  Float32Array: Float32Array;
  Uint16Array: Uint16Array;
  Float64Array: Float64Array;
  Int8Array: Int8Array;
  Uint8Array: Uint8Array;
}
type ArrayName = keyof Arrays;
/** The constructor of an array the table names. */
type ArrayConstructorOf<K extends ArrayName> = {
  new (n: number): Arrays[K];
  new (b: ArrayBufferLike, at?: number, n?: number): Arrays[K];
  readonly BYTES_PER_ELEMENT: number;
};
/** The constructors of the arrays the table names. */
const ARRAYS: { readonly [K in ArrayName]: ArrayConstructorOf<K> } = { Float32Array, Uint16Array, Float64Array, Int8Array, Uint8Array };

// The half types' array, which the public conversions take and return, likewise.
const HALF_BITS_MATCH: Same<HalfBits, Arrays[Extract<Facts, { half: true }>['array']]> = true;
void HALF_BITS_MATCH;

/** The array the kernels read a storage type from (a type the activations may have): Float32Array, or a half type's bits. */
export type Data = Arrays[Extract<Facts, { qmax: 0 }>['array']];
/** An operand as placed: {@link Data}, or a quantized output's (int8 values, float8 bit patterns). */
export type Placed = Arrays[Facts['array']];

/** The tag of a typed array (`'Float32Array'`, of this realm or another), or undefined for anything else. */
export function arrayTag(v: unknown): string | undefined {
  return ArrayBuffer.isView(v) ? (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] : undefined;
}

/** What one storage type is. */
export interface DtypeFacts {
  /** The kernel's storage code (abi.ts `Dtype`), or -1 for a type only files hold (float64, converted on read). */
  readonly code: number;
  /** Its name in the API. */
  readonly name: string;
  /** Bytes per element. */
  readonly bytes: number;
  /** The typed array that holds its elements (half types and float8: their bit patterns). */
  readonly array: ArrayName;
  /** That array's constructor. */
  readonly Array: ArrayConstructorOf<ArrayName>;
  /**
   * JavaScript's own typed array of this type where the engine may have one (`Float16Array`),
   * taken in place of {@link array} and seen through its bits; null for none.
   */
  readonly jsArray: string | null;
  /** NumPy's little-endian `descr`, or null where NumPy has no such type (bfloat16, float8). */
  readonly npy: string | null;
  /** The safetensors header's `dtype`. */
  readonly safetensors: string;
  /** A quantized output's largest magnitude (int8 127, float8 E4M3 448); 0 for the types activations may have. */
  readonly qmax: number;
}

/** Every type the kernels know, by code (abi.rs's `DTYPES`, generated into abi.ts): the storage types, then the quantized outputs. */
export const BY_CODE: readonly DtypeFacts[] = DTYPE_FACTS.map((d, code) => ({
  code, name: d.name, bytes: d.bytes, array: d.array, Array: ARRAYS[d.array], jsArray: d.js_array === '' ? null : d.js_array, npy: d.npy === '' ? null : d.npy, safetensors: d.safetensors, qmax: d.qmax,
}));

/** A dtype a file may hold: those the kernels store, and float64 (read as float32). */
export type FileDtype = Dtype | 'float64';

/**
 * Every dtype a file may hold, by name: the kernels' storage types as abi.rs's `DTYPES` table
 * states them (generated into abi.ts), and float64, which only files hold.
 */
export const DTYPES: Readonly<Record<FileDtype, DtypeFacts>> = {
  ...(Object.fromEntries(BY_CODE.filter((d) => d.qmax === 0).map((d) => [d.name, d])) as Record<Dtype, DtypeFacts>),
  float64: { code: -1, name: 'float64', bytes: 8, array: 'Float64Array', Array: Float64Array, jsArray: null, npy: '<f8', safetensors: 'F64', qmax: 0 },
};

/** The quantized output types, by name. */
export const QUANT_DTYPES: Readonly<Record<QuantDtype, DtypeFacts>> = Object.fromEntries(
  BY_CODE.filter((d) => d.qmax !== 0).map((d) => [d.name, d]),
) as Record<QuantDtype, DtypeFacts>;

/** A dtype an output file may be written in: one the kernels store, or a quantized one. */
export type OutDtype = Dtype | QuantDtype;

/** Every dtype a file may hold, read or written, by name. */
export const ALL_DTYPES: Readonly<Record<FileDtype | QuantDtype, DtypeFacts>> = { ...DTYPES, ...QUANT_DTYPES };

/** The dtypes an output may be written in: the kernels' storage types, then the quantized ones. */
export const OUT_DTYPES: readonly OutDtype[] = BY_CODE.map((d) => d.name as OutDtype);

/** Whether `d` is a quantized output type. */
export const isQuant = (d: string | undefined): d is QuantDtype => d !== undefined && Object.hasOwn(QUANT_DTYPES, d);

/** The dtypes the kernels store (and an output may have), in code order. */
export const KERNEL_DTYPES = (Object.keys(DTYPES) as FileDtype[]).filter((d): d is Dtype => DTYPES[d].code >= 0).sort((a, b) => DTYPES[a].code - DTYPES[b].code);

/** Every name of {@link DTYPES}. */
export const FILE_DTYPES = Object.keys(DTYPES) as FileDtype[];

/** `names` as a message lists them: `'a', 'b' or 'c'`. */
export function listed(names: readonly string[], quote = "'"): string {
  const q = names.map((n) => `${quote}${n}${quote}`);
  return q.length < 2 ? q.join('') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

/** The dtype whose NumPy descr is `descr`, or undefined. */
export const dtypeOfNpy = (descr: string): FileDtype | undefined => FILE_DTYPES.find((d) => DTYPES[d].npy === descr);

/** The dtype whose safetensors name is `name`, or undefined. */
export const dtypeOfSafetensors = (name: string): FileDtype | undefined => FILE_DTYPES.find((d) => DTYPES[d].safetensors === name);
