// @ts-check
/**
 * The one float64 reference and seeded data generator of the project, in plain JavaScript so
 * that tests and the benchmark (TypeScript, through reference.d.ts), the demo page and the
 * browser test pages (loaded with no build step) all import the same code.
 *
 * - Generators: mulberry32 (`rng`), Box–Muller normals, uniforms; the benchmark's inputs per
 *   shape (`makeCase`); the sync-API tests' rows of varied scale (`testRows`, `testWeight`).
 * - References, all arithmetic in float64 (its own error, about 2^-53 per operation, is
 *   negligible next to float32's): RMSNorm forward and backward, LayerNorm forward, and the
 *   kernels' documented float32 dweight summation (`dweightF32`).
 * - Tolerances: one rule, `|got − ref| ≤ tol(i, ref)` checked by one function (`ratioOf`, behind
 *   `mismatch`, `worstRatio` and `checkOutputs`): a NaN reference needs a NaN, an infinite one the
 *   same infinity, anything else a finite result within tol. The bounds, each named once here:
 *   - the benchmark and the demo, every contender (`checkOutputs`): `ATOL + RTOL·|ref|`, both
 *     1e-4. Loose on purpose: it must pass a contender's float32 sums in any order (js-naive's
 *     backward, one float32 running dweight sum over 4096 rows, reaches 0.76 of it in
 *     bench/results/latest.json: 1e-5 would fail it) and still fail any wrong formula;
 *   - y (tests): PyTorch's float32 assert_close, `Y_ATOL + Y_RTOL·|ref|` = 1e-5 + 1.3e-6·|ref|
 *     (`yTolerance`); rstd: relative `RSTD_RTOL` = 1e-5;
 *   - dx: `ROW_K·(s + |ref|)` with s the row's scale (`rowTolerance`): the tests take
 *     s = rstd·rms(dy ⊙ weight) (`RefBackward.dxScale`), the browser pages s = the row's
 *     largest |ref| (`rowMaxAbs`) for y and dx alike. ROW_K = 1e-5. Scaled by the row because
 *     dx scales as 1/|x|: an absolute bound would be empty for large rows and unpassable for
 *     small ones;
 *   - dweight: a count of float32 roundings times `Σ_rows |dy·x·rstd|` (`dweightTolerance`:
 *     2 per term, ≤ 31 adds in a 32-row block, one rounding of the blocks' float64 sum), or, where the pages do not
 *     count roundings, `ROW_K` times that sum (`sumTolerance`).
 *   Tests that know more (spiky random vectors, subnormals) build their own `Tolerance` and
 *   say why where they do.
 * eps is rounded to float32 first, as the kernels receive it.
 * @module
 */

/** 2^-24: the unit roundoff of float32 (half an ulp of 1). */
export const U32 = 2 ** -24;
/** The library's default eps, used by the benchmark's inputs. */
export const EPS = 1e-6;
/** The benchmark's and the demo's check: |got − ref| ≤ ATOL + RTOL·|ref|. */
export const ATOL = 1e-4;
export const RTOL = 1e-4;
/** y against float64: PyTorch's float32 assert_close bounds, |got − ref| ≤ Y_ATOL + Y_RTOL·|ref|. */
export const Y_ATOL = 1e-5;
export const Y_RTOL = 1.3e-6;
/** rstd against float64: relative. */
export const RSTD_RTOL = 1e-5;
/** dx (and the browser pages' y): |got − ref| ≤ ROW_K·(row scale + |ref|); dweight: ROW_K·Σ|terms|. */
export const ROW_K = 1e-5;

/** mulberry32: uniform floats in [0, 1) from a 32-bit seed, the same in every engine. */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples (Box–Muller, one per pair of uniforms) from a uniform source. */
export function gaussian(rand) {
  return () => {
    const u = 1 - rand(); // (0, 1]: log(u) is finite
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
  };
}

/** `n` float32 normal samples times `scale`, from `seed`. */
export function randn(n, seed, scale = 1) {
  const g = gaussian(rng(seed));
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = g() * scale;
  return a;
}

/** `n` floats uniform in [lo, hi) from `next`, rounded to float32. */
export function uniform(next, n, lo, hi) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * next();
  return a;
}

/** Fills `a` with normal floats (Box–Muller, both of each pair) times `scale` plus `shift`. */
export function normal(a, next, scale = 1, shift = 0) {
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
 * `ROWSxDIM` (also `x` or `×`, spaces around) → `{ rows, dim }`, the benchmark's and the
 * demo's shape syntax; a RangeError quoting `item` unless 1 ≤ rows·dim ≤ 2^26.
 */
export function parseShape(item) {
  const m = /^\s*(\d+)\s*[xX×]\s*(\d+)\s*$/.exec(item);
  const rows = m ? Number(m[1]) : NaN;
  const dim = m ? Number(m[2]) : NaN;
  if (!(rows >= 1 && dim >= 1 && rows * dim <= 2 ** 26)) {
    throw new RangeError(`"${item}" is not ROWSxDIM with 1 ≤ rows·dim ≤ 2^26`);
  }
  return { rows, dim };
}

/**
 * The benchmark's inputs for one shape: activations x ~ N(0.1, 1) (a small mean, as real
 * activations have, which LayerNorm removes and RMSNorm does not), gain w ~ N(1, 0.1), bias
 * b ~ N(0, 0.1), upstream gradient dy ~ N(0, 1). Seeded by the shape, so every process and
 * page makes the same floats.
 */
export function makeCase(s) {
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

/**
 * `rows × dim` test input whose rows differ in scale (10^-3 .. 10^3) and some in mean, so that
 * eps matters for some rows and not others, and rows are not all alike.
 */
export function testRows(rows, dim, seed) {
  const g = gaussian(rng(seed));
  const x = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    const scale = 10 ** ((r % 7) - 3);
    const mean = r % 3 === 2 ? 2 * scale : 0;
    for (let i = 0; i < dim; i++) x[r * dim + i] = mean + g() * scale;
  }
  return x;
}

/** A gain near 1 (0.5 .. 1.5, some negative entries), `dim` floats. */
export function testWeight(dim, seed) {
  const rand = rng(seed);
  const w = new Float32Array(dim);
  for (let i = 0; i < dim; i++) w[i] = (i % 11 === 5 ? -1 : 1) * (0.5 + rand());
  return w;
}

/**
 * Float64 `rstd = 1/sqrt(mean(x²) + eps)` per row of `x` (`rows × dim`), without y: rows of
 * 2^27 floats need no 1 GiB float64 output. `stat` (default `dim`): the mean over the first
 * `stat` elements only (pRMSNorm).
 */
export function refRstd(x, dim, eps, stat = dim) {
  const rows = x.length / dim;
  const e = Math.fround(eps);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let ss = 0;
    for (let i = 0; i < stat; i++) ss += x[o + i] * x[o + i];
    rstd[r] = 1 / Math.sqrt(ss / stat + e);
  }
  return rstd;
}

/** The gain of element `i`: `offset + weight[i]`, or 1 without a weight. */
const gainOf = (weight, offset, i) => (weight ? offset + weight[i] : 1);

/**
 * Float64 RMSNorm forward: `y = x · rstd · (offset + weight)`, `rstd = 1/sqrt(mean(x²) + eps)`
 * per row, the mean over the first `v.stat` elements (default all). For a fused residual add
 * pass `x` = the float32 `h = x + residual`.
 */
export function refForward(x, weight, dim, eps, v = {}) {
  const { offset = 0, stat = dim } = v;
  const rows = x.length / dim;
  const y = new Float64Array(x.length);
  const rstd = refRstd(x, dim, eps, stat);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    const rs = rstd[r];
    for (let i = 0; i < dim; i++) y[o + i] = x[o + i] * rs * gainOf(weight, offset, i);
  }
  return { y, rstd };
}

/**
 * Float64 RMSNorm backward. With `gy = dy ⊙ (offset + weight)`, per row
 * `dx = rstd · gy − x · rstd³ · mean(gy ⊙ x) (+ dresidual)` and `dweight = Σ_rows dy ⊙ x · rstd`;
 * also the scales of their float32 rounding errors (see reference.d.ts). `rstd`: the per-row
 * rstd to use (e.g. the kernel's float32 one); recomputed in float64 from `x` and `eps` when
 * omitted. `v`: `offset` (default 0), `stat` (pRMSNorm: rstd from the first `stat` elements, so
 * `dx_i = rstd·gy_i − [i < stat]·x_i·rstd³·Σ(gy ⊙ x)/stat`), `dresidual` (added to dx).
 */
export function refBackward(dy, x, weight, dim, eps, rstd, v = {}) {
  const { offset = 0, stat = dim, dresidual = null } = v;
  const rows = x.length / dim;
  const rs = rstd ? Float64Array.from(rstd) : refRstd(x, dim, eps, stat);
  const dx = new Float64Array(x.length);
  const dweight = weight ? new Float64Array(dim) : null;
  const dweightAbs = weight ? new Float64Array(dim) : null;
  const dxScale = new Float64Array(rows);
  const dxTerms = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    const a = rs[r];
    let c = 0;
    let cAbs = 0;
    let gg = 0;
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i] * gainOf(weight, offset, i);
      c += gy * x[o + i];
      cAbs += Math.abs(gy * x[o + i]);
      gg += gy * gy;
    }
    const b = a * a * a * (c / stat);
    const bAbs = a * a * a * (cAbs / stat);
    dxScale[r] = a * Math.sqrt(gg / dim);
    for (let i = 0; i < dim; i++) {
      const gy = dy[o + i] * gainOf(weight, offset, i);
      const bi = i < stat ? b : 0;
      const dh = dresidual ? dresidual[o + i] : 0;
      dx[o + i] = a * gy - bi * x[o + i] + dh;
      dxTerms[o + i] = Math.abs(a * gy) + (i < stat ? bAbs : 0) * Math.abs(x[o + i]) + Math.abs(dh);
      if (dweight && dweightAbs) {
        const t = dy[o + i] * x[o + i] * a;
        dweight[i] += t;
        dweightAbs[i] += Math.abs(t);
      }
    }
  }
  return { dx, dweight, dweightAbs, rstd: rs, dxScale, dxTerms };
}

/** Float64 `silu(z) = z / (1 + e^−z)` and its derivative `σ·(1 + z·(1 − σ))`, `σ = 1 / (1 + e^−z)`. */
export function refSilu(z) {
  const s = 1 / (1 + Math.exp(-z));
  return { silu: z * s, grad: s * (1 + z * (1 - s)) };
}

/**
 * Float64 gated RMSNorm, forward and backward (Qwen3-Next's and Mamba-2's RMSNormGated):
 * `mode` 'after': `y = x · rstd · g · silu(z)`; 'before': `h = x · silu(z)`, `y = h · rstd · g`
 * (rstd of the row the norm reads), `g = offset + weight` or 1. Returns y, dx, dz, dweight and
 * the scales of their float32 rounding errors: `dxTerms`, `dzTerms` per element (the sizes of
 * the terms that cancel in them) and `dweightAbs`.
 */
export function refGated(x, z, dy, weight, dim, eps, mode, v = {}) {
  const { offset = 0, stat = dim } = v;
  const rows = x.length / dim;
  const e = Math.fround(eps);
  const n = x.length;
  const [y, dx, dz, dxTerms, dzTerms] = [0, 0, 0, 0, 0].map(() => new Float64Array(n));
  const dweight = weight ? new Float64Array(dim) : null;
  const dweightAbs = weight ? new Float64Array(dim) : null;
  const after = mode === 'after';
  for (let r = 0, o = 0; r < rows; r++, o += dim) {
    const s = [];
    const h = [];
    for (let i = 0; i < dim; i++) {
      s.push(refSilu(z[o + i]));
      h.push(after ? x[o + i] : x[o + i] * s[i].silu);
    }
    let ss = 0;
    for (let i = 0; i < stat; i++) ss += h[i] * h[i];
    const a = 1 / Math.sqrt(ss / stat + e);
    const gy = h.map((_, i) => dy[o + i] * gainOf(weight, offset, i) * (after ? s[i].silu : 1));
    let c = 0;
    let cAbs = 0;
    for (let i = 0; i < dim; i++) {
      c += gy[i] * h[i];
      cAbs += Math.abs(gy[i] * h[i]);
    }
    const b = (a * a * a * c) / stat;
    const bAbs = (a * a * a * cAbs) / stat;
    for (let i = 0; i < dim; i++) {
      const t = h[i] * a * gainOf(weight, offset, i);
      y[o + i] = after ? t * s[i].silu : t;
      const bi = i < stat ? b : 0;
      const dh = a * gy[i] - bi * h[i];
      const dhAbs = Math.abs(a * gy[i]) + (i < stat ? bAbs : 0) * Math.abs(h[i]);
      const gs = s[i].silu;
      const gScale = (1 / (1 + Math.exp(-z[o + i]))) * (1 + Math.abs(z[o + i]) * Math.abs(1 - 1 / (1 + Math.exp(-z[o + i]))));
      dx[o + i] = after ? dh : dh * gs;
      dxTerms[o + i] = after ? dhAbs : dhAbs * Math.abs(gs);
      dz[o + i] = after ? dy[o + i] * t * s[i].grad : dh * x[o + i] * s[i].grad;
      dzTerms[o + i] = (after ? Math.abs(dy[o + i] * t) : dhAbs * Math.abs(x[o + i])) * gScale;
      if (dweight && dweightAbs) {
        const term = dy[o + i] * h[i] * a * (after ? gs : 1);
        dweight[i] += term;
        dweightAbs[i] += Math.abs(term);
      }
    }
  }
  return { y, dx, dz, dweight, dweightAbs, dxTerms, dzTerms };
}

/** Float64 LayerNorm forward: `y = (x − mean) · rstd · w + b` (two-pass variance). */
export function refLayerNorm(x, w, b, dim, eps) {
  const rows = x.length / dim;
  const e = Math.fround(eps);
  const y = new Float64Array(x.length);
  for (let r = 0, o = 0; r < rows; r++, o += dim) {
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += x[o + i];
    const mean = sum / dim;
    let v = 0;
    for (let i = 0; i < dim; i++) v += (x[o + i] - mean) ** 2;
    const s = 1 / Math.sqrt(v / dim + e);
    for (let i = 0; i < dim; i++) y[o + i] = (x[o + i] - mean) * s * (w ? w[i] : 1) + (b ? b[i] : 0);
  }
  return { y };
}

/**
 * The kernels' documented weight-gradient summation, emulated with Math.fround: per row
 * `t = dy · (x · rstd)`, summed in float32 over each block of 32 rows in row order from zero,
 * the block sums added in float64 in block order from zero and rounded once. With the same
 * float32 rstd the kernel must agree bit for bit (its vector lanes are per column, so the
 * order per column is exactly this).
 */
export function dweightF32(dy, x, rstd, dim, blockRows = 32) {
  const rows = x.length / dim;
  const f = Math.fround;
  const acc = new Float64Array(dim);
  const p = new Float32Array(dim);
  for (let r0 = 0; r0 < rows; r0 += blockRows) {
    p.fill(0);
    for (let r = r0; r < Math.min(rows, r0 + blockRows); r++) {
      const a = rstd[r];
      for (let i = 0; i < dim; i++) p[i] = f(p[i] + f(dy[r * dim + i] * f(x[r * dim + i] * a)));
    }
    for (let i = 0; i < dim; i++) acc[i] += p[i];
  }
  return Float32Array.from(acc);
}

/** `|a − ref| ≤ atol + rtol · |ref|` (PyTorch's assert_close rule), as a per-element tolerance. */
export function allclose(atol, rtol) {
  return (_i, ref) => atol + rtol * Math.abs(ref);
}

/** y's tolerance in the tests: allclose(Y_ATOL, Y_RTOL). */
export const yTolerance = allclose(Y_ATOL, Y_RTOL);

/** rstd's tolerance: RSTD_RTOL relative. */
export function rstdTolerance(_i, ref) {
  return RSTD_RTOL * Math.abs(ref);
}

/** `k · (rowScale[row of i] + |ref|)` for `rows × dim` outputs (k defaults to ROW_K). */
export function rowTolerance(rowScale, dim, k = ROW_K) {
  return (i, ref) => k * (rowScale[Math.floor(i / dim)] + Math.abs(ref));
}

/** Per row of `rows × dim` values: the largest |value|. */
export function rowMaxAbs(ref, dim) {
  const rows = ref.length / dim;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let m = 0;
    for (let j = 0; j < dim; j++) m = Math.max(m, Math.abs(ref[r * dim + j]));
    out[r] = m;
  }
  return out;
}

/** `k · scale[i]` (k defaults to ROW_K), e.g. scale = RefBackward.dweightAbs. */
export function sumTolerance(scale, k = ROW_K) {
  return (i) => k * scale[i];
}

/**
 * dweight's rounding bound: (2 + 31 + 1 + extraUlps)·U32·abs[i] whatever the number of rows (2
 * roundings per term, ≤ 31 float32 adds in a 32-row block, the blocks added in float64 and
 * rounded once), abs = dweightAbs. `rows` is kept for callers' clarity.
 */
export function dweightTolerance(abs, _rows, extraUlps = 0) {
  return (i) => (34 + extraUlps) * U32 * abs[i];
}

/**
 * |a − r| / t for one element, the rule every check here applies: ≤ 1 passes. A NaN
 * reference requires a NaN, an infinite one the same infinity, otherwise `a` must be finite;
 * a NaN tolerance fails instead of passing silently.
 */
export function ratioOf(a, r, t) {
  if (Number.isNaN(r)) return Number.isNaN(a) ? 0 : Infinity;
  if (!Number.isFinite(r)) return a === r ? 0 : Infinity;
  if (!Number.isFinite(a)) return Infinity;
  const d = Math.abs(a - r);
  return d === 0 ? 0 : d <= t ? d / t : t > 0 ? Math.max(d / t, 1 + 1e-9) : Infinity;
}

/** The largest {@link ratioOf} over all elements (0 for empty arrays; Infinity on a length mismatch). */
export function worstRatio(actual, ref, tol) {
  if (!actual || actual.length !== ref.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, ratioOf(actual[i], ref[i], tol(i, ref[i])));
  return worst;
}

/**
 * Compares `actual` against `ref` element by element by {@link ratioOf} with `tol(i, ref)`.
 * Returns null when all pass, else a description of the worst offender and the count.
 */
export function mismatch(actual, ref, tol, label = '') {
  if (actual.length !== ref.length) return `${label}: length ${actual.length}, expected ${ref.length}`;
  let bad = 0;
  let worst = -1;
  let worstRatio = 0;
  for (let i = 0; i < ref.length; i++) {
    const ratio = ratioOf(actual[i], ref[i], tol(i, ref[i]));
    if (ratio > 1) {
      bad++;
      if (ratio > worstRatio || worst < 0) {
        worstRatio = ratio;
        worst = i;
      }
    }
  }
  if (bad === 0) return null;
  const a = actual[worst];
  const r = ref[worst];
  return (
    `${label}: ${bad}/${ref.length} elements out of tolerance; worst [${worst}] = ${a}, ` +
    `reference ${r}, |diff| ${Math.abs(a - r)} vs allowed ${tol(worst, r)}`
  );
}

/**
 * Whether two arrays of the same element width hold identical bits (NaN payloads included):
 * float32 arrays, or 16-bit arrays of half bit patterns (Uint16Array, Float16Array).
 */
export function sameBits(a, b) {
  if (a.length !== b.length || a.BYTES_PER_ELEMENT !== b.BYTES_PER_ELEMENT) return false;
  const U = a.BYTES_PER_ELEMENT === 2 ? Uint16Array : Uint32Array;
  const ua = new U(a.buffer, a.byteOffset, a.length);
  const ub = new U(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return false;
  return true;
}

/** Index of the first differing bit pattern, or -1. */
export function firstBitDiff(a, b) {
  const n = Math.min(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < n; i++) if (ua[i] !== ub[i]) return i;
  return a.length === b.length ? -1 : n;
}

/**
 * The benchmark's and the demo's check of one contender's outputs against the float64
 * reference of its case: forward and LayerNorm y, backward dx and dweight, each element within
 * ATOL + RTOL·|ref| (NaN fails); a copy must equal its source exactly. `ref` is a
 * {@link caseReference}.
 */
export function checkOutputs(op, out, c, ref) {
  if (op === 'copy') {
    const y = out.y;
    const same = !!y && y.length === c.x.length && y.every((v, i) => Object.is(v, c.x[i]));
    return { passed: same, maxAbsErr: same ? 0 : Infinity, worstToTolerance: same ? 0 : Infinity, atol: 0, rtol: 0, ...(same ? {} : { detail: 'copy differs from its source' }) };
  }
  let maxAbsErr = 0;
  let worst = 0;
  let detail;
  const compare = (name, actual, want) => {
    if (!actual || actual.length !== want.length) {
      worst = Infinity;
      detail ??= `${name}: expected ${want.length} floats, got ${actual ? actual.length : 'none'}`;
      return;
    }
    for (let i = 0; i < want.length; i++) {
      const r = want[i];
      const err = Math.abs(actual[i] - r);
      const ratio = ratioOf(actual[i], r, ATOL + RTOL * Math.abs(r));
      if (ratio > worst) {
        worst = ratio;
        if (ratio > 1) detail = `${name}[${i}] = ${actual[i]}, reference ${r}`;
      }
      if (err > maxAbsErr) maxAbsErr = err;
    }
  };
  if (op === 'forward') compare('y', out.y, ref.forward().y);
  else if (op === 'layernorm') compare('y', out.y, ref.layerNorm().y);
  else {
    const r = ref.backward();
    compare('dx', out.dx, r.dx);
    compare('dweight', out.dw, r.dweight);
  }
  const passed = worst <= 1;
  return { passed, maxAbsErr, worstToTolerance: worst, atol: ATOL, rtol: RTOL, ...(passed ? {} : { detail: detail ?? 'unknown' }) };
}

/** A failed check for a contender that threw or did not run (`detail` says which). */
export function failedCheck(detail) {
  return { passed: false, maxAbsErr: Infinity, worstToTolerance: Infinity, atol: ATOL, rtol: RTOL, detail };
}

/** The (lazy, cached) float64 reference of one benchmark case: forward, backward, LayerNorm. */
export function caseReference(c) {
  let fwd;
  let bwd;
  let ln;
  return {
    forward: () => (fwd ??= refForward(c.x, c.w, c.dim, c.eps)),
    backward: () => (bwd ??= refBackward(c.dy, c.x, c.w, c.dim, c.eps)),
    layerNorm: () => (ln ??= refLayerNorm(c.x, c.w, c.b, c.dim, c.eps)),
  };
}

// =============================================================================================
// Half precision (float16, bfloat16): exact reference conversions.
//
// Written from the IEEE 754 definitions, slow on purpose: a value is decoded as
// (−1)^s · 2^(e−bias) · (1 + f/2^p) (subnormals: 2^emin · f/2^p) in float64, where every half
// and float32 value is exact; a value is encoded by counting how many quanta (the spacing of
// the format at its magnitude) it holds and rounding that count to the nearest integer, ties to
// even. No bit tricks with rounding biases, so there is nothing clever to get wrong; the
// kernels' fast conversions are tested against this, and this against NumPy and ml_dtypes
// (test/half-reference.test.ts).
//
// NaNs (a JS number cannot carry a NaN's sign or payload reliably, so the *Bits functions are
// the definitive ones and take or give bit patterns):
// - narrowing float32 → half: sign kept, quiet bit set, the payload's top bits kept
//   (float16: sign | 0x7e00 | frac32 >>> 13; bfloat16: top 16 bits | 0x0040). A canonical
//   float32 NaN (0x7fc00000) gives 0x7e00 / 0x7fc0. This is what IEEE 754 §6.2.3 recommends,
//   what x86 F16C / Arm FCVT do and what the Rust `half` crate does; NumPy keeps a signalling
//   NaN signalling and ml_dtypes drops the payload, so tests compare only NaN-ness and sign
//   with them.
// - widening half → float32: sign kept, quiet bit (0x00400000) set, payload kept in the top
//   bits (frac << (23 − p)), for the same reasons.
// =============================================================================================

/** Exponent and fraction widths; everything else about a format follows from them. */
function halfFormat(expBits, fracBits) {
  const bias = 2 ** (expBits - 1) - 1;
  return {
    fracBits,
    bias,
    emin: 1 - bias,
    emax: bias,
    expAll: 2 ** expBits - 1,
    expMask: (2 ** expBits - 1) * 2 ** fracBits,
    fracMask: 2 ** fracBits - 1,
    quietBit: 2 ** (fracBits - 1),
  };
}
const HALF_FORMATS = { float16: halfFormat(5, 10), bfloat16: halfFormat(8, 7) };

function formatOf(dtype) {
  const f = Object.hasOwn(HALF_FORMATS, dtype) ? HALF_FORMATS[dtype] : undefined;
  if (!f) throw new RangeError(`dtype must be 'float16' or 'bfloat16', got ${String(dtype)}`);
  return f;
}

// Rejecting non-patterns catches the easy mistake of passing a value where bits are expected.
function checkHalfBits(bits) {
  if (!(Number.isInteger(bits) && bits >= 0 && bits <= 0xffff)) throw new RangeError(`not a 16-bit pattern: ${bits}`);
}
function checkF32Bits(bits) {
  if (!(Number.isInteger(bits) && bits >= 0 && bits <= 0xffffffff)) throw new RangeError(`not a 32-bit pattern: ${bits}`);
}

// Powers of two by repeated doubling and halving, each step exact, rather than `2 ** e`, whose
// exactness rests on the engine's pow.
const POW2 = new Float64Array(1023 + 1074 + 1);
POW2[1074] = 1;
for (let e = 1; e <= 1023; e++) POW2[1074 + e] = POW2[1074 + e - 1] * 2;
for (let e = -1; e >= -1074; e--) POW2[1074 + e] = POW2[1074 + e + 1] / 2;
function pow2(e) {
  if (!Number.isInteger(e) || e < -1074 || e > 1023) throw new RangeError(`2^${e} is not a float64`);
  return POW2[1074 + e];
}

/** ⌊log2 a⌋ for finite a > 0; Math.log2 only gives the first guess, the loops make it exact. */
function floorLog2(a) {
  let e = Math.max(-1074, Math.min(1023, Math.floor(Math.log2(a))));
  while (pow2(e) > a) e--;
  while (e < 1023 && pow2(e + 1) <= a) e++;
  return e;
}

const F32_SCRATCH = new DataView(new ArrayBuffer(4));

/** The float32 bit pattern (uint32) of `v` rounded to float32; NaN gives whatever pattern the engine writes. */
export function f32BitsOf(v) {
  F32_SCRATCH.setFloat32(0, v, true);
  return F32_SCRATCH.getUint32(0, true);
}

/** The float32 with bit pattern `bits` (uint32), as a number; NaN patterns give NaN. */
export function f32FromBits(bits) {
  checkF32Bits(bits);
  F32_SCRATCH.setUint32(0, bits, true);
  return F32_SCRATCH.getFloat32(0, true);
}

/** The value of half pattern `bits`: exact, as every half value is a float64 (and a float32). */
export function halfToF32(bits, dtype) {
  checkHalfBits(bits);
  const F = formatOf(dtype);
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits & 0x7fff) >>> F.fracBits;
  const f = bits & F.fracMask;
  if (e === F.expAll) return f === 0 ? sign * Infinity : NaN;
  // sign · 0 keeps −0.
  if (e === 0) return sign * f * pow2(F.emin - F.fracBits);
  return sign * (pow2(F.fracBits) + f) * pow2(e - F.bias - F.fracBits);
}

/**
 * The float32 bit pattern of half pattern `bits`. NaN: bfloat16 is the top half of a float32,
 * so its bits are kept as they are (a shift, as every bfloat16 loader does); a float16 NaN
 * keeps its sign and payload and gets the quiet bit (as x86's F16C does).
 */
export function halfToF32Bits(bits, dtype) {
  const F = formatOf(dtype);
  checkHalfBits(bits);
  const e = (bits & 0x7fff) >>> F.fracBits;
  const f = bits & F.fracMask;
  if (dtype === 'bfloat16' && e === F.expAll && f !== 0) return bits * 0x10000;
  if (e === F.expAll && f !== 0) return (bits & 0x8000) * 0x10000 + 0x7f800000 + (f | F.quietBit) * pow2(23 - F.fracBits);
  return f32BitsOf(halfToF32(bits, dtype));
}

/**
 * The half pattern (sign bit excluded) nearest to the magnitude `a` (≥ 0, not NaN), ties to
 * even. The quantum is the format's spacing at a's exponent, with the exponent range unbounded
 * above, because IEEE 754 (§4.3, §7.4) rounds first and only then overflows: a result that
 * rounds to 2^(emax+1) or beyond is Inf. Works for any float64 `a`, not only float32 ones.
 */
function roundMagnitude(a, F) {
  if (a === Infinity) return F.expMask;
  if (a === 0) return 0;
  const e = Math.max(floorLog2(a), F.emin);
  const quantum = pow2(e - F.fracBits);
  // Exact: dividing by a power of two, and q < 2^(p+1) keeps q's fraction within float64.
  const q = a / quantum;
  let n = Math.floor(q);
  const rest = q - n;
  if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n += 1;
  return encodeMagnitude(n * quantum, F);
}

/** Bits of an exactly representable half magnitude `v`, or Inf for v ≥ 2^(emax+1). */
function encodeMagnitude(v, F) {
  if (v === 0) return 0;
  if (v >= pow2(F.emax + 1)) return F.expMask;
  let exp;
  let frac;
  if (v < pow2(F.emin)) {
    exp = 0;
    frac = v / pow2(F.emin - F.fracBits);
  } else {
    const e = floorLog2(v);
    exp = e + F.bias;
    frac = v / pow2(e - F.fracBits) - pow2(F.fracBits);
  }
  // A guard on this file's own reasoning: v was built as a whole number of quanta.
  if (!Number.isInteger(frac) || frac < 0 || frac > F.fracMask) throw new Error(`internal: ${v} is not a half value`);
  return exp * pow2(F.fracBits) + frac;
}

/** float32 pattern `bits` (uint32) → half pattern, round to nearest even; NaN: sign, quiet bit and top payload bits kept. */
export function f32BitsToHalf(bits, dtype) {
  checkF32Bits(bits);
  const F = formatOf(dtype);
  const sign = bits >= 0x80000000 ? 0x8000 : 0;
  const exp32 = Math.floor(bits / pow2(23)) & 0xff;
  const frac32 = bits & 0x7fffff;
  if (exp32 === 0xff && frac32 !== 0) return sign | F.expMask | F.quietBit | Math.floor(frac32 / pow2(23 - F.fracBits));
  return sign | roundMagnitude(Math.abs(f32FromBits(bits)), F);
}

/**
 * A float32 value (a number that Math.fround leaves unchanged) → half pattern, round to nearest
 * even. Any other number is a RangeError: rounding a float64 straight to half can differ from
 * the float32-then-half a kernel does (double rounding), so the caller must say which it means.
 */
export function f32ToHalf(v, dtype) {
  if (typeof v !== 'number' || !(Number.isNaN(v) || Math.fround(v) === v)) {
    throw new RangeError(`not a float32 value: ${v} (round it with Math.fround first)`);
  }
  return f32BitsToHalf(f32BitsOf(v), dtype);
}

/** bfloat16 pattern → its value (NaN for NaN patterns). */
export const bf16ToF32 = (bits) => halfToF32(bits, 'bfloat16');
/** IEEE binary16 pattern → its value (NaN for NaN patterns). */
export const f16ToF32 = (bits) => halfToF32(bits, 'float16');
/** float32 value → bfloat16 pattern, round to nearest even (NaN → 0x7fc0 | sign as the engine stores it). */
export const f32ToBf16 = (v) => f32ToHalf(v, 'bfloat16');
/** float32 value → binary16 pattern, round to nearest even (NaN → 0x7e00 | sign as the engine stores it). */
export const f32ToF16 = (v) => f32ToHalf(v, 'float16');

/** Half patterns → their float32 values; NaN patterns become float32 NaN patterns by halfToF32Bits's rule. */
export function toF32Array(bits, dtype) {
  const out = new Float32Array(bits.length);
  // Written as bits so that NaN signs and payloads survive (a NaN number might not).
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) outBits[i] = halfToF32Bits(bits[i], dtype);
  return out;
}

/**
 * float32 values → half patterns, round to nearest even. A Float32Array is read as bits (its
 * NaNs keep sign and payload); any other array must hold float32 values (see f32ToHalf).
 */
export function fromF32Array(a, dtype) {
  const out = new Uint16Array(a.length);
  if (a instanceof Float32Array) {
    const inBits = new Uint32Array(a.buffer, a.byteOffset, a.length);
    for (let i = 0; i < a.length; i++) out[i] = f32BitsToHalf(inBits[i], dtype);
  } else {
    for (let i = 0; i < a.length; i++) out[i] = f32ToHalf(a[i], dtype);
  }
  return out;
}

/** Whether half pattern `bits` is a NaN of `dtype`. */
export function halfIsNaN(bits, dtype) {
  const F = formatOf(dtype);
  checkHalfBits(bits);
  return (bits & F.expMask) === F.expMask && (bits & F.fracMask) !== 0;
}
/** Whether half pattern `bits` is ±Inf in `dtype`. */
export function halfIsInf(bits, dtype) {
  const F = formatOf(dtype);
  checkHalfBits(bits);
  return (bits & 0x7fff) === F.expMask;
}

/**
 * One unit in the last place of the half value with pattern `bits`: the spacing of the format
 * in that value's binade (at a power of two, the spacing above it), 2^(emin−p) for zeros and
 * subnormals. Infinity for ±Inf, NaN for NaN.
 */
export function halfUlp(bits, dtype) {
  const F = formatOf(dtype);
  if (halfIsNaN(bits, dtype)) return NaN;
  if (halfIsInf(bits, dtype)) return Infinity;
  const e = (bits & 0x7fff) >>> F.fracBits;
  return pow2(Math.max(e, 1) - F.bias - F.fracBits);
}

/**
 * How many representable values apart two half patterns of `dtype` are: sign-magnitude
 * patterns mapped to integers in value order (+0 and −0 both to 0), then subtracted, so
 * neighbours across zero and across binades count 1. Both NaN: 0; one NaN: Infinity; an
 * infinity: 0 if both are the same infinity, else Infinity (Inf is not "one step past" the
 * largest finite for a tolerance's purposes).
 */
export function halfUlpDiff(aBits, bBits, dtype) {
  const na = halfIsNaN(aBits, dtype);
  const nb = halfIsNaN(bBits, dtype);
  if (na || nb) return na && nb ? 0 : Infinity;
  if (halfIsInf(aBits, dtype) || halfIsInf(bBits, dtype)) return aBits === bBits ? 0 : Infinity;
  const ordered = (b) => (b & 0x8000 ? -(b & 0x7fff) : b);
  return Math.abs(ordered(aBits) - ordered(bBits));
}

// ---------------------------------------------------------------------------- quantized output

/** Largest magnitude of each quantized output dtype (a row's scale is max|y| / QMAX). */
export const QMAX = { int8: 127, float8_e4m3: 448 };

/** The value of float8 E4M3FN code `b` (0..255): sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7f and 0xff are NaN. */
export function e4m3ToNumber(b) {
  if ((b & 0x7f) === 0x7f) return NaN;
  const s = b & 0x80 ? -1 : 1;
  const e = (b >>> 3) & 15;
  const m = b & 7;
  return e === 0 ? s * m * pow2(-9) : s * (8 + m) * pow2(e - 10);
}

/** The 127 non-negative float8 E4M3FN values, by code (0..126): what {@link numberToE4m3} searches. */
const E4M3_VALUES = Array.from({ length: 127 }, (_, b) => e4m3ToNumber(b));

/**
 * The float8 E4M3FN code of `v` (|v| ≤ 448; NaN: 0x7f, whatever its sign): the nearest of the
 * format's values by a search over all of them, a tie going to the even code (its mantissa's
 * last bit 0) — not the bit manipulation a kernel uses. `negative`: the sign bit (for −0).
 */
export function numberToE4m3(v, negative = v < 0 || Object.is(v, -0)) {
  if (Number.isNaN(v)) return 0x7f;
  const sign = negative ? 0x80 : 0;
  const a = Math.abs(v);
  if (a > 448) throw new RangeError(`numberToE4m3: |v| must be at most 448, got ${v}`);
  let best = 0;
  for (let b = 1; b < 127; b++) {
    const d = Math.abs(E4M3_VALUES[b] - a) - Math.abs(E4M3_VALUES[best] - a);
    if (d < 0 || (d === 0 && (b & 1) === 0)) best = b;
  }
  return sign | best;
}

/** `v` rounded to the nearest integer, ties to even (as float32 rounding does). */
function roundHalfEven(v) {
  const r = Math.round(v);
  return Math.abs(v - Math.trunc(v)) === 0.5 ? 2 * Math.round(v / 2) : r;
}

/**
 * The quantized output the library computes from float32 rows `y` (`rows × dim`, the values a
 * float32 output has), every step in float32 as the library documents it: a row's scale is
 * `quantScale` or `max|y| / qmax` (NaN ignored; raised to 2^-126 when below it and not 0),
 * `inv = 1 / scale` (0 when the scale is 0),
 * `q = y · inv` rounded to nearest even and clamped to ±qmax; int8 takes NaN to 0, float8
 * E4M3FN keeps it (0x7f). Returns the codes and the scales (per row).
 */
export function refQuantize(y, rows, dim, outDtype, quantScale = 0) {
  const qmax = QMAX[outDtype];
  if (qmax === undefined) throw new TypeError(`refQuantize: unknown outDtype ${outDtype}`);
  const q = outDtype === 'int8' ? new Int8Array(rows * dim) : new Uint8Array(rows * dim);
  const scales = new Float32Array(rows);
  const f = Math.fround;
  for (let r = 0; r < rows; r++) {
    let m = 0;
    for (let i = 0; i < dim; i++) {
      const a = Math.abs(y[r * dim + i]);
      if (a > m) m = a;
    }
    // A per-row scale below float32's smallest normal is raised to it (its reciprocal stays finite).
    const raw = quantScale !== 0 ? f(quantScale) : f(m / qmax);
    const scale = quantScale === 0 && raw !== 0 && raw < 2 ** -126 ? 2 ** -126 : raw;
    scales[r] = scale;
    const inv = scale === 0 ? 0 : f(1 / scale);
    for (let i = 0; i < dim; i++) {
      const yi = y[r * dim + i];
      const v = f(yi * inv);
      if (outDtype === 'int8') q[r * dim + i] = Number.isNaN(v) ? 0 : Math.max(-127, Math.min(127, roundHalfEven(v)));
      else q[r * dim + i] = numberToE4m3(Math.max(-448, Math.min(448, v)));
    }
  }
  return { q, scales };
}
