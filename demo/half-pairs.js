// @ts-check
/**
 * Half precision in the page, as `npm run bench:half` measures it in Node: float16 and bfloat16
 * storage against float32 on the same shape (zero-copy forward and backward, views of wasm
 * memory, outputs given), on every SIMD build the browser runs (`simd`, and `simd-relaxed`
 * where it has relaxed SIMD); and the relaxed build against the plain one on the same half
 * data. Each pair is timed in alternating rounds (A then B, then B then A, ...) with
 * page-bench.js `time`, so both sides see the same load; the figure is the median over rounds of
 * the per-round ratio (baseline time ÷ the other's). Before timing, each half forward is
 * checked against the float32 forward of the same (widened) data, rounded: within one half ulp.
 * @module
 */
import { fromF32Array, halfUlpDiff, parseShape, testRows, testWeight, toF32Array } from '../shared/reference.js';
import { time } from './page-bench.js';

/** Views of one instance's memory holding copies of `arrays` (re-made per call: memory may grow). */
function place(m, arrays) {
  const bufs = arrays.map((a) => {
    const b = a instanceof Float32Array ? m.allocF32(a.length) : m.allocU16(a.length);
    b.view().set(a);
    return b;
  });
  return { v: (i) => bufs[i].view(), free: () => bufs.forEach((b) => b.free()) };
}

/** The zero-copy forward and backward of `m` on one shape, float32 or half (`dtype`). */
function calls(m, dtype, data) {
  const { x32, dy32, w32, rstd } = data;
  const conv = (a) => (dtype === 'float32' ? a : fromF32Array(a, dtype));
  const p = place(m, [conv(x32), conv(x32), conv(dy32), conv(dy32), conv(w32), rstd]);
  const o = dtype === 'float32' ? {} : { dtype };
  const dw = dtype === 'float32' ? new Float32Array(w32.length) : new Uint16Array(w32.length);
  return {
    forward: { async: false, fn: () => m.rmsNorm(p.v(0), p.v(4), { ...o, out: p.v(1) }) },
    backward: { async: false, fn: () => m.rmsNormBackward(p.v(2), p.v(0), p.v(4), { ...o, rstd: p.v(5), dx: p.v(3), dweight: dw }) },
    free: p.free,
  };
}

/** Throws unless `m`'s half forward of the data is the float32 forward of the widened data, rounded, within one half ulp. */
function checkForward(m, dtype, { x32, w32 }) {
  const x = fromF32Array(x32, dtype);
  const w = fromF32Array(w32, dtype);
  const y = m.rmsNorm(x, w, { dtype });
  const want = fromF32Array(m.rmsNorm(toF32Array(x, dtype), toF32Array(w, dtype)), dtype);
  for (let i = 0; i < y.length; i += 97) {
    if (halfUlpDiff(y[i], want[i], dtype) > 1) throw new Error(`${m.build} ${dtype}: y[${i}] is off by more than one ulp`);
  }
}

/** Median and interquartile range of the per-round ratios of a pair (`slow` is the baseline). */
async function timePair(slow, fast, rounds, budgetMs, minBatchMs) {
  const ratios = [];
  let slowMs = 0;
  let fastMs = 0;
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [fast, slow] : [slow, fast];
    const t = [];
    for (const inst of order) t.push((await time(inst, budgetMs, minBatchMs)).medianMs);
    const [s, f] = r % 2 ? [t[1], t[0]] : [t[0], t[1]];
    slowMs += s / rounds;
    fastMs += f / rounds;
    ratios.push(s / f);
  }
  const q = (p) => [...ratios].sort((u, v) => u - v)[Math.round(p * (ratios.length - 1))];
  return { baselineUs: slowMs * 1000, halfUs: fastMs * 1000, ratio: q(0.5), iqr: [q(0.25), q(0.75)] };
}

/**
 * @param {any} lib the package
 * @param {{ shapes: string[], rounds?: number, budgetMs?: number, minBatchMs?: number, onRow?: (r: any) => void }} cfg
 * @returns {Promise<{ builds: string[], rows: any[] }>} rows as bench/docs.ts `PairRow`
 */
export async function halfPairs(lib, cfg) {
  const rounds = cfg.rounds ?? 5;
  const budgetMs = cfg.budgetMs ?? 200;
  const minBatchMs = cfg.minBatchMs ?? 1;
  const builds = lib.relaxedSimdSupported() ? ['simd', 'simd-relaxed'] : ['simd'];
  const ms = await Promise.all(builds.map((b) => lib.loadRmsNorm(b)));
  const rows = [];
  const push = (r) => {
    rows.push(r);
    cfg.onRow?.(r);
  };
  for (const shape of cfg.shapes) {
    const { rows: n, dim } = parseShape(shape);
    const x32 = testRows(n, dim, 1);
    const data = { x32, dy32: testRows(n, dim, 2), w32: testWeight(dim, 3), rstd: new Float32Array(n) };
    ms[0].rmsNorm(x32, data.w32, { rstd: data.rstd });
    for (const dtype of ['bfloat16', 'float16']) {
      const per = ms.map((m) => {
        checkForward(m, dtype, data);
        return { m, f32: calls(m, 'float32', data), half: calls(m, dtype, data) };
      });
      try {
        for (const op of ['forward', 'backward']) {
          for (const { m, f32, half } of per) {
            push({ shape, pair: `${dtype} ${op} zero-copy vs float32, ${m.build}`, ...(await timePair(f32[op], half[op], rounds, budgetMs, minBatchMs)) });
          }
          if (per.length === 2) {
            push({ shape, pair: `${dtype} ${op} zero-copy, simd-relaxed vs simd`, ...(await timePair(per[0].half[op], per[1].half[op], rounds, budgetMs, minBatchMs)) });
          }
        }
      } finally {
        for (const p of per) {
          p.f32.free();
          p.half.free();
        }
      }
    }
  }
  return { builds, rows };
}
