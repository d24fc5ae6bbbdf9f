/**
 * The scalar options (types.ts's `ScalarOptions`), one row each: the value when absent, the
 * rule a given number must meet, the `Params` field it becomes (and what it takes of the call's
 * weight and row length), and the command's flag with its help. The calls' checks, the defaults every pass-on goes by (params.ts `PARAM_DEFAULTS`), the
 * command's flags and its `--help` all read this table, so a new scalar is one row here.
 * @module
 */
import type { Data, Params } from '../op.js';
import type { ScalarOptions } from '../../types.js';
import { describe } from './arrays.js';

/** eps when none is given. */
export const DEFAULT_EPS = 1e-6;

/** One scalar option. */
interface Scalar {
  /** Its value when absent. */
  readonly fallback: number;
  /** The `Params` field it sets. */
  readonly param: keyof Params;
  /**
   * The option's own rule: a RangeError naming `options.KEY` (`key`) when the number `v` breaks
   * it (whatever the call's arrays). Run once per options object (params.ts checkParamOptions).
   */
  readonly check: (fn: string, key: string, v: number) => void;
  /**
   * The field's value for a checked number `v` in a call with weight `w` (null for none) and
   * row length `dim`; a RangeError when `v` does not go with them.
   */
  readonly value: (fn: string, key: string, v: number, w: Data | null, dim: number) => number;
  /** The command's flag: the letter its value is shown by in `--help`, and what it does. */
  readonly flag: { readonly letter: string; readonly help: string };
}

/** Finite as a float32: the kernel reads each scalar as one, where a larger float64 is ±Inf. */
const finite32 = (v: number) => Number.isFinite(Math.fround(v));

/** The scalar options, in the order the resume record and the memo of the short ways list them. */
export const SCALARS = {
  eps: {
    fallback: DEFAULT_EPS,
    param: 'eps',
    check(fn, key, v) {
      // A value beyond float32's range would become +Inf there and silently zero every row.
      if (!(v >= 0) || !finite32(v)) throw new RangeError(`${fn}: options.${key} must be >= 0 and finite as a float32 (at most 3.4028234663852886e38), got ${v}`);
    },
    value: (_fn, _key, v) => v,
    flag: { letter: 'E', help: 'added inside the square root' },
  },
  offset: {
    fallback: 0,
    param: 'offset',
    check(fn, key, v) {
      if (!finite32(v)) throw new RangeError(`${fn}: options.${key} must be finite as a float32 (|offset| at most 3.4028234663852886e38), got ${v}`);
    },
    value(fn, key, v, w) {
      if (v !== 0 && w === null) throw new RangeError(`${fn}: options.${key} (${v}) needs a weight (the gain is offset + weight), but weight is null`);
      return v;
    },
    flag: { letter: 'O', help: 'add O to the weight: the gain is O + weight, 1 for Gemma' },
  },
  partial: {
    fallback: 1,
    param: 'stat',
    check(fn, key, v) {
      if (!(v > 0 && v <= 1)) throw new RangeError(`${fn}: options.${key} must be a number in (0, 1] (the fraction of each row rstd is estimated from), got ${v}`);
    },
    value: (_fn, _key, v, _w, dim) => statOf(v, dim),
    flag: { letter: 'P', help: 'pRMSNorm: rms from the first ceil(P * dim) elements, 0 < P <= 1' },
  },
} as const satisfies { readonly [K in keyof Required<ScalarOptions>]: Scalar };

/** The `Params` fields the scalar options set. */
type ScalarParam = (typeof SCALARS)[keyof typeof SCALARS]['param'];

/** The table's keys and rows, listed once (a call reads them without making the lists again). */
const KEYS: readonly string[] = Object.keys(SCALARS);
const ROWS: readonly Scalar[] = Object.values(SCALARS);

/** Checks the scalar options of `o` by their own rules (a TypeError for one that is not a number). */
export function checkScalars(fn: string, o: Readonly<Record<string, unknown>>): void {
  for (let i = 0; i < ROWS.length; i++) {
    const k = KEYS[i]!;
    const v = o[k];
    if (v === undefined) continue;
    if (typeof v !== 'number') throw new TypeError(`${fn}: options.${k} must be a number, got ${describe(v)}`);
    ROWS[i]!.check(fn, k, v);
  }
}

/**
 * Writes into `p` the `Params` fields of the scalar options of `o` ({@link checkScalars}
 * checked; each absent one at its fallback) for a call with weight `w` (null for none) and row
 * length `dim`.
 */
export function scalarParams(fn: string, o: Readonly<Record<string, unknown>>, w: Data | null, dim: number, p: { -readonly [K in ScalarParam]: number }): void {
  for (let i = 0; i < ROWS.length; i++) {
    const s = ROWS[i]!;
    p[s.param as ScalarParam] = s.value(fn, KEYS[i]!, (o[KEYS[i]!] as number | undefined) ?? s.fallback, w, dim);
  }
}

/**
 * The number of leading elements rstd is estimated from: the smallest `k` with
 * `k / dim ≥ partial`. Not bare `Math.ceil(partial * dim)`: `0.1 * 30` is 3.0000000000000004
 * in float64, whose ceiling would be 4 where 3/30 is exactly the float64 0.1.
 * @param partial The fraction of each row, `0 < partial ≤ 1`.
 * @param dim The row length (elements).
 * @returns `k`, from 1 to `dim`.
 */
export function statOf(partial: number, dim: number): number {
  let k = Math.min(dim, Math.max(1, Math.ceil(partial * dim)));
  while (k > 1 && (k - 1) / dim >= partial) k--;
  while (k < dim && k / dim < partial) k++;
  return k;
}
