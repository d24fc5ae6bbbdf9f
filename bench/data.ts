/**
 * Deterministic benchmark inputs: the same seed gives the same floats in every process (the
 * onnxruntime child processes rebuild exactly the parent's inputs).
 * @module
 */
import type { Case, Shape } from './types.js';

/** Epsilon used by every contender (the library's default). */
export const EPS = 1e-6;

/** mulberry32: a small, fast, seedable PRNG; uniform in [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fills `a` with standard normal floats (Box–Muller), times `scale`, plus `shift`. */
function normal(a: Float32Array, next: () => number, scale = 1, shift = 0): Float32Array {
  for (let i = 0; i < a.length; i += 2) {
    const u = 1 - next();
    const v = next();
    const r = Math.sqrt(-2 * Math.log(u)) * scale;
    a[i] = r * Math.cos(2 * Math.PI * v) + shift;
    if (i + 1 < a.length) a[i + 1] = r * Math.sin(2 * Math.PI * v) + shift;
  }
  return a;
}

/**
 * The inputs for one shape: activations x ~ N(0.1, 1) (a small mean, as real activations
 * have, which LayerNorm removes and RMSNorm does not), gain w ~ N(1, 0.1), bias b ~ N(0, 0.1),
 * upstream gradient dy ~ N(0, 1). Seeded by the shape, so reproducible.
 */
export function makeCase(s: Shape): Case {
  const next = rng(s.rows * 65599 + s.dim);
  const n = s.rows * s.dim;
  return {
    rows: s.rows,
    dim: s.dim,
    eps: EPS,
    x: normal(new Float32Array(n), next, 1, 0.1),
    w: normal(new Float32Array(s.dim), next, 0.1, 1),
    b: normal(new Float32Array(s.dim), next, 0.1, 0),
    dy: normal(new Float32Array(n), next),
  };
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
