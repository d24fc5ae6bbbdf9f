/**
 * One pool call on its arrays: placed by call/placement/placer.ts through the pool's window (POOL_WINDOW_FLOATS; views of
 * the shared memory in place), then run as one job per segment of rows. Where the calling
 * thread may block it copies a chunk's rows in while workers compute the chunks before, and
 * results out as chunks finish; elsewhere (a page's main thread) it copies a segment in
 * before its job and out after. Later segments of a backward add onto the dweight of the
 * earlier ones, so the bits equal one job over all rows.
 * @module
 */
import type { Heap, Scratch } from '../../glue/memory.js';
import type { Call } from '../../call/op.js';
import { Placer, POOL_WINDOW_FLOATS, type Placement } from '../../call/placement/placer.js';
import { EXTERNAL } from '../../call/placement/placement.js';
import type { Dispatcher } from './dispatch.js';
import { KERNEL0 } from '../control.js';

/** Places and runs the pool's sharded calls (one at a time). */
export class PoolCalls {
  private readonly placer: Placer;
  /** The pool's ids of the caller's SharedArrayBuffers (control.ts EXT0). */
  private readonly ids = new WeakMap<SharedArrayBuffer, number>();
  private nextId = 1;

  constructor(heap: Heap, window: Scratch, blockRows: number) {
    this.placer = new Placer(heap, window, {
      floats: POOL_WINDOW_FLOATS,
      rowAlign: (op) => (op.blockAligned ? blockRows : 1),
      work: (op, rows, dim, arrs) => op.poolWork(rows, dim, blockRows, arrs),
      external: true,
    });
  }

  /**
   * Runs checked call `c` (of any operation) over its rows, one job per segment of rows;
   * `streamChunks`: copy by chunks while the job runs (the calling thread may block); `fn`
   * names the call in errors. Returns the caller's result.
   */
  async run<R>(d: Dispatcher, fn: string, c: Call<R>, streamChunks: boolean): Promise<R> {
    const { op, rows, params } = c;
    const p = this.placer.place(fn, op, c.arrs, rows, params, c.fresh);
    const byChunk = p.streams && streamChunks;
    const sabs = p.external ? this.buffersOf(p) : undefined;
    if (sabs) await d.attach(sabs);
    for (let s = 0, e = 0; s < rows; s = e) {
      e = p.segment(s);
      if (!byChunk) p.copyIn(s, e);
      const s0 = s;
      await d.run({
        ...(sabs && { sabs, ext: p.slots.map((t, i) => (t.kind === EXTERNAL ? { id: this.ids.get(t.arr!.buffer as SharedArrayBuffer)!, ...p.externalAt(i) } : null)) }),
        op: KERNEL0 + op.id,
        addrs: p.addrs,
        naddrs: op.addrs,
        rows: e - s,
        params,
        work: op.cost * (e - s) * params.dim,
        blockAligned: op.blockAligned,
        accumulate: s > 0,
        stream: byChunk ? { copyIn: (r0, r1) => p.copyIn(s0 + r0, s0 + r1), copyOut: (r0, r1) => p.copyOut(s0 + r0, s0 + r1) } : null,
      });
      if (!byChunk) p.copyOut(s, e);
    }
    p.finish(fn);
    return c.result(p);
  }

  /** The pool's ids of the caller's buffers `p`'s external slots are in (given on first sight), and the buffers by id. */
  private buffersOf(p: Placement): Map<number, SharedArrayBuffer> {
    const out = new Map<number, SharedArrayBuffer>();
    for (const t of p.slots) {
      if (t.kind !== EXTERNAL) continue;
      const b = t.arr!.buffer as SharedArrayBuffer;
      let id = this.ids.get(b);
      if (id === undefined) this.ids.set(b, (id = this.nextId++));
      out.set(id, b);
    }
    return out;
  }
}
