// Bits fingerprint of every build this engine runs (simd, simd-threads, scalar; simd-relaxed
// and simd-relaxed-threads where it has relaxed SIMD, e.g. node --experimental-wasm-relaxed-simd
// on Node 20) and of the pool at 1 and 2 threads. Every entry of a line must be equal (same
// bits on every build and thread count); compare the lines before and after a change that must
// not change results.
//
// Line 1, `plain`: the forward (y, rstd) and backward (dx, dweight; saved and recomputed rstd;
// with and without weight) of float32 calls on 17 shapes from 1x1 to 1x100003 (rows below, at
// and past the kernels' 16-float step and their 1024-float sum block).
// Line 2, `flavours`: every flavour the kernels have, forward and backward, on 9 shapes:
// float32, float16 and bfloat16 storage; no weight, a float32 weight and a weight of the
// activations' dtype; the fused residual add (and its dresidual); Gemma's offset; pRMSNorm's
// partial; the llama and gemma casting modes; both gate modes. The pool's entries run every
// call of 2 rows or more sharded (its test hooks), so that its chunks are what is hashed.
// Line 3, `quantized`: the quantized outputs (int8 and float8_e4m3, per-row scales and a static
// scale) of float32, float16 and bfloat16 rows with a float32 weight, with and without the
// fused residual add, a gate, the llama casting, Gemma's offset, on the flavours' shapes, rows with a
// zero, a NaN and an infinity among them; the codes and the row scales.
//
//   node scripts/bits-hash.mjs [repository root, default .]    (needs dist/ and wasm/ built)
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(process.argv[2] ?? '.');
const { loadRmsNorm, createPool, relaxedSimdSupported } = await import(pathToFileURL(`${root}/dist/index.js`).href);
const { poolHooks } = await import(pathToFileURL(`${root}/dist/pool/caller/hooks.js`).href);
const { rng } = await import(pathToFileURL(`${root}/shared/reference.js`).href);
const shapes = [[1, 1], [3, 7], [5, 15], [4, 16], [2, 17], [7, 63], [9, 100], [33, 256], [3, 257], [2, 1000], [65, 1024], [4, 4099], [2, 8192], [1, 8193], [1, 20000], [1, 65536], [1, 100003]];
const flavourShapes = [[1, 1], [3, 7], [2, 17], [9, 100], [33, 256], [3, 257], [70, 64], [2, 1000], [1, 8193]];

const bytesOf = (a) => new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));

/** A SHA-256 of arrays' bytes: `add` each, then `digest()`, the fingerprint (16 hex digits). */
function hasher() {
  const h = createHash('sha256');
  return { add: (a) => h.update(bytesOf(a)), digest: () => h.digest('hex').slice(0, 16) };
}

/** Float32Arrays of `n` values uniform in [lo, lo + span), drawn from one generator seeded with `seed`. */
function valuesFrom(seed) {
  const r = rng(seed);
  return (n, lo, span) => new Float32Array(n).map(() => lo + span * r());
}

/** Hash of every output of `m` (the sync API of one build, or a pool: awaited either way) over the shapes. */
async function fingerprint(m) {
  const { add, digest } = hasher();
  for (const [rows, dim] of shapes) {
    const r = rng(rows * 100000 + dim);
    const x = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    const w = new Float32Array(dim).map(() => 0.5 + r());
    const dy = new Float32Array(rows * dim).map(() => r() * 2 - 1);
    for (const wt of [w, null]) {
      const rstd = new Float32Array(rows);
      add(await m.rmsNorm(x, wt, { dim, rstd, eps: 1e-6 }));
      add(rstd);
      for (const rs of [rstd, undefined]) {
        const { dx, dweight } = await m.rmsNormBackward(dy, x, wt, { dim, rstd: rs, eps: 1e-6 });
        add(dx);
        if (dweight) add(dweight);
      }
    }
  }
  return digest();
}

/** The flavours: each a set of options beside the dtype and the weight's kind. */
function* flavours() {
  for (const dtype of ['float32', 'float16', 'bfloat16']) {
    for (const wk of ['none', 'f32', 'act']) {
      if (wk === 'act' && dtype === 'float32') continue;
      const weighted = wk !== 'none';
      for (const residual of [false, true]) {
        for (const gateMode of [null, 'after', 'before']) {
          if (residual && gateMode) continue;
          for (const offset of weighted ? [0, 1] : [0]) {
            for (const partial of [1, 0.7]) {
              for (const castingMode of dtype === 'float32' ? ['none'] : weighted ? ['none', 'llama', 'gemma'] : ['none']) {
                yield { dtype, wk, residual, gateMode, offset, partial, castingMode };
              }
            }
          }
        }
      }
    }
  }
}

/** Hash of every flavour's outputs (see the header) from `m`; `half` converts float32 values to half bits. */
async function flavourprint(m, half) {
  const { add, digest } = hasher();
  for (const [rows, dim] of flavourShapes) {
    const vals = valuesFrom(rows * 7919 + dim);
    const n = rows * dim;
    const srcs = { x: vals(n, -1, 2), res: vals(n, -1, 2), z: vals(n, -3, 6), dy: vals(n, -1, 2), dres: vals(n, -0.5, 1), w: vals(dim, 0.5, 1) };
    for (const f of flavours()) {
      const act = (a) => (f.dtype === 'float32' ? a.slice() : half(a, f.dtype));
      const weight = f.wk === 'none' ? null : f.wk === 'f32' ? srcs.w.slice() : half(srcs.w, f.dtype);
      const common = { dim, dtype: f.dtype, eps: 1e-5, partial: f.partial, ...(f.offset && { offset: f.offset }), ...(f.castingMode !== 'none' && { castingMode: f.castingMode }) };
      if (weight && f.wk === 'act') common.weightDtype = f.dtype;
      const gate = f.gateMode ? { gate: act(srcs.z), gateMode: f.gateMode } : {};
      const x = act(srcs.x);
      const residual = f.residual ? act(srcs.res) : undefined;
      const rstd = new Float32Array(rows);
      const y = await m.rmsNorm(x, weight, { ...common, ...gate, rstd, ...(residual && { residual }) });
      add(y);
      add(rstd);
      if (residual) add(residual);
      const hx = residual ?? x; // the backward of a fused add takes its h
      for (const rs of [rstd, undefined]) {
        const dresidual = f.residual ? act(srcs.dres) : undefined;
        const g = await m.rmsNormBackward(act(srcs.dy), hx, weight, { ...common, ...gate, ...(rs && { rstd: rs }), ...(dresidual && { dresidual }) });
        add(g.dx);
        if (g.dweight) add(g.dweight);
        if (g.dgate) add(g.dgate);
      }
    }
  }
  return digest();
}

/** Hash of the quantized outputs (see the header) from `m`. */
async function quantprint(m, half) {
  const { add, digest } = hasher();
  for (const [rows, dim] of flavourShapes) {
    const vals = valuesFrom(rows * 104729 + dim);
    const xs = vals(rows * dim, -1, 2);
    if (rows > 2) {
      xs.fill(0, dim, 2 * dim);
      xs[2 * dim] = NaN;
    }
    if (rows > 3) xs[3 * dim + 1] = Infinity;
    const res = vals(rows * dim, -1, 2);
    const z = vals(rows * dim, -3, 6);
    const w = vals(dim, 0.5, 1);
    for (const dtype of ['float32', 'float16', 'bfloat16']) {
      const act = (a) => (dtype === 'float32' ? a.slice() : half(a, dtype));
      for (const outDtype of ['int8', 'float8_e4m3']) {
        for (const v of [{}, { residual: true }, { gate: true }, { offset: 1 }, ...(dtype === 'float32' ? [] : [{ castingMode: 'llama' }])]) {
          for (const quantScale of [undefined, 0.01]) {
            const rowScales = quantScale ? undefined : new Float32Array(rows);
            const residual = v.residual ? act(res) : undefined;
            const o = { dim, dtype, eps: 1e-5, outDtype, ...(quantScale && { quantScale }), ...(rowScales && { rowScales }), ...(residual && { residual }), ...(v.gate && { gate: act(z) }), ...(v.offset && { offset: v.offset }), ...(v.castingMode && { castingMode: v.castingMode }) };
            add(await m.rmsNorm(act(xs), w, o));
            if (rowScales) add(rowScales);
            if (residual) add(residual);
          }
        }
      }
    }
  }
  return digest();
}

const plain = {};
const wide = {};
const quant = {};
const sync = await loadRmsNorm('simd');
const half = (a, dtype) => sync.float32ToHalf(a, dtype);
const relaxed = relaxedSimdSupported() ? ['simd-relaxed', 'simd-relaxed-threads'] : [];
for (const build of ['simd', 'simd-threads', ...relaxed, 'scalar']) {
  const m = await loadRmsNorm(build);
  plain[build] = await fingerprint(m);
  wide[build] = await flavourprint(m, half);
  quant[build] = await quantprint(m, half);
}
for (const threads of [1, 2]) {
  const pool = await createPool({ threads });
  plain['pool' + threads] = await fingerprint(pool);
  const hooks = poolHooks(pool);
  hooks.setInlineBelow(0);
  hooks.forceWay('sharded');
  wide['pool' + threads] = await flavourprint(pool, half);
  quant['pool' + threads] = await quantprint(pool, half);
  await pool.destroy();
}
console.log(JSON.stringify(plain));
console.log(JSON.stringify({ flavours: wide }));
console.log(JSON.stringify({ quantized: quant }));
process.exit(0);
