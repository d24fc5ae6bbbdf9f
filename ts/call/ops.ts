/**
 * The operations, by {@link Op.id}: each one's record is a module of operations/ (what an
 * operation is: op.ts). The pool's opcodes, its control block's capacity and its timings, and
 * the generated public methods (scripts/gen-api.ts) go by this list, so a further operation is
 * one more module and one more entry here.
 * @module
 */
import type { Op } from './op.js';
import { BACKWARD } from './operations/backward.js';
import { FORWARD } from './operations/forward.js';

export { ADDRS_AT, MATRIX, MAX_ADDRS, NO_PARAMS, PER_ROW, ROW, type Call, type CheckedArgs, type Data, type Op, type Params, type Placed, type Shape } from './op.js';
export { B, BACKWARD, type BackwardArgs } from './operations/backward.js';
export { F, FORWARD, type ForwardArgs } from './operations/forward.js';

/** Operations by {@link Op.id}. */
export const OPS: readonly Op[] = [FORWARD, BACKWARD];
