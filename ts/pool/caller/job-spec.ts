/**
 * What one pool job is, as the dispatcher (dispatch.ts) runs it: its opcode, call block,
 * rows and parameters, how its chunks are cut, and how its rows move when they are not in the
 * pool's memory (copied chunk by chunk by the calling thread, or by each thread from the
 * caller's SharedArrayBuffers).
 * @module
 */
import type { Params } from '../../call/op.js';
import type { SabTable } from '../control.js';

/** A streaming job's copies, by rows (the calling thread makes them while workers compute). */
export interface Stream {
  copyIn(r0: number, r1: number): void;
  copyOut(r0: number, r1: number): void;
}

/** Everything the dispatcher needs to run one job. */
export interface JobSpec {
  /** Opcode (control.ts's Op, or KERNEL0 + an operation's id). */
  op: number;
  /** The addresses of the call block, in the operation's order (ops.ts): operands, then workspace. */
  addrs: ArrayLike<number>;
  /** How many of them the operation reads (ops.ts's Op.addrs). */
  naddrs: number;
  rows: number;
  /** The call's parameters (ops.ts). */
  params: Params;
  /** Elements of work (the backward counted twice): sizes the chunks. */
  work: number;
  /** Chunks must be whole dweight blocks (the backward). */
  blockAligned: boolean;
  /** The completion adds onto dweight as it is (a later segment of a streamed call). */
  accumulate?: boolean;
  /** Wake only this worker (the FAIL test job). */
  only?: number;
  /** Set when the inputs are copied in and results out chunk by chunk. */
  stream?: Stream | null;
  /**
   * The calling thread takes no part and waits without blocking (a task job: it keeps the
   * event loop free to plan files and record them while the workers serve the ring).
   */
  background?: boolean;
  /**
   * Operands in the caller's SharedArrayBuffers, by operand index (control.ts EXT0): each
   * thread copies its chunks' rows of them itself. `sabs`: those buffers by id.
   */
  ext?: readonly ({ id: number; byteOffset: number; rowBytes: number } | null)[];
  sabs?: SabTable;
}
