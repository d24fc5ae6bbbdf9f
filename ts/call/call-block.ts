/**
 * The call block: what a kernel call reads from wasm memory, written by the caller before each
 * call — the parameter block (abi.ts's `PARAMS`, laid out as abi.rs's `Params`) followed
 * by the operands' byte addresses (op.ts's {@link ADDRS_AT}). The sync API keeps one per
 * instance; the pool's control block holds one that every worker reads. Every path writes the
 * addresses through {@link writeAddrs} or, on a {@link CallBlock}, its methods.
 * @module
 */
import { writeParamsBlock } from '../generated/abi.js';
import { ADDRS_AT, MAX_ADDRS, type Op, type Params } from './op.js';

/** Words in a call block: the parameters and the most addresses an operation has. */
export const CALL_WORDS = ADDRS_AT / 4 + MAX_ADDRS;

/**
 * Writes `q` as a parameter block at word `at` of `i32` (`f32` a view of the same bytes, for
 * the float fields).
 */
export function writeParams(i32: Int32Array, f32: Float32Array, at: number, q: Params): void {
  writeParamsBlock(i32, f32, at, q);
}

/** Writes the first `n` of `addrs` as the address array of the call block at word `at`. */
export function writeAddrs(i32: Int32Array, at: number, addrs: ArrayLike<number>, n: number): void {
  const a = at + ADDRS_AT / 4;
  for (let i = 0; i < n; i++) i32[a + i] = addrs[i]!;
}

/**
 * One thread's own call block (the sync API's, one per instance) and the parameters last
 * written into it: a call with the same {@link Params} object as the last one (a layer's, or
 * a short way's remembered ones; Params are never changed once made) does not write them again.
 * Every write of this block goes through it.
 */
export class CallBlock {
  private last: Params | null = null;
  /** Who wrote the addresses the block holds, when they said so ({@link holds}); null after any other write. */
  private holder: object | null = null;

  constructor(
    /** The block's byte address. */
    readonly at: number,
  ) {}

  /** Writes `q` unless it is what the block holds. */
  params(i32: Int32Array, f32: Float32Array, q: Params): void {
    if (q === this.last) return;
    writeParamsBlock(i32, f32, this.at >>> 2, q);
    this.last = q;
  }

  /** Writes the first `n` of `addrs` as the block's addresses. */
  addrs(i32: Int32Array, addrs: ArrayLike<number>, n: number): void {
    this.holder = null;
    writeAddrs(i32, this.at >>> 2, addrs, n);
  }

  /**
   * Starts the block's addresses for a call of `op` in `i32` (the memory's current view): every
   * operand absent (0). Returns the word of the first, so that a path sets the present ones by
   * slot (`i32[a + F.x] = …`) straight into the block: a copy through an array of its own cost
   * the one-row calls about 5%.
   */
  operands(i32: Int32Array, op: Op): number {
    this.holder = null;
    const a = (this.at >>> 2) + ADDRS_AT / 4;
    for (let i = 0; i < op.addrs; i++) i32[a + i] = 0;
    return a;
  }

  /** Marks the addresses just written as `holder`'s: {@link holds} is true until another write. */
  heldBy(holder: object): void {
    this.holder = holder;
  }

  /** Whether the block holds `q` and the addresses `holder` wrote last, both unchanged since. */
  holds(holder: object, q: Params): boolean {
    return this.holder === holder && this.last === q;
  }
}
