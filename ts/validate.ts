/**
 * Argument checking shared by the sync API and the pool. Everything is checked before any
 * byte is written; errors name the function, the argument, what it got and what it expected.
 * @module
 */

/** Options of {@link rmsNorm}. */
export interface RmsNormOptions {
  /** Row length (elements). Default: `weight.length`; required when `weight` is null. */
  dim?: number;
  /** Added to mean(x²) inside the square root. Default 1e-6; ≥ 0 and finite as a float32 (≤ 3.4e38). Used as float32. */
  eps?: number;
  /** Destination, `x.length` floats; may be `x` itself. Default: a new Float32Array. */
  out?: Float32Array;
  /** Receives `1/sqrt(mean(x²) + eps)` per row: `x.length / dim` floats. */
  rstd?: Float32Array;
  /**
   * Fused residual add: `x.length` floats. The row normalized is `h = x + residual`, and `h`
   * is written to `options.residualOut`, or by default **into `residual` itself** (as vLLM's
   * `fused_add_rms_norm` does): the updated residual stream. One pass forms `h` and its sum of
   * squares. Pass that `h` as `x` to the backward.
   */
  residual?: Float32Array;
  /** With `residual`: where `h = x + residual` goes, `x.length` floats; may be `x`. Default: `residual`. */
  residualOut?: Float32Array;
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
export interface RmsNormBackwardOptions {
  /** Row length (elements). Default: `weight.length`; required when `weight` is null. */
  dim?: number;
  /** As in the forward; used when `rstd` is not given. Default 1e-6. */
  eps?: number;
  /** The forward's rstd, `x.length / dim` floats. Recomputed from `x` and `eps` when absent. */
  rstd?: Float32Array;
  /** Destination of dL/dx, `x.length` floats; may be `dy` or `x` itself. Default: new. */
  dx?: Float32Array;
  /** Destination of dL/dweight, `dim` floats (only with a weight). Default: new. */
  dweight?: Float32Array;
  /**
   * Fused residual add: the gradient arriving on the residual stream `h` (the forward's
   * `residualOut`), `x.length` floats. It is added to `dx`, which is then the gradient of both
   * `x` and `residual` (the forward's add passes it to both). Pass the forward's `h` as `x`.
   */
  dresidual?: Float32Array;
  /** As in the forward (default 0); dweight keeps its form, dx uses `offset + weight`. */
  offset?: number;
  /** As in the forward (default 1): the gradient through rstd reaches only the first `k` elements. */
  partial?: number;
}

/** Result of {@link rmsNormBackward}: `dweight` is null when `weight` is null. */
export interface RmsNormBackwardResult {
  dx: Float32Array;
  dweight: Float32Array | null;
}

/** A checked forward call; its eps, offset and stat are the kernel's Params (ops.ts). */
export interface ForwardArgs {
  x: Float32Array;
  weight: Float32Array | null;
  out: Float32Array | null;
  rstd: Float32Array | null;
  /** The residual (fused add), or null. */
  residual: Float32Array | null;
  /** Where h goes: residualOut, or the residual itself; null without a residual. */
  h: Float32Array | null;
  rows: number;
  dim: number;
  eps: number;
  offset: number;
  /** Elements of a row rstd is estimated from (from `partial`). */
  stat: number;
}

/** A checked backward call; its eps, offset and stat are the kernel's Params (ops.ts). */
export interface BackwardArgs {
  dy: Float32Array;
  x: Float32Array;
  weight: Float32Array | null;
  rstd: Float32Array | null;
  dresidual: Float32Array | null;
  dx: Float32Array | null;
  dweight: Float32Array | null;
  rows: number;
  dim: number;
  eps: number;
  offset: number;
  stat: number;
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
  if (v.length === 0 && isDetached(v.buffer)) {
    throw new TypeError(
      `${fn}: ${name} is a view of a detached ArrayBuffer (a view of wasm memory is detached when the ` +
        `memory grows: call view() again)`,
    );
  }
  return v;
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

function weightOf(fn: string, weight: unknown): Float32Array | null {
  return weight === null || weight === undefined ? null : f32(fn, 'weight', weight);
}

/** The row length, checked against the weight (`w` from {@link weightOf}). */
function dimOf(fn: string, w: Float32Array | null, dimOpt: unknown): number {
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

function offsetOf(fn: string, v: unknown, w: Float32Array | null): number {
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
function disjointOrSame(fn: string, na: string, a: Float32Array | null, nb: string, b: Float32Array | null, sameOk: boolean): void {
  if (!a || !b || !overlaps(a, b)) return;
  if (sameOk && a.byteOffset === b.byteOffset && a.length === b.length) return;
  throw new RangeError(`${fn}: ${na} must not overlap ${nb}${sameOk ? ' (it may be exactly that array)' : ''}`);
}

function rowsOf(fn: string, name: string, x: Float32Array, dim: number): number {
  if (x.length % dim !== 0) {
    throw new RangeError(`${fn}: ${name}.length (${x.length}) must be a multiple of dim (${dim})`);
  }
  return x.length / dim;
}

function overlaps(a: Float32Array, b: Float32Array): boolean {
  // Each typed-array getter (buffer, byteOffset) is a call of 10-15 ns in V8 11 (Node 20):
  // read each once, byteOffsets first (buffer is the dearer one, and disjoint views of wasm
  // memory need no buffer at all). A Float32Array's byteLength is always 4 × its length.
  const ao = a.byteOffset;
  const bo = b.byteOffset;
  return ao < bo + 4 * b.length && bo < ao + 4 * a.length && a.buffer === b.buffer;
}

function distinctOutputs(fn: string, na: string, a: Float32Array | null, nb: string, b: Float32Array | null): void {
  if (a && b && overlaps(a, b)) throw new RangeError(`${fn}: ${na} and ${nb} must not overlap`);
}

const FORWARD_KEYS: readonly string[] = ['dim', 'eps', 'out', 'rstd', 'residual', 'residualOut', 'offset', 'partial'];
const BACKWARD_KEYS: readonly string[] = ['dim', 'eps', 'rstd', 'dx', 'dweight', 'dresidual', 'offset', 'partial'];

/** Checks a forward call; `extraKeys` are further option names the caller handles itself. */
export function checkForward(
  fn: string,
  x: unknown,
  weight: unknown,
  opts: unknown,
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): ForwardArgs {
  const o = options(fn, opts, FORWARD_KEYS, extraKeys);
  const xa = f32(fn, 'x', x);
  const w = weightOf(fn, weight);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  const rows = rowsOf(fn, 'x', xa, dim);
  const out = optF32(fn, 'options.out', o.out, xa.length, 'x.length');
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  distinctOutputs(fn, 'options.out', out, 'options.rstd', rstd);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const residual = optF32(fn, 'options.residual', o.residual, xa.length, 'x.length');
  if (residual === null && o.residualOut !== undefined) {
    throw new TypeError(`${fn}: options.residualOut was given without options.residual (it receives x + residual)`);
  }
  const given = optF32(fn, 'options.residualOut', o.residualOut, xa.length, 'x.length');
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
  return { x: xa, weight: w, out, rstd, residual, h, rows, dim, eps: e, offset, stat };
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
  const dya = f32(fn, 'dy', dy);
  const xa = f32(fn, 'x', x);
  const w = weightOf(fn, weight);
  const dim = dimOf(fn, w, o.dim);
  const e = eps(fn, o.eps);
  if (dya.length !== xa.length) {
    throw new RangeError(`${fn}: dy.length (${dya.length}) must equal x.length (${xa.length})`);
  }
  const rows = rowsOf(fn, 'x', xa, dim);
  const rstd = optF32(fn, 'options.rstd', o.rstd, rows, 'one per row');
  const dx = optF32(fn, 'options.dx', o.dx, xa.length, 'x.length');
  if (w === null && o.dweight !== undefined) {
    throw new TypeError(`${fn}: options.dweight was given but weight is null (there is no weight gradient)`);
  }
  const dweight = optF32(fn, 'options.dweight', o.dweight, dim, 'dim');
  distinctOutputs(fn, 'options.dx', dx, 'options.dweight', dweight);
  const offset = offsetOf(fn, o.offset, w);
  const stat = partialOf(fn, o.partial, dim);
  const dresidual = optF32(fn, 'options.dresidual', o.dresidual, xa.length, 'x.length');
  disjointOrSame(fn, 'options.dx', dx, 'options.dresidual', dresidual, true);
  disjointOrSame(fn, 'options.dweight', dweight, 'options.dresidual', dresidual, false);
  return { dy: dya, x: xa, weight: w, rstd, dresidual, dx, dweight, rows, dim, eps: e, offset, stat };
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
  const w = weightOf(fn, weight);
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
