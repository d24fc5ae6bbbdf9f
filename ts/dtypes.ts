/**
 * The storage types, one row each: every fact about a dtype that code or a message needs — its
 * kernel code, element bytes, the array that holds it, how NumPy and safetensors name it —
 * written here once and read everywhere else.
 * @module
 */
import { Dtype as CODE } from './abi.js';
import type { Dtype } from './types.js';

/** What one storage type is. */
export interface DtypeFacts {
  /** The kernel's storage code (abi.ts `Dtype`), or -1 for a type only files hold (float64, converted on read). */
  readonly code: number;
  /** Bytes per element. */
  readonly bytes: number;
  /** The typed array that holds its elements (half types: their bit patterns). */
  readonly array: 'Float32Array' | 'Uint16Array' | 'Float64Array';
  /** NumPy's little-endian `descr`, or null where NumPy has no such type (bfloat16). */
  readonly npy: string | null;
  /** The safetensors header's `dtype`. */
  readonly safetensors: string;
}

/** A dtype a file may hold: the three the kernels store, and float64 (read as float32). */
export type FileDtype = 'float32' | 'float16' | 'bfloat16' | 'float64';

/** Every dtype a file may hold, by name. */
export const DTYPES = {
  float32: { code: CODE.float32, bytes: 4, array: 'Float32Array', npy: '<f4', safetensors: 'F32' },
  float16: { code: CODE.float16, bytes: 2, array: 'Uint16Array', npy: '<f2', safetensors: 'F16' },
  bfloat16: { code: CODE.bfloat16, bytes: 2, array: 'Uint16Array', npy: null, safetensors: 'BF16' },
  float64: { code: -1, bytes: 8, array: 'Float64Array', npy: '<f8', safetensors: 'F64' },
} as const satisfies Record<FileDtype, DtypeFacts>;

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
