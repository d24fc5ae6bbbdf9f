/**
 * Argument checking shared by the sync API and the pool. Everything is checked before any
 * byte is written; errors name the function, the argument, what it got and what it expected.
 * @module
 */

import { Dtype as DT, LLAMA, LLAMA_W } from './abi.js';
import type { Data } from './ops.js';

/**
 * How an array's elements are stored: float32, IEEE binary16 (`float16`) or `bfloat16`. The
 * math is float32 whatever they are: half data is widened on load and rounded (to nearest
 * even) once on store, or as {@link CastingMode} says.
 */
export type Dtype = 'float32' | 'float16' | 'bfloat16';

/** The two half-precision dtypes. */
export type HalfDtype = 'float16' | 'bfloat16';

/** A half dtype's code (abi.ts Dtype) for the conversion functions; a TypeError names `fn` otherwise. */
export function halfDtypeCode(fn: string, v: unknown): number {
  if (v === 'float16') return DT.float16;
  if (v === 'bfloat16') return DT.bfloat16;
  throw new TypeError(`${fn}: dtype must be 'float16' or 'bfloat16', got ${describe(v)}`);
}

/** Checks a conversion's input: an array of the given kind (a TypeError naming `fn` otherwise). */
export function checkConvertInput<T extends Float32Array | Uint16Array>(fn: string, v: unknown, kind: number): T {
  if (kindOf(v) !== kind) {
    throw new TypeError(`${fn}: the input must be a ${kind === KIND_F32 ? 'Float32Array' : 'Uint16Array of bit patterns'}, got ${describe(v)}`);
  }
  return v as T;
}

/**
 * Where a half-precision result is rounded, to match the framework a model came from:
 * - `'none'` (default) and `'gemma'`: everything in float32, one rounding at the end —
 *   PyTorch `torch.nn.functional.rms_norm` and Hugging Face's GemmaRMSNorm
 *   (`(x.float() * rsqrt(...) * (1 + weight.float())).type_as(x)`; Gemma's `1 +` is
 *   `options.offset: 1`).
 * - `'llama'`: Hugging Face's LlamaRMSNorm, `weight * (x.float() * rsqrt(...)).to(x.dtype)`:
 *   `x · rstd` is rounded to the activations' dtype, then multiplied by the weight and rounded
 *   again. Its backward rounds `dy · weight` to that dtype and takes the weight gradient from
 *   the rounded `x · rstd` — with a weight of that same dtype, each row's term rounded to it
 *   before the rows are summed — as autograd does.
 * For float32 activations every mode is the same.
 */
export type CastingMode = 'none' | 'llama' | 'gemma';

/**
 * A Float16Array (where the engine has one: Chromium, Firefox, Deno, Bun; not Node 20), typed
 * structurally so that these typings do not need TypeScript's `esnext.float16` lib.
 */
export interface Float16ArrayLike extends ArrayBufferView {
  readonly [Symbol.toStringTag]: 'Float16Array';
  readonly length: number;
  readonly BYTES_PER_ELEMENT: number;
}

/**
 * An array of activations or weights: a Float32Array, a Float16Array, or a Uint16Array
 * holding float16 or bfloat16 bit patterns (then a `dtype` option must say which).
 */
export type FloatArray = Float32Array | Uint16Array | Float16ArrayLike;

/** Options of {@link rmsNorm}. */
export interface RmsNormOptions<T extends FloatArray = Float32Array> {
  /**
   * The storage of `x` and of every other `rows × dim` array (residual, out, residualOut).
   * Default: from `x`'s type (Float32Array: float32, Float16Array: float16); required for a
   * Uint16Array. A dtype that the array's type cannot hold is a TypeError.
   */
  dtype?: Dtype;
  /**
   * The weight's storage. Default: from its type; a Uint16Array weight defaults to `dtype`
   * when that is a half type. May differ from the activations' (a float32 weight with
   * bfloat16 activations is common in mixed precision).
   */
  weightDtype?: Dtype;
  /** Where half results are rounded: see {@link CastingMode}. Default `'none'`. */
  castingMode?: CastingMode;
  /** Row length (elements). Default: `weight.length`; required when `weight` is null. */
  dim?: number;
  /** Added to mean(x²) inside the square root. Default 1e-6; ≥ 0 and finite as a float32 (≤ 3.4e38). Used as float32. */
  eps?: number;
  /** Destination, `x.length` elements of the activations' dtype; may be `x` itself. Default: a new array of `x`'s type. */
  out?: T;
  /** Receives `1/sqrt(mean(x²) + eps)` per row: `x.length / dim` floats. */
  rstd?: Float32Array;
  /**
   * Fused residual add: `x.length` floats. The row normalized is `h = x + residual`, and `h`
   * is written to `options.residualOut`, or by default **into `residual` itself** (as vLLM's
   * `fused_add_rms_norm` does): the updated residual stream. One pass forms `h` and its sum of
   * squares. Pass that `h` as `x` to the backward. With half activations `h` is rounded to
   * their dtype before it is squared, as the framework's `residual + x` is.
   */
  residual?: T;
  /** With `residual`: where `h = x + residual` goes, `x.length` elements; may be `x`. Default: `residual`. */
  residualOut?: T;
  /**
   * Added to the weight: `y = x · rstd · (offset + weight)`. Default 0; `1` is Gemma's RMSNorm
   * (Liger-Kernel's `offset`). Finite as a float32; needs a weight when not 0.
   */
  offset?: number;
  /**
   * pRMSNorm (Zhang & Sennrich 2019, §4.2): rstd is estimated from the first `k` elements of
   * each row, `k` the smallest integer with `k / dim ≥ partial` (`ceil(partial · dim)`), and
   * every element is normalized by it. `0 < partial ≤ 1`, default 1 (RMSNorm).
   */
  partial?: number;
}

/** Options of {@link rmsNormBackward}. */
export interface RmsNormBackwardOptions<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array> {
  /** The storage of `dy`, `x`, `dresidual` and `dx`, as the forward's `dtype` (default from `dy`'s type). */
  dtype?: Dtype;
  /** The storage of the weight and dweight, as the forward's (default from the weight's type). */
  weightDtype?: Dtype;
  /** As the forward's (default `'none'`). */
  castingMode?: CastingMode;
  /** Row length (elements). Default: `weight.length`; required when `weight` is null. */
  dim?: number;
  /** As in the forward; used when `rstd` is not given. Default 1e-6. */
  eps?: number;
  /** The forward's rstd, `x.length / dim` floats. Recomputed from `x` and `eps` when absent. */
  rstd?: Float32Array;
  /** Destination of dL/dx, `x.length` elements of the activations' dtype; may be `dy` or `x` itself. Default: new, of `dy`'s type. */
  dx?: T;
  /**
   * Destination of dL/dweight, `dim` elements of the weight's dtype (only with a weight); summed
   * in float32 and rounded once. Default: new, of the weight's type.
   */
  dweight?: W;
  /**
   * Fused residual add: the gradient arriving on the residual stream `h` (the forward's
   * `residualOut`), `x.length` floats. It is added to `dx`, which is then the gradient of both
   * `x` and `residual` (the forward's add passes it to both). Pass the forward's `h` as `x`.
   */
  dresidual?: T;
  /** As in the forward (default 0); dweight keeps its form, dx uses `offset + weight`. */
  offset?: number;
  /** As in the forward (default 1): the gradient through rstd reaches only the first `k` elements. */
  partial?: number;
}

/** Result of {@link rmsNormBackward}: `dweight` is null when `weight` is null. */
export interface RmsNormBackwardResult<T extends FloatArray = Float32Array, W extends FloatArray = Float32Array> {
  dx: T;
  dweight: W | null;
}

/**
 * What a checked array was given as: float32, half bits in a Uint16Array, or a Float16Array
 * (placed through its bits; results the library makes for it are Float16Arrays too).
 */
export const KIND_F32 = 0;
export const KIND_U16 = 1;
export const KIND_F16 = 2;

/** A checked forward call; its eps, offset, stat, dtypes and wdt are the kernel's Params (ops.ts). */
export interface ForwardArgs {
  x: Data;
  weight: Data | null;
  out: Data | null;
  /** `options.out` as the caller gave it (returned as is). */
  outGiven: FloatArray | null;
  rstd: Float32Array | null;
  /** The residual (fused add), or null. */
  residual: Data | null;
  /** Where h goes: residualOut, or the residual itself; null without a residual. */
  h: Data | null;
  rows: number;
  dim: number;
  eps: number;
  offset: number;
  /** Elements of a row rstd is estimated from (from `partial`). */
  stat: number;
  dtypes: number;
  wdt: number;
  /** How `x` was given (KIND_*): the type of a result the library allocates. */
  xKind: number;
}

/** A checked backward call; its eps, offset, stat, dtypes and wdt are the kernel's Params (ops.ts). */
export interface BackwardArgs {
  dy: Data;
  x: Data;
  weight: Data | null;
  rstd: Float32Array | null;
  dresidual: Data | null;
  dx: Data | null;
  dxGiven: FloatArray | null;
  dweight: Data | null;
  dweightGiven: FloatArray | null;
  rows: number;
  dim: number;
  eps: number;
  offset: number;
  stat: number;
  dtypes: number;
  wdt: number;
  /** How `dy` and the weight were given (KIND_*): the types of results the library allocates. */
  xKind: number;
  wKind: number;
}

/** eps when none is given. */
export const DEFAULT_EPS = 1e-6;

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

function isF32(v: unknown): v is Float32Array {
  return ArrayBuffer.isView(v) && (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] === 'Float32Array';
}

function f32(fn: string, name: string, v: unknown): Float32Array {
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

function optF32(fn: string, name: string, v: unknown, length: number, what: string): Float32Array | null {
  if (v === undefined) return null;
  const a = f32(fn, name, v);
  if (a.length !== length) throw new RangeError(`${fn}: ${name}.length must be ${length} (${what}), got ${a.length}`);
  return a;
}

const DTYPE_NAMES: readonly Dtype[] = ['float32', 'float16', 'bfloat16'];

/** KIND_* of `v`, or -1 when it is none of the three array types. */
function kindOf(v: unknown): number {
  if (!ArrayBuffer.isView(v)) return -1;
  const tag = (v as { [Symbol.toStringTag]?: string })[Symbol.toStringTag];
  return tag === 'Float32Array' ? KIND_F32 : tag === 'Uint16Array' ? KIND_U16 : tag === 'Float16Array' ? KIND_F16 : -1;
}

/** A dtype option's code (abi.ts Dtype), or -1 when absent. */
function dtypeOption(fn: string, name: string, v: unknown): number {
  if (v === undefined) return -1;
  const i = DTYPE_NAMES.indexOf(v as Dtype);
  if (i < 0) throw new TypeError(`${fn}: ${name} must be 'float32', 'float16' or 'bfloat16', got ${describe(v)}`);
  return i;
}

/** The dtype an array's type says it holds (a Uint16Array says nothing: -1). */
const dtypeOfKind = (k: number): number => (k === KIND_F32 ? DT.float32 : k === KIND_F16 ? DT.float16 : -1);

/**
 * Checks that `v` is an array that can hold dtype `dt` (named by option `dtName` in errors):
 * float32 a Float32Array; float16 a Float16Array or a Uint16Array of bits; bfloat16 a
 * Uint16Array of bits. Returns it as placed: a Float16Array is seen through its bits.
 */
function typed(fn: string, name: string, v: unknown, dt: number, dtName: string): Data {
  const k = kindOf(v);
  if (k === KIND_F32 && dt === DT.float32) return f32(fn, name, v);
  if (k < 0) {
    throw new TypeError(`${fn}: ${name} must be a Float32Array, Float16Array or Uint16Array (half bit patterns, with options.dtype), got ${describe(v)}`);
  }
  const a = v as Uint16Array;
  if (k === KIND_F32 || (k === KIND_F16 && dt !== DT.float16) || (k === KIND_U16 && dt === DT.float32)) {
    throw new TypeError(
      `${fn}: ${name} is a ${describe(v)} but ${dtName} is '${DTYPE_NAMES[dt]}' (it takes ${dt === DT.float32 ? 'a Float32Array' : dt === DT.float16 ? 'a Float16Array or a Uint16Array of bit patterns' : 'a Uint16Array of bit patterns'})`,
    );
  }
  attached(fn, name, a);
  return k === KIND_F16 ? new Uint16Array(a.buffer, a.byteOffset, a.length) : a;
}

function optTyped(fn: string, name: string, v: unknown, length: number, what: string, dt: number, dtName: string): Data | null {
  if (v === undefined) return null;
  const a = typed(fn, name, v, dt, dtName);
  if (a.length !== length) throw new RangeError(`${fn}: ${name}.length must be ${length} (${what}), got ${a.length}`);
  return a;
}

/** The activations' dtype code: options.dtype, or what `first` (x, or dy) says by its type. */
function actDtype(fn: string, first: string, v: unknown, opt: unknown): number {
  const d = dtypeOption(fn, 'options.dtype', opt);
  if (d >= 0) return d;
  const k = kindOf(v);
  if (k === KIND_U16) {
    throw new TypeError(`${fn}: ${first} is a Uint16Array: say what it holds with options.dtype ('float16' or 'bfloat16')`);
  }
  // Anything else is float32 here, and typed() reports what is wrong with it.
  return k === KIND_F16 ? DT.float16 : DT.float32;
}

/** The weight's dtype code: options.weightDtype, else its type's, else (Uint16Array) the activations' half dtype. */
function weightDtype(fn: string, w: unknown, opt: unknown, act: number): number {
  const d = dtypeOption(fn, 'options.weightDtype', opt);
  if (d >= 0 || w === null || w === undefined) return d < 0 ? DT.float32 : d;
  const k = kindOf(w);
  if (k === KIND_U16) {
    if (act === DT.float32) {
      throw new TypeError(`${fn}: weight is a Uint16Array: say what it holds with options.weightDtype ('float16' or 'bfloat16')`);
    }
    return act;
  }
  return k === KIND_F16 ? DT.float16 : DT.float32;
}

const CASTING_MODES: readonly CastingMode[] = ['none', 'llama', 'gemma'];

/** The castingMode option's bits for the kernel's dtypes word. */
function castingBits(fn: string, v: unknown): number {
  if (v === undefined) return 0;
  const i = CASTING_MODES.indexOf(v as CastingMode);
  if (i < 0) throw new TypeError(`${fn}: options.castingMode must be 'none', 'llama' or 'gemma', got ${describe(v)}`);
  return v === 'llama' ? LLAMA : 0;
}

/** The options object when none is given: shared, read-only, so no call allocates one. */
const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze({});
const NO_EXTRA_KEYS: readonly string[] = [];

/**
 * Checks that `o` is absent or a plain object whose own keys are all in `known` (or
 * `extraKeys`): a TypeError naming `fn` otherwise. Returns the object (a shared empty one for
 * none). Every options argument of the package goes through this.
 */
export function options(
  fn: string,
  o: unknown,
  known: readonly string[],
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): Readonly<Record<string, unknown>> {
  if (o === undefined || o === null) return NO_OPTIONS;
  if (typeof o !== 'object' || Array.isArray(o)) {
    throw new TypeError(`${fn}: options must be an object, got ${describe(o)}`);
  }
  // A Map, a typed array or another class instance has no option keys of its own to read:
  // accepting it would silently ignore what the caller meant to pass.
  const proto = Object.getPrototypeOf(o);
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`${fn}: options must be a plain object ({ ... }), got ${describe(o)}`);
  }
  // for..in allocates nothing (Object.keys makes an array per call). It also visits inherited
  // enumerable keys, which Object.keys ignores: any key it does not know sends the call to the
  // exact Object.keys check, so only that check ever decides what is unknown.
  for (const k in o) {
    if (!known.includes(k) && !extraKeys.includes(k)) {
      unknownOption(fn, o, known, extraKeys);
      break;
    }
  }
  return o as Record<string, unknown>;
}

function unknownOption(fn: string, o: object, known: readonly string[], extraKeys: readonly string[]): void {
  const all = [...known, ...extraKeys];
  for (const k of Object.keys(o)) {
    if (!all.includes(k)) {
      throw new TypeError(`${fn}: unknown option ${JSON.stringify(k)} (known: ${all.join(', ')})`);
    }
  }
}

function weightOf(fn: string, weight: unknown, wdt = 0): Data | null {
  return weight === null || weight === undefined ? null : typed(fn, 'weight', weight, wdt, 'options.weightDtype');
}

/** The row length, checked against the weight (`w` from {@link weightOf}). */
function dimOf(fn: string, w: Data | null, dimOpt: unknown): number {
  if (dimOpt === undefined) {
    if (w === null) throw new TypeError(`${fn}: options.dim is required when weight is null`);
    if (w.length === 0) throw new RangeError(`${fn}: weight.length must be at least 1, got 0`);
    return w.length;
  }
  if (typeof dimOpt !== 'number') throw new TypeError(`${fn}: options.dim must be a number, got ${describe(dimOpt)}`);
  if (!Number.isInteger(dimOpt) || dimOpt < 1 || dimOpt > 0xffffffff) {
    throw new RangeError(`${fn}: options.dim must be a positive integer, got ${dimOpt}`);
  }
  if (w !== null && w.length !== dimOpt) {
    throw new RangeError(`${fn}: weight.length (${w.length}) must equal options.dim (${dimOpt})`);
  }
  return dimOpt;
}

function eps(fn: string, v: unknown): number {
  if (v === undefined) return DEFAULT_EPS;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.eps must be a number, got ${describe(v)}`);
  // eps is used as float32: a value finite in float64 but beyond float32's range (> 3.4e38)
  // would become +Inf there and silently zero every row.
  if (!Number.isFinite(v) || v < 0 || !Number.isFinite(Math.fround(v))) {
    throw new RangeError(`${fn}: options.eps must be >= 0 and finite as a float32 (at most 3.4028234663852886e38), got ${v}`);
  }
  return v;
}

function offsetOf(fn: string, v: unknown, w: Data | null): number {
  if (v === undefined) return 0;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.offset must be a number, got ${describe(v)}`);
  if (!Number.isFinite(Math.fround(v))) {
    throw new RangeError(`${fn}: options.offset must be finite as a float32 (|offset| at most 3.4028234663852886e38), got ${v}`);
  }
  if (v !== 0 && w === null) {
    throw new RangeError(`${fn}: options.offset (${v}) needs a weight (the gain is offset + weight), but weight is null`);
  }
  return v;
}

/**
 * The number of leading elements rstd is estimated from: the smallest `k` with
 * `k / dim ≥ partial`. Not bare `Math.ceil(partial * dim)`: `0.1 * 30` is 3.0000000000000004
 * in float64, whose ceiling would be 4 where 3/30 is exactly the float64 0.1.
 */
export function statOf(partial: number, dim: number): number {
  let k = Math.min(dim, Math.max(1, Math.ceil(partial * dim)));
  while (k > 1 && (k - 1) / dim >= partial) k--;
  while (k < dim && k / dim < partial) k++;
  return k;
}

function partialOf(fn: string, v: unknown, dim: number): number {
  if (v === undefined) return dim;
  if (typeof v !== 'number') throw new TypeError(`${fn}: options.partial must be a number, got ${describe(v)}`);
  if (!(v > 0 && v <= 1)) {
    throw new RangeError(`${fn}: options.partial must be a number in (0, 1] (the fraction of each row rstd is estimated from), got ${v}`);
  }
  return statOf(v, dim);
}

/** Throws unless `a` (an output) is disjoint from `b` or, when `sameOk`, exactly `b`. */
function disjointOrSame(fn: string, na: string, a: Data | null, nb: string, b: Data | null, sameOk: boolean): void {
  if (!a || !b || !overlaps(a, b)) return;
  if (sameOk && a.byteOffset === b.byteOffset && a.length === b.length && a.BYTES_PER_ELEMENT === b.BYTES_PER_ELEMENT) return;
  throw new RangeError(`${fn}: ${na} must not overlap ${nb}${sameOk ? ' (it may be exactly that array)' : ''}`);
}

function rowsOf(fn: string, name: string, x: Data, dim: number): number {
  if (x.length % dim !== 0) {
    throw new RangeError(`${fn}: ${name}.length (${x.length}) must be a multiple of dim (${dim})`);
  }
  return x.length / dim;
}

function overlaps(a: Data, b: Data): boolean {
  // Each typed-array getter (buffer, byteOffset) is a call of 10-15 ns in V8 11 (Node 20):
  // read each once, byteOffsets first (buffer is the dearer one, and disjoint views of wasm
  // memory need no buffer at all). byteLength is BYTES_PER_ELEMENT (a constant) × length.
  const ao = a.byteOffset;
  const bo = b.byteOffset;
  return ao < bo + b.BYTES_PER_ELEMENT * b.length && bo < ao + a.BYTES_PER_ELEMENT * a.length && a.buffer === b.buffer;
}

function distinctOutputs(fn: string, na: string, a: Data | null, nb: string, b: Data | null): void {
  if (a && b && overlaps(a, b)) throw new RangeError(`${fn}: ${na} and ${nb} must not overlap`);
}

const DTYPE_KEYS = ['dtype', 'weightDtype', 'castingMode'];
const FORWARD_KEYS: readonly string[] = ['dim', 'eps', 'out', 'rstd', 'residual', 'residualOut', 'offset', 'partial', ...DTYPE_KEYS];
const BACKWARD_KEYS: readonly string[] = ['dim', 'eps', 'rstd', 'dx', 'dweight', 'dresidual', 'offset', 'partial', ...DTYPE_KEYS];

/** Checks a forward call; `extraKeys` are further option names the caller handles itself. */
export function checkForward(
  fn: string,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): ForwardArgs {
  const o = options(fn, opts, FORWARD_KEYS, extraKeys);
  const act = actDtype(fn, 'x', x, o.dtype);
  const dn = 'options.dtype';
  const xa = typed(fn, 'x', x, act, dn);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  const rows = rowsOf(fn, 'x', xa, dim);
  const out = optTyped(fn, 'options.out', o.out, xa.length, 'x.length', act, dn);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  distinctOutputs(fn, 'options.out', out, 'options.rstd', rstd);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const dtypes = act | castingBits(fn, o.castingMode);
  const residual = optTyped(fn, 'options.residual', o.residual, xa.length, 'x.length', act, dn);
  if (residual === null && o.residualOut !== undefined) {
    throw new TypeError(`${fn}: options.residualOut was given without options.residual (it receives x + residual)`);
  }
  const given = optTyped(fn, 'options.residualOut', o.residualOut, xa.length, 'x.length', act, dn);
  const h = given ?? residual;
  if (h !== null) {
    // The plain forward's out may overlap x anyhow (that input is copied aside first); the
    // fused add's arrays are new, and an overlap there is a mistake to report.
    const hn = given ? 'options.residualOut' : 'options.residual (which receives x + residual)';
    distinctOutputs(fn, 'options.out', out, hn, h);
    distinctOutputs(fn, 'options.rstd', rstd, hn, h);
    disjointOrSame(fn, hn, h, 'x', xa, true);
    disjointOrSame(fn, hn, h, 'options.residual', given ? residual : null, true);
    disjointOrSame(fn, hn, h, 'weight', w, false);
    disjointOrSame(fn, 'options.out', out, 'options.residual', given ? residual : null, false);
  }
  const outGiven = out === null ? null : (o.out as FloatArray);
  return { x: xa, weight: w, out, outGiven, rstd, residual, h, rows, dim, eps: e, offset, stat, dtypes, wdt, xKind: kindOf(x) };
}

/** Checks a backward call; `extraKeys` as in {@link checkForward}. */
export function checkBackward(
  fn: string,
  dy: unknown,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): BackwardArgs {
  const o = options(fn, opts, BACKWARD_KEYS, extraKeys);
  const act = actDtype(fn, 'dy', dy, o.dtype);
  const dn = 'options.dtype';
  const dya = typed(fn, 'dy', dy, act, dn);
  const xa = typed(fn, 'x', x, act, dn);
  const wdt = weightDtype(fn, weight, o.weightDtype, act);
  const w = weightOf(fn, weight, wdt);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  if (dya.length !== xa.length) {
    throw new RangeError(`${fn}: dy.length (${dya.length}) must equal x.length (${xa.length})`);
  }
  const rows = rowsOf(fn, 'x', xa, dim);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  const dx = optTyped(fn, 'options.dx', o.dx, xa.length, 'x.length', act, dn);
  if (w === null && o.dweight !== undefined) {
    throw new TypeError(`${fn}: options.dweight was given but weight is null (there is no weight gradient)`);
  }
  const dweight = optTyped(fn, 'options.dweight', o.dweight, dim, 'dim', wdt, 'options.weightDtype');
  distinctOutputs(fn, 'options.dx', dx, 'options.dweight', dweight);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const llama = castingBits(fn, o.castingMode);
  const dtypes = act | llama | (llama !== 0 && w !== null && wdt === act && act !== DT.float32 ? LLAMA_W : 0);
  const dresidual = optTyped(fn, 'options.dresidual', o.dresidual, xa.length, 'x.length', act, dn);
  disjointOrSame(fn, 'options.dx', dx, 'options.dresidual', dresidual, true);
  disjointOrSame(fn, 'options.dweight', dweight, 'options.dresidual', dresidual, false);
  return {
    dy: dya, x: xa, weight: w, rstd, dresidual, dx, dxGiven: dx === null ? null : (o.dx as FloatArray),
    dweight, dweightGiven: dweight === null ? null : (o.dweight as FloatArray),
    rows, dim, eps: e, offset, stat, dtypes, wdt, xKind: kindOf(dy), wKind: w === null ? KIND_F32 : kindOf(weight),
  };
}

/** Whether `a` and `b` share bytes (same buffer, overlapping ranges). */
export { overlaps };

const LAYER_KEYS: readonly string[] = ['dim', 'eps', 'offset', 'partial'];

/** createRmsNorm's checked arguments. */
export interface LayerArgs {
  weight: Float32Array | null;
  dim: number;
  eps: number;
  offset: number;
  stat: number;
}

/** Checks createRmsNorm's arguments: the weight (or null), dim, eps, offset and partial, as the forward checks them. */
export function checkLayerOptions(fn: string, weight: unknown, opts: unknown): LayerArgs {
  const o = options(fn, opts, LAYER_KEYS);
  const w = weight === null || weight === undefined ? null : f32(fn, 'weight', weight);
  const dim = dimOf(fn, w, o.dim);
  return { weight: w, dim, eps: eps(fn, o.eps), offset: offsetOf(fn, o.offset, w), stat: partialOf(fn, o.partial, dim) };
}

const LAYER_BACKWARD_KEYS: readonly string[] = ['rstd'];

/** The rstd option of a layer's backward (one float per row), or null. */
export function checkLayerRstd(fn: string, opts: unknown, rows: number): Float32Array | null {
  return optF32(fn, 'options.rstd', options(fn, opts, LAYER_BACKWARD_KEYS).rstd, rows, 'one per row');
}

/** A layer call's matrix argument: a Float32Array of whole rows of `dim`; returns the row count. */
export function checkRows(fn: string, name: string, a: unknown, dim: number): number {
  return rowsOf(fn, name, f32(fn, name, a), dim);
}
