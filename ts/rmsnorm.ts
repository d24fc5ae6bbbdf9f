/**
 * The synchronous API bound to one instantiated build: the operations (rmsNorm,
 * rmsNormBackward), createLayer, allocF32.
 *
 * Every call is: check (its operation's module, operations/), place (placement/placer.ts), run
 * the kernel on each segment (the operation's `span`), finish. See docs/architecture.md.
 * @module
 */
import { checkAbi, type LoadedWasm } from './glue/load.js';
import type { Build } from './types.js';
import { RmsNormLayer } from './layer.js';
import { heapOf, Scratch, type DataBuffer, type Heap, type F32Buffer, type U16Buffer } from './glue/memory.js';
import type { Call, Data, Op, Params, ShortWay } from './call/op.js';
import { Operations } from './generated/operations.js';
import { BY_CODE } from './glue/dtypes.js';
import { Dtype as DT } from './generated/abi.js';
import { CALL_WORDS, CallBlock } from './call/call-block.js';
import { ShortBackward } from './call/short-ways/backward.js';
import { ShortForward } from './call/short-ways/forward.js';
import { WindowCalls } from './call/short-ways/window-calls.js';
import { Placer, SYNC_WINDOW_FLOATS, type WindowRules } from './call/placement/placer.js';
import { checkStatus } from './glue/status.js';
import { resultArray } from './glue/platform.js';
import { checkLength } from './call/check/arrays.js';
import { checkConvertInput, convertOut, type ConvertOptions } from './call/check/convert.js';
import { halfDtypeCode } from './call/check/scalars.js';
import type { FloatArray, HalfBits, HalfDtype, RmsNormLayerOptions, QuantDtype } from './types.js';

/** The sync API's window rules: segments of any row count (the backward carries its open dweight block). */
const syncRules = (floats: number): WindowRules => ({
  floats,
  rowAlign: () => 1,
  work: (op, _rows, dim, arrs) => op.syncWork(dim, arrs),
  external: false,
});

/**
 * The sync API over one instantiated build (the package's top-level functions use one): the
 * operations' methods (rmsNorm, rmsNormBackward: {@link Operations}, generated) and the rest.
 */
export class RmsNorm extends Operations {
  /** Which build this is. */
  readonly build: Build;
  /** The instantiated module: its memory (what views of it are over), raw exports and compiled module. */
  readonly wasm: LoadedWasm;
  readonly #heap: Heap;
  private readonly window: Scratch;
  private readonly placer: Placer;
  /** This instance's call block (call-block.ts): every kernel call of this thread reads it. */
  private readonly block: CallBlock;
  /** Small float32 calls in one piece through the window (short-ways/window-calls.ts). */
  readonly #windowCalls: WindowCalls;
  /** The short ways of the one-off calls (short-ways/), by operation id (none: the general way only). */
  readonly #shorts: readonly (ShortWay | undefined)[];

  /**
   * An instance over a loaded module. Use {@link loadRmsNorm} / {@link init}, which make one
   * per build; this constructor is for measuring other window sizes (bench/window.ts).
   * @param windowFloats The plain-array window's size in floats (default 65536, 256 KiB).
   */
  constructor(wasm: LoadedWasm, windowFloats = SYNC_WINDOW_FLOATS) {
    super();
    checkAbi(wasm.build, wasm.exports);
    this.wasm = wasm;
    this.build = wasm.build;
    this.#heap = heapOf(wasm);
    this.window = new Scratch(this.#heap);
    // Taken now, so that a call on plain arrays never grows the memory (which would detach
    // the caller's views of non-shared memory) unless one segment needs more.
    this.window.carveOne(windowFloats);
    this.placer = new Placer(this.#heap, this.window, syncRules(windowFloats));
    this.block = new CallBlock(this.#heap.alloc(CALL_WORDS));
    this.#windowCalls = new WindowCalls(this.#heap, this.window, windowFloats, this.block, wasm.exports);
    this.#shorts = [
      new ShortForward(this.#heap, this.block, wasm.exports, this.#windowCalls),
      new ShortBackward(this.#heap, this.block, wasm.exports, this.window, windowFloats, this.#windowCalls),
    ];
  }

  /**
   * A call of operation `op` with its positional arguments: its short way when it takes the
   * call, else checked and run the general way. @internal
   */
  protected callOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown): unknown {
    const short = this.#shorts[op.id];
    const r = short?.run(fn, a, b, c, d, false);
    if (r !== undefined) return r;
    return this.runChecked(fn, op.call(op.check(fn, a, b, c, d)));
  }

  /**
   * Operation `op`'s short way for the pool's inline calls: the result, or undefined (nothing
   * done) for a call it does not take. `shared`: a new result in a SharedArrayBuffer. @internal
   */
  shortWay(op: Op, fn: string, a: unknown, b: unknown, c: unknown, d: unknown, shared: boolean): unknown {
    return this.#shorts[op.id]?.run(fn, a, b, c, d, shared);
  }

  /**
   * A checked call of any operation (op.ts's `Call`), run on this thread: the sync API's
   * calls, the layer's and the pool's inline ones; `fn` names the call in errors. @internal
   */
  runChecked<R>(fn: string, c: Call<R>): R {
    return c.rows === 0 ? c.empty() : this.run(fn, c);
  }

  /**
   * A layer's forward of a plain float32 `x` (rows × q.dim; the layer checked it) with no
   * options, in one piece through the window (short-ways/window-calls.ts), the weight at byte `wAt`
   * (0: none): false (nothing done) when it does not fit. @internal
   */
  windowForward(x: Float32Array, wAt: number, q: Params, y: Float32Array, rstd: Float32Array): boolean {
    return this.#windowCalls.forward('layer.forward', x, null, wAt, q, y, rstd);
  }

  /** Places a checked call and runs its operation on each segment of rows: copy in, kernel, copy out. */
  private run<R>(fn: string, c: Call<R>): R {
    const { op, rows, params: q } = c;
    const p = this.placer.place(fn, op, c.arrs, rows, q, c.fresh);
    const k = this.wasm.exports;
    const b = this.block;
    b.params(this.#heap.i32(), this.#heap.f32(), q);
    for (let s = 0, e = 0; s < rows; s = e) {
      e = p.segment(s);
      p.copyIn(s, e);
      // A kernel may grow the memory (the scratch of a long row), which detaches a non-shared
      // memory's views: the view is asked for again each segment (the same one unless it grew).
      b.addrs(this.#heap.i32(), p.addrs, op.addrs);
      checkStatus(fn, op.span(k, b.at, s, e - s, rows));
      p.copyOut(s, e);
    }
    p.finish(fn);
    return c.result(p);
  }

  /**
   * An RMSNorm bound to `weight` (copied into this module's memory; `null` for none) and
   * options, owning its outputs: see {@link RmsNormLayer}.
   * @param options `dim` (default `weight.length`), `eps` (default 1e-6), `offset`, `partial`,
   *   `dtype` (the activations', default 'float32'), `weightDtype`, `castingMode`: see
   *   {@link RmsNormLayerOptions}.
   */
  createLayer<W extends FloatArray = Float32Array, Q extends QuantDtype | undefined = undefined>(
    weight: W | null,
    options?: RmsNormLayerOptions<Q>,
  ): RmsNormLayer<W, Q> {
    return new RmsNormLayer<W, Q>(this, weight, options);
  }

  /**
   * Allocates `length` floats inside this module's memory. Views of it are used in place by
   * every call (the zero-copy path). Free it when done; memory is not garbage-collected.
   */
  allocF32(length: number): F32Buffer {
    return this.#heap.allocBuffer(checkLength('allocF32', length, 4));
  }

  /** Half bit patterns to float32 values, exactly: see the top-level {@link halfToFloat32}. */
  halfToFloat32(bits: HalfBits, dtype: HalfDtype, options?: ConvertOptions<Float32Array>): Float32Array {
    const fn = 'halfToFloat32';
    const dt = halfDtypeCode(fn, dtype);
    const src = checkConvertInput<HalfBits>(fn, bits, dt);
    return this.toFloat32(src, dt, convertOut<Float32Array>(fn, options, src, DT.float32) ?? resultArray(src.length), fn);
  }

  /** float32 values to half bit patterns, nearest even: see the top-level {@link float32ToHalf}. */
  float32ToHalf(x: Float32Array, dtype: HalfDtype, options?: ConvertOptions<HalfBits>): HalfBits {
    const fn = 'float32ToHalf';
    const dt = halfDtypeCode(fn, dtype);
    const src = checkConvertInput<Float32Array>(fn, x, DT.float32);
    const out = convertOut<HalfBits>(fn, options, src, dt) ?? (new BY_CODE[dt]!.Array(src.length) as HalfBits);
    return this.fromFloat32(src, dt, out, fn);
  }

  /**
   * `src` (elements of storage dtype `dt`, an abi.ts Dtype code, in the array of its facts)
   * widened into `out` (as many floats, apart from `src`), exactly; returns `out`. Unchecked:
   * the file functions' conversions, and {@link halfToFloat32}'s after its checks. @internal
   */
  toFloat32(src: Data, dt: number, out: Float32Array, fn = 'toFloat32'): Float32Array {
    this.convert(src, out, dt, true, fn);
    return out;
  }

  /** `src` rounded (nearest even) into `out`, elements of dtype `dt`: the inverse of {@link toFloat32}. @internal */
  fromFloat32<T extends Data>(src: Float32Array, dt: number, out: T, fn = 'fromFloat32'): T {
    this.convert(src, out, dt, false, fn);
    return out;
  }

  /** Converts through the window, a chunk at a time: its first 2/3 for floats, the rest for the elements. */
  private convert(src: Data, dst: Data, dt: number, widen: boolean, fn: string): void {
    const chunk = Math.floor(SYNC_WINDOW_FLOATS / 3) & ~7;
    const base = this.window.carveOne(SYNC_WINDOW_FLOATS);
    const elemsAt = base + 8 * chunk; // past 2·chunk floats: room for chunk elements of up to 4 bytes
    const { Array: Type, bytes } = BY_CODE[dt]!;
    const k = this.wasm.exports;
    for (let i = 0; i < src.length; i += chunk) {
      const n = Math.min(chunk, src.length - i);
      const part = src.subarray(i, i + n);
      const elems = this.#heap.view(Type);
      if (widen) {
        elems.set(part, elemsAt / bytes);
        checkStatus(fn, k.widen(elemsAt, base, n, dt));
        dst.set(this.#heap.f32().subarray(base >>> 2, (base >>> 2) + n), i);
      } else {
        this.#heap.f32().set(part, base >>> 2);
        checkStatus(fn, k.narrow(base, elemsAt, n, dt));
        dst.set(elems.subarray(elemsAt / bytes, elemsAt / bytes + n), i);
      }
    }
  }

  /**
   * Allocates `length` 16-bit elements inside this module's memory, for half-precision data
   * (bfloat16 or float16 bit patterns; wrap a view as a Float16Array where the engine has one):
   * used in place like {@link allocF32}'s. Free it when done.
   */
  allocU16(length: number): U16Buffer {
    return this.#heap.allocBuffer16(checkLength('allocU16', length, 2));
  }

  /** `length` elements of storage dtype `dt` (an abi.ts Dtype code) inside this module's memory, viewed as the array of its facts; `fn` names the call in errors. @internal */
  allocOf(fn: string, dt: number, length: number): DataBuffer<Data> {
    return this.#heap.allocArray(fn, checkLength(fn, length, BY_CODE[dt]!.bytes), BY_CODE[dt]!.Array) as DataBuffer<Data>;
  }
}

