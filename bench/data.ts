/**
 * The benchmark's shapes: parsing `--shapes` and naming them. Their inputs (seeded by the shape,
 * so the onnxruntime child processes rebuild exactly the parent's) are shared/reference.js's
 * makeCase, which the demo page uses too.
 * @module
 */
import { parseShape } from '../shared/reference.js';
import type { Shape } from './types.js';

/** Parses `64x4096,1x896` into shapes; throws a RangeError naming the bad item. */
export function parseShapes(text: string): Shape[] {
  return text.split(',').map((item) => {
    try {
      return parseShape(item);
    } catch (e) {
      throw new RangeError(`--shapes: ${(e as Error).message}`);
    }
  });
}

/** `rows`x`dim`, the name of a shape in tables and JSON. */
export function shapeName(s: Shape): string {
  return `${s.rows}x${s.dim}`;
}
