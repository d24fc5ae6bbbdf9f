/** js-naive forward (see naive.js): `y = x / sqrt(mean(x²) + eps) · w` per row of `rows × dim`. */
export declare function naiveForward(x: Float32Array, w: Float32Array, y: Float32Array, rows: number, dim: number, eps: number): void;
/** js-naive backward (see naive.js): dx and dw (zeroed first) of `rows × dim`. */
export declare function naiveBackward(
  dy: Float32Array, x: Float32Array, w: Float32Array, dx: Float32Array, dw: Float32Array, rows: number, dim: number, eps: number,
): void;
