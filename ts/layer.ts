/**
 * The call to repeat: an RMSNorm bound to its weight and options that owns its outputs. The
 * common loop — same weight, every layer, every token — then allocates nothing per call: no
 * result array (a fresh large one is zero pages the first writes fault in, which in a browser
 * costs more than the normalization), no weight copy (the weight lives in wasm memory), no
 * options object to check.
 * @module
 */
import type { F32Buffer } from './memory.js';
import { checkRows, describe, KIND_F32 } from './check/arrays.js';
import { checkLayerOptions, checkLayerRstd, type BackwardArgs, type ForwardArgs } from './check/calls.js';
import type { Params } from './ops.js';
import type { FloatArray, RmsNormBackwardResult } from './types.js';

/**
 * What a layer needs of the instance it runs on (rmsnorm.ts's RmsNorm): memory for its weight
 * and the forward / backward of checked arguments. A type of its own, so that this module does
 * not import rmsnorm.ts, which creates layers. @internal
 */
export interface LayerHost {
  allocF32(length: number): F32Buffer;
  forwardChecked(a: ForwardArgs, fn: string): FloatArray;
  backwardChecked(a: BackwardArgs, fn: string): RmsNormBackwardResult<FloatArray, FloatArray>;
}

/** Options of {@link RmsNormLayer}'s creation. */
export interface RmsNormLayerOptions {
  /** Row length. Default `weight.length`; required when `weight` is null. */
  dim?: number;
  /** Added to mean(x²) inside the root. Default 1e-6; ≥ 0 and finite as a float32. */
  eps?: number;
  /** Added to the weight: the gain is `offset + weight` (Gemma: 1). Default 0. */
  offset?: number;
  /** pRMSNorm: rstd from the first `ceil(partial · dim)` elements of each row, `0 < partial ≤ 1`. Default 1. */
  partial?: number;
}

/** Options of {@link RmsNormLayer.backward}. */
export interface RmsNormLayerBackwardOptions {
  /** The forward's rstd (e.g. `layer.rstd` right after `forward(x)`); recomputed when absent. */
  rstd?: Float32Array;
}

/**
 * RMSNorm bound to a weight, `eps` and row length, owning its outputs; see
 * {@link createRmsNorm}. Results are arrays the layer reuses: **valid until the next call of
 * the same method** on this layer (copy them, e.g. `y.slice()`, to keep them longer). The
 * bits are those of the one-off {@link rmsNorm} / {@link rmsNormBackward} calls.
 */
export class RmsNormLayer {
  /** Row length (floats). */
  readonly dim: number;
  /** eps, inside the root. */
  readonly eps: number;
  /** Added to the weight (0: none). */
  readonly offset: number;
  /** Elements of each row rstd is estimated from (`dim` unless `partial` was given). */
  readonly stat: number;
  /** The kernel's scalars, checked once at creation. */
  private readonly params: Params;
  private readonly rn: LayerHost;
  private w: F32Buffer | null;
  private wView: Float32Array | null = null;
  private readonly y = new Owned();
  private readonly rstdOut = new Owned();
  private readonly dx = new Owned();
  private dw: Float32Array | null;
  private freed = false;

  /** @internal Use {@link createRmsNorm} or `RmsNorm.createLayer`. */
  constructor(rn: LayerHost, weight: unknown, options: unknown) {
    const o = checkLayerOptions('createRmsNorm', weight, options);
    this.rn = rn;
    this.dim = o.dim;
    this.params = o.params;
    this.eps = o.params.eps;
    this.offset = o.params.offset;
    this.stat = o.params.stat;
    this.w = o.weight ? rn.allocF32(o.dim) : null;
    this.dw = o.weight ? new Float32Array(o.dim) : null;
    if (o.weight) this.weight()!.set(o.weight);
  }

  /**
   * Forward over `x` (`rows × dim`, any number of rows). Returns the layer's output array
   * (`x.length` floats), valid until the next `forward`; {@link rstd} then holds one rstd per row.
   * @throws TypeError / RangeError on a bad `x`, before anything is written.
   */
  forward(x: Float32Array): Float32Array {
    const rows = this.rows('forward', 'x', x);
    const y = this.y.take(x.length);
    const rstd = this.rstdOut.take(rows);
    const { dim, params } = this;
    // The outputs are the layer's own plain arrays: apart from x unless x is one of them (a
    // result passed back in), which one buffer read tells.
    const xb = x.buffer;
    const outputsApart = xb !== this.y.buffer && xb !== this.rstdOut.buffer;
    const a = { x, weight: this.weight(), out: y, outGiven: y, rstd, residual: null, h: null, rows, dim, params, xKind: KIND_F32, outputsApart };
    return this.rn.forwardChecked(a, 'layer.forward') as Float32Array;
  }

  /** The rstd of each row of the last {@link forward} (valid until the next one). */
  get rstd(): Float32Array {
    this.live('rstd');
    return this.rstdOut.last;
  }

  /**
   * Backward for `dy` and the forward's input `x` (both `rows × dim`). Returns the layer's
   * `dx` and `dweight` (null without a weight), valid until the next `backward`.
   * @param options `rstd`: the forward's (`layer.rstd`), else recomputed from `x`.
   * @throws TypeError / RangeError on bad arguments, before anything is written.
   */
  backward(dy: Float32Array, x: Float32Array, options?: RmsNormLayerBackwardOptions): RmsNormBackwardResult {
    const rows = this.rows('backward', 'x', x);
    this.rows('backward', 'dy', dy);
    if (dy.length !== x.length) throw new RangeError(`layer.backward: dy.length (${dy.length}) must equal x.length (${x.length})`);
    const rstd = checkLayerRstd('layer.backward', options, rows);
    const dx = this.dx.take(x.length);
    const weight = this.w ? this.weight() : null;
    const { dim, params } = this;
    const dweight = this.dw;
    // dx and dweight are the layer's own: apart unless an input is one of its arrays.
    const outputsApart = !this.owns(dy.buffer) && !this.owns(x.buffer) && (rstd === null || !this.owns(rstd.buffer));
    const a = {
      dy, x, weight, rstd, dresidual: null, dx, dxGiven: dx, dweight, dweightGiven: dweight,
      rows, dim, params, xKind: KIND_F32, wKind: KIND_F32, outputsApart,
    };
    return this.rn.backwardChecked(a, 'layer.backward') as RmsNormBackwardResult;
  }

  /** Replaces the weight's values (`dim` floats; the layer was created with a weight). */
  setWeight(weight: Float32Array): void {
    this.live('setWeight');
    if (!this.w) throw new TypeError('layer.setWeight: this layer was created without a weight');
    if (!ArrayBuffer.isView(weight) || !(weight instanceof Float32Array) || weight.length !== this.dim) {
      throw new TypeError(`layer.setWeight: weight must be a Float32Array of ${this.dim} floats, got ${describe(weight)}`);
    }
    this.weight()!.set(weight);
  }

  /** Gives the weight's wasm memory back; the layer throws afterwards. */
  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.w?.free();
    this.w = null;
    this.wView = null;
  }

  /** free(), for `using layer = createRmsNorm(w)`. */
  [Symbol.dispose](): void {
    this.free();
  }

  /** Whether `b` is the buffer of one of the layer's own arrays (its outputs, dweight). */
  private owns(b: ArrayBufferLike): boolean {
    return b === this.dx.buffer || b === this.y.buffer || b === this.rstdOut.buffer || (this.dw !== null && b === this.dw.buffer);
  }

  /** Rows of `a`, checked: a Float32Array whose length is a multiple of dim. */
  private rows(fn: string, name: string, a: unknown): number {
    this.live(fn);
    return checkRows(`layer.${fn}`, name, a, this.dim);
  }

  /** Throws a TypeError when the layer was freed: its weight's memory may belong to something else now. */
  private live(fn: string): void {
    if (this.freed) {
      throw new TypeError(`layer.${fn}: this layer was freed (free() or the end of its \`using\` block); create a new one with createRmsNorm`);
    }
  }

  /**
   * The weight's view of wasm memory (null without a weight), re-made when the memory grew:
   * growth detaches the views of non-shared memory, and a detached view has length 0.
   */
  private weight(): Float32Array | null {
    if (this.w === null) return null;
    if (this.wView === null || this.wView.length === 0) this.wView = this.w.view();
    return this.wView;
  }
}

/**
 * An output array the layer reuses: it grows to the largest size asked for, and a smaller
 * size is a view of its start (kept while the size repeats), so alternating shapes do not
 * allocate either.
 */
class Owned {
  private backing = new Float32Array(0);
  /** The backing array's buffer: every array handed out is a view of it. */
  buffer: ArrayBufferLike = this.backing.buffer;
  /** The array last handed out. */
  last = new Float32Array(0);

  take(n: number): Float32Array {
    if (this.last.length === n) return this.last;
    if (this.backing.length < n) {
      this.backing = new Float32Array(n);
      this.buffer = this.backing.buffer;
    }
    this.last = n === this.backing.length ? this.backing : this.backing.subarray(0, n);
    return this.last;
  }
}
