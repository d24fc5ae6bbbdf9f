/**
 * js-naive: the seed's PyTorch code transcribed loop by loop onto Float32Arrays (the loops are
 * in shared/naive.js, which the page's benchmark runs too), the baseline every "×naive" ratio
 * divides by. Outputs are preallocated and reused (as for every contender), so allocation is not
 * timed — except in `js-naive-new`, the forward into a new array each call: what a function that
 * returns its result costs, the peer of the default call `rmsNorm(x, w)`.
 * @module
 */
import type { Case, Contender } from '../types.js';
import { naiveBackward, naiveForward } from '../../shared/naive.js';

/** The js-naive contenders (forward, backward, and the forward into a new array). */
export function jsNaive(): Contender[] {
  return [
    {
      name: 'js-naive-new', family: 'js-naive', op: 'forward', threads: 1, zeroCopy: false,
      make(c: Case) {
        let y = new Float32Array(0);
        return {
          async: false,
          fn: () => {
            y = new Float32Array(c.x.length);
            naiveForward(c.x, c.w, y, c.rows, c.dim, c.eps);
          },
          outputs: () => ({ y }),
        };
      },
    },
    {
      name: 'js-naive', family: 'js-naive', op: 'forward', threads: 1, zeroCopy: false,
      make(c: Case) {
        const y = new Float32Array(c.x.length);
        return { async: false, fn: () => naiveForward(c.x, c.w, y, c.rows, c.dim, c.eps), outputs: () => ({ y }) };
      },
    },
    {
      name: 'js-naive', family: 'js-naive', op: 'backward', threads: 1, zeroCopy: false,
      make(c: Case) {
        const dx = new Float32Array(c.x.length);
        const dw = new Float32Array(c.dim);
        return {
          async: false,
          fn: () => naiveBackward(c.dy, c.x, c.w, dx, dw, c.rows, c.dim, c.eps),
          outputs: () => ({ dx, dw }),
        };
      },
    },
  ];
}
