/**
 * The synchronous API bound to one instantiated build: rmsNorm, rmsNormBackward,
 * createLayer, allocF32.
 *
 * Every call is: validate (validate.ts), place (place.ts), run the kernel on each segment
 * (ops.ts), finish. See docs/architecture.md.
 * @module
 */
import { resultArray } from './platform.js';
import type { Build, LoadedWasm } from './load.js';
import { RmsNormLayer, type RmsNormLayerOptions } from './layer.js';
import { Heap, Scratch, type F32Buffer } from './memory.js';
import { BACKWARD, FORWARD, type Op, type Params } from './ops.js';
import { Placer, SYNC_WINDOW_FLOATS, type Placement, type WindowRules } from './place.js';
import { checkStatus } from './status.js';
import {
  checkBackward,
  checkForward,
  type BackwardArgs,
  type ForwardArgs,
  type RmsNormBackwardOptions,
  type RmsNormBackwardResult,
  type RmsNormOptions,
} from './validate.js';

/** The sync API's window rules: segments of any row count (the backward carries its open dweight block). */
const syncRules = (floats: number): WindowRules => ({
  floats,
  rowAlign: () => 1,
  work: (op, _rows, dim, arrs) => op.syncWork(dim, arrs),
});

/** The sync API over one instantiated build (the package's top-level functions use one). */
export class RmsNorm {
  /** Which build this is. */
  readonly build: Build;
  /** The instantiated module: its memory (what views of it are over), raw exports and compiled module. */
  readonly wasm: LoadedWasm;
  /** @internal */
  readonly heap: Heap;
  private readonly window: Scratch;
  private readonly placer: Placer;

  /**
   * An instance over a loaded module. Use {@link loadRmsNorm} / {@link init}, which make one
   * per build; this constructor is for measuring other window sizes (bench/window.ts).
   * @param windowFloats The plain-array window's size in floats (default 65536, 256 KiB).
   */
  constructor(wasm: LoadedWasm, windowFloats = SYNC_WINDOW_FLOATS) {
    this.wasm = wasm;
    this.build = wasm.build;
    this.heap = new Heap(wasm);
    this.window = new Scratch(this.heap);
    // Taken now, so that a call on plain arrays never grows the memory (which would detach
    // the caller's views of non-shared memory) unless one segment needs more.
    this.window.carveOne(windowFloats);
    this.placer = new Placer(this.heap, this.window, syncRules(windowFloats));
  }

  /**
   * RMSNorm forward: for each row `x_r` of length `dim`,
   * `y_r = x_r · rstd_r · weight` with `rstd_r = 1/sqrt(mean(x_r²) + eps)`.
   *
   * @param x `rows × dim` floats, row-major.
   * @param weight The gain, `dim` floats, or null for none (g = 1).
   * @param options `dim` (default weight.length), `eps` (default 1e-6), `out`, `rstd`.
   * @returns `options.out` if given, else a new Float32Array of `x.length`.
   * @throws TypeError / RangeError on bad arguments, before anything is written.
   */
  rmsNorm(x: Float32Array, weight: Float32Array | null, options?: RmsNormOptions): Float32Array {
    return this.forwardChecked(checkForward('rmsNorm', x, weight, options));
  }

  /** The forward of arguments already checked by checkForward (the pool's inline path). @internal */
  forwardChecked(a: ForwardArgs, fn = 'rmsNorm'): Float32Array {
    const y = a.out ?? resultArray(a.x.length);
    if (a.rows === 0) return y;
    const p = this.run(fn, FORWARD, [a.x, a.residual, a.weight, y, a.h, a.rstd], a.rows, a.dim, a, a.out ? 0 : 1 << 3);
    return p.result(3, y);
  }

  /**
   * RMSNorm backward. With `gy = dy ⊙ weight`:
   * `dx = rstd · (gy − x · rstd² · mean(gy ⊙ x))` per row and `dweight = Σ_rows dy ⊙ x · rstd`,
   * the latter summed in float32 per block of 32 rows and the blocks added in order (the
   * same bits as the worker pool gives with any number of threads).
   *
   * @param dy Gradient of the loss w.r.t. the forward's output, `rows × dim`.
   * @param x The forward's input, `rows × dim`.
   * @param weight The gain, `dim` floats, or null (then `dweight` is null).
   * @param options `dim`, `eps` (default 1e-6), `rstd` (from the forward; recomputed when
   *   absent), `dx` (may be `dy` or `x`), `dweight`.
   * @throws TypeError / RangeError on bad arguments, before anything is written.
   */
  rmsNormBackward(
    dy: Float32Array,
    x: Float32Array,
    weight: Float32Array | null,
    options?: RmsNormBackwardOptions,
  ): RmsNormBackwardResult {
    return this.backwardChecked(checkBackward('rmsNormBackward', dy, x, weight, options));
  }

  /** The backward of arguments already checked by checkBackward (the pool's inline path). @internal */
  backwardChecked(a: BackwardArgs, fn = 'rmsNormBackward'): RmsNormBackwardResult {
    const dx = a.dx ?? resultArray(a.x.length);
    const dweight = a.weight ? (a.dweight ?? new Float32Array(a.dim)) : null;
    if (a.rows === 0) {
      dweight?.fill(0);
      return { dx, dweight };
    }
    const fresh = (a.dx ? 0 : 1 << 5) | (a.weight && !a.dweight ? 1 << 6 : 0);
    const p = this.run(fn, BACKWARD, [a.dy, a.x, a.weight, a.rstd, a.dresidual, dx, dweight], a.rows, a.dim, a, fresh);
    return { dx: p.result(5, dx), dweight: dweight && p.result(6, dweight) };
  }

  /** Places a checked call (`fresh`: outputs the library allocated, see Placer.place) and runs `op` on each segment of rows: copy in, kernel, copy out. */
  private run(
    fn: string,
    op: Op,
    arrs: readonly (Float32Array | null)[],
    rows: number,
    dim: number,
    q: Params,
    fresh: number,
  ): Placement {
    const p = this.placer.place(fn, op, arrs, rows, dim, fresh);
    const k = this.wasm.exports;
    const seg = p.segRows;
    for (let s = 0; s < rows; s += seg) {
      const e = Math.min(rows, s + seg);
      if (s > 0) p.seek(s);
      p.copyIn(s, e);
      checkStatus(fn, op.span(k, p.addrs, s, e - s, rows, dim, q));
      p.copyOut(s, e);
    }
    p.finish();
    return p;
  }

  /**
   * An RMSNorm bound to `weight` (copied into this module's memory; `null` for none) and
   * options, owning its outputs: see {@link RmsNormLayer}.
   * @param options `dim` (default `weight.length`), `eps` (default 1e-6).
   */
  createLayer(weight: Float32Array | null, options?: RmsNormLayerOptions): RmsNormLayer {
    return new RmsNormLayer(this, weight, options);
  }

  /**
   * Allocates `length` floats inside this module's memory. Views of it are used in place by
   * every call (the zero-copy path). Free it when done; memory is not garbage-collected.
   */
  allocF32(length: number): F32Buffer {
    return this.heap.allocBuffer(length);
  }
}
