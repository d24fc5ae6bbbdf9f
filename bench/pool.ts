/**
 * The worker pool's own benchmark: empty-dispatch round trip, the inline threshold
 * sweep, the speed-up at large shapes (zero-copy and plain arrays), and "never more than
 * 5% slower than sync" over small shapes with the default thresholds. Medians of many calls,
 * sync and pool interleaved in one run, so ratios compare like with like.
 *
 * Run: `npm run bench:pool` (after `npm run build`); `--json FILE` also writes the numbers.
 * @module
 */
import { writeBenchmarks } from './docs.js';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { createPool, init, instance, loadRmsNorm, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/hooks.js';

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

const fmt = (v: number, w = 9) => v.toFixed(1).padStart(w);
await init();
const threads = Number(process.env.THREADS ?? availableParallelism());
// The sync default (init()'s build) for plain arrays; the instance of the pool's build for views.
const rn = instance()!;
const pool = await createPool({ threads });
const shared = await loadRmsNorm(pool.build);
const out: Record<string, unknown> = {
  date: new Date().toISOString(),
  cpu: cpus()[0]?.model,
  cores: availableParallelism(),
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

type Comparison = Awaited<ReturnType<typeof compare>>;

async function compare(pool: RmsNormPool, rows: number, dim: number, plain: boolean, way: 'chosen' | 'sharded' = 'chosen') {
  const b = buffers(rows, dim);
  const v = b.views();
  // Plain arrays: copies outside wasm memory, so every call copies in and out.
  const { x, y, dy, w, dw } = plain
    ? { x: v.x.slice(), y: v.y.slice(), dy: v.dy.slice(), w: v.w.slice(), dw: v.dw.slice() }
    : v;
  const sync = plain ? rn : shared;
  const fs = await median(() => sync.rmsNorm(x, w, { out: y }));
  const fp = await median(() => pool.rmsNorm(x, w, { out: y }));
  const bs = await median(() => sync.rmsNormBackward(dy, x, w, { dx: y, dweight: dw }));
  const bp = await median(() => pool.rmsNormBackward(dy, x, w, { dx: y, dweight: dw }));
  b.free();
  return { rows, dim, plain, way, fwdSync: fs, fwdPool: fp, fwdRatio: fs / fp, bwdSync: bs, bwdPool: bp, bwdRatio: bs / bp };
}

// `--service`: only the service scenarios (section 5).
const serviceOnly = process.argv.includes('--service');
console.log(`rmsnorm-wasm pool benchmark: ${threads} threads, builds: init() ${rn.build}, pool ${pool.build}; ${out.cpu}, Node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`);

if (!serviceOnly) await speedups();
async function speedups() {
// 1. Empty dispatch to every worker and back.
const ping = await median(() => pool.ping(), 1000);
out.pingMedianUs = ping;
console.log(`\nempty dispatch round trip (pool.ping): median ${ping.toFixed(1)} µs`);

// 2. Large shapes.
console.log('\nspeed-up over the sync call, medians in µs');
console.log('    shape     arrays              | fwd sync  fwd pool  ratio | bwd sync  bwd pool  ratio');
// Plain arrays also with sharding forced: the pool runs them the faster way (choice.ts), and
// this row shows what sharding them would give (only the calling thread can read a plain
// array, so it makes every copy in and out while the workers compute).
const hooks = poolHooks(pool);
const large: Comparison[] = [];
for (const [rows, dim] of [[128, 2048], [512, 4096], [1024, 5120]] as const) {
  for (const [plain, way] of [[false, 'chosen'], [true, 'chosen'], [true, 'sharded']] as const) {
    hooks.forceWay(way === 'sharded' ? 'sharded' : null);
    const r = await compare(pool, rows, dim, plain, way);
    hooks.forceWay(null);
    large.push(r);
    const label = plain ? (way === 'sharded' ? 'plain, sharded forced' : 'plain') : 'zero-copy';
    console.log(
      `${`${rows}x${dim}`.padStart(10)} ${label.padEnd(21)} |${fmt(r.fwdSync)} ${fmt(r.fwdPool)} ${r.fwdRatio.toFixed(2).padStart(6)} |${fmt(r.bwdSync)} ${fmt(r.bwdPool)} ${r.bwdRatio.toFixed(2).padStart(6)}`,
    );
  }
}
out.large = large;

// 3. Default thresholds: the pool must never be more than 5% slower than sync.
console.log('\ndefault thresholds, zero-copy: pool time / sync time');
const small: Comparison[] = [];
for (const [rows, dim] of [[1, 64], [8, 64], [64, 64], [1, 4096], [8, 1024], [32, 1024], [16, 4096], [64, 1024], [128, 1024], [64, 4096]] as const) {
  const r = await compare(pool, rows, dim, false);
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
  const r = await compare(pool, rows, 1024, false);
  sweep.push(r);
  console.log(`${String(rows * 1024).padStart(8)} elements  fwd ${r.fwdRatio.toFixed(2)}  bwd ${r.bwdRatio.toFixed(2)}`);
}
out.sweep = sweep;
const from = (k: 'fwdRatio' | 'bwdRatio') => sweep.find((r) => r[k] > 1.05)?.rows;
console.log(`pool ≥ 5% faster from: forward ${(from('fwdRatio') ?? NaN) * 1024} elements, backward ${(from('bwdRatio') ?? NaN) * 1024} elements`);
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
