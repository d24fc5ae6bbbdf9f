/**
 * The options-object rule every function of the package applies: absent, or a plain object
 * whose keys are all known.
 * @module
 */
import { describe } from './arrays.js';

/** The options object when none is given: shared, read-only, so no call allocates one. */
const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze({});
export const NO_EXTRA_KEYS: readonly string[] = [];

/**
 * Checks that `o` is absent or a plain object whose own keys are all in `known` (or
 * `extraKeys`): a TypeError naming `fn` otherwise. Returns the object (a shared empty one for
 * none). Every options argument of the package goes through this.
 */
export function options(
  fn: string,
  o: unknown,
  known: readonly string[],
  extraKeys: readonly string[] = NO_EXTRA_KEYS,
): Readonly<Record<string, unknown>> {
  if (o === undefined || o === null) return NO_OPTIONS;
  if (typeof o !== 'object' || Array.isArray(o)) {
    throw new TypeError(`${fn}: options must be an object, got ${describe(o)}`);
  }
  // A Map, a typed array or another class instance has no option keys of its own to read:
  // accepting it would silently ignore what the caller meant to pass.
  const proto = Object.getPrototypeOf(o);
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`${fn}: options must be a plain object ({ ... }), got ${describe(o)}`);
  }
  // for..in allocates nothing (Object.keys makes an array per call). It also visits inherited
  // enumerable keys, which Object.keys ignores: any key it does not know sends the call to the
  // exact Object.keys check, so only that check ever decides what is unknown.
  for (const k in o) {
    if (!known.includes(k) && !extraKeys.includes(k)) {
      unknownOption(fn, o, known, extraKeys);
      break;
    }
  }
  return o as Record<string, unknown>;
}

function unknownOption(fn: string, o: object, known: readonly string[], extraKeys: readonly string[]): void {
  const all = [...known, ...extraKeys];
  for (const k of Object.keys(o)) {
    if (!all.includes(k)) {
      throw new TypeError(`${fn}: unknown option ${JSON.stringify(k)} (known: ${all.join(', ')})`);
    }
  }
}
