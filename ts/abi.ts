// Written by scripts/gen-abi.mjs from crate/src/abi.rs: edit that file, then run `node scripts/gen-abi.mjs`.
/**
 * The wasm boundary's codes, as the Rust side defines them: status codes and their meanings,
 * storage type codes, casting flags.
 * @module
 */

/** What a kernel entry point returns: 0, or which of its bounds checks failed. */
export const Status = {
  /** success */
  Ok: 0,
  /** dim is zero */
  Dim: 1,
  /** a required address is 0 */
  Null: 2,
  /** an address is not a multiple of its element size */
  Align: 3,
  /** a range runs past the end of wasm memory, or its size overflows */
  Bounds: 4,
  /** a row range is reversed, past the end, or a pool shard does not start on a dweight block */
  Shard: 5,
  /** stat (the elements rstd is estimated from) is 0 or more than dim */
  Stat: 6,
  /** an unknown storage type code in dtypes, or a float32 code where a half one is needed */
  Dtype: 7,
} as const;

/** Status code → what it means. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  0: 'success',
  1: 'dim is zero',
  2: 'a required address is 0',
  3: 'an address is not a multiple of its element size',
  4: 'a range runs past the end of wasm memory, or its size overflows',
  5: 'a row range is reversed, past the end, or a pool shard does not start on a dweight block',
  6: 'stat (the elements rstd is estimated from) is 0 or more than dim',
  7: 'an unknown storage type code in dtypes, or a float32 code where a half one is needed',
};

/** Storage type codes: the low two bits ({@link DTYPE_MASK}) of a kernel's `dtypes` argument. */
export const Dtype = {
  /** IEEE binary32 */
  float32: 0,
  /** IEEE binary16, as u16 bit patterns */
  float16: 1,
  /** bfloat16 (the top half of a float32), as u16 bit patterns */
  bfloat16: 2,
} as const;

/** Dtype code → what it means. */
export const DTYPE_TEXT: Readonly<Record<number, string>> = {
  0: 'IEEE binary32',
  1: 'IEEE binary16, as u16 bit patterns',
  2: 'bfloat16 (the top half of a float32), as u16 bit patterns',
};

/** The bits of `dtypes` that hold a {@link Dtype}. */
export const DTYPE_MASK = 3;
/** The `llama` casting mode: `x·rstd` is rounded to the activations' type before the gain. */
export const LLAMA = 4;
/** With `LLAMA`: the weight has the activations' half type, so the backward rounds each weight-gradient term to it as autograd does. */
export const LLAMA_W = 8;
