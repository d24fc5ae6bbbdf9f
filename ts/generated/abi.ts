// Written by scripts/gen-abi.mjs from crate/src/abi.rs: edit that file, then run `node scripts/gen-abi.mjs`.
/**
 * The wasm boundary, as the Rust side defines it: status codes and their meanings, storage
 * types and their facts, casting flags, gate codes, the parameter block of a call and each
 * operation's operand order.
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
  /** an unknown storage type code in dtypes, a float32 code where a half one is needed, or a quantized output the call cannot have */
  Dtype: 7,
  /** an unknown gate code, or a gate without its operand */
  Gate: 8,
  /** the memory could not grow for the scratch of a long row */
  Memory: 9,
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
  7: 'an unknown storage type code in dtypes, a float32 code where a half one is needed, or a quantized output the call cannot have',
  8: 'an unknown gate code, or a gate without its operand',
  9: 'the memory could not grow for the scratch of a long row',
};

/** Storage type codes: the low two bits ({@link DTYPE_MASK}) of a call's `dtypes` word (the activations'), or a quantized output's in `out_dtype`. Named as the API names them. */
export const Dtype = {
  /** IEEE binary32 */
  float32: 0,
  /** IEEE binary16, as u16 bit patterns */
  float16: 1,
  /** bfloat16 (the top half of a float32), as u16 bit patterns */
  bfloat16: 2,
  /** signed 8-bit integers: a quantized output only, with a scale */
  int8: 3,
  /** OCP float8 E4M3FN (no infinities, largest 448), as u8 bit patterns: a quantized output only, with a scale */
  float8_e4m3: 4,
} as const;

/** Dtype code → what it means. */
export const DTYPE_TEXT: Readonly<Record<number, string>> = {
  0: 'IEEE binary32',
  1: 'IEEE binary16, as u16 bit patterns',
  2: 'bfloat16 (the top half of a float32), as u16 bit patterns',
  3: 'signed 8-bit integers: a quantized output only, with a scale',
  4: 'OCP float8 E4M3FN (no infinities, largest 448), as u8 bit patterns: a quantized output only, with a scale',
};

/** Where half-precision results are rounded (the castingMode option): each mode's name and its code, which the TypeScript side maps to the {@link LLAMA} flag it sets (the kernels read the flag). */
export const Casting = {
  /** everything in float32, one rounding at the end (the default) */
  none: 0,
  /** Hugging Face's LlamaRMSNorm: x·rstd rounded to the activations' type before the gain (the LLAMA flag) */
  llama: 1,
  /** Gemma's: everything in float32, one rounding at the end (as none; the 1 + weight is the offset option) */
  gemma: 2,
} as const;

/** Where a gated RMSNorm's gate `silu(z)` multiplies (Qwen3-Next's and Mamba-2's RMSNormGated). */
export const Gate = {
  /** no gate */
  none: 0,
  /** after the norm: y = rmsnorm(x) · w · silu(z) (Qwen3-Next; Mamba-2 with norm_before_gate) */
  after: 1,
  /** before the norm: y = rmsnorm(x · silu(z)) · w (Mamba-2's default) */
  before: 2,
} as const;

/** Gate code → what it means. */
export const GATE_TEXT: Readonly<Record<number, string>> = {
  0: 'no gate',
  1: 'after the norm: y = rmsnorm(x) · w · silu(z) (Qwen3-Next; Mamba-2 with norm_before_gate)',
  2: 'before the norm: y = rmsnorm(x · silu(z)) · w (Mamba-2\'s default)',
};

/** How much memory an operand spans from its address, for the entry points' bounds checks. */
export const Extent = {
  /** rows × dim elements of the activations' storage (a quantized output: one byte each) */
  Matrix: 0,
  /** one f32 per row */
  PerRow: 1,
  /** dim f32: one row for every row (a half weight is widened to f32 before the kernel sees it) */
  Row: 2,
} as const;

/** The forward's operands: their places in the address array its entry point takes. */
export const ForwardOperand = {
  /** the input, rows × dim */
  x: 0,
  /** the residual of a fused add, rows × dim, or 0 */
  residual: 1,
  /** the gain, dim f32, or 0 */
  weight: 2,
  /** the output, rows × dim */
  y: 3,
  /** where h = x + residual goes, rows × dim, or 0 */
  h: 4,
  /** one rstd per row, f32, or 0 */
  rstd: 5,
  /** the gate's input z, rows × dim, or 0 */
  z: 6,
  /** a quantized output's scale of each row, rows f32, or 0 (with a static quant_scale) */
  rowScales: 7,
} as const;

/** The backward's operands and workspace: their places in the address array its entry points take. */
export const BackwardOperand = {
  /** the upstream gradient, rows × dim */
  dy: 0,
  /** the forward's input (its h with a fused add), rows × dim */
  x: 1,
  /** the gain, dim f32, or 0 */
  weight: 2,
  /** the forward's rstd, rows f32, or 0 to recompute it */
  rstd: 3,
  /** the gradient on a fused add's h, added to dx, rows × dim, or 0 */
  dresidual: 4,
  /** the input gradient, rows × dim */
  dx: 5,
  /** the weight gradient, dim f32, or 0 */
  dweight: 6,
  /** the gate's input z, rows × dim, or 0 */
  z: 7,
  /** the gate's gradient, rows × dim, or 0 */
  dz: 8,
  /** the workspace, after the operands: the f64 sum of the finished dweight blocks, then the open block (a span) or the block partials (a pool job) */
  work: 9,
} as const;

/** Each {@link ForwardOperand}'s {@link Extent}, in operand order. */
export const FORWARD_EXTENTS = [Extent.Matrix, Extent.Matrix, Extent.Row, Extent.Matrix, Extent.Matrix, Extent.PerRow, Extent.Matrix, Extent.PerRow] as const;

/** Each {@link BackwardOperand}'s {@link Extent}, in operand order. */
export const BACKWARD_EXTENTS = [Extent.Matrix, Extent.Matrix, Extent.Row, Extent.PerRow, Extent.Matrix, Extent.Matrix, Extent.Row, Extent.Matrix, Extent.Matrix] as const;

/** The most address words any operation's entry points read (its operands, a workspace): a call block's capacity. */
export const MAX_OPERANDS = 10;

/** The bits of `dtypes` that hold the activations' {@link Dtype} (one with `qmax` 0). */
export const DTYPE_MASK = 3;
/** The `llama` casting mode: `x·rstd` is rounded to the activations' type before the gain. */
export const LLAMA = 4;
/** With `LLAMA`: the weight has the activations' half type, so the backward rounds each weight-gradient term to it as autograd does. */
export const LLAMA_W = 8;
/** Floats per column at the start of a backward's workspace: the f64 sum of its finished dweight blocks (then the open block of a span, or a pool job's block partials). */
export const DG_SUM_FLOATS = 2;

/** The scalars and flags of one kernel call: a block of this layout in wasm memory, written by the caller once per call (the pool: into its control block) and read by every entry point, which takes its address. Each field's 4-byte word in the block, and whether it is a float32. */
export const PARAMS = {
  /** row length (elements) */
  dim: { word: 0, float: false },
  /** elements of each row its rstd is estimated from (pRMSNorm): 1 to dim */
  stat: { word: 1, float: false },
  /** added to mean(x²) inside the square root */
  eps: { word: 2, float: true },
  /** added to the weight: the gain is offset + weight (Gemma: 1) */
  offset: { word: 3, float: true },
  /** the matrix operands' storage (a Dtype code) and the LLAMA and LLAMA_W flags */
  dtypes: { word: 4, float: false },
  /** where a gate applies (a Gate code) */
  gate: { word: 5, float: false },
  /** the forward's output storage when it is quantized (a Dtype code with a qmax), else 0: the activations' own */
  out_dtype: { word: 6, float: false },
  /** a quantized output's scale for every row (q = y / quant_scale), or 0: one scale per row, max|y| / qmax, written to the row scales */
  quant_scale: { word: 7, float: true },
} as const;

/** Words (4 bytes each) in a {@link PARAMS} block. */
export const PARAMS_WORDS = 8;

/** Writes `q` as a {@link PARAMS} block at word `at` of `i32` (`f32`: a view of the same bytes). */
export function writeParamsBlock(i32: Int32Array, f32: Float32Array, at: number, q: { readonly [K in keyof typeof PARAMS]: number }): void {
  i32[at + 0] = q.dim;
  i32[at + 1] = q.stat;
  f32[at + 2] = q.eps;
  f32[at + 3] = q.offset;
  i32[at + 4] = q.dtypes;
  i32[at + 5] = q.gate;
  i32[at + 6] = q.out_dtype;
  f32[at + 7] = q.quant_scale;
}

/** A new {@link PARAMS} record, every field 0: one literal, so that every call's record has one shape (which the writer above reads fast). */
export function blankParams(): { -readonly [K in keyof typeof PARAMS]: number } {
  return { dim: 0, stat: 0, eps: 0, offset: 0, dtypes: 0, gate: 0, out_dtype: 0, quant_scale: 0 };
}

/** The storage types' facts, by {@link Dtype} code (see `DtypeFacts` in abi.rs). */
export const DTYPE_FACTS = [
  { name: 'float32', bytes: 4, half: false, array: 'Float32Array', js_array: '', npy: '<f4', safetensors: 'F32', qmax: 0 },
  { name: 'float16', bytes: 2, half: true, array: 'Uint16Array', js_array: 'Float16Array', npy: '<f2', safetensors: 'F16', qmax: 0 },
  { name: 'bfloat16', bytes: 2, half: true, array: 'Uint16Array', js_array: '', npy: '', safetensors: 'BF16', qmax: 0 },
  { name: 'int8', bytes: 1, half: false, array: 'Int8Array', js_array: '', npy: '|i1', safetensors: 'I8', qmax: 127 },
  { name: 'float8_e4m3', bytes: 1, half: false, array: 'Uint8Array', js_array: '', npy: '', safetensors: 'F8_E4M3', qmax: 448 },
] as const;

/** The hash of the abi.rs this file was written from: a module whose `abi_hash()` differs was built from another. */
export const ABI_HASH = 0x8eefb468;
