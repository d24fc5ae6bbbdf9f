/**
 * Getting one pool call's arrays into the shared memory and its results back: the only file of
 * the pool that places arrays. It uses the sync API's placement (so the pool and the sync call
 * agree on what is used in place and what is copied) and turns a checked call into a
 * {@link JobSpec} plus a `finish` that copies results out and returns them.
 * @module
 */
import type { Heap, Scratch } from '../memory.js';
import { backwardAddrs, stageBackward, stageForward } from '../rmsnorm.js';
import { copyOut, plainBackward, plainForward } from '../staging.js';
import type { BackwardArgs, ForwardArgs, RmsNormBackwardResult } from '../validate.js';
import { Op } from './control.js';
import type { JobSpec } from './dispatch.js';

/** A call made ready to run: the job, and what to do once it has run. */
export interface Prepared<T> {
  spec: JobSpec;
  finish(): T;
}

/** What placing needs: the memory, the pool's scratch region, and whether to stream plain arrays. */
export interface Placement {
  heap: Heap;
  scratch: Scratch;
  /** Rows per dweight block (the backward's partials: one row of `dim` floats per block). */
  blockRows: number;
  /** Whether a call of this much work (elements, backward counted twice) streams its plain arrays. */
  streams(work: number): boolean;
}

/** A forward job: operands x, w, y, rstd. */
export function prepareForward(p: Placement, a: ForwardArgs): Prepared<Float32Array> {
  const fn = 'pool.rmsNorm';
  const { heap } = p;
  const { rows, dim } = a;
  const work = rows * dim;
  const y = a.out ?? new Float32Array(a.x.length);
  const base = { op: Op.FORWARD, rows, dim, eps: a.eps, work, blockAligned: false };
  // All arrays plain: the sync copy path's scratch layout (y computed at x's copy), x streamed in.
  const c = p.streams(work) ? plainForward(fn, heap, p.scratch, a.x, a.weight, y, a.rstd, false) : null;
  if (c) {
    const xAt = c.x >>> 2;
    return {
      spec: {
        ...base,
        operands: [c.x, c.w, c.x, c.rstd],
        stream: {
          copyIn: (r0, r1) => heap.f32().set(a.x.subarray(r0 * dim, r1 * dim), xAt + r0 * dim),
          copyOut: (r0, r1) => {
            const m = heap.f32();
            y.set(m.subarray(xAt + r0 * dim, xAt + r1 * dim), r0 * dim);
            if (a.rstd) a.rstd.set(m.subarray((c.rstd >>> 2) + r0, (c.rstd >>> 2) + r1), r0);
          },
        },
      },
      finish: () => y,
    };
  }
  const s = stageForward(fn, heap, p.scratch, a, y);
  return {
    spec: { ...base, operands: [s.inputs[0]!, a.weight ? s.inputs[1]! : 0, s.outputs[0]!, a.rstd ? s.outputs[1]! : 0] },
    finish: () => {
      s.finish();
      return y;
    },
  };
}

/** A backward job: operands dy, x, w, rstd, dx, partials, dw. */
export function prepareBackward(p: Placement, a: BackwardArgs): Prepared<RmsNormBackwardResult> {
  const fn = 'pool.rmsNormBackward';
  const { heap } = p;
  const { rows, dim } = a;
  const work = 2 * rows * dim;
  const dx = a.dx ?? new Float32Array(a.x.length);
  const dweight = a.weight ? (a.dweight ?? new Float32Array(dim)) : null;
  const partials = Math.ceil(rows / p.blockRows) * dim;
  const base = { op: Op.BACKWARD, rows, dim, eps: a.eps, work, blockAligned: true };
  // All arrays plain: the sync copy path's layout (dx computed at dy's copy), its workspace
  // sized for the block partials; dy and x streamed in.
  const c = p.streams(work) ? plainBackward(fn, heap, p.scratch, a.dy, a.x, a.weight, a.rstd, dx, dweight, false, partials) : null;
  if (c) {
    const dyAt = c.dy >>> 2;
    const xAt = c.x >>> 2;
    return {
      spec: {
        ...base,
        operands: [c.dy, c.x, c.w, c.rstd, c.dy, c.work, c.dw],
        stream: {
          copyIn: (r0, r1) => {
            const m = heap.f32();
            m.set(a.dy.subarray(r0 * dim, r1 * dim), dyAt + r0 * dim);
            m.set(a.x.subarray(r0 * dim, r1 * dim), xAt + r0 * dim);
          },
          copyOut: (r0, r1) => dx.set(heap.f32().subarray(dyAt + r0 * dim, dyAt + r1 * dim), r0 * dim),
        },
      },
      finish: () => {
        if (dweight) copyOut(heap, c.dw, dweight);
        return { dx, dweight };
      },
    };
  }
  const s = stageBackward(fn, heap, p.scratch, a, dx, dweight, a.weight ? [partials] : []);
  const q = backwardAddrs(a, s);
  return {
    spec: { ...base, operands: [q.dy, q.x, q.w, q.rstd, q.dx, a.weight ? s.extra[0]! : 0, q.dw] },
    finish: () => {
      s.finish();
      return { dx, dweight };
    },
  };
}
