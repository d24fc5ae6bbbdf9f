// @ts-check
/**
 * js-naive: the seed's PyTorch code transcribed loop by loop onto Float32Arrays, the baseline
 * every "×naive" ratio divides by — one definition for the Node benchmark
 * (bench/contenders/js-naive.ts) and the page's (demo/page-bench.js).
 *
 *     rms = torch.sqrt(torch.mean(x**2, dim=-1, keepdim=True) + self.eps)
 *     return x / rms * self.weight
 * @module
 */

/** Forward: per row, `rms = sqrt(mean(x²) + eps)`, then `y = x / rms * w`. */
export function naiveForward(x, w, y, rows, dim, eps) {
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += x[o + i] ** 2;
    const rms = Math.sqrt(sum / dim + eps);
    for (let i = 0; i < dim; i++) y[o + i] = (x[o + i] / rms) * w[i];
  }
}

/**
 * Backward, the formula written out: `gy = dy·w`, `dx = rstd·(gy − x·rstd²·mean(gy·x))`,
 * `dw += dy·x·rstd` (dw zeroed first, summed row after row in its Float32Array).
 */
export function naiveBackward(dy, x, w, dx, dw, rows, dim, eps) {
  dw.fill(0);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += x[o + i] ** 2;
    const rstd = 1 / Math.sqrt(sum / dim + eps);
    let gyx = 0;
    for (let i = 0; i < dim; i++) gyx += dy[o + i] * w[i] * x[o + i];
    const meanGyx = gyx / dim;
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i] * w[i];
      dx[o + i] = rstd * (gy - x[o + i] * rstd * rstd * meanGyx);
      dw[i] += dy[o + i] * x[o + i] * rstd;
    }
  }
}
