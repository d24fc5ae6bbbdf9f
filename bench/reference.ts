/**
 * The benchmark's check: every contender's outputs against the float64 reference of its case,
 * before it is timed. The reference, the rule (|got − ref| ≤ ATOL + RTOL·|ref|, both 1e-4)
 * and the check itself live in shared/reference.js, which the demo page uses too.
 * @module
 */
import { ATOL, RTOL, caseReference, checkOutputs, type CaseReference } from '../shared/reference.js';
import type { Case, Check, Outputs } from './types.js';

export { ATOL, RTOL };

/** Exact results in float64 for one Case, computed on first use. */
export type Reference = CaseReference;

/** Builds the (lazy, cached) float64 reference of `c`. */
export function reference(c: Case): Reference {
  return caseReference(c);
}

/**
 * Compares a contender's outputs with the reference for its op (forward: y; backward: dx and
 * dweight; layernorm: y; copy: the copy must equal x exactly, so its tolerance is 0).
 */
export function check(op: 'forward' | 'backward' | 'layernorm' | 'copy', out: Outputs, c: Case, ref: Reference): Check {
  return checkOutputs(op, out, c, ref);
}

/** A failed check for a contender that threw before producing outputs. */
export function failedCheck(detail: string): Check {
  return { passed: false, maxAbsErr: Infinity, worstToTolerance: Infinity, atol: ATOL, rtol: RTOL, detail };
}
