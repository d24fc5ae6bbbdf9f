/**
 * Deterministic benchmark inputs: the same seed gives the same floats in every process (the
 * onnxruntime child processes rebuild exactly the parent's inputs).
 * @module
 */
import { EPS as SHARED_EPS, makeCase as sharedMakeCase } from '../shared/reference.js';
import type { Case, Shape } from './types.js';

/** Epsilon used by every contender (the library's default). */
export const EPS = SHARED_EPS;

/**
 * The inputs for one shape (shared/reference.js makeCase, which the demo page uses too):
 * x ~ N(0.1, 1), gain w ~ N(1, 0.1), bias b ~ N(0, 0.1), dy ~ N(0, 1), seeded by the shape.
 */
export function makeCase(s: Shape): Case {
  return sharedMakeCase(s);
}

/** Parses `64x4096,1x896` into shapes; throws a RangeError naming the bad item. */
export function parseShapes(text: string): Shape[] {
  return text.split(',').map((item) => {
    const m = /^\s*(\d+)\s*[xX×]\s*(\d+)\s*$/.exec(item);
    const rows = m ? Number(m[1]) : NaN;
    const dim = m ? Number(m[2]) : NaN;
    if (!(rows >= 1 && dim >= 1 && rows * dim <= 2 ** 26)) {
      throw new RangeError(`--shapes: "${item}" is not ROWSxDIM with 1 ≤ rows·dim ≤ 2^26`);
    }
    return { rows, dim };
  });
}

/** `rows`x`dim`, the name of a shape in tables and JSON. */
export function shapeName(s: Shape): string {
  return `${s.rows}x${s.dim}`;
}
