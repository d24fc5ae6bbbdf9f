/**
 * The call to repeat: an RMSNorm bound to its weight and options that owns its outputs. The
 * common loop — same weight, every layer, every token — then allocates nothing per call: no
 * result array (a fresh large one is zero pages the first writes fault in, which in a browser
 * costs more than the normalization), no weight copy (the weight lives in wasm memory), no
 * options object to check.
 * @module
 */
import type { DataBuffer } from './glue/memory.js';
import { DTYPE_NAMES, isJsArray, rowsOf, typed } from './call/check/arrays.js';
import { checkLayerBackward, checkLayerForward, checkLayerOptions, noBackward } from './call/check/layer-calls.js';
import { gateModeOf } from './call/check/params.js';
import { Dtype as DT } from './generated/abi.js';
import { BY_CODE } from './glue/dtypes.js';
import type { Call, Data, Params, Placed } from './call/op.js';
import { B, BACKWARD } from './call/operations/backward.js';
import { F, FORWARD, rowScalesOf } from './call/operations/forward.js';
import type { Dtype, FloatArray, GateMode, QuantDtype, RmsNormBackwardResult, RmsNormLayerBackwardOptions, RmsNormLayerForwardOptions, RmsNormOutput } from './types.js';
import { Owned } from './call/layer-outputs.js';
import { jsArrayOver } from './glue/platform.js';

/**
 * What a layer needs of the instance it runs on (rmsnorm.ts's RmsNorm): memory for its weight
 * and the forward / backward of checked arguments. A type of its own, so that this module does
 * not import rmsnorm.ts, which creates layers. @internal
 */
interface LayerHost {
  allocOf(fn: string, dt: number, length: number): DataBuffer<Data>;
  runChecked<R>(fn: string, c: Call<R>): R;
  windowForward(x: Float32Array, wAt: number, q: Params, y: Float32Array, rstd: Float32Array): boolean;
}

/**
 * RMSNorm bound to a weight, `eps` and row length, owning its outputs; see
 * {@link createRmsNorm}. Results are arrays the layer reuses: **valid until the next call of
 * the same method** on this layer (copy them, e.g. `y.slice()`, to keep them longer). The
 * bits are those of the one-off {@link rmsNorm} / {@link rmsNormBackward} calls with the same
 * options. `W` is the weight's array type (and dweight's).
 */
export class RmsNormLayer<W extends FloatArray = Float32Array, Q extends QuantDtype | undefined = undefined> {
  /** Row length (elements). */
  readonly dim: number;
  /** eps, inside the root. */
  readonly eps: number;
  /** Added to the weight (0: none). */
  readonly offset: number;
  /** Elements of each row rstd is estimated from (`dim` unless `partial` was given). */
  readonly stat: number;
  /** The activations' storage. */
  readonly dtype: Dtype;
  /** The weight's (and dweight's) storage. */
  readonly weightDtype: Dtype;
  /** Where a gate multiplies (calls given `options.gate`). */
  readonly gateMode: GateMode;
  /** The quantized output's dtype, or null: the output has the layer's dtype. */
  readonly outDtype: QuantDtype | null;
  /** The static scale of a quantized output, or null: a scale per row ({@link rowScales}). */
  readonly quantScale: number | null;
  /** The kernel's parameters, checked once at creation: of a call without a gate, and with one. */
  private readonly params: Params;
  /** An option only a forward has that the layer was made with: then it has no backward. */
  private readonly forwardOnly: string | undefined;
  private readonly gated: Params;
  private readonly act: number;
  private readonly wdt: number;
  /** What its calls' arrays are checked against: the dtypes and the row length. */
  private readonly shape: { act: number; wdt: number; dim: number };
  private readonly rn: LayerHost;
  private w: DataBuffer<Data> | null;
  private wView: Data | null = null;
  private readonly y: Owned;
  private readonly rstdOut = new Owned(DT.float32);
  private readonly scalesOut = new Owned(DT.float32);
  private readonly dx: Owned;
  private readonly dgate: Owned;
  /** dweight, in the weight's storage and of the type the weight was given as. */
  private readonly dw: { placed: Data; given: FloatArray } | null;
  private freed = false;

  /** @internal Use {@link createRmsNorm} or `RmsNorm.createLayer`. */
  constructor(rn: LayerHost, weight: unknown, options: unknown) {
    const o = checkLayerOptions('createRmsNorm', weight, options);
    this.rn = rn;
    this.dim = o.dim;
    this.params = o.params;
    this.forwardOnly = o.forwardOnly;
    this.gated = o.gated;
    this.gateMode = gateModeOf(o.gated.gate);
    this.eps = o.params.eps;
    this.offset = o.params.offset;
    this.stat = o.params.stat;
    this.act = o.act;
    this.wdt = o.params.wdt;
    this.shape = { act: o.act, wdt: o.params.wdt, dim: o.dim };
    this.dtype = DTYPE_NAMES[o.act]!;
    this.weightDtype = DTYPE_NAMES[this.wdt]!;
    const q = o.params.out_dtype;
    this.outDtype = q === 0 ? null : (BY_CODE[q]!.name as QuantDtype);
    this.quantScale = q === 0 || o.params.quant_scale === 0 ? null : o.params.quant_scale;
    this.y = new Owned(q === 0 ? o.act : q);
    this.dx = new Owned(o.act);
    this.dgate = new Owned(o.act);
    if (o.weight) {
      this.w = rn.allocOf('createRmsNorm', this.wdt, o.dim);
      this.weight()!.set(o.weight as never);
      const placed = new (BY_CODE[this.wdt]!.Array as new (n: number) => Data)(o.dim);
      this.dw = { placed, given: (isJsArray(weight) ? jsArrayOver(placed, this.wdt) : placed) as FloatArray };
    } else {
      this.w = null;
      this.dw = null;
    }
  }

  /**
   * Forward over `x` (`rows × dim` elements of the layer's `dtype`, any number of rows).
   * Returns the layer's output array (`x.length` elements, of `x`'s type), valid until the
   * next `forward` — or `options.out`; {@link rstd} then holds one rstd per row.
   * @param options `out` (where y goes), `residual` and `residualOut` (the fused residual add,
   *   as {@link rmsNorm}'s): see {@link RmsNormLayerForwardOptions}. Unknown keys are a TypeError.
   * @throws TypeError / RangeError on a bad `x` or option, before anything is written.
   */
  forward<T extends FloatArray = Float32Array>(x: T, options?: RmsNormLayerForwardOptions<T, Q>): RmsNormOutput<T, Q> {
    // The common call — plain float32 rows, no options — the short way (no placement).
    if (options === undefined && (this.act | this.params.out_dtype) === DT.float32 && x instanceof Float32Array && !this.freed) {
      const n = x.length;
      if (n !== 0 && n % this.dim === 0) {
        const rstd = this.rstdOut.take(n / this.dim) as Float32Array;
        const y = this.y.take(n) as Float32Array;
        const w = this.weight();
        if (this.rn.windowForward(x, w === null ? 0 : w.byteOffset, this.params, y, rstd)) return y as RmsNormOutput<T, Q>;
      }
    }
    const xa = this.rows('forward', 'x', x);
    const rows = xa.length / this.dim;
    const rstd = this.rstdOut.take(rows) as Float32Array;
    const weight = this.weight();
    const params = this.params;
    const perRow = params.out_dtype !== 0 && params.quant_scale === 0;
    const rowScales = rowScalesOf('layer.forward', perRow ? this.scalesOut.take(rows) : undefined, params, rows);
    const f = checkLayerForward('layer.forward', options, xa, this.shape, weight, rstd, rowScales, this.y, params.out_dtype);
    const { dim } = this;
    // The outputs are the layer's own plain arrays: apart from x unless x is one of them (a
    // result passed back in), which one buffer read tells; and apart from the inputs given
    // (a residual's h is the caller's). Arrays the caller gives are checked.
    const xb = xa.buffer;
    const outputsApart = f.outGiven === null && f.arrs[F.residual] === null && xb !== this.y.buffer && xb !== this.rstdOut.buffer && xb !== this.scalesOut.buffer;
    const xJs = xa !== x; // typed() saw JavaScript's own array through a view of its bits
    const a = { arrs: f.arrs, x: xa, outGiven: f.outGiven ?? f.arrs[F.y]!, rows, dim, params: f.arrs[F.z] ? this.gated : params, xJs, outputsApart };
    this.rn.runChecked('layer.forward', FORWARD.call(a));
    // A quantized output is its own dtype's array whatever x's (no Float16Array over it).
    return (f.outGiven ?? this.y.given(xJs && params.out_dtype === 0)) as RmsNormOutput<T, Q>;
  }

  /**
   * The scale of each row of the last {@link forward} of a layer with a quantized output and
   * no `quantScale` (`rows` floats: dequantized, `y ≈ q · rowScales[row]`), valid until the
   * next one; an empty array otherwise.
   */
  get rowScales(): Float32Array {
    this.live('rowScales');
    return this.scalesOut.last as Float32Array;
  }

  /** The rstd of each row of the last {@link forward} (valid until the next one). */
  get rstd(): Float32Array {
    this.live('rstd');
    return this.rstdOut.last as Float32Array;
  }

  /**
   * Backward for `dy` and the forward's input `x` (both `rows × dim`, of the layer's `dtype`).
   * Returns the layer's `dx` (of `dy`'s type) and `dweight` (the weight's dtype and type; null
   * without a weight), valid until the next `backward`.
   * @param options `rstd`: the forward's (`layer.rstd`), else recomputed from `x`;
   *   `dresidual`: the gradient on the residual stream of a fused residual add, added to `dx`
   *   (see {@link RmsNormLayerBackwardOptions}). Unknown keys are a TypeError.
   * @throws TypeError / RangeError on bad arguments, before anything is written.
   */
  backward<T extends FloatArray = Float32Array>(dy: T, x: T, options?: RmsNormLayerBackwardOptions<T>): RmsNormBackwardResult<T, W> {
    noBackward('layer.backward', this.forwardOnly);
    const xa = this.rows('backward', 'x', x);
    const dya = this.rows('backward', 'dy', dy);
    if (dya.length !== xa.length) throw new RangeError(`layer.backward: dy.length (${dya.length}) must equal x.length (${xa.length})`);
    const rows = xa.length / this.dim;
    const weight = this.w ? this.weight() : null;
    const { dim } = this;
    const dweight = this.dw?.placed ?? null;
    const arrs = checkLayerBackward('layer.backward', options, dya, xa, this.shape, rows, weight, this.dx, dweight, this.dgate);
    const gate = arrs[B.z] ?? null;
    // dx, dweight and dgate are the layer's own: apart unless an input is one of its arrays.
    const outputsApart = !this.owns(dya.buffer) && !this.owns(xa.buffer) && (options === undefined || !this.ownsAny(arrs));
    const xJs = dya !== dy;
    const a = {
      arrs, x: xa, dxGiven: arrs[B.dx] as Data, dweightGiven: dweight, dgateGiven: (arrs[B.dz] ?? null) as Data | null,
      rows, dim, params: gate ? this.gated : this.params, xJs, wJs: false, outputsApart,
    };
    this.rn.runChecked('layer.backward', BACKWARD.call(a));
    const r: RmsNormBackwardResult<T, W> = { dx: this.dx.given(xJs) as T, dweight: (this.dw?.given ?? null) as W | null };
    if (gate) r.dgate = this.dgate.given(xJs) as T;
    return r;
  }

  /** Replaces the weight's values (`dim` elements of the weight's dtype; the layer was created with a weight). */
  setWeight(weight: W): void {
    this.live('setWeight');
    if (!this.w) throw new TypeError('layer.setWeight: this layer was created without a weight');
    const w = typed('layer.setWeight', 'weight', weight, this.wdt, "the layer's weightDtype");
    if (w.length !== this.dim) throw new RangeError(`layer.setWeight: weight.length must be ${this.dim} (dim), got ${w.length}`);
    this.weight()!.set(w as never);
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

  /** Whether an input of the backward's arrays `arrs` but the weight (the layer's) is one of the layer's own arrays. */
  private ownsAny(arrs: readonly (Placed | null)[]): boolean {
    return BACKWARD.operands.some((o, i) => !o.out && i !== B.weight && arrs[i] != null && this.owns(arrs[i]!.buffer));
  }

  /** Whether `b` is the buffer of one of the layer's own arrays (its outputs, dweight). */
  private owns(b: ArrayBufferLike): boolean {
    return (
      b === this.dx.buffer || b === this.dgate.buffer || b === this.y.buffer || b === this.rstdOut.buffer || b === this.scalesOut.buffer ||
      (this.dw !== null && b === this.dw.placed.buffer)
    );
  }

  /** `a` checked: of the layer's dtype (as the array of its facts), a whole number of rows. */
  private rows(fn: string, name: string, a: unknown): Data {
    this.live(fn);
    const d = typed(`layer.${fn}`, name, a, this.act, "the layer's dtype");
    rowsOf(`layer.${fn}`, name, d, this.dim);
    return d;
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
  private weight(): Data | null {
    if (this.w === null) return null;
    if (this.wView === null || this.wView.length === 0) this.wView = this.w.view();
    return this.wView;
  }
}
