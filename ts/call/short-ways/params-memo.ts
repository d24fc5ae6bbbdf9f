/**
 * A call's checked parameters, kept for the next call with a weight as long (or none again)
 * and the same option values. The short ways (short-ways/*.ts) read an options object's keys
 * once: each must be one of the operation's parameter options (params.ts's `PARAM_KEYS` for a
 * forward, `BACKWARD_PARAM_KEYS` for a backward — the lists the general check reads too) or
 * one of the short way's own arrays; each parameter's value is compared with the last call's.
 * Only a change is checked again, by the general check itself (so it throws what the general
 * path would).
 * @module
 */
import { checkParams, type CheckedParams } from '../check/params.js';

/** A value no caller can pass (every real value, `undefined` included, differs from it). */
const UNSEEN = Symbol('unseen');
const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze({});

/** One operation's last checked parameters: see the module doc. */
export class ParamsMemo {
  /** The last call's weight length, -1 for none (null); the parameters depend on nothing else of a Float32Array weight. */
  private weightLength: number | typeof UNSEEN = UNSEEN;
  /** The last call's value of each of {@link keys}, in that order (undefined: absent). */
  private readonly values: unknown[];
  /** How many of {@link values} are not undefined. */
  private given = 0;
  private last: CheckedParams | null = null;

  constructor(
    /** The name of the call's first matrix in messages: `x` (forward) or `dy` (backward). */
    private readonly firstName: string,
    /** The operation's parameter options. */
    private readonly keys: readonly string[],
    /** The option names of the arrays the short way takes besides the parameters. */
    private readonly arrays: readonly string[],
  ) {
    this.values = keys.map(() => undefined);
  }

  /**
   * The checked parameters of a call without a gate whose first matrix is the Float32Array
   * `first`, with `weight` (a Float32Array or null) and `options`; null when `options` is not
   * absent or a plain object whose keys are all parameters or {@link arrays} (for the general
   * path). Throws as {@link checkParams} does.
   */
  of(fn: string, options: unknown, first: Float32Array, weight: Float32Array | null): CheckedParams | null {
    const v = this.values;
    // The parameters read of a Float32Array weight only whether there is one and its length:
    // another view of the same floats (a zero-copy call makes one each time), or another array
    // as long, is checked already. A detached one (length 0) is not.
    let same = this.last !== null && (weight === null ? -1 : weight.length) === this.weightLength;
    let matched = 0;
    if (options !== undefined) {
      if (typeof options !== 'object' || options === null || Object.getPrototypeOf(options) !== Object.prototype) return null;
      const o = options as Record<string, unknown>;
      // for..in allocates nothing; it visits inherited keys too, and an object with any is not taken.
      for (const k in o) {
        const i = this.keys.indexOf(k);
        if (i < 0) {
          if (!this.arrays.includes(k)) return null;
        } else if (o[k] !== v[i]) same = false;
        else if (v[i] !== undefined) matched++;
      }
    }
    if (same && matched === this.given) return this.last;
    const o = options === undefined ? NO_OPTIONS : (options as Record<string, unknown>);
    const c = checkParams(fn, o, this.firstName, first, weight, false);
    this.given = 0;
    for (let i = 0; i < v.length; i++) if ((v[i] = o[this.keys[i]!]) !== undefined) this.given++;
    this.weightLength = weight === null ? -1 : weight.length;
    this.last = c;
    return c;
  }
}
