/**
 * Where a pool call runs: on the calling thread now (too small to shard: the sync API's way,
 * on the instance whose memory the arrays are views of, or the plain one), or as a job —
 * sharded across the workers, or (where this thread may block) on this thread alone, as
 * shard-choice.ts decides from recent timings of calls of its kind.
 * @module
 */
import type { RmsNorm } from '../../rmsnorm.js';
import type { Heap } from '../../glue/memory.js';
import type { Call } from '../../call/op.js';
import type { FloatArray } from '../../types.js';
import type { Data, Op } from '../../call/op.js';
import { Choice, type ArrayKind } from './shard-choice.js';
import { INLINE_BELOW } from '../tuning.js';

/** One pool's ways: see the module doc. */
export class Ways {
  private readonly choice = new Choice();
  /** hooks.ts's forceWay: true sharded, false on this thread alone, null as `choice` decides. */
  forced: boolean | null = null;
  /** INLINE_BELOW, changeable through hooks.ts (to measure the threshold). */
  inlineBelow: number;

  constructor(
    /** The instance whose memory the workers share. */
    private readonly rn: RmsNorm,
    /** Runs inline calls on plain arrays: non-shared memory copies them faster (load.ts, defaultBuild). */
    private readonly plain: RmsNorm,
    private readonly heap: Heap,
    private readonly threads: number,
    private readonly blockRows: number,
    /** Whether this thread may block (not a page's main thread). */
    private readonly joinAllowed: boolean,
  ) {
    this.inlineBelow = INLINE_BELOW[joinAllowed ? 'join' : 'async'];
  }

  /**
   * The instance an inline call on `x` runs on: the shared one when it is a view of the shared
   * memory (used in place), else the non-shared one.
   */
  inlineFor(x: Data): RmsNorm {
    return this.instanceFor(this.kindOf(x));
  }

  /** The instance for calls on arrays of `kind`: see {@link inlineFor}. */
  instanceFor(kind: ArrayKind): RmsNorm {
    return kind === 'view' ? this.rn : this.plain;
  }

  /** Where `x` is, as the choice tells calls apart. */
  kindOf(x: FloatArray): ArrayKind {
    if (this.heap.holds(x as Float32Array)) return 'view';
    return typeof SharedArrayBuffer !== 'undefined' && x.buffer instanceof SharedArrayBuffer ? 'shared' : 'plain';
  }

  /** Whether a call of `elems` elements runs on the calling thread whatever its rows. */
  small(elems: number): boolean {
    return this.threads === 0 || elems < this.inlineBelow;
  }

  /** Whether a call of operation `op` runs on the calling thread rather than being sharded. */
  inline(rows: number, elems: number, op: Op): boolean {
    if (this.small(elems)) return true;
    // Chunks of whole dweight blocks (the backward): one block cannot be shared.
    return op.blockAligned ? rows <= this.blockRows : rows < 2;
  }

  /**
   * One checked call: inline when too small to shard, else sharded or (where this thread may
   * block) on this thread alone, as `choice` decides from recent timings of calls of its kind.
   */
  async run<R>(c: Call<unknown>, alone: () => R, sharded: () => Promise<R>): Promise<R> {
    const { op, rows } = c;
    const elems = rows * c.params.dim;
    if (this.inline(rows, elems, op)) return alone();
    if (this.forced !== null) return this.forced ? sharded() : alone();
    // A page's main thread keeps sharding: keeping the page responsive is the point there.
    const pick = this.joinAllowed ? this.choice.pick(op.id, this.kindOf(c.x), elems, op.cost * elems) : null;
    const r = !pick || pick.sharded ? await sharded() : alone();
    if (pick) this.choice.record(pick);
    return r;
  }
}
