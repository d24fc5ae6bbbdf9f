/**
 * The worker pool's own benchmark: empty-dispatch round trip, the inline threshold
 * sweep, the speed-up at large shapes (zero-copy and plain arrays), "never more than
 * 5% slower than sync" over small shapes with the default thresholds, and the calling patterns
 * users write (a loop of awaited calls, calls alternated with other work, several in flight)
 * with the worst of them. Medians of many calls,
 * sync and pool interleaved in one run, so ratios compare like with like.
 *
 * Run: `npm run bench:pool` (after `npm run build`); `--json FILE` also writes the numbers.
 * @module
 */
import { copyScaling } from './copy-scaling.js';
import { renderCurve } from './curve-svg.js';
import { writeBenchmarks } from './docs.js';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { createPool, init, instance, loadRmsNorm, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';

/** Median wall time (µs) of `f` over about `budgetMs` after a warm-up. */
async function median(f: () => unknown, budgetMs = 300): Promise<number> {
  const t0 = performance.now();
  let warm = 0;
  while (performance.now() - t0 < budgetMs / 5 || warm < 5) {
    await f();
    warm++;
  }
  const t: number[] = [];
  const t1 = performance.now();
  while ((performance.now() - t1 < budgetMs && t.length < 5000) || t.length < 9) {
    const s = performance.now();
    await f();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[t.length >> 1]! * 1000;
}

/**
 * `a` and `b` timed in alternating blocks of BLOCK calls, after `warm` calls of each (the pool
 * learns its way over its first calls of a kind); the first call of a block is not counted (it
 * meets the other's leftovers: the pool's workers asleep after the sync calls, or still
 * polling). Both meet the same machine, collections and page faults. Median µs of each.
 */
async function pair(a: () => unknown, b: () => unknown, budgetMs: number, warm = 40): Promise<[number, number]> {
  const BLOCK = 5;
  for (let i = 0; i < warm; i++) await a();
  for (let i = 0; i < warm; i++) await b();
  const ta: number[] = [];
  const tb: number[] = [];
  const block = async (f: () => unknown, into: number[]) => {
    for (let i = 0; i < BLOCK; i++) {
      const s = performance.now();
      await f();
      if (i > 0) into.push(performance.now() - s);
    }
  };
  const t0 = performance.now();
  while ((performance.now() - t0 < budgetMs && ta.length < 2000) || ta.length < 16) {
    await block(a, ta);
    await block(b, tb);
  }
  const med = (v: number[]) => v.sort((x, y) => x - y)[v.length >> 1]! * 1000;
  return [med(ta), med(tb)];
}

const fmt = (v: number, w = 9) => v.toFixed(1).padStart(w);
await init();
const cores = availableParallelism();
const threads = Number(process.env.THREADS ?? cores);
// The sync default (init()'s build) for plain arrays; the instance of the pool's build for views.
const rn = instance()!;
const pool = await createPool({ threads });
const shared = await loadRmsNorm(pool.build);
const out: Record<string, unknown> = {
  date: new Date().toISOString(),
  cpu: cpus()[0]?.model,
  cores,
  loadavg: loadavg(),
  node: process.version,
  threads,
  builds: { init: rn.build, pool: pool.build },
};

function buffers(rows: number, dim: number) {
  const n = rows * dim;
  const bufs = [n, n, n, dim, dim].map((k) => shared.allocF32(k));
  return {
    free: () => bufs.forEach((b) => b.free()),
    // Views after all allocations: growth detaches earlier views of non-shared memory (this is
    // the shared build, where they would stay valid, but keep the habit).
    views() {
      const [x, y, dy, w, dw] = bufs.map((b) => b.view()) as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
      for (let i = 0; i < n; i++) x[i] = Math.sin(i * 0.37);
      dy.fill(0.25);
      w.fill(1.5);
      return { x, y, dy, w, dw };
    },
  };
}

/** Where a comparison's arrays are: views of the pool's memory, the caller's SharedArrayBuffers, plain arrays with `out`, plain arrays with results allocated by the call. */
type Kind = 'views' | 'shared' | 'plain' | 'default';
const KINDS: readonly Kind[] = ['views', 'shared', 'plain', 'default'];

/** Pool and sync call of `kind` on `rows × dim`, interleaved; the sync call runs on the same arrays (views: on the pool's build). */
async function compare(p: RmsNormPool, rows: number, dim: number, kind: Kind, budgetMs: number) {
  const b = buffers(rows, dim);
  const v = b.views();
  const copy = (a: Float32Array) => {
    if (kind !== 'shared') return a.slice();
    const c = new Float32Array(new SharedArrayBuffer(a.byteLength));
    c.set(a);
    return c;
  };
  const { x, y, dy, w, dw } = kind === 'views' ? v : { x: copy(v.x), y: copy(v.y), dy: copy(v.dy), w: v.w.slice(), dw: copy(v.dw) };
  const sync = kind === 'views' ? shared : rn;
  const alloc = kind === 'default';
  const [fs, fp] = await pair(() => (alloc ? sync.rmsNorm(x, w) : sync.rmsNorm(x, w, { out: y })), () => (alloc ? p.rmsNorm(x, w) : p.rmsNorm(x, w, { out: y })), budgetMs);
  const [bs, bp] = await pair(
    () => (alloc ? sync.rmsNormBackward(dy, x, w) : sync.rmsNormBackward(dy, x, w, { dx: y, dweight: dw })),
    () => (alloc ? p.rmsNormBackward(dy, x, w) : p.rmsNormBackward(dy, x, w, { dx: y, dweight: dw })),
    budgetMs,
  );
  b.free();
  return { rows, dim, kind, fwdSync: fs, fwdPool: fp, fwdRatio: fs / fp, bwdSync: bs, bwdPool: bp, bwdRatio: bs / bp };
}

type Comparison = Awaited<ReturnType<typeof compare>>;

// `--service`: only the service scenarios (section 5).
const serviceOnly = process.argv.includes('--service');
console.log(`rmsnorm-wasm pool benchmark: ${threads} threads, builds: init() ${rn.build}, pool ${pool.build}; ${out.cpu}, Node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`);

if (!serviceOnly) await speedups();
async function speedups() {
// 1. Empty dispatch to every worker and back.
const ping = await median(() => pool.ping(), 1000);
out.pingMedianUs = ping;
console.log(`\nempty dispatch round trip (pool.ping): median ${ping.toFixed(1)} µs`);

// 2. The speed-up over the sync call by size (bytes of x) and kind of arrays, ROUNDS rounds
//    (the median of the rounds is kept).
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const MIB = (process.env.SIZES ?? '1,4,16,64,256').split(',').map(Number);
const dim = 4096;
console.log(`\nspeed-up over the sync call on the same arrays (sync time / pool time; medians of calls in alternating blocks, median of ${ROUNDS} rounds)`);
console.log('    size  rows × dim    |' + KINDS.map((k) => ` ${k.padStart(7)} fwd  bwd |`).join(''));
const rounds: Comparison[][] = [];
for (let r = 0; r < ROUNDS; r++) {
  const row: Comparison[] = [];
  for (const mib of MIB) {
    for (const kind of KINDS) row.push(await compare(pool, (mib << 20) / 4 / dim, dim, kind, Math.min(1500, 150 + mib * 8)));
  }
  rounds.push(row);
}
const medOf = (v: number[]) => v.sort((a, b) => a - b)[v.length >> 1]!;
const bySize: Comparison[] = rounds[0]!.map((c, i) => ({
  ...c,
  fwdRatio: medOf(rounds.map((rr) => rr[i]!.fwdRatio)),
  bwdRatio: medOf(rounds.map((rr) => rr[i]!.bwdRatio)),
  fwdSync: medOf(rounds.map((rr) => rr[i]!.fwdSync)),
  fwdPool: medOf(rounds.map((rr) => rr[i]!.fwdPool)),
  bwdSync: medOf(rounds.map((rr) => rr[i]!.bwdSync)),
  bwdPool: medOf(rounds.map((rr) => rr[i]!.bwdPool)),
}));
for (const mib of MIB) {
  const cs = bySize.filter((c) => c.rows * c.dim * 4 === mib << 20);
  console.log(`${`${mib} MiB`.padStart(8)}  ${`${cs[0]!.rows} × ${dim}`.padStart(11)}  |` + cs.map((c) => ` ${c.fwdRatio.toFixed(2).padStart(7)}  ${c.bwdRatio.toFixed(2).padStart(4)} |`).join(''));
}
out.bySize = bySize;
out.rounds = ROUNDS;

// 2a. What the machine gives copies by two threads against one: a pool call on plain arrays has
//     the calling thread copy rows in and out while the workers compute, which pays only where
//     two threads get more memory bandwidth than one.
const copies = [];
for (const mib of [4, 16, 64]) copies.push(await copyScaling(mib));
console.log(`\ncopies by two threads at once ÷ by one (SharedArrayBuffers, GB/s read + written): ${copies.map((c) => `${c.mib} MiB ${c.oneGBps.toFixed(1)} → ${c.twoGBps.toFixed(1)} (${(c.twoGBps / c.oneGBps).toFixed(2)}x)`).join(', ')}`);
out.copyScaling = copies;

// 2b. The threads curve: views, by size, on pools of 1, 2, 4, … threads up to twice the cores.
const TCURVE = [...new Set([1, 2, 4, 8, 16, 32, 64].filter((t) => t < cores).concat([cores, 2 * cores]))].sort((a, b) => a - b);
console.log(`\nthreads: speed-up over the sync call on views by pool threads (forward / backward)`);
console.log('    size  |' + TCURVE.map((t) => ` ${String(t).padStart(3)} threads |`).join(''));
const curve: { mib: number; threads: number; fwdRatio: number; bwdRatio: number }[] = [];
for (const mib of [1, 16, 64]) {
  const cells: string[] = [];
  for (const t of TCURVE) {
    const p = await createPool({ threads: t });
    const c = await compare(p, (mib << 20) / 4 / dim, dim, 'views', 400);
    await p.destroy();
    curve.push({ mib, threads: t, fwdRatio: c.fwdRatio, bwdRatio: c.bwdRatio });
    cells.push(` ${c.fwdRatio.toFixed(2)}/${c.bwdRatio.toFixed(2)} |`);
  }
  console.log(`${`${mib} MiB`.padStart(8)}  |${cells.join('')}`);
}
out.threadsCurve = curve;
writeFileSync(
  new URL('./results/pool-threads.svg', import.meta.url),
  renderCurve({
    title: 'The pool on views: speed-up over the sync call by threads',
    subtitle: `${out.cpu}, ${cores} cores; ${String(out.date).slice(0, 10)}; forward (solid) and backward (dashed colours)`,
    yLabel: 'sync time / pool time',
    cores,
    series: [1, 16, 64].flatMap((mib, k) => [
      { label: `${mib} MiB forward`, color: ['#7fb8e6', '#1f5fa8', '#0b2e59'][k]!, points: curve.filter((c) => c.mib === mib).map((c) => [c.threads, c.fwdRatio] as const) },
      { label: `${mib} MiB backward`, color: ['#9fd89f', '#2e8b3e', '#145220'][k]!, points: curve.filter((c) => c.mib === mib).map((c) => [c.threads, c.bwdRatio] as const) },
    ]),
    refs: [{ label: 'the sync call', color: '#888', y: 1 }],
  }),
);

const hooks = poolHooks(pool);

// 3. Default thresholds: the pool must never be more than 5% slower than sync.
console.log('\ndefault thresholds, zero-copy: pool time / sync time');
const small: Comparison[] = [];
for (const [rows, dim] of [[1, 64], [8, 64], [64, 64], [1, 4096], [8, 1024], [32, 1024], [16, 4096], [64, 1024], [128, 1024], [64, 4096]] as const) {
  const r = await compare(pool, rows, dim, 'views', 300);
  small.push(r);
  console.log(`${`${rows}x${dim}`.padStart(10)}  fwd ${(1 / r.fwdRatio).toFixed(3)}  bwd ${(1 / r.bwdRatio).toFixed(3)}`);
}
out.defaultThresholds = small;
const worst = Math.max(...small.flatMap((r) => [1 / r.fwdRatio, 1 / r.bwdRatio]));
console.log(`worst: ${worst.toFixed(3)}`);

// 4. Threshold sweep with inlining off: where sharding starts to pay.
hooks.setInlineBelow(0);
console.log('\ninline threshold off, dim 1024, zero-copy: sync / pool (> 1.05: the pool pays)');
const sweep: Comparison[] = [];
for (const rows of [4, 8, 16, 32, 64, 128, 256, 512]) {
  const r = await compare(pool, rows, 1024, 'views', 300);
  sweep.push(r);
  console.log(`${String(rows * 1024).padStart(8)} elements  fwd ${r.fwdRatio.toFixed(2)}  bwd ${r.bwdRatio.toFixed(2)}`);
}
out.sweep = sweep;
const from = (k: 'fwdRatio' | 'bwdRatio') => sweep.find((r) => r[k] > 1.05)?.rows;
console.log(`pool ≥ 5% faster from: forward ${(from('fwdRatio') ?? NaN) * 1024} elements, backward ${(from('bwdRatio') ?? NaN) * 1024} elements`);
}

// 4b. The calling patterns users write, on plain arrays (results allocated by the call, or `out`).
if (!serviceOnly) out.patterns = await patterns();

/**
 * Each pattern of pool calls against the same pattern of sync calls on the same arrays: a loop
 * of awaited calls (`for (…) await pool.rmsNorm(x, w)`), pool calls alternated with sync work
 * (each pool call after a sync one: the workers meet each call cold), and four calls in flight
 * at once (`Promise.all`, each its own output; against four sync calls whose results are held
 * together, as the same program without the pool holds them). Per size, kind and pattern: sync time ÷ pool
 * time, the median of ROUNDS rounds (sync and pool in turn, the order swapped each round);
 * the worst of them is the number that says whether the pool can cost its user.
 */
async function patterns() {
  const SIZES: readonly [number, number][] = [[128, 2048], [512, 4096], [2048, 4096]];
  const R = Number(process.env.PATTERN_ROUNDS ?? 9);
  const rowsOut: { rows: number; dim: number; kind: string; pattern: string; ratio: number }[] = [];
  console.log(`\ncalling patterns on plain arrays: sync time / pool time (median of ${R} rounds; below 1: the pool costs)`);
  for (const [r, d] of SIZES) {
    const n = r * d;
    const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37));
    const w = new Float32Array(d).fill(1.5);
    const outs = [0, 1, 2, 3].map(() => new Float32Array(n));
    const N = Math.max(8, Math.min(200, Math.round(4e8 / (8 * n)))) & ~3;
    for (const kind of ['default', 'out'] as const) {
      const s = (j = 0) => (kind === 'default' ? rn.rmsNorm(x, w) : rn.rmsNorm(x, w, { out: outs[j]! }));
      const p = (j = 0) => (kind === 'default' ? pool.rmsNorm(x, w) : pool.rmsNorm(x, w, { out: outs[j]! }));
      const patternsOf: Record<string, [() => Promise<number>, () => Promise<number>]> = {
        'awaited loop': [async () => time(() => { for (let i = 0; i < N; i++) s(); }), async () => timeAsync(async () => { for (let i = 0; i < N; i++) await p(); })],
        alternated: [
          async () => { let t = 0; for (let i = 0; i < N; i++) { t += time(() => s()); time(() => s(1)); } return t; },
          async () => { let t = 0; for (let i = 0; i < N; i++) { time(() => s(1)); t += await timeAsync(() => p()); } return t; },
        ],
        // The same program with sync calls holds its four results at once too (four results
        // alive instead of one is what this pattern costs either way, in allocation and GC).
        'four in flight': [
          async () => time(() => { let held: unknown[] = []; for (let i = 0; i < N; i += 4) held = [s(0), s(1), s(2), s(3)]; return held; }),
          async () => timeAsync(async () => { for (let i = 0; i < N; i += 4) await Promise.all([p(0), p(1), p(2), p(3)]); }),
        ],
      };
      const cells: string[] = [];
      for (const [name, [fs, fp]] of Object.entries(patternsOf)) {
        await fp(); // the pool learns its way over its first calls
        const ratios: number[] = [];
        for (let k = 0; k < R; k++) {
          let ts: number, tp: number;
          if (k % 2) [tp, ts] = [await fp(), await fs()];
          else [ts, tp] = [await fs(), await fp()];
          ratios.push(ts / tp);
        }
        const ratio = ratios.sort((u, v) => u - v)[R >> 1]!;
        rowsOut.push({ rows: r, dim: d, kind, pattern: name, ratio });
        cells.push(`${name} ${ratio.toFixed(2)}`);
      }
      console.log(`${`${r}x${d}`.padStart(10)} ${kind.padEnd(7)}  ${cells.join('  ')}`);
    }
  }
  const worst = rowsOut.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  console.log(`worst: ${worst.ratio.toFixed(2)} (${worst.rows}x${worst.dim}, ${worst.kind}, ${worst.pattern})`);
  return { rows: rowsOut, worst };
}

/** Milliseconds `f` takes. */
function time(f: () => unknown): number {
  const s = performance.now();
  f();
  return performance.now() - s;
}

/** Milliseconds `f`'s promise takes to settle. */
async function timeAsync(f: () => Promise<unknown>): Promise<number> {
  const s = performance.now();
  await f();
  return performance.now() - s;
}

await pool.destroy();

// 5. The pool as a service uses it: a CPU-bound neighbour, a burst of queued calls
//    with timers and a timer abort, destroy during a large call, many create/destroy cycles.
out.service = await service();

const at = process.argv.indexOf('--json');
if (at > 0 && process.argv[at + 1]) {
  writeFileSync(process.argv[at + 1]!, JSON.stringify(out, null, 2));
  writeBenchmarks(); // the page follows bench/results/pool.json when that is the file
}

async function service() {
  const r: Record<string, unknown> = {};
  const plainCase = (rows: number, dim: number) => {
    const x = new Float32Array(rows * dim).map((_, i) => Math.sin(i * 0.37));
    return { x, w: new Float32Array(dim).fill(1.5), out: new Float32Array(rows * dim) };
  };

  console.log('\nservice: one CPU-bound process beside the pool (pool / sync)');
  const burner = spawn(process.execPath, ['-e', 'const end = Date.now() + 120_000; while (Date.now() < end) {}'], { stdio: 'ignore' });
  try {
    await new Promise((res) => setTimeout(res, 300));
    const p = await createPool({ threads });
    const rows: Record<string, number>[] = [];
    for (const [rw, dim] of [[128, 2048], [512, 4096]] as const) {
      const { x, w, out: y } = plainCase(rw, dim);
      const fs = await median(() => rn.rmsNorm(x, w, { out: y }), 600);
      const fp = await median(() => p.rmsNorm(x, w, { out: y }), 600);
      rows.push({ rows: rw, dim, syncUs: fs, poolUs: fp, ratio: fp / fs });
      console.log(`${`${rw}x${dim}`.padStart(10)} plain   sync ${fmt(fs)} µs  pool ${fmt(fp)} µs  pool/sync ${(fp / fs).toFixed(2)}`);
    }
    await p.destroy();
    r.contention = rows;
  } finally {
    burner.kill();
  }

  console.log('\nservice: 500 queued 256x1024 calls (plain arrays, results allocated by the library)');
  {
    const p = await createPool({ threads });
    const { x, w } = plainCase(256, 1024);
    // Promise.all holds all 500 results (500 MiB of fresh pages) until the end: the sync
    // loop keeps its results too, or it would reuse one freed result's pages every call.
    let t0 = performance.now();
    const kept: Float32Array[] = [];
    for (let i = 0; i < 500; i++) kept.push(rn.rmsNorm(x, w));
    const syncMs = performance.now() - t0;
    kept.length = 0;
    t0 = performance.now();
    for (let i = 0; i < 500; i++) rn.rmsNorm(x, w);
    const syncDroppedMs = performance.now() - t0;
    t0 = performance.now();
    await Promise.all(Array.from({ length: 500 }, () => p.rmsNorm(x, w)));
    const burstMs = performance.now() - t0;
    let last = performance.now();
    let maxGap = 0;
    const iv = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 5);
    const ac = new AbortController();
    t0 = performance.now();
    last = t0;
    let firedAt = 0;
    setTimeout(() => {
      firedAt = performance.now() - t0;
      ac.abort();
    }, 20);
    const res = await Promise.all(Array.from({ length: 500 }, () => p.rmsNorm(x, w, { signal: ac.signal }).then(() => 'ok', () => 'aborted')));
    clearInterval(iv);
    const aborted = res.filter((v) => v === 'aborted').length;
    r.burst = { syncMs, syncDroppedMs, poolMs: burstMs, ratio: burstMs / syncMs, maxGapMs: maxGap, abortTimerFiredMs: firedAt, aborted };
    console.log(`  500 sync calls ${syncMs.toFixed(1)} ms (${syncDroppedMs.toFixed(1)} ms when each result is dropped at once), 500 queued pool calls ${burstMs.toFixed(1)} ms (pool/sync ${(burstMs / syncMs).toFixed(2)})`);
    console.log(`  with a 20 ms timer abort: timer fired at ${firedAt.toFixed(1)} ms, ${aborted} calls aborted, longest event-loop gap ${maxGap.toFixed(1)} ms`);
    await p.destroy();
  }

  console.log('\nservice: destroy() during a 128 MiB call');
  {
    const p = await createPool({ threads });
    const { x, w } = plainCase(8192, 4096);
    const call = p.rmsNorm(x, w).then(() => 'resolved', (e: Error) => e.message);
    await new Promise((res) => setTimeout(res, 10));
    const t0 = performance.now();
    const d = p.destroy();
    await call;
    const settled = performance.now() - t0;
    await d;
    const gone = performance.now() - t0;
    r.destroy = { callSettledMs: settled, destroyResolvedMs: gone };
    console.log(`  the running call settled after ${settled.toFixed(1)} ms, destroy() resolved after ${gone.toFixed(1)} ms`);
  }

  console.log('\nservice: 1000 createPool + call + destroy cycles');
  {
    const { x, w } = plainCase(256, 1024);
    const before = shared.wasm.memory.buffer.byteLength;
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) {
      const p = await createPool({ threads });
      await p.rmsNorm(x, w);
      await p.destroy();
    }
    const growth = (shared.wasm.memory.buffer.byteLength - before) / 2 ** 20;
    r.cycles = { cycles: 1000, memoryGrowthMiB: growth, seconds: (performance.now() - t0) / 1000 };
    console.log(`  wasm memory grew by ${growth.toFixed(2)} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return r;
}
