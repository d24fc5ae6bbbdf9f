/**
 * js-naive: the seed's PyTorch code transcribed loop by loop onto Float32Arrays, the baseline
 * every "×naive" ratio divides by.
 *
 *     rms = torch.sqrt(torch.mean(x**2, dim=-1, keepdim=True) + self.eps)
 *     return x / rms * self.weight
 *
 * Outputs are preallocated and reused (as for every contender), so allocation is not timed.
 * @module
 */
import type { Case, Contender } from '../types.js';

/** Forward: per row, `rms = sqrt(mean(x²) + eps)`, then `y = x / rms * w`. */
export function naiveForward(x: Float32Array, w: Float32Array, y: Float32Array, rows: number, dim: number, eps: number): void {
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += x[o + i]! ** 2;
    const rms = Math.sqrt(sum / dim + eps);
    for (let i = 0; i < dim; i++) y[o + i] = (x[o + i]! / rms) * w[i]!;
  }
}

/**
 * Backward, the formula written out: `gy = dy·w`, `dx = rstd·(gy − x·rstd²·mean(gy·x))`,
 * `dw += dy·x·rstd` (dw zeroed first, summed row after row in its Float32Array).
 */
export function naiveBackward(
  dy: Float32Array, x: Float32Array, w: Float32Array, dx: Float32Array, dw: Float32Array,
  rows: number, dim: number, eps: number,
): void {
  dw.fill(0);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += x[o + i]! ** 2;
    const rstd = 1 / Math.sqrt(sum / dim + eps);
    let gyx = 0;
    for (let i = 0; i < dim; i++) gyx += dy[o + i]! * w[i]! * x[o + i]!;
    const meanGyx = gyx / dim;
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i]! * w[i]!;
      dx[o + i] = rstd * (gy - x[o + i]! * rstd * rstd * meanGyx);
      dw[i]! += dy[o + i]! * x[o + i]! * rstd;
    }
  }
}

/** The js-naive contenders (forward, backward). */
export function jsNaive(): Contender[] {
  return [
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
