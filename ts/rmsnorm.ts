/**
 * The synchronous API bound to one instantiated build: rmsNorm, rmsNormBackward, allocF32,
 * plus the LayerNorm forward and the memory copy that the benchmark compares against.
 * @module
 */
import type { Build, LoadedWasm } from './load.js';
import { Heap, Scratch, type F32Buffer } from './memory.js';
import {
  copyOut,
  plainBackward,
  plainForward,
  residentBackward,
  residentForward,
  stage,
  type Input,
  type Output,
  type Staged,
} from './staging.js';
import {
  checkBackward,
  checkForward,
  type BackwardArgs,
  type ForwardArgs,
  type RmsNormBackwardOptions,
  type RmsNormBackwardResult,
  type RmsNormOptions,
} from './validate.js';

/** Throws on a non-zero kernel status: the JS checks should make that impossible. */
export function checkStatus(fn: string, status: number): void {
  if (status !== 0) {
    throw new Error(`${fn}: the wasm kernel rejected its arguments (status ${status}); this is a bug in rmsnorm-wasm`);
  }
}

/** Stages a checked forward call: inputs [x, weight?], outputs [y, rstd?]. */
export function stageForward(fn: string, heap: Heap, scratch: Scratch, a: ForwardArgs, y: Float32Array): Staged {
  const inputs: Input[] = [{ name: 'x', arr: a.x }];
  if (a.weight) inputs.push({ name: 'weight', arr: a.weight });
  const outputs: Output[] = [{ name: 'options.out', arr: y, alias: [a.x] }];
  if (a.rstd) outputs.push({ name: 'options.rstd', arr: a.rstd });
  return stage(fn, heap, scratch, inputs, outputs);
}

/**
 * Stages a checked backward call: inputs [dy, x, weight?, rstd?], outputs [dx, dweight?],
 * extra regions: `extra` float counts.
 */
export function stageBackward(
  fn: string,
  heap: Heap,
  scratch: Scratch,
  a: BackwardArgs,
  dx: Float32Array,
  dweight: Float32Array | null,
  extra: readonly number[],
): Staged {
  const inputs: Input[] = [{ name: 'dy', arr: a.dy }, { name: 'x', arr: a.x }];
  if (a.weight) inputs.push({ name: 'weight', arr: a.weight });
  if (a.rstd) inputs.push({ name: 'options.rstd', arr: a.rstd });
  const outputs: Output[] = [{ name: 'options.dx', arr: dx, alias: [a.dy, a.x] }];
  if (dweight) outputs.push({ name: 'options.dweight', arr: dweight });
  return stage(fn, heap, scratch, inputs, outputs, extra);
}

/** Addresses of a staged backward in kernel argument order. */
export function backwardAddrs(a: BackwardArgs, s: Staged) {
  let i = 2;
  const w = a.weight ? s.inputs[i++]! : 0;
  const rstd = a.rstd ? s.inputs[i++]! : 0;
  return { dy: s.inputs[0]!, x: s.inputs[1]!, w, rstd, dx: s.outputs[0]!, dw: a.weight ? s.outputs[1]! : 0 };
}

/** The sync API over one instantiated build (the package's top-level functions use one). */
export class RmsNorm {
  /** Which build this is. */
  readonly build: Build;
  /** The instantiated module (its memory, exports and compiled module). */
  readonly wasm: LoadedWasm;
  /** @internal */
  readonly heap: Heap;
  private readonly scratch: Scratch;

  constructor(wasm: LoadedWasm) {
    this.wasm = wasm;
    this.build = wasm.build;
    this.heap = new Heap(wasm);
    this.scratch = new Scratch(this.heap);
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
  forwardChecked(a: ForwardArgs): Float32Array {
    const y = a.out ?? new Float32Array(a.x.length);
    if (a.rows === 0) return y;
    const exports = this.wasm.exports;
    // Every array a view of wasm memory: no staging objects, no copies.
    const r = residentForward(this.heap, a.x, a.weight, y, a.rstd);
    if (r !== null) {
      checkStatus('rmsNorm', exports.rms_norm_forward(r.x, r.w, r.y, r.rstd, a.rows, a.dim, a.eps));
      return y;
    }
    // No array in wasm memory: copies through scratch, computed in place there.
    const c = plainForward('rmsNorm', this.heap, this.scratch, a.x, a.weight, y, a.rstd);
    if (c !== null) {
      checkStatus('rmsNorm', exports.rms_norm_forward(c.x, c.w, c.x, c.rstd, a.rows, a.dim, a.eps));
      copyOut(this.heap, c.x, y);
      if (a.rstd) copyOut(this.heap, c.rstd, a.rstd);
      return y;
    }
    const s = stageForward('rmsNorm', this.heap, this.scratch, a, y);
    const [xa, wa] = [s.inputs[0]!, a.weight ? s.inputs[1]! : 0];
    const [ya, ra] = [s.outputs[0]!, a.rstd ? s.outputs[1]! : 0];
    checkStatus('rmsNorm', exports.rms_norm_forward(xa, wa, ya, ra, a.rows, a.dim, a.eps));
    s.finish();
    return y;
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
  backwardChecked(a: BackwardArgs): RmsNormBackwardResult {
    const fn = 'rmsNormBackward';
    const dx = a.dx ?? new Float32Array(a.x.length);
    const dweight = a.weight ? (a.dweight ?? new Float32Array(a.dim)) : null;
    if (a.rows === 0) {
      dweight?.fill(0);
      return { dx, dweight };
    }
    const r = residentBackward(this.heap, a.dy, a.x, a.weight, a.rstd, dx, dweight);
    if (r !== null) {
      let work = 0;
      if (a.weight) {
        work = this.scratch.carveOne(a.dim);
        this.heap.f32(); // as stage does after carving: notes the old buffer if memory grew
      }
      checkStatus(
        fn,
        this.wasm.exports.rms_norm_backward(r.dy, r.x, r.w, r.rstd, r.dx, r.dw, work, a.rows, a.dim, a.eps),
      );
      return { dx, dweight };
    }
    const c = plainBackward(fn, this.heap, this.scratch, a.dy, a.x, a.weight, a.rstd, dx, dweight);
    if (c !== null) {
      checkStatus(
        fn,
        this.wasm.exports.rms_norm_backward(c.dy, c.x, c.w, c.rstd, c.dy, c.dw, c.work, a.rows, a.dim, a.eps),
      );
      copyOut(this.heap, c.dy, dx);
      if (dweight) copyOut(this.heap, c.dw, dweight);
      return { dx, dweight };
    }
    const s = stageBackward(fn, this.heap, this.scratch, a, dx, dweight, a.weight ? [a.dim] : []);
    const p = backwardAddrs(a, s);
    const work = a.weight ? s.extra[0]! : 0;
    checkStatus(
      fn,
      this.wasm.exports.rms_norm_backward(p.dy, p.x, p.w, p.rstd, p.dx, p.dw, work, a.rows, a.dim, a.eps),
    );
    s.finish();
    return { dx, dweight };
  }

  /**
   * Allocates `length` floats inside this module's memory. Views of it are used in place by
   * every call (the zero-copy path). Free it when done; memory is not garbage-collected.
   */
  allocF32(length: number): F32Buffer {
    return this.heap.allocBuffer(length);
  }

  /**
   * LayerNorm forward through the same SIMD path (for the RMSNorm-vs-LayerNorm benchmark):
   * `y = (x − mean) · rstd · weight + bias`. Arguments as {@link rmsNorm}; `bias` may be null.
   * @internal
   */
  layerNorm(x: Float32Array, weight: Float32Array | null, bias: Float32Array | null, out: Float32Array, eps = 1e-5): Float32Array {
    const dim = weight?.length ?? bias?.length ?? 0;
    const a = checkForward('layerNorm', x, weight, { dim, eps, out });
    const inputs: Input[] = [{ name: 'x', arr: a.x }];
    if (weight) inputs.push({ name: 'weight', arr: weight });
    if (bias) inputs.push({ name: 'bias', arr: bias });
    const s = stage('layerNorm', this.heap, this.scratch, inputs, [{ name: 'out', arr: out, alias: [a.x] }]);
    const w = weight ? s.inputs[1]! : 0;
    const b = bias ? s.inputs[weight ? 2 : 1]! : 0;
    checkStatus('layerNorm', this.wasm.exports.layer_norm_forward(s.inputs[0]!, w, b, s.outputs[0]!, a.rows, a.dim, a.eps));
    s.finish();
    return out;
  }

  /**
   * Copies `src` to `dst` (views of this module's memory, equal lengths, not overlapping) with
   * the kernel's vector loads and stores: the benchmark's memory-bandwidth roof.
   * @internal
   */
  copyInWasm(src: Float32Array, dst: Float32Array): void {
    if (!this.heap.holds(src) || !this.heap.holds(dst) || src.length !== dst.length) {
      throw new RangeError('copyInWasm: src and dst must be equal-length views of this module\'s memory');
    }
    checkStatus('copyInWasm', this.wasm.exports.copy_f32(src.byteOffset, dst.byteOffset, src.length));
  }
}
