/**
 * One pool call on its arrays: placed by place.ts through the pool's window (32 MiB; views of
 * the shared memory in place), then run as one job per segment of rows. Where the calling
 * thread may block it copies a chunk's rows in while workers compute the chunks before, and
 * results out as chunks finish; elsewhere (a page's main thread) it copies a segment in
 * before its job and out after. Later segments of a backward add onto the dweight of the
 * earlier ones, so the bits equal one job over all rows.
 * @module
 */
import type { Heap, Scratch } from '../memory.js';
import { BACKWARD, FORWARD, type Data, type Op, type Params } from '../ops.js';
import { backwardResults, forwardResult } from '../results.js';
import type { BackwardArgs, FloatArray, ForwardArgs, RmsNormBackwardResult } from '../validate.js';
import { Placer, POOL_WINDOW_FLOATS, type Placement } from '../place.js';
import type { Dispatcher } from './dispatch.js';

/** The names pool calls give in their errors. */
export const FN_FORWARD = 'pool.rmsNorm';
export const FN_BACKWARD = 'pool.rmsNormBackward';

/** Places and runs the pool's sharded calls (one at a time). */
export class PoolCalls {
  private readonly placer: Placer;

  constructor(heap: Heap, window: Scratch, blockRows: number) {
    this.placer = new Placer(heap, window, {
      floats: POOL_WINDOW_FLOATS,
      rowAlign: (op) => (op.blockAligned ? blockRows : 1),
      work: (op, rows, dim, arrs) => op.poolWork(rows, dim, blockRows, arrs),
    });
  }

  /** A checked forward, sharded; `streamChunks` as for {@link run}. */
  async forward(d: Dispatcher, a: ForwardArgs, streamChunks: boolean): Promise<FloatArray> {
    const r = forwardResult(a);
    const arrs = [a.x, a.residual, a.weight, r.y, a.h, a.rstd];
    const p = await this.run(d, FN_FORWARD, FORWARD, arrs, a.rows, a.dim, a, streamChunks);
    return r.resident ? p.result(3, r.y as Float32Array) : r.given;
  }

  /** A checked backward, sharded. */
  async backward(d: Dispatcher, a: BackwardArgs, streamChunks: boolean): Promise<RmsNormBackwardResult<FloatArray, FloatArray>> {
    const r = backwardResults(a);
    const { dx, dweight } = r;
    const arrs = [a.dy, a.x, a.weight, a.rstd, a.dresidual, dx, dweight];
    const p = await this.run(d, FN_BACKWARD, BACKWARD, arrs, a.rows, a.dim, a, streamChunks);
    return r.resident ? { dx: p.result(5, dx), dweight: dweight && p.result(6, dweight) } : r.result;
  }

  /**
   * Runs `op` on `arrs` (its operand order) over `rows × dim`; `streamChunks`: copy by chunks
   * while the job runs (the calling thread may block). Returns the placement, finished.
   */
  async run(
    d: Dispatcher,
    fn: string,
    op: Op,
    arrs: readonly (Data | null)[],
    rows: number,
    dim: number,
    params: Params,
    streamChunks: boolean,
  ): Promise<Placement> {
    const p = this.placer.place(fn, op, arrs, rows, dim, params);
    const seg = p.segRows;
    const byChunk = p.streams && streamChunks;
    for (let s = 0; s < rows; s += seg) {
      const e = Math.min(rows, s + seg);
      if (s > 0) p.seek(s);
      if (!byChunk) p.copyIn(s, e);
      await d.run({
        op: op.id + 1,
        operands: p.addrs,
        rows: e - s,
        dim,
        params,
        work: op.cost * (e - s) * dim,
        blockAligned: op.blockAligned,
        accumulate: s > 0,
        stream: byChunk ? { copyIn: (r0, r1) => p.copyIn(s + r0, s + r1), copyOut: (r0, r1) => p.copyOut(s + r0, s + r1) } : null,
      });
      if (!byChunk) p.copyOut(s, e);
    }
    p.finish(fn);
    return p;
  }
}
